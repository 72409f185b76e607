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
  double low = 0.0;   // confidence interval bounds
  double high = 0.0;
  int n = 0;
};

// MeanInterval returns the sample mean and its two-sided Student-t confidence
// interval at `confidence` (0 < confidence < 1). With one value the interval
// collapses to the mean; with none, all fields are 0.
Interval MeanInterval(const std::vector<double>& values,
                      double confidence = 0.95);

// StudentTQuantile returns the two-sided critical value t such that
// P(|T| <= t) = confidence for `dof` degrees of freedom (dof >= 1).
double StudentTQuantile(int dof, double confidence);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STATISTICS_H_
