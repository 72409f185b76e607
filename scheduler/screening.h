// Guided screening (issue #27, item 4): a guided search that screens its
// candidates by successive halving, in the spirit of BOHB (Falkner et al.
// 2018). Candidates enter in brackets at the lowest ASHA rung; each bracket
// is decided by the synchronous rule (scheduler/asha.h); the surrogate
// (scheduler/surrogate.h) learns from the scores at every rung, not only
// from final losses, so a bracket can screen many schedules for the price
// of a few full runs.
//
// NextScreeningBracket picks a bracket's schedules among the untried ones:
// - the first bracket, or while the surrogate cannot be fitted: uniformly
//   at random;
// - after: round(explore x size) uniformly at random (the stated share of
//   exploration, default kDefaultScreeningExplore = 1/3), the rest the
//   untried schedules with the lowest lower confidence bound (predicted
//   delta - kLcbKappa x sd) of the surrogate fitted on the highest rung at
//   which at least kMinSurrogateSchedules schedules have a score (BOHB's
//   "largest budget with enough observations": a rung's deltas are only
//   comparable with the same rung's).
// The random draws use a generator seeded by (seed, bracket), so the same
// state always gives the same bracket.
//
//   ScreeningPlan plan{space, baseline, /*size=*/32, 1.0 / 3, /*seed=*/7};
//   auto b = NextScreeningBracket(plan, scores, tried, /*bracket=*/1);
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_SCREENING_H_
#define PRISM_SCHEDULER_SCREENING_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/space.h"

namespace prism {

inline constexpr double kDefaultScreeningExplore = 1.0 / 3.0;

struct ScreeningPlan {
  SpaceSpec space;
  std::string baseline;                       // never proposed
  int size = 0;                               // schedules per bracket
  double explore = kDefaultScreeningExplore;  // in [0, 1]
  uint64_t seed = 0;
};

// RungScore is one schedule's mean paired delta vs the baseline at a rung.
struct RungScore {
  std::string schedule;
  int64_t step = 0;
  double delta = 0.0;
  int seeds = 1;
};

struct ScreeningBracket {
  std::vector<std::string> schedules;  // model picks first, then random
  int model_picks = 0;
  int64_t fitted_step = 0;  // the rung the surrogate learnt from; 0: none
};

// NextScreeningBracket returns bracket number `bracket` (0 first): at most
// plan.size untried schedules (fewer when fewer are left; none when none).
// InvalidArgument for an invalid space, size < 1 or explore outside [0, 1].
absl::StatusOr<ScreeningBracket> NextScreeningBracket(
    const ScreeningPlan& plan, const std::vector<RungScore>& scores,
    const std::set<std::string>& tried, int bracket);

}  // namespace prism

#endif  // PRISM_SCHEDULER_SCREENING_H_
