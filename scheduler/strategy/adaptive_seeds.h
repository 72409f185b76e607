// Adaptive seeds: which schedules of an experiment get one more seed, given
// its trials so far and their ranking (scheduler/analysis/ranking.h). The
// coordinator applies the decision (server/core/experiments/seeds.h); this is
// the pure rule, so it can be tested on synthetic outcomes and re-run on stored
// state with the same answer.
//
// A schedule is *settled* when none of its trials is pending and neither is
// any baseline trial with one of its seeds. A settled schedule below the
// maximum gets the next seed of the sequence it does not have when its
// verdict is needs seeds (fewer than 2 paired seeds) or inconclusive;
// better and worse are resolved and get no more seeds. The ranking must have
// been made with the policy's looks (VerdictOptions.looks = LooksForSeeds(
// min, max), seed_sequence = the sequence): each added seed is a planned
// look with its own share of alpha, so growing the inconclusive schedules
// and testing again keeps the error rate the family promises (simulated on
// known truth in tests/scheduler/calibration_test.cc). The baseline gets
// every seed any schedule gets, once (pairing is by seed). Every schedule
// takes seeds in sequence order, so all seed sets are prefixes of the
// sequence.
//
// Applying a decision (adding its trials as pending) and deciding again adds
// nothing: every schedule it grew is no longer settled.
//
//   SeedDecision d = DecideSeeds(sequence, "12x12", trials, ranking);
//   for (const SeedAddition& a : d.additions) Queue(a.schedule, a.seed);
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STRATEGY_ADAPTIVE_SEEDS_H_
#define PRISM_SCHEDULER_STRATEGY_ADAPTIVE_SEEDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/analysis/ranking.h"

namespace prism {

// The most seeds a seeds policy may give a schedule.
inline constexpr int kMaxPolicySeeds = 64;

// SeedTrial is one trial of the experiment, whatever its state.
struct SeedTrial {
  std::string schedule;  // canonical form
  int64_t seed = 0;
  bool is_baseline = false;
  bool pending = false;  // queued, leased or running
};

// SeedReason is why a schedule gets another seed.
enum class SeedReason {
  kNone,  // the baseline's trial, following a schedule's seed
  kNeedsSeeds,
  kInconclusive,
};

struct SeedAddition {
  std::string schedule;
  int64_t seed = 0;
  bool is_baseline = false;
  SeedReason reason = SeedReason::kNone;
};

struct SeedDecision {
  // Schedules' next seeds in schedule order, then the baseline's new seeds
  // ascending.
  std::vector<SeedAddition> additions;
  int waiting = 0;   // schedules not settled (a trial of theirs is pending)
  int resolved = 0;  // settled schedules that need no more seeds
  int at_max = 0;    // settled schedules that would grow but have max seeds
};

// SeedSequence returns the seed sequence of a policy with `max` seeds: the
// `listed` seeds in order (at most max), then the integers above the largest
// listed one (from 1 when none is listed) until there are `max`.
std::vector<int64_t> SeedSequence(const std::vector<int64_t>& listed, int max);

// DecideSeeds decides the next round (see the top). `sequence` is the
// policy's seed sequence (its size is the maximum); `baseline` the uniform
// schedule's canonical text; `trials` every trial of the experiment;
// `ranking` RankSchedules over its finished trials.
SeedDecision DecideSeeds(const std::vector<int64_t>& sequence,
                         const std::string& baseline,
                         const std::vector<SeedTrial>& trials,
                         const Ranking& ranking);

// DescribeSeedDecision is a one-line summary of `d` for users, e.g. "added
// seed 3 to 2 schedules (2 inconclusive) and the baseline; 4 resolved, 1 at
// max, 0 waiting".
std::string DescribeSeedDecision(const SeedDecision& d);

// SeedReasonName is the reason's word: "needs seeds", "inconclusive" (""
// for kNone).
const char* SeedReasonName(SeedReason reason);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STRATEGY_ADAPTIVE_SEEDS_H_
