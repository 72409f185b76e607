#include "scheduler/screening.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/schedule.h"
#include "scheduler/suggest.h"
#include "scheduler/surrogate.h"

namespace prism {

absl::StatusOr<ScreeningBracket> NextScreeningBracket(
    const ScreeningPlan& plan, const std::vector<RungScore>& scores,
    const std::set<std::string>& tried, int bracket) {
  if (plan.size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "screening: bracket size must be at least 1 (got ", plan.size, ")"));
  }
  if (!(plan.explore >= 0.0 && plan.explore <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "screening: explore must be in [0, 1] (got ", plan.explore, ")"));
  }
  std::set<std::string> excluded = tried;
  excluded.insert(plan.baseline);
  const uint64_t draw_seed =
      plan.seed * 1'000'003ULL + static_cast<uint64_t>(bracket);
  absl::StatusOr<CandidatePool> pool =
      UntriedCandidates(plan.space, excluded, draw_seed);
  if (!pool.ok()) return pool.status();
  ScreeningBracket out;
  std::vector<Schedule> left = ShuffleSchedules(pool->schedules, draw_seed);
  const int size = std::min<int>(plan.size, static_cast<int>(left.size()));

  // The highest rung with enough scored schedules.
  std::map<int64_t, std::vector<const RungScore*>> by_step;
  for (const RungScore& s : scores) by_step[s.step].push_back(&s);
  const std::vector<const RungScore*>* fit = nullptr;
  for (auto it = by_step.rbegin(); it != by_step.rend(); ++it) {
    if (static_cast<int>(it->second.size()) >= kMinSurrogateSchedules) {
      fit = &it->second;
      out.fitted_step = it->first;
      break;
    }
  }
  int model = 0;
  if (bracket > 0 && fit != nullptr) {
    model = size - static_cast<int>(std::lround(plan.explore * size));
  }
  if (model > 0) {
    std::vector<SurrogateObservation> obs;
    for (const RungScore* s : *fit) {
      absl::StatusOr<Schedule> parsed = ParseSchedule(s->schedule);
      if (!parsed.ok()) continue;
      obs.push_back(SurrogateObservation{
          ScheduleFeatures(plan.space.d_model, plan.space.base_heads, *parsed),
          s->delta, std::max(1, s->seeds)});
    }
    absl::StatusOr<Surrogate> surrogate = Surrogate::Fit(obs);
    if (surrogate.ok()) {
      std::vector<std::pair<double, size_t>> ranked;
      for (size_t i = 0; i < left.size(); ++i) {
        const SurrogatePrediction p = surrogate->Predict(ScheduleFeatures(
            plan.space.d_model, plan.space.base_heads, left[i]));
        ranked.emplace_back(p.delta - kLcbKappa * p.sd, i);
      }
      std::sort(ranked.begin(), ranked.end());
      std::vector<bool> taken(left.size(), false);
      for (int k = 0; k < model; ++k) {
        out.schedules.push_back(left[ranked[k].second].ToString());
        taken[ranked[k].second] = true;
      }
      out.model_picks = model;
      // The explorations: the shuffled order's first untaken.
      for (size_t i = 0;
           i < left.size() && static_cast<int>(out.schedules.size()) < size;
           ++i) {
        if (!taken[i]) out.schedules.push_back(left[i].ToString());
      }
      return out;
    }
  }
  out.fitted_step = 0;
  for (int i = 0; i < size; ++i) out.schedules.push_back(left[i].ToString());
  return out;
}

}  // namespace prism
