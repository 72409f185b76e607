// Guided search (STRATEGY_GUIDED): which schedules an experiment trains
// next, alternating the surrogate's top suggestion
// (scheduler/strategy/suggest.h) with a uniformly random exploration schedule.
// The coordinator plants the initial design at submit (the baseline plus
// GuidedInitialDesign) and applies each decision with all the spec's seeds per
// schedule (server/core/experiments/seeds.h); this is the pure rule, so it can
// be tested on synthetic outcomes and re-run on stored state with the same
// answer.
//
// A schedule is *settled* when none of its trials is pending and neither is
// any baseline trial with one of its seeds; *in flight* otherwise. Nothing is
// added until min(initial, tried) schedules are settled (the initial design
// has finished). From then on the decision keeps `parallel` schedules in
// flight, without exceeding `budget` schedules in all (initial design
// included) or the untried schedules of the space: each free slot gets one
// new schedule. The k-th schedule added after the initial design (k from 0,
// k = tried - initial for the first of a round) is a suggestion when k is
// even, an exploration when k is odd. A suggestion is the best untried
// schedule by the lower confidence bound; when the surrogate cannot be
// fitted (fewer than kMinSurrogateSchedules schedules with a paired delta,
// e.g. after failures) that slot is an exploration, and the decision says
// why. An exploration is drawn uniformly from the untried candidates with a
// generator seeded by (seed, k), so the same state always gives the same
// schedule.
//
// Applying a decision (its schedules' trials queued) and deciding again adds
// nothing: the slots are full.
//
//   GuidedDecision d = DecideGuided(plan, trials, ranking);
//   for (const GuidedAddition& a : d.additions) QueueAllSeeds(a.schedule);
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STRATEGY_GUIDED_H_
#define PRISM_SCHEDULER_STRATEGY_GUIDED_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"
#include "scheduler/strategy/adaptive_seeds.h"

namespace prism {

// The default number of schedules kept in flight after the initial design:
// one suggestion and one exploration.
inline constexpr int kDefaultGuidedParallel = 2;

// GuidedPlan is the strategy's settings, from the resolved spec.
struct GuidedPlan {
  SpaceSpec space;
  std::string baseline;  // the uniform schedule's canonical text
  int budget = 0;        // schedules in all, initial design included
  int initial = 0;       // schedules of the initial design
  int parallel = kDefaultGuidedParallel;
  uint64_t seed = 0;  // the spec's sample_seed
};

// DefaultGuidedInitial is the initial design's size when the spec leaves it
// 0: a quarter of the budget, at least kMinSurrogateSchedules, at most the
// budget.
int DefaultGuidedInitial(int budget);

// GuidedInitialDesign returns `initial` distinct schedules drawn uniformly
// from `space` without the baseline (fewer when the space holds fewer), in
// canonical order: SampleSchedules with `seed`, as STRATEGY_RANDOM draws.
absl::StatusOr<std::vector<Schedule>> GuidedInitialDesign(
    const SpaceSpec& space, const std::string& baseline, int initial,
    uint64_t seed);

enum class GuidedPick { kSuggestion, kExploration };

struct GuidedAddition {
  std::string schedule;  // canonical form
  GuidedPick pick = GuidedPick::kExploration;
  // The surrogate's prediction, for a suggestion.
  double predicted_delta = 0.0;
  double uncertainty = 0.0;
};

struct GuidedDecision {
  std::vector<GuidedAddition> additions;  // in pick order
  int tried = 0;      // non-baseline schedules with a trial, before it
  int settled = 0;    // of those, settled
  int in_flight = 0;  // tried - settled
  bool waiting_for_initial = false;
  bool exhausted = false;  // no untried schedule is left to add
  // Why a suggestion slot got an exploration instead ("" when none did).
  std::string fallback;
};

// DecideGuided decides the next round (see the top). `trials` is every trial
// of the experiment; `ranking` RankSchedules over its finished trials.
// InvalidArgument for an invalid space; other errors of the candidates'
// enumeration or the surrogate's fit are returned.
absl::StatusOr<GuidedDecision> DecideGuided(
    const GuidedPlan& plan, const std::vector<SeedTrial>& trials,
    const Ranking& ranking);

// DescribeGuidedDecision is a one-line summary of `d` for users, e.g.
// "guided: added suggestion 2x2,8x6 (predicted -0.0123 +- 0.0040) and
// exploration 4x4,8x4; 10 of 24 schedules tried, 2 in flight".
std::string DescribeGuidedDecision(const GuidedPlan& plan,
                                   const GuidedDecision& d);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STRATEGY_GUIDED_H_
