#include "scheduler/stats/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace prism {
namespace {

// Past this many degrees of freedom Student's t is the normal to well below
// the precision anything here needs (and an infinite dof is the normal).
constexpr double kNormalDof = 1e7;
constexpr double kPi = 3.14159265358979323846;
// FitVariancePrior's bound on the log variances' spread: half a standard
// error above the estimate (a one-sided 69% bound), chosen on the known-truth
// calibration (bench/RESULTS.md): 1.645 cost a tenth of the power on equal
// variances, 0 let unequal ones through.
constexpr double kSpreadBoundZ = 0.5;

// ContinuedFraction evaluates the continued fraction of the regularized
// incomplete beta function (modified Lentz's method); it converges quickly
// for x < (a + 1) / (a + b + 2).
double ContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double f = d;
  for (int m = 1; m <= 1000; ++m) {
    const double m2 = 2.0 * m;
    // Even step.
    double num = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    f *= d * c;
    // Odd step.
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    f *= delta;
    if (std::fabs(delta - 1.0) < kEpsilon) break;
  }
  return f;
}

// LogGamma returns ln|Gamma(x)|. std::lgamma also stores Gamma's sign in
// the global `signgam` (POSIX), so two threads ranking at once race on it
// (TSan found it in server_coordinator_test); lgamma_r hands the sign back
// through an argument instead.
double LogGamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

// RegularizedBeta returns I_x(a, b) for 0 <= x <= 1, a, b > 0.
double RegularizedBeta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double log_front = LogGamma(a + b) - LogGamma(a) - LogGamma(b) +
                           a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1.0) / (a + b + 2.0)) {
    return front * ContinuedFraction(a, b, x) / a;
  }
  return 1.0 - front * ContinuedFraction(b, a, 1.0 - x) / b;
}

}  // namespace

