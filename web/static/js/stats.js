// The little statistics the dashboard computes itself: a mean across seeds
// with its t-based 95% interval (the coordinator's intervals are the same
// kind: mean ± t(0.975, n − 1) · sd / √n).

// Student's t 0.975 quantiles for 1..30 degrees of freedom (scipy.stats.t.ppf).
const kT975 = [
  12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
  2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
  2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
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
