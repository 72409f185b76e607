// Racing for the best (issue 39): once a search has trained its finalists
// on the spec's seeds, the schedules still contending for the best get more
// paired seeds (the baseline too, for the same seeds) until one remains, a
// per-schedule maximum, or a step budget is reached. This is the pure rule;
// the coordinator applies its additions (server/core/experiments/seeds.h) and
// the search benchmark drives it on known truth (bench/search_bench.cc).
//
// The race is a sequence of looks at n = first, first + 1, ..., max paired
// seeds, on the seed sequence (SeedSequence: the spec's seeds, then the
// integers above the largest). At look k every trial on the first n_k seeds
// of the sequence is ranked (RankSchedules) with alpha_k, Lan-DeMets'
// Pocock-type share of alpha over the looks (SpentAlpha over
// LooksForSeeds(first, max)), and the contenders are those of the previous
// look that have the look's n_k seeds and are in its best-set (Hsu's
// multiple comparisons with the best at level alpha_k). The first look's
// contenders are its best-set. A schedule that leaves the set never comes
// back and gets no more seeds. The true best leaves only if some look's
// best-set misses it, which happens with probability at most alpha_k at
// look k, so by the union bound over the looks the final contenders hold
// it with probability at least 1 - alpha: Paulson's sequential elimination
// (Paulson 1964, "A sequential procedure for selecting the population with
// the largest mean from k normal populations") with Hsu's MCB (Hsu 1996,
// "Multiple Comparisons", ch. 4) as each look's test and the alpha spent
// as in group-sequential trials (Lan & DeMets 1983).
//
// Each round after look k gives the `racers` contenders with the lowest
// mean paired delta at that look every seed of the first n_k + 1 of the
// sequence they lack (a contender that did not lead before catches up), and
// the baseline the same seeds; the next look comes when they have all
// finished. The budget goes where the doubt about the best is; a contender
// that is not raced keeps its seeds and stays in the set until a look's
// best-set leaves it out. A raced contender whose trial on a seed past the
// search's failed or diverged leaves the race (said in the note); a
// baseline trial that failed ends the race (nothing pairs on that seed). The
// race stops when one contender is left (settled: the best; the baseline when
// no schedule beats it), at the maximum, when the next round would take the
// seeds it adds past `step_budget`, or when no schedule has 2 paired seeds.
//
// Applying a decision (storing its trials as pending) and deciding again
// adds nothing: a function of the stored trials only.
//
//   RacingPlan plan{...};
//   RaceDecision d = DecideRace(plan, trials, outcomes);
//   for (const SeedAddition& a : d.additions) Queue(a.schedule, a.seed);
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STRATEGY_RACING_H_
#define PRISM_SCHEDULER_STRATEGY_RACING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/analysis/ranking.h"
#include "scheduler/space/space.h"
#include "scheduler/strategy/adaptive_seeds.h"

namespace prism {

// The default racing budget: the steps racing may add, as a share of the
// grid's steps on the spec's seeds (bench/RESULTS.md, "Racing for the
// best", chose it), and the default maximum seeds per schedule as a
// multiple of the spec's seed count (at most kMaxPolicySeeds).
inline constexpr double kDefaultRacingBudget = 0.1;
inline constexpr int kDefaultRacingSeedsMultiple = 4;
inline constexpr int kDefaultRacers = 4;

// DefaultRacingMaxSeeds returns the default maximum for a spec with `seeds`
// seeds: kDefaultRacingSeedsMultiple times, within [seeds, kMaxPolicySeeds].
int DefaultRacingMaxSeeds(int seeds);

struct RacingPlan {
  SpaceSpec space;
  std::string baseline;  // the uniform schedule's canonical text
  // The seed sequence (its size is the maximum per schedule) and how many
  // of its seeds the search itself trains (the spec's; at least 2).
  std::vector<int64_t> sequence;
  int first = 0;
  // The verdicts' options (method, family, alpha, screened schedules);
  // their looks are ignored: the race sets its own.
  VerdictOptions verdicts;
  // Steps a race trial trains (the spec's budget) and the most the race may
  // add in all.
  int64_t steps = 0;
  double step_budget = 0.0;
  // How many of the contenders, the lowest means first, get seeds each
  // round (the others keep theirs until they lead or leave).
  int racers = kDefaultRacers;
};

enum class RaceState {
  kWaiting,       // the search, or a contender's trial on this look, runs
  kRacing,        // this decision adds seeds
  kSettled,       // one contender left
  kAtMax,         // the contenders have the maximum seeds
  kBudget,        // the next round would pass the budget
  kNoContenders,  // no schedule has 2 paired seeds
  kBaselineLost,  // the baseline's trial on the look's seed failed
};

// RaceStateName: "waiting", "racing", "settled", "at max", "budget spent",
// "no contenders", "baseline failed".
const char* RaceStateName(RaceState s);

struct RaceDecision {
  RaceState state = RaceState::kWaiting;
  // The next seeds: contenders' in their order, then the baseline's.
  std::vector<SeedAddition> additions;
  // The latest complete look's paired seeds (first when none is).
  int look_seeds = 0;
  // The contenders after the latest complete look, by mean paired delta
  // over all their seeds (the baseline as 0), and how many the first look
  // had.
  std::vector<std::string> contenders;
  int started = 0;
  // The contender with the lowest mean paired delta among those with the
  // most paired seeds (the baseline when its 0 is lower); "" without
  // contenders.
  std::string best;
  bool best_is_baseline = false;
  int best_seeds = 0;  // its completed paired seeds
  // Trials the race stored (seeds past `first`), and their steps.
  int seeds_added = 0;
  double steps_added = 0.0;
  int dropped = 0;  // contenders whose trial failed or diverged
  std::string note;
};

// DecideRace decides the next round (see the top): `trials` every trial of
// the experiment, `outcomes` its finished trials trained to the end. Call it
// when the search itself adds nothing and nothing of it is pending; it also
// describes a race in progress or done (for results).
RaceDecision DecideRace(const RacingPlan& plan,
                        const std::vector<SeedTrial>& trials,
                        const std::vector<TrialOutcome>& outcomes);

// DescribeRace is one line for users, e.g. "best 2x2,4x4 settled on 9
// seeds (3 contenders raced, 21 seeds added)" or "racing 3 contenders on 5
// seeds: added seed 6 to 3 schedules and the baseline".
std::string DescribeRace(const RaceDecision& d);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STRATEGY_RACING_H_
