#include "scheduler/strategy/asha.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace prism {
namespace {

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError(message);
}

// NearestEval rounds a step to the nearest multiple of eval_every, at least
// eval_every.
int64_t NearestEval(double step, int eval_every) {
  return std::max<int64_t>(eval_every,
                           std::llround(step / eval_every) * eval_every);
}

}  // namespace

std::vector<int64_t> DefaultAshaRungs(int64_t steps, int eta, int eval_every,
                                      int count) {
  std::vector<int64_t> rungs;
  if (eta < 2 || eval_every <= 0 || steps <= 0 || count < 1) return rungs;
  const double first = kDefaultFirstRungFraction * static_cast<double>(steps);
  const double ratio = static_cast<double>(steps) / first;
  for (int k = 0; k < count; ++k) {
    const int64_t rung = NearestEval(
        first * std::pow(ratio, static_cast<double>(k) / count), eval_every);
    if (rung >= steps) break;
    if (rungs.empty() || rungs.back() < rung) rungs.push_back(rung);
  }
  return rungs;
}

AshaPlan DefaultAshaPlan(int64_t steps, int eval_every, int seeds) {
  if (seeds >= kStagedMinSeeds && eval_every > 0 && steps > 0) {
    const int64_t rung = NearestEval(
        kStagedRungFraction * static_cast<double>(steps), eval_every);
    if (rung < steps) return AshaPlan{{rung}, kStagedEta, 1};
  }
  return AshaPlan{DefaultAshaRungs(steps, kDefaultAshaEta, eval_every),
                  kDefaultAshaEta, seeds};
}

AshaPlan ResolveAshaPlan(const AshaPlan& asked, int64_t steps, int eval_every,
                         int seeds) {
  if (asked.rungs.empty() && asked.eta == 0 && asked.screen_seeds == 0) {
    return DefaultAshaPlan(steps, eval_every, seeds);
  }
  AshaPlan plan = asked;
  if (plan.eta == 0) plan.eta = kDefaultAshaEta;
  if (plan.rungs.empty()) {
    plan.rungs = DefaultAshaRungs(steps, plan.eta, eval_every);
  }
  if (plan.screen_seeds == 0) plan.screen_seeds = seeds;
  return plan;
}

absl::Status CheckAshaPlan(const std::vector<int64_t>& rungs, int eta,
                           int64_t steps, int eval_every) {
  if (eta < 2) {
    return Invalid(absl::StrCat("asha.eta must be at least 2 (got ", eta,
                                "): 1 / eta of a rung's schedules go on"));
  }
  if (rungs.empty()) {
    return Invalid(
        absl::StrCat("asha.rungs: budget.steps (", steps,
                     ") is too short for a rung below it that is a multiple of "
                     "budget.eval_every (",
                     eval_every, "); list asha.rungs or train longer"));
  }
  for (size_t i = 0; i < rungs.size(); ++i) {
    const std::string field = absl::StrCat("asha.rungs[", i, "] = ", rungs[i]);
    if (rungs[i] <= 0) return Invalid(field + " must be positive");
    if (i > 0 && rungs[i] <= rungs[i - 1]) {
      return Invalid(absl::StrCat(field, " must be above the rung before it (",
                                  rungs[i - 1], "): rungs strictly increase"));
    }
    if (rungs[i] >= steps) {
      return Invalid(absl::StrCat(field, " is not below budget.steps (", steps,
                                  "): a rung is a step before the budget's "
                                  "end"));
    }
    if (eval_every > 0 && rungs[i] % eval_every != 0) {
      return Invalid(absl::StrCat(
          field, " is not a multiple of budget.eval_every (", eval_every,
          "): a rung's score is the val loss at that step"));
    }
  }
  return absl::OkStatus();
}

const char* AshaModeName(AshaMode mode) {
  switch (mode) {
    case AshaMode::kAsynchronous:
      return "asynchronous";
    case AshaMode::kSynchronous:
      return "synchronous";
    case AshaMode::kGuarded:
      return "guarded";
  }
  return "unknown";
}

int AshaRungView::Promoted() const {
  return static_cast<int>(
      std::count_if(entries.begin(), entries.end(),
                    [](const AshaRungEntry& e) { return e.promoted; }));
}

