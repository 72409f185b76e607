#include "scheduler/strategy/suggest.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace prism {

absl::StatusOr<CandidatePool> UntriedCandidates(
    const SpaceSpec& space, const std::set<std::string>& tried, uint64_t seed) {
  CandidatePool pool;
  absl::StatusOr<SpaceCount> count = CountSchedules(space);
  if (!count.ok()) return count.status();
  pool.space_size = *count;
  std::vector<Schedule> all;
  if (!count->exceeds_uint64 && count->value <= kMaxEnumeratedCandidates) {
    absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(space);
    if (!e.ok()) return e.status();
    while (e->Next()) all.emplace_back(e->heads());
  } else {
    pool.sampled = true;
    absl::StatusOr<std::vector<Schedule>> sample =
        SampleSchedules(space, kSampledCandidates, seed);
    if (!sample.ok()) return sample.status();
    all = *std::move(sample);
  }
  for (Schedule& s : all) {
    if (tried.count(s.ToString()) == 0) pool.schedules.push_back(std::move(s));
  }
  return pool;
}

std::vector<SurrogateObservation> SurrogateObservations(
    const SpaceSpec& space, const Ranking& ranking) {
  std::vector<SurrogateObservation> out;
  for (const RankedRow& r : ranking.rows) {
    if (r.is_baseline || r.delta_vs_baseline.n < 1) continue;
    absl::StatusOr<Schedule> s = ParseSchedule(r.schedule);
    if (!s.ok() || s->layers() != space.layers) continue;
    out.push_back(SurrogateObservation{
        ScheduleFeatures(space.d_model, space.base_heads, *s),
        r.delta_vs_baseline.mean, r.delta_vs_baseline.n});
  }
  return out;
}

std::vector<std::string> SuggestionWarnings(const Ranking& ranking) {
  int observed = 0;
  int one_seed = 0;
  for (const RankedRow& r : ranking.rows) {
    if (r.is_baseline || r.delta_vs_baseline.n < 1) continue;
    ++observed;
    if (r.delta_vs_baseline.n == 1) ++one_seed;
  }
  std::vector<std::string> warnings;
  if (observed > 0 && 2 * one_seed > observed) {
    warnings.push_back(absl::StrCat(
        one_seed, " of the ", observed,
        " schedules fitted on have one paired seed: their deltas are a "
        "seed's noise as much as the schedule's effect, so this order is "
        "weak; add seeds first"));
  }
  if (observed < kConfidentSurrogateSchedules) {
    warnings.push_back(absl::StrCat(
        "fitted on ", observed, " schedules (", kConfidentSurrogateSchedules,
        " or more make a surrogate worth following): treat these as "
        "explorations"));
  }
  return warnings;
}

absl::StatusOr<SuggestionSet> ScoreCandidates(const SpaceSpec& space,
                                              const Ranking& ranking,
                                              CandidatePool pool, int n) {
  const std::vector<SurrogateObservation> observations =
      SurrogateObservations(space, ranking);
  absl::StatusOr<Surrogate> fitted = Surrogate::Fit(observations);
  if (!fitted.ok()) return fitted.status();
  const Surrogate& surrogate = *fitted;
  SuggestionSet set;
  set.observed = surrogate.observations();
  std::vector<Suggestion> scored;
  scored.reserve(pool.schedules.size());
  for (const Schedule& s : pool.schedules) {
    const SurrogatePrediction p =
        surrogate.Predict(ScheduleFeatures(space.d_model, space.base_heads, s));
    scored.push_back(
        Suggestion{s.ToString(), p.delta, p.sd, p.delta - kLcbKappa * p.sd});
  }
  auto better = [](const Suggestion& a, const Suggestion& b) {
    if (a.acquisition != b.acquisition) return a.acquisition < b.acquisition;
    return a.schedule < b.schedule;
  };
  const size_t keep = std::min(scored.size(), static_cast<size_t>(n));
  std::partial_sort(scored.begin(), scored.begin() + keep, scored.end(),
                    better);
  scored.resize(keep);
  set.suggestions = std::move(scored);
  set.method = absl::StrCat(
      surrogate.Describe(), "; ranked by the lower confidence bound delta - ",
      kLcbKappa, " sd over ", pool.schedules.size(), " untried schedules",
      pool.sampled ? absl::StrCat(" of ", kSampledCandidates,
                                  " drawn uniformly from a space of ",
                                  pool.space_size.ToString())
                   : absl::StrCat(" (the whole space holds ",
                                  pool.space_size.ToString(), ")"));
  set.pool = std::move(pool);
  return set;
}

absl::StatusOr<SuggestionSet> SuggestSchedules(
    const SpaceSpec& space, const Ranking& ranking,
    const std::set<std::string>& tried, int n, uint64_t seed) {
  if (n < 1 || n > kMaxSuggestions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "n must be between 1 and ", kMaxSuggestions, " (got ", n, ")"));
  }
  absl::StatusOr<CandidatePool> pool = UntriedCandidates(space, tried, seed);
  if (!pool.ok()) return pool.status();
  return ScoreCandidates(space, ranking, *std::move(pool), n);
}

}  // namespace prism
