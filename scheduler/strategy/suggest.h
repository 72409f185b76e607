// Suggest: which untried schedules of an experiment's space to train next,
// by the surrogate (scheduler/strategy/surrogate.h) fitted on its ranking.
//
// Observations: every non-baseline schedule of the ranking with at least one
// paired seed (its mean paired delta, weighted by its paired seeds). The
// baseline is not one: its delta is 0 by construction, not a measurement.
//
// Candidates: the valid schedules of the space (scheduler/space/space.h) that
// have no trial in the experiment, in any state. When the space holds at most
// kMaxEnumeratedCandidates schedules every one is scored (from the
// enumerator); beyond that, kSampledCandidates schedules drawn uniformly
// (SampleSchedules) are, and the untried among them are the candidates.
//
// Acquisition: the lower confidence bound predicted delta - kLcbKappa x sd,
// smallest first (a negative delta is better, so this is optimism in the
// face of uncertainty: a schedule is tried when it might well be better).
// Ties by schedule text.
//
//   absl::StatusOr<SuggestionSet> s =
//       SuggestSchedules(space, ranking, tried, /*n=*/5, /*seed=*/1);
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STRATEGY_SUGGEST_H_
#define PRISM_SCHEDULER_STRATEGY_SUGGEST_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"
#include "scheduler/strategy/surrogate.h"

namespace prism {

inline constexpr double kLcbKappa = 1.0;
inline constexpr uint64_t kMaxEnumeratedCandidates = 20'000;
inline constexpr int kSampledCandidates = 4'096;
// The most suggestions one request returns.
inline constexpr int kMaxSuggestions = 1'000;

struct Suggestion {
  std::string schedule;  // canonical form
  double predicted_delta = 0.0;
  double uncertainty = 0.0;  // the surrogate's sd
  double acquisition = 0.0;  // predicted_delta - kLcbKappa * uncertainty
};

// CandidatePool is the untried schedules a suggestion is chosen from.
struct CandidatePool {
  std::vector<Schedule> schedules;  // canonical order
  SpaceCount space_size;
  bool sampled = false;  // drawn uniformly: the space is too large to score
};

// UntriedCandidates returns the candidates the header describes; `tried`
// holds canonical schedule texts; `seed` seeds the uniform draw of a large
// space. InvalidArgument for an invalid space.
absl::StatusOr<CandidatePool> UntriedCandidates(
    const SpaceSpec& space, const std::set<std::string>& tried, uint64_t seed);

// SurrogateObservations returns the observations the header describes,
// with features for `space`'s shape; unparseable schedule texts are skipped.
std::vector<SurrogateObservation> SurrogateObservations(const SpaceSpec& space,
                                                        const Ranking& ranking);

struct SuggestionSet {
  std::vector<Suggestion> suggestions;  // best acquisition first
  int observed = 0;                     // schedules the surrogate fitted on
  CandidatePool pool;                   // what was scored
  std::string method;                   // the model and acquisition, a line
};

// ScoreCandidates fits the surrogate on `ranking` and returns the best n of
// `pool` by acquisition (all of them when n >= the pool's size).
// FailedPrecondition (Surrogate::Fit's message) with fewer than
// kMinSurrogateSchedules observations.
absl::StatusOr<SuggestionSet> ScoreCandidates(const SpaceSpec& space,
                                              const Ranking& ranking,
                                              CandidatePool pool, int n);

// Fewer observed schedules than this and the suggestions carry a warning:
// the surrogate's features outnumber what it learns from.
inline constexpr int kConfidentSurrogateSchedules = 10;

// SuggestionWarnings says what makes a fit on `ranking` weak, one line each:
// most of the schedules it learns from (non-baseline rows with a paired
// delta) have one paired seed, so their deltas hold a seed's noise as much as
// the schedule's effect; or fewer than kConfidentSurrogateSchedules of them.
// Empty when neither holds.
std::vector<std::string> SuggestionWarnings(const Ranking& ranking);

// SuggestSchedules is UntriedCandidates then ScoreCandidates.
// InvalidArgument when n is outside [1, kMaxSuggestions].
absl::StatusOr<SuggestionSet> SuggestSchedules(
    const SpaceSpec& space, const Ranking& ranking,
    const std::set<std::string>& tried, int n, uint64_t seed);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STRATEGY_SUGGEST_H_
