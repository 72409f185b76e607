// Statistics for comparing schedules across seeds: means with Student-t
// confidence intervals, paired t-tests and Holm-Bonferroni adjustment.
//
//   Interval ci = MeanInterval({3.36, 3.35, 3.37});  // mean 3.36, 95% CI
//   std::optional<double> p = PairedTTestP({-0.01, -0.02, -0.015});
//   std::vector<double> adjusted = HolmAdjust({0.01, 0.04, 0.03});
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STATISTICS_H_
#define PRISM_SCHEDULER_STATISTICS_H_

#include <optional>
#include <vector>

namespace prism {

// Interval is a sample mean and, from 2 values on, its confidence interval.
struct Interval {
  double mean = 0.0;
  // Confidence interval bounds; meaningful only when has_bounds (n >= 2),
  // 0 otherwise: one value has no spread to build an interval from.
  double low = 0.0;
  double high = 0.0;
  bool has_bounds = false;
  int n = 0;
};

// MeanInterval returns the sample mean and its two-sided Student-t confidence
// interval at `confidence` (0 < confidence < 1; NaN bounds otherwise). With
// one value there is no interval (has_bounds false, bounds 0); with none, all
// fields are 0.
Interval MeanInterval(const std::vector<double>& values,
                      double confidence = 0.95);

// StudentTQuantile returns the two-sided critical value t such that
// P(|T| <= t) = confidence for `dof` degrees of freedom (dof >= 1), e.g.
// 12.706 for (1, 0.95). Computed numerically (regularized incomplete beta and
// bisection) to about 1e-10 relative; NaN for dof < 1 or confidence outside
// (0, 1).
double StudentTQuantile(int dof, double confidence);

// MeanIntervalWithCritical is MeanInterval with the critical value given
// (StudentTQuantile(values.size() - 1, confidence)), for callers that build
// many intervals with the same n and would otherwise recompute it.
Interval MeanIntervalWithCritical(const std::vector<double>& values,
                                  double t_critical);

// StudentTCdf returns P(T <= t) for Student's t with `dof` degrees of freedom
// (dof >= 1), through the regularized incomplete beta function; NaN for
// dof < 1 or a NaN t. StudentTCdf(2.776, 4) is about 0.975.
double StudentTCdf(double t, int dof);

// StudentTTwoSidedP returns P(|T| >= |t|) for `dof` degrees of freedom, e.g.
// about 0.05 for (12.706, 1); NaN for dof < 1 or a NaN t.
double StudentTTwoSidedP(double t, int dof);

// PairedTTestP returns the two-sided p-value of the one-sample t-test of
// `deltas` (paired differences) against a mean of 0, with n - 1 degrees of
// freedom; nullopt with fewer than 2 values. When all deltas are equal the
// statistic is infinite (p 0) unless they are all 0 (p 1).
std::optional<double> PairedTTestP(const std::vector<double>& deltas);

// HolmAdjust returns Holm-Bonferroni adjusted p-values, in the order of `p`:
// with the m values sorted ascending p_(1) <= ... <= p_(m), the adjusted
// p_(i) = min(1, max over j <= i of (m - j + 1) * p_(j)). Rejecting where
// the adjusted value is below alpha controls the familywise error rate at
// alpha under any dependence between the tests.
std::vector<double> HolmAdjust(const std::vector<double>& p);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STATISTICS_H_