AshaDecision DecideAsha(const std::vector<int64_t>& rungs, int eta,
                        AshaMode mode, const std::vector<AshaTrial>& trials,
                        const std::vector<int64_t>& first_rung_seeds,
                        const std::vector<int64_t>& all_seeds) {
  const std::set<int64_t> screen(first_rung_seeds.begin(),
                                 first_rung_seeds.end());
  // by_schedule: every trial; first_rung: the ones scored at the first rung.
  std::map<std::string, std::vector<const AshaTrial*>> by_schedule;
  std::map<std::string, std::vector<const AshaTrial*>> first_rung;
  std::map<int64_t, const AshaTrial*> baseline_by_seed;
  for (const AshaTrial& t : trials) {
    if (t.is_baseline) {
      baseline_by_seed[t.seed] = &t;
      continue;
    }
    by_schedule[t.schedule].push_back(&t);
    if (screen.empty() || screen.count(t.seed) > 0) {
      first_rung[t.schedule].push_back(&t);
    }
  }
  AshaDecision decision;
  // The first rung's members are every schedule; a later rung's are the
  // ones that went on from the rung below.
  int members = static_cast<int>(by_schedule.size());
  bool below_complete = true;
  for (size_t k = 0; k < rungs.size(); ++k) {
    const int64_t step = rungs[k];
    const int64_t next = k + 1 < rungs.size() ? rungs[k + 1] : 0;
    const std::map<std::string, std::vector<const AshaTrial*>>& scored =
        k == 0 ? first_rung : by_schedule;
    AshaRungView view;
    view.step = step;
    view.members = members;
    // The schedules that reached the rung, and whether every seed among
    // them has the baseline's loss there.
    std::vector<std::pair<std::string, const std::vector<const AshaTrial*>*>>
        reached;
    view.paired = true;
    for (const auto& [schedule, list] : scored) {
      const bool all_there = std::all_of(
          list.begin(), list.end(),
          [step](const AshaTrial* t) { return t->val_loss.count(step) > 0; });
      if (!all_there) {
        const bool ended =
            std::any_of(list.begin(), list.end(), [step](const AshaTrial* t) {
              return t->ended && t->val_loss.count(step) == 0;
            });
        if (ended) ++view.out;
        continue;
      }
      reached.emplace_back(schedule, &list);
      for (const AshaTrial* t : list) {
        auto b = baseline_by_seed.find(t->seed);
        if (b == baseline_by_seed.end() ||
            b->second->val_loss.count(step) == 0) {
          view.paired = false;
        }
      }
    }
    if (reached.empty()) view.paired = false;
    view.complete = below_complete && members > 0 &&
                    static_cast<int>(reached.size()) + view.out >= members;
    for (const auto& [schedule, list] : reached) {
      AshaRungEntry entry;
      entry.schedule = schedule;
      double sum = 0.0;
      for (const AshaTrial* t : *list) {
        double loss = t->val_loss.at(step);
        if (view.paired)
          loss -= baseline_by_seed.at(t->seed)->val_loss.at(step);
        sum += loss;
      }
      entry.seeds = static_cast<int>(list->size());
      entry.score = sum / entry.seeds;
      entry.promoted =
          std::any_of(list->begin(), list->end(), [step](const AshaTrial* t) {
            return t->target_steps == 0 || t->target_steps > step;
          });
      view.entries.push_back(std::move(entry));
    }
    std::sort(view.entries.begin(), view.entries.end(),
              [](const AshaRungEntry& a, const AshaRungEntry& b) {
                return std::tie(a.score, a.schedule) <
                       std::tie(b.score, b.schedule);
              });
    const int n = static_cast<int>(view.entries.size());
    // `slots`: how many more may go on now; `ranks`: only from the best
    // `ranks` of those that reached the rung.
    int slots = 0;
    int ranks = n;
    if (mode == AshaMode::kAsynchronous) {
      view.quota = n / eta;
      slots = view.quota;
      ranks = view.quota;
    } else {
      view.quota = members > 0 ? std::max(1, members / eta) : 0;
      const int allowed = view.complete                ? view.quota
                          : mode == AshaMode::kGuarded ? view.quota / 2
                                                       : 0;
      if (!view.complete) ranks = n / eta;
      slots = std::max(0, allowed - view.Promoted());
    }
    for (int i = 0; i < ranks && slots > 0; ++i) {
      AshaRungEntry& entry = view.entries[i];
      if (entry.promoted) {
        if (mode == AshaMode::kAsynchronous) --slots;
        continue;
      }
      // A schedule still finishing the rung keeps its place: the round after
      // it stops there promotes it, not the next one down.
      --slots;
      const std::vector<const AshaTrial*>& list = scored.at(entry.schedule);
      const bool waiting =
          std::all_of(list.begin(), list.end(), [step](const AshaTrial* t) {
            return t->at_rung && t->target_steps == step;
          });
      if (!waiting) continue;
      entry.promoted = true;
      decision.promotions.push_back(AshaPromotion{entry.schedule, step, next});
      if (k != 0) continue;
      std::set<int64_t> has;
      for (const AshaTrial* t : by_schedule.at(entry.schedule)) {
        has.insert(t->seed);
      }
      for (int64_t seed : all_seeds) {
        if (has.count(seed) == 0) {
          decision.new_seeds.push_back(AshaNewSeed{entry.schedule, seed, next});
        }
      }
    }
    members = view.Promoted();
    below_complete = view.complete;
    decision.rungs.push_back(std::move(view));
  }
  return decision;
}

std::string DescribeAshaDecision(const AshaDecision& d) {
  std::vector<std::string> promoted;
  for (const AshaPromotion& p : d.promotions) {
    promoted.push_back(absl::StrCat(
        p.schedule, " at ", p.from_step, " to ",
        p.to_step == 0 ? std::string("the budget") : absl::StrCat(p.to_step)));
  }
  std::vector<std::string> parts;
  parts.push_back(
      promoted.empty()
          ? std::string("asha: nothing to promote")
          : absl::StrCat("asha: promoted ", absl::StrJoin(promoted, ", ")));
  if (!d.new_seeds.empty()) {
    parts.push_back(absl::StrCat(d.new_seeds.size(),
                                 " trial(s) added on seeds not screened on"));
  }
  for (const AshaRungView& r : d.rungs) {
    parts.push_back(absl::StrCat(
        "rung ", r.step, ": ", r.Promoted(), " of ", r.entries.size(),
        " promoted, quota ", r.quota, " (", r.paired ? "paired" : "raw", ")",
        r.out > 0 ? absl::StrCat(", ", r.out, " ended before it") : ""));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace prism
