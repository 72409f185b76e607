// Statistics for comparing schedules across seeds: means with Student-t
// confidence intervals.
//
//   Interval ci = MeanInterval({3.36, 3.35, 3.37});  // mean 3.36, 95% CI
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STATISTICS_H_
#define PRISM_SCHEDULER_STATISTICS_H_

#include <vector>

namespace prism {

struct Interval {
  double mean = 0.0;
  double low = 0.0;  // confidence interval bounds
  double high = 0.0;
  int n = 0;
};

// MeanInterval returns the sample mean and its two-sided Student-t confidence
// interval at `confidence` (0 < confidence < 1; NaN bounds otherwise). With
// one value the interval collapses to the mean; with none, all fields are 0.
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

}  // namespace prism

#endif  // PRISM_SCHEDULER_STATISTICS_H_