double StudentTQuantile(double dof, double confidence) {
  if (!(dof >= 1.0) || !(confidence > 0.0 && confidence < 1.0)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (dof > kNormalDof) return NormalQuantile(0.5 + confidence / 2.0);
  // P(|T| > t) = I_x(dof / 2, 1 / 2) with x = dof / (dof + t^2), which rises
  // with x; bisect for the x whose tail is 1 - confidence.
  const double nu = dof;
  const double tail = 1.0 - confidence;
  double lo = 0.0;
  double hi = 1.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = lo + (hi - lo) / 2.0;
    if (mid <= lo || mid >= hi) break;
    if (RegularizedBeta(nu / 2.0, 0.5, mid) < tail) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const double x = lo + (hi - lo) / 2.0;
  return std::sqrt(nu * (1.0 - x) / x);
}

Interval MeanIntervalWithCritical(const std::vector<double>& values,
                                  double t_critical) {
  Interval interval;
  interval.n = static_cast<int>(values.size());
  if (values.empty()) return interval;
  double sum = 0.0;
  for (double v : values) sum += v;
  interval.mean = sum / interval.n;
  if (interval.n < 2) return interval;
  double squares = 0.0;
  for (double v : values) squares += (v - interval.mean) * (v - interval.mean);
  const double half = t_critical * std::sqrt(squares / (interval.n - 1)) /
                      std::sqrt(static_cast<double>(interval.n));
  interval.low = interval.mean - half;
  interval.high = interval.mean + half;
  interval.has_bounds = true;
  return interval;
}

Interval MeanInterval(const std::vector<double>& values, double confidence) {
  const int dof = static_cast<int>(values.size()) - 1;
  return MeanIntervalWithCritical(
      values, dof >= 1 ? StudentTQuantile(dof, confidence) : 0.0);
}

double StudentTTwoSidedP(double t, double dof) {
  if (!(dof >= 1.0) || std::isnan(t)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (std::isinf(t)) return 0.0;
  if (dof > kNormalDof) return std::erfc(std::fabs(t) / std::sqrt(2.0));
  // P(|T| >= |t|) = I_x(dof / 2, 1 / 2) with x = dof / (dof + t^2).
  const double nu = dof;
  return RegularizedBeta(nu / 2.0, 0.5, nu / (nu + t * t));
}

double StudentTCdf(double t, double dof) {
  const double tail = StudentTTwoSidedP(t, dof) / 2.0;
  if (std::isnan(tail)) return tail;
  return t >= 0.0 ? 1.0 - tail : tail;
}

std::optional<double> PairedTTestP(const std::vector<double>& deltas) {
  const size_t n = deltas.size();
  if (n < 2) return std::nullopt;
  double sum = 0.0;
  for (double d : deltas) sum += d;
  const double mean = sum / n;
  double squares = 0.0;
  for (double d : deltas) squares += (d - mean) * (d - mean);
  const double standard_error = std::sqrt(squares / (n - 1) / n);
  if (standard_error == 0.0) return mean == 0.0 ? 1.0 : 0.0;
  return StudentTTwoSidedP(mean / standard_error, static_cast<int>(n) - 1);
}

std::vector<double> HolmAdjust(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  // NaN p-values (from non-finite deltas) sort last: a strict weak order.
  std::stable_sort(order.begin(), order.end(), [&p](size_t a, size_t b) {
    return !std::isnan(p[a]) && (std::isnan(p[b]) || p[a] < p[b]);
  });
  std::vector<double> adjusted(m);
  double running = 0.0;
  for (size_t i = 0; i < m; ++i) {
    const double scaled = std::min(1.0, (m - i) * p[order[i]]);
    running = std::max(running, scaled);
    adjusted[order[i]] = running;
  }
  return adjusted;
}

std::vector<double> BenjaminiHochbergAdjust(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&p](size_t a, size_t b) {
    return !std::isnan(p[a]) && (std::isnan(p[b]) || p[a] < p[b]);
  });
  std::vector<double> adjusted(m, std::numeric_limits<double>::quiet_NaN());
  // As R's p.adjust: NaN values are not counted in the family.
  const size_t counted = static_cast<size_t>(std::count_if(
      p.begin(), p.end(), [](double v) { return !std::isnan(v); }));
  double running = 1.0;
  for (size_t i = m; i-- > 0;) {
    const double value = p[order[i]];
    if (std::isnan(value)) continue;
    running = std::min(running, std::min(1.0, counted * value / (i + 1)));
    adjusted[order[i]] = running;
  }
  return adjusted;
}

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double NormalQuantile(double p) {
  if (!(p > 0.0 && p < 1.0)) return std::numeric_limits<double>::quiet_NaN();
  // Bisection on the CDF, then Newton steps polish it.
  double lo = -40.0;
  double hi = 40.0;
  for (int i = 0; i < 200 && hi - lo > 1e-10; ++i) {
    const double mid = (lo + hi) / 2.0;
    (NormalCdf(mid) < p ? lo : hi) = mid;
  }
  double z = (lo + hi) / 2.0;
  for (int i = 0; i < 3; ++i) {
    const double density = std::exp(-z * z / 2.0) / std::sqrt(2.0 * kPi);
    if (density <= 0.0) break;
    z -= (NormalCdf(z) - p) / density;
  }
  return z;
}

