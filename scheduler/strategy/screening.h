// Guided screening (issue #27, item 4): a guided search that screens its
// candidates by successive halving, in the spirit of BOHB (Falkner et al.
// 2018). Candidates enter in brackets at the lowest ASHA rung; each bracket
// is decided by the synchronous rule (scheduler/strategy/asha.h); the surrogate
// (scheduler/strategy/surrogate.h) learns from the scores at every rung, not
// only from final losses, so a bracket can screen many schedules for the price
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
// DecideScreening is the whole strategy (STRATEGY_GUIDED_SCREENING) as the
// coordinator applies it after every finished trial, a function of the
// stored trials only:
// - a schedule's bracket is its place in the order its trials were stored:
//   the first `size` schedules are bracket 0, the next `size` bracket 1, ...
//   (a bracket's trials are stored in one transaction, after the previous
//   bracket's), so a restarted coordinator finds the same brackets;
// - each bracket is decided on its own by DecideAsha's synchronous rule,
//   against the shared baseline;
// - the surrogate learns from the paired scores of every bracket's complete
//   rungs (a rung still filling is left out, so the arrival order within a
//   rung cannot change a pick);
// - the next bracket opens once the latest bracket's first rung is complete
//   and the projected steps (the baseline's whole budget plus each bracket's
//   ScreeningBracketCost) stay within grid_fraction of the grid's with it;
//   the first bracket always opens.
//
//   ScreeningSearch s{plan, rungs, /*eta=*/3, /*seeds=*/3, /*steps=*/300,
//                     /*grid_steps=*/n * 3 * 300.0, /*grid_fraction=*/0.3};
//   auto d = DecideScreening(s, trials);  // trials in the order stored
//   Requeue(d->promotions); QueueOnEverySeed(d->added.schedules);
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STRATEGY_SCREENING_H_
#define PRISM_SCHEDULER_STRATEGY_SCREENING_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/space/space.h"
#include "scheduler/strategy/asha.h"

namespace prism {

// One random schedule in three: BOHB's default random fraction, and the
// share at which bench/search_bench finds an isolated best (a schedule the
// surrogate cannot predict) without losing the smooth structures' gains.
inline constexpr double kDefaultScreeningExplore = 1.0 / 3.0;
inline constexpr double kDefaultScreeningGridFraction = 0.3;
// A screening search's default rungs and bracket size (issue #27;
// bench/RESULTS.md, "Guided screening's own rungs"). Its verdict needs
// finalists: a bracket of S at eta 3 keeps S / 3^count of them, so the
// default has one rung fewer than ASHA's (the first still at
// kDefaultFirstRungFraction of the budget): 39 -> 13 -> 4 finalists per
// bracket, and two brackets fill the default 30% of a 120-schedule grid.
// With ASHA's three rungs a bracket of 30 kept one finalist and the search
// named a winner in 1 of 20 searches.
inline constexpr int kDefaultScreeningRungCount = 2;
inline constexpr int kDefaultScreeningBracketSize = 39;

// DefaultScreeningRungs returns DefaultAshaRungs(steps, eta, eval_every,
// kDefaultScreeningRungCount): 60, 110 for 200 steps evaluated every 10.
std::vector<int64_t> DefaultScreeningRungs(int64_t steps, int eta,
                                           int eval_every);

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

// ScreeningSearch is STRATEGY_GUIDED_SCREENING's resolved settings.
struct ScreeningSearch {
  ScreeningPlan plan;
  std::vector<int64_t> rungs;  // CheckAshaPlan holds
  int eta = kDefaultAshaEta;
  int seeds = 1;            // trials per schedule
  int64_t steps = 0;        // the whole budget
  double grid_steps = 0.0;  // the grid's: schedules x seeds x steps
  double grid_fraction = kDefaultScreeningGridFraction;  // in (0, 1]
};

// ScreeningBracketCost returns the steps a bracket of `n` schedules trains
// when each rung promotes its quota: n x seeds to the first rung, then
// max(1, floor(n / eta)) x seeds on to the next, ..., the last rung's quota
// to the whole budget.
double ScreeningBracketCost(const ScreeningSearch& search, int n);

struct ScreeningDecision {
  std::vector<AshaPromotion> promotions;  // every bracket's, oldest first
  ScreeningBracket added;                 // the bracket opened; empty: none
  int brackets = 0;                       // before this decision
  // Every rung over all brackets: members, quotas and promotions summed,
  // entries merged by score; complete and paired when they are in every
  // bracket.
  std::vector<AshaRungView> rungs;
  // The baseline's steps plus every bracket's cost, the one added included.
  double projected_steps = 0.0;
  bool budget_reached = false;  // the next bracket would pass grid_fraction
  bool exhausted = false;       // no untried schedule was left to add
};

// DecideScreening decides the promotions and the bracket due now (see the
// top). `trials` is every trial of the experiment in the order stored.
// InvalidArgument for a bad plan (NextScreeningBracket's), an empty rung
// list or a grid_fraction outside (0, 1].
absl::StatusOr<ScreeningDecision> DecideScreening(
    const ScreeningSearch& search, const std::vector<AshaTrial>& trials);

// DescribeScreeningDecision is a one-line summary for users, e.g.
// "screening: bracket 3 opened, 20 surrogate picks (fitted at step 80) and
// 10 random; promoted 2x2,8x6 at 30 to 90; 3 brackets, 24.1% of the grid's
// steps projected (budget 30%)".
std::string DescribeScreeningDecision(const ScreeningSearch& search,
                                      const ScreeningDecision& d);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STRATEGY_SCREENING_H_
