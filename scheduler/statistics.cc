#include "scheduler/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace prism {
namespace {

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

double StudentTQuantile(int dof, double confidence) {
  if (dof < 1 || !(confidence > 0.0 && confidence < 1.0)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
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

double StudentTTwoSidedP(double t, int dof) {
  if (dof < 1 || std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return 0.0;
  // P(|T| >= |t|) = I_x(dof / 2, 1 / 2) with x = dof / (dof + t^2).
  const double nu = dof;
  return RegularizedBeta(nu / 2.0, 0.5, nu / (nu + t * t));
}

double StudentTCdf(double t, int dof) {
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

}  // namespace prism
