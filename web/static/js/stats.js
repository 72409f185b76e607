// The little statistics the dashboard computes itself: a mean across seeds
// with its t-based 95% interval (the coordinator's intervals are the same
// kind: mean ± t(0.975, n − 1) · sd / √n).

// Student's t 0.975 quantiles for 1..30 degrees of freedom (scipy.stats.t.ppf).
const kT975 = [
  12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
  2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
  2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
];

// tCritical95 is t(0.975, df); past 30 degrees of freedom a Cornish-Fisher
// expansion of the normal quantile (error below 1e-4 there).
export function tCritical95(df) {
  if (df < 1) return NaN;
  if (df <= kT975.length) return kT975[df - 1];
  const z = 1.959964;
  return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df * df);
}

// meanInterval returns { n, mean, low, high } of finite values: low and
// high only from 2 values on (one seed has no interval).
export function meanInterval(values) {
  const xs = values.filter(Number.isFinite);
  const n = xs.length;
  if (!n) return { n: 0, mean: NaN, low: NaN, high: NaN };
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { n, mean, low: NaN, high: NaN };
  const variance = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1);
  const half = tCritical95(n - 1) * Math.sqrt(variance / n);
  return { n, mean, low: mean - half, high: mean + half };
}