// The polygamma functions: the recurrence moves x past 10, then the
// asymptotic series (Abramowitz & Stegun 6.3.18, 6.4.11-12).
double Digamma(double x) {
  if (!(x > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  double shift = 0.0;
  while (x < 10.0) {
    shift -= 1.0 / x;
    x += 1.0;
  }
  const double f = 1.0 / (x * x);
  return shift + std::log(x) - 0.5 / x -
         f * (1.0 / 12 -
              f * (1.0 / 120 -
                   f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}

double Trigamma(double x) {
  if (!(x > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  double shift = 0.0;
  while (x < 10.0) {
    shift += 1.0 / (x * x);
    x += 1.0;
  }
  const double f = 1.0 / (x * x);
  return shift + 1.0 / x + f / 2.0 +
         f / x *
             (1.0 / 6 -
              f * (1.0 / 30 - f * (1.0 / 42 - f * (1.0 / 30 - f * 5.0 / 66))));
}

double Tetragamma(double x) {
  if (!(x > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  double shift = 0.0;
  while (x < 10.0) {
    shift -= 2.0 / (x * x * x);
    x += 1.0;
  }
  const double f = 1.0 / (x * x);
  return shift - f - f / x -
         f * f *
             (0.5 -
              f * (1.0 / 6 - f * (1.0 / 6 - f * (3.0 / 10 - f * 5.0 / 6))));
}

double TrigammaInverse(double x) {
  if (!(x > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  if (x > 1e7) return 1.0 / std::sqrt(x);
  if (x < 1e-6) return 1.0 / x;
  double y = 0.5 + 1.0 / x;
  for (int i = 0; i < 50; ++i) {
    const double tri = Trigamma(y);
    const double step = tri * (1.0 - tri / x) / Tetragamma(y);
    y += step;
    if (-step / y < 1e-8) break;
  }
  return y;
}

namespace {

// UsableVariances are the variances a prior is fitted to (finite, not
// negative, on a positive finite dof), their dofs, and the floor a zero
// variance is raised to: 1e-5 of their median.
struct UsableVariances {
  std::vector<double> s2;
  std::vector<double> d;
  double floor = 1e-300;
};

UsableVariances Usable(const std::vector<double>& variances,
                       const std::vector<double>& dofs) {
  UsableVariances u;
  for (size_t i = 0; i < variances.size() && i < dofs.size(); ++i) {
    if (std::isfinite(variances[i]) && variances[i] >= 0.0 && dofs[i] > 0.0 &&
        std::isfinite(dofs[i])) {
      u.s2.push_back(variances[i]);
      u.d.push_back(dofs[i]);
    }
  }
  const size_t n = u.s2.size();
  if (n == 0) return u;
  std::vector<double> sorted = u.s2;
  std::sort(sorted.begin(), sorted.end());
  const double median =
      n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  if (median > 0.0) u.floor = 1e-5 * median;
  return u;
}

}  // namespace

VariancePrior FitVariancePrior(const std::vector<double>& variances,
                               const std::vector<double>& dofs) {
  VariancePrior prior;
  UsableVariances usable = Usable(variances, dofs);
  std::vector<double>& s2 = usable.s2;
  const std::vector<double>& d = usable.d;
  const size_t n = s2.size();
  if (n < 2) return prior;
  const double floor = usable.floor;
  double mean_e = 0.0;
  std::vector<double> e(n);
  for (size_t i = 0; i < n; ++i) {
    e[i] = std::log(std::max(s2[i], floor)) - Digamma(d[i] / 2.0) +
           std::log(d[i] / 2.0);
    mean_e += e[i] / n;
  }
  double var_e = 0.0;
  double mean_trigamma = 0.0;
  for (size_t i = 0; i < n; ++i) {
    var_e += (e[i] - mean_e) * (e[i] - mean_e) / (n - 1);
    mean_trigamma += Trigamma(d[i] / 2.0) / n;
  }
  // The spread at its upper confidence bound (see the header): the sample
  // variance's standard error from the fourth central moment.
  double m4 = 0.0;
  for (size_t i = 0; i < n; ++i) m4 += std::pow(e[i] - mean_e, 4) / n;
  var_e += kSpreadBoundZ * std::sqrt(std::max(0.0, m4 - var_e * var_e) / n);
  var_e -= mean_trigamma;
  prior.fitted = true;
  if (var_e > 0.0) {
    prior.dof = 2.0 * TrigammaInverse(var_e);
    prior.variance =
        std::exp(mean_e + Digamma(prior.dof / 2.0) - std::log(prior.dof / 2.0));
  } else {
    prior.dof = std::numeric_limits<double>::infinity();
    prior.variance = std::exp(mean_e);
  }
  return prior;
}

namespace {

// FLogLikelihood is the log likelihood, up to terms free of the prior, of
// variances s2 (dofs d) when s2 / s0^2 is F on (d, d0), s0^2 = exp(log_scale);
// an infinite d0 gives the chi-square on d over d. The log-gamma terms depend
// on d only, and a ranking's dofs take few values: they are computed once per
// run of equal dofs.
double FLogLikelihood(const std::vector<double>& s2,
                      const std::vector<double>& d, double log_scale,
                      double prior_dof) {
  const double scale = std::exp(log_scale);
  const bool pooled = std::isinf(prior_dof);
  const double d2 = prior_dof;
  double sum = 0.0;
  double last_d1 = -1.0;
  double constant = 0.0;
  for (size_t i = 0; i < s2.size(); ++i) {
    const double d1 = d[i];
    if (d1 != last_d1) {
      last_d1 = d1;
      constant = -LogGamma(d1 / 2.0) - log_scale +
                 (pooled ? (d1 / 2.0) * std::log(d1 / 2.0)
                         : LogGamma((d1 + d2) / 2.0) - LogGamma(d2 / 2.0) +
                               (d1 / 2.0) * std::log(d1 / d2));
    }
    const double x = s2[i] / scale;
    sum +=
        constant + (d1 / 2.0 - 1.0) * std::log(x) -
        (pooled ? d1 * x / 2.0 : ((d1 + d2) / 2.0) * std::log1p(d1 * x / d2));
  }
  return sum;
}

// ProfileLogScale returns the log s0^2 that maximizes FLogLikelihood at d0.
// Pooled (infinite d0): the dof-weighted mean variance. Otherwise the score
// falls monotonically in log s0^2 and is positive below the smallest s2 and
// negative above the largest: Newton's steps from `start` (the last d0's
// answer, close), kept inside a bracket that bisection narrows.
double ProfileLogScale(const std::vector<double>& s2,
                       const std::vector<double>& d, double prior_dof,
                       double start) {
  if (std::isinf(prior_dof)) {
    double weighted = 0.0;
    double total = 0.0;
    for (size_t i = 0; i < s2.size(); ++i) {
      weighted += d[i] * s2[i];
      total += d[i];
    }
    return std::log(weighted / total);
  }
  double lo = std::log(*std::min_element(s2.begin(), s2.end())) - 1.0;
  double hi = std::log(*std::max_element(s2.begin(), s2.end())) + 1.0;
  double theta = start > lo && start < hi ? start : (lo + hi) / 2.0;
  for (int it = 0; it < 100; ++it) {
    const double scale = std::exp(theta);
    double score = 0.0;
    double slope = 0.0;
    for (size_t i = 0; i < s2.size(); ++i) {
      const double r = d[i] * s2[i] / scale / prior_dof;
      const double half = (d[i] + prior_dof) / 2.0;
      score += half * r / (1.0 + r) - d[i] / 2.0;
      slope -= half * r / ((1.0 + r) * (1.0 + r));
    }
    (score > 0.0 ? lo : hi) = theta;
    double next = slope < 0.0 ? theta - score / slope : (lo + hi) / 2.0;
    if (!(next > lo && next < hi)) next = (lo + hi) / 2.0;
    if (std::fabs(next - theta) < 1e-10 || hi - lo < 1e-10) return next;
    theta = next;
  }
  return theta;
}

}  // namespace

VariancePrior FitVariancePriorMaximumLikelihood(
    const std::vector<double>& variances, const std::vector<double>& dofs) {
  VariancePrior prior;
  UsableVariances usable = Usable(variances, dofs);
  std::vector<double>& s2 = usable.s2;
  const std::vector<double>& d = usable.d;
  const size_t n = s2.size();
  if (n < 2) return prior;
  const double floor = usable.floor;
  for (double& v : s2) v = std::max(v, floor);
  // Golden-section search for the most likely log d0, to 0.1% of d0.
  const double inf = std::numeric_limits<double>::infinity();
  const double pooled_scale = ProfileLogScale(s2, d, inf, 0.0);
  double last_scale = pooled_scale;
  auto profile = [&s2, &d, &last_scale](double log_dof) {
    const double dof = std::exp(log_dof);
    last_scale = ProfileLogScale(s2, d, dof, last_scale);
    return FLogLikelihood(s2, d, last_scale, dof);
  };
  const double golden = (std::sqrt(5.0) - 1.0) / 2.0;
  const double top = std::log(1e4);
  double a = std::log(0.2);
  double b = top;
  double c = b - golden * (b - a);
  double e = a + golden * (b - a);
  double fc = profile(c);
  double fe = profile(e);
  while (b - a > 1e-3) {
    if (fc > fe) {
      b = e;
      e = c;
      fe = fc;
      c = b - golden * (b - a);
      fc = profile(c);
    } else {
      a = c;
      c = e;
      fc = fe;
      e = a + golden * (b - a);
      fe = profile(e);
    }
  }
  const double best = (a + b) / 2.0;
  const double at_best = profile(best);
  prior.fitted = true;
  if (best > top - 1e-2 ||
      FLogLikelihood(s2, d, pooled_scale, inf) >= at_best) {
    prior.dof = inf;
    prior.variance = std::exp(pooled_scale);
  } else {
    prior.dof = std::exp(best);
    prior.variance = std::exp(last_scale);
  }
  return prior;
}

double PosteriorMeanVariance(const VariancePrior& prior, double variance,
                             double dof) {
  if (!prior.fitted) return variance * dof / std::max(dof - 2.0, 1.0);
  if (std::isinf(prior.dof)) return prior.variance;
  if (!(dof > 0.0)) return prior.variance;
  return (prior.dof * prior.variance + dof * variance) /
         std::max(prior.dof + dof - 2.0, 1.0);
}

double PosteriorVariance(const VariancePrior& prior, double variance,
                         double dof) {
  if (!prior.fitted) return variance;
  if (std::isinf(prior.dof)) return prior.variance;
  if (!(dof > 0.0)) return prior.variance;
  return (prior.dof * prior.variance + dof * variance) / (prior.dof + dof);
}

namespace {

// ManyToOneCoverage is P(X_j >= X_0 - sqrt(2) d u for every j = 1..k) with
// the X iid N(0, 1) and u ~ chi_dof / sqrt(dof) (u = 1 for an infinite dof):
// Simpson's rule in x_0, and in u over the bulk of its density.
double ManyToOneCoverage(int k, double dof, double d) {
  constexpr int kX = 160;  // even
  constexpr double kXSpan = 8.0;
  auto inner = [k, d](double u) {
    const double h = 2.0 * kXSpan / kX;
    double sum = 0.0;
    for (int i = 0; i <= kX; ++i) {
      const double x = -kXSpan + i * h;
      const double w = (i == 0 || i == kX) ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0);
      const double density = std::exp(-x * x / 2.0) / std::sqrt(2.0 * kPi);
      sum += w * density * std::pow(NormalCdf(x + std::sqrt(2.0) * d * u), k);
    }
    return sum * h / 3.0;
  };
  if (dof > kNormalDof) return inner(1.0);
  constexpr int kU = 120;  // even
  const double spread = 1.0 / std::sqrt(2.0 * dof);
  const double lo = std::max(1e-6, 1.0 - 9.0 * spread);
  const double hi = 1.0 + 9.0 * spread + (dof < 10 ? 4.0 : 0.0);
  const double h = (hi - lo) / kU;
  // log density of chi_dof / sqrt(dof).
  const double log_norm =
      (dof / 2.0) * std::log(dof / 2.0) + std::log(2.0) - LogGamma(dof / 2.0);
  double sum = 0.0;
  double mass = 0.0;
  for (int i = 0; i <= kU; ++i) {
    const double u = lo + i * h;
    const double w = (i == 0 || i == kU) ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0);
    const double density =
        std::exp(log_norm + (dof - 1.0) * std::log(u) - dof * u * u / 2.0);
    sum += w * density * inner(u);
    mass += w * density;
  }
  // Normalising by the mass integrated keeps the truncation's error out.
  return sum / mass;
}

}  // namespace

double DunnettOneSidedCritical(int k, double dof, double confidence) {
  if (k < 1 || !(dof >= 1.0) || !(confidence > 0.0 && confidence < 1.0)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (k == 1) return StudentTQuantile(dof, 2.0 * confidence - 1.0);
  double lo = 0.0;
  double hi = 50.0;
  while (hi - lo > 1e-5) {
    const double mid = (lo + hi) / 2.0;
    (ManyToOneCoverage(k, dof, mid) < confidence ? lo : hi) = mid;
  }
  return (lo + hi) / 2.0;
}

}  // namespace prism
