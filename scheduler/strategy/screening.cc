#include "scheduler/strategy/screening.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "scheduler/space/schedule.h"
#include "scheduler/strategy/suggest.h"
#include "scheduler/strategy/surrogate.h"

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

std::vector<int64_t> DefaultScreeningRungs(int64_t steps, int eta,
                                           int eval_every) {
  return DefaultAshaRungs(steps, eta, eval_every, kDefaultScreeningRungCount);
}

double ScreeningBracketCost(const ScreeningSearch& search, int n) {
  double cost = 0.0;
  int members = n;
  int64_t from = 0;
  for (size_t k = 0; k <= search.rungs.size(); ++k) {
    const int64_t to = k < search.rungs.size() ? search.rungs[k] : search.steps;
    cost += static_cast<double>(members) * search.seeds *
            static_cast<double>(to - from);
    from = to;
    members = std::max(1, members / search.eta);
  }
  return cost;
}

absl::StatusOr<ScreeningDecision> DecideScreening(
    const ScreeningSearch& search, const std::vector<AshaTrial>& trials) {
  if (search.rungs.empty()) {
    return absl::InvalidArgumentError("screening: at least one rung is needed");
  }
  if (!(search.grid_fraction > 0.0 && search.grid_fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("screening: grid_fraction must be in (0, 1] (got ",
                     search.grid_fraction, ")"));
  }
  if (search.plan.size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("screening: bracket size must be at least 1 (got ",
                     search.plan.size, ")"));
  }
  // Brackets by the order the schedules' trials were stored.
  std::vector<const AshaTrial*> baseline;
  std::map<std::string, int> bracket_of;
  std::vector<std::vector<AshaTrial>> brackets;
  for (const AshaTrial& t : trials) {
    if (t.is_baseline) {
      baseline.push_back(&t);
      continue;
    }
    auto [it, inserted] = bracket_of.try_emplace(
        t.schedule, static_cast<int>(bracket_of.size()) / search.plan.size);
    if (inserted && it->second == static_cast<int>(brackets.size())) {
      brackets.emplace_back();
    }
    brackets[it->second].push_back(t);
  }
  ScreeningDecision d;
  d.brackets = static_cast<int>(brackets.size());
  d.projected_steps =
      static_cast<double>(search.seeds) * static_cast<double>(search.steps);
  std::vector<RungScore> scores;
  std::set<std::string> tried;
  bool latest_screened = true;
  for (std::vector<AshaTrial>& bracket : brackets) {
    std::set<std::string> members;
    for (const AshaTrial& t : bracket) members.insert(t.schedule);
    tried.insert(members.begin(), members.end());
    d.projected_steps +=
        ScreeningBracketCost(search, static_cast<int>(members.size()));
    for (const AshaTrial* b : baseline) bracket.push_back(*b);
    AshaDecision a =
        DecideAsha(search.rungs, search.eta, AshaMode::kSynchronous, bracket);
    d.promotions.insert(d.promotions.end(), a.promotions.begin(),
                        a.promotions.end());
    latest_screened = a.rungs.front().complete;
    for (size_t k = 0; k < a.rungs.size(); ++k) {
      const AshaRungView& r = a.rungs[k];
      if (r.paired && r.complete) {
        for (const AshaRungEntry& e : r.entries) {
          scores.push_back(RungScore{e.schedule, r.step, e.score, e.seeds});
        }
      }
      if (d.rungs.size() <= k) {
        AshaRungView sum = r;
        d.rungs.push_back(std::move(sum));
        continue;
      }
      AshaRungView& sum = d.rungs[k];
      sum.members += r.members;
      sum.quota += r.quota;
      sum.paired = sum.paired && r.paired;
      sum.complete = sum.complete && r.complete;
      sum.entries.insert(sum.entries.end(), r.entries.begin(), r.entries.end());
    }
  }
  for (AshaRungView& r : d.rungs) {
    std::sort(r.entries.begin(), r.entries.end(),
              [](const AshaRungEntry& a, const AshaRungEntry& b) {
                return std::tie(a.score, a.schedule) <
                       std::tie(b.score, b.schedule);
              });
  }
  if (!latest_screened) return d;
  const double budget = search.grid_fraction * search.grid_steps;
  if (d.brackets > 0 &&
      d.projected_steps + ScreeningBracketCost(search, search.plan.size) >
          budget) {
    d.budget_reached = true;
    return d;
  }
  absl::StatusOr<ScreeningBracket> next =
      NextScreeningBracket(search.plan, scores, tried, d.brackets);
  if (!next.ok()) return next.status();
  if (next->schedules.empty()) {
    d.exhausted = true;
    return d;
  }
  d.projected_steps +=
      ScreeningBracketCost(search, static_cast<int>(next->schedules.size()));
  d.added = std::move(*next);
  return d;
}

std::string DescribeScreeningDecision(const ScreeningSearch& search,
                                      const ScreeningDecision& d) {
  std::vector<std::string> parts;
  if (!d.added.schedules.empty()) {
    const int random =
        static_cast<int>(d.added.schedules.size()) - d.added.model_picks;
    parts.push_back(d.added.model_picks > 0
                        ? absl::StrCat("screening: bracket ", d.brackets,
                                       " opened, ", d.added.model_picks,
                                       " surrogate picks (fitted at step ",
                                       d.added.fitted_step, ") and ", random,
                                       " random")
                        : absl::StrCat("screening: bracket ", d.brackets,
                                       " opened, ", random, " random"));
  } else {
    parts.push_back(d.budget_reached ? "screening: budget reached"
                    : d.exhausted    ? "screening: no schedule left to add"
                                     : "screening: no bracket due");
  }
  std::vector<std::string> promoted;
  for (const AshaPromotion& p : d.promotions) {
    promoted.push_back(absl::StrCat(
        p.schedule, " at ", p.from_step, " to ",
        p.to_step == 0 ? std::string("the budget") : absl::StrCat(p.to_step)));
  }
  if (!promoted.empty()) {
    parts.push_back(absl::StrCat("promoted ", absl::StrJoin(promoted, ", ")));
  }
  const int brackets = d.brackets + (d.added.schedules.empty() ? 0 : 1);
  parts.push_back(absl::StrFormat(
      "%d bracket%s, %.1f%% of the grid's steps projected (budget %.0f%%)",
      brackets, brackets == 1 ? "" : "s",
      search.grid_steps > 0 ? 100.0 * d.projected_steps / search.grid_steps
                            : 0.0,
      100.0 * search.grid_fraction));
  return absl::StrJoin(parts, "; ");
}

}  // namespace prism
