// Principle analysis: the effect of violating each design principle on the
// final val loss, estimated with a confidence interval, or an explicit "not
// estimable" with the reason.
//
// Method. The observations are the schedules other than the baseline that have
// at least one paired seed: y_s is schedule s's mean paired delta vs the
// baseline (negative is better) and n_s its number of paired seeds. The model
// is
//
//   y_s = b0 + sum over principles p of b_p * violates_p(s) + e_s,
//   Var(e_s) = sigma^2 / n_s,
//
// fitted by weighted least squares with weights n_s (a mean of n_s seeds is
// n_s times as precise as one seed). b_p is the effect of violating p with the
// other principles held fixed; b0 is the delta of a non-baseline schedule that
// satisfies every principle. sigma^2 is estimated by the weighted residual sum
// of squares over dof = m - r (m schedules, r the rank of the design), the
// standard error of b_p is sqrt(sigma^2 [(X'WX)^-1]_pp), the 95% interval
// b_p +- t(dof, 0.975) SE and the p-value the two-sided t-test of b_p = 0
// with dof degrees of freedom (not adjusted across principles). What the
// principles do not explain about a schedule (its own effect, interactions)
// counts as noise in sigma^2, assumed to shrink with n_s like seed noise.
//
// The baseline is left out: its delta is 0 by construction, not a
// measurement, and as a point it would pin b0 and shrink sigma^2 with a value
// that has no noise.
//
// A principle is not estimable, and gets no estimate (not a zero), when:
//   - no schedule violates it (kNothingViolates), or every one does
//     (kEverythingViolates: its column equals the intercept's);
//   - its column is a linear combination of the intercept and the other
//     principles' columns (kNotSeparable), e.g. two principles violated by
//     exactly the same schedules; the note names the principles that co-vary.
//     One column of such a group stays in the fit, so the other principles'
//     estimates still hold it fixed (estimable coefficients do not depend on
//     which one);
//   - m - r < 1: too few schedules to estimate sigma^2 (kTooFewSchedules,
//     for every principle still in the fit).
// Principles dropped for the first two reasons leave the others estimated.
//
//   PrincipleAnalysis a = AnalyzePrinciples(schedules);
//   for (const PrincipleEffect& e : a.effects) ...
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_ANALYSIS_PRINCIPLE_ANALYSIS_H_
#define PRISM_SCHEDULER_ANALYSIS_PRINCIPLE_ANALYSIS_H_

#include <optional>
#include <string>
#include <vector>

#include "scheduler/space/principles.h"
#include "scheduler/stats/least_squares.h"

namespace prism {

// ScheduleDelta is one observation of the analysis: a non-baseline schedule.
struct ScheduleDelta {
  double mean_delta = 0.0;  // mean paired delta vs the baseline
  int paired_seeds = 1;     // its weight; >= 1
  PrincipleSet violated;    // the principles it violates
};

// EffectStatus says whether a principle's effect could be estimated.
enum class EffectStatus {
  kEstimated,
  kNothingViolates,
  kEverythingViolates,
  kNotSeparable,
  kTooFewSchedules,
};

// PrincipleEffect is one principle's part of the analysis.
struct PrincipleEffect {
  Principle principle = Principle::kSmooth;
  EffectStatus status = EffectStatus::kTooFewSchedules;
  // The observations that satisfy and violate it, and the plain
  // (unweighted, unadjusted) means of their mean deltas; a mean is 0 when
  // its count is.
  int satisfied = 0;
  int violated = 0;
  double mean_delta_satisfied = 0.0;
  double mean_delta_violated = 0.0;
  // Set only when status is kEstimated: b_p, its standard error, its 95%
  // interval and p-value, and the residual degrees of freedom.
  std::optional<double> effect;
  std::optional<double> standard_error;
  std::optional<double> low;
  std::optional<double> high;
  std::optional<double> p_value;
  int dof = 0;
  // Why it is not estimable, for people ("nothing violates it", "smooth and
  // pow2 co-vary completely: effects not separable"); "" when estimated.
  std::string note;
};

struct PrincipleAnalysis {
  std::vector<PrincipleEffect> effects;  // one per principle, kAllPrinciples
  int schedules = 0;                     // m, the observations
  int dof = 0;  // m - r; 0 when no principle is estimated
};

// AnalyzePrinciples runs the analysis the header describes on `schedules`
// (observations with paired_seeds < 1 or a non-finite mean_delta are
// ignored). Every principle gets an
// effect, estimated or with its reason; with no observations all are
// kTooFewSchedules.
PrincipleAnalysis AnalyzePrinciples(
    const std::vector<ScheduleDelta>& schedules);

}  // namespace prism

#endif  // PRISM_SCHEDULER_ANALYSIS_PRINCIPLE_ANALYSIS_H_
