#include "server/core/experiments/extend.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "scheduler/space/schedule.h"
#include "server/core/experiments/spec.h"
#include "server/core/infra/convert.h"

namespace prism::server {
namespace {

absl::Status Invalid(absl::string_view a, absl::string_view b = "") {
  return absl::InvalidArgumentError(absl::StrCat(a, b));
}

// CheckRequestShape refuses what is wrong in the request by itself.
absl::Status CheckRequestShape(const v1::ExtendRequest& r) {
  const int kinds = (r.add_seeds() != 0 ? 1 : 0) + (r.to_seeds() != 0 ? 1 : 0) +
                    (r.seeds().empty() ? 0 : 1);
  if (kinds > 1) {
    return Invalid(
        "add_seeds, to_seeds, seeds: set at most one (more seeds, seeds in "
        "all, or the seeds themselves)");
  }
  if (r.add_seeds() < 0) {
    return Invalid("add_seeds must be positive (got ",
                   absl::StrCat(r.add_seeds(), ")"));
  }
  if (r.to_seeds() < 0) {
    return Invalid("to_seeds must be positive (got ",
                   absl::StrCat(r.to_seeds(), ")"));
  }
  std::set<int64_t> listed;
  for (int i = 0; i < r.seeds_size(); ++i) {
    if (!listed.insert(r.seeds(i)).second) {
      return Invalid(absl::StrCat("seeds[", i, "]: seed ", r.seeds(i)),
                     " is listed twice");
    }
  }
  if (kinds == 0 && !r.seed_schedules().empty()) {
    return Invalid(
        "seed_schedules: names the schedules that get new seeds; set "
        "add_seeds, to_seeds or seeds too");
  }
  if (kinds == 0 && r.schedules().empty()) {
    return Invalid(
        "nothing to add: set add_seeds, to_seeds or seeds, or schedules");
  }
  return absl::OkStatus();
}

bool ReachedWholeBudget(const storage::TrialKey& k) {
  return k.state == v1::TRIAL_COMPLETED ||
         ((k.state == v1::TRIAL_QUEUED || k.state == v1::TRIAL_LEASED ||
           k.state == v1::TRIAL_RUNNING) &&
          k.target_steps == 0);
}

// Inventory is what the experiment has: each schedule's seeds, its seeds
// in sequence order, and the schedules it ranks.
struct Inventory {
  std::string baseline;
  std::map<std::string, std::set<int64_t>> seeds_of;  // baseline included
  std::vector<int64_t> seeds;  // every seed it has a trial on, in order
  std::set<int64_t> seed_set;
  std::vector<int64_t> fresh;    // the sequence's unused seeds, in order
  std::set<std::string> ranked;  // trained to the whole budget
};

// SequenceOf is the experiment's seed order: the spec's seeds, racing's,
// then any other seed its trials have, ascending.
std::vector<int64_t> SequenceOf(const v1::ExperimentSpec& spec,
                                const std::set<int64_t>& stored) {
  std::vector<int64_t> sequence;
  std::set<int64_t> seen;
  const auto add = [&](int64_t s) {
    if (seen.insert(s).second) sequence.push_back(s);
  };
  for (int64_t s : spec.seeds()) add(s);
  for (int64_t s : spec.racing().seeds()) add(s);
  for (int64_t s : stored) add(s);
  return sequence;
}

Inventory TakeInventory(const v1::ExperimentSpec& spec,
                        const std::vector<storage::TrialKey>& keys) {
  Inventory inv;
  const SpaceSpec space = SpaceForSpec(spec);
  inv.baseline = Schedule::Uniform(space.base_heads, space.layers).ToString();
  // Under ASHA and guided screening a schedule stopped at a rung is not
  // ranked; under every other strategy each trial trains the whole budget.
  const bool rungs = spec.strategy() == v1::STRATEGY_ASHA ||
                     spec.strategy() == v1::STRATEGY_GUIDED_SCREENING;
  for (const storage::TrialKey& k : keys) {
    inv.seeds_of[k.schedule].insert(k.seed);
    inv.seed_set.insert(k.seed);
    if (!k.is_baseline && (!rungs || ReachedWholeBudget(k))) {
      inv.ranked.insert(k.schedule);
    }
  }
  // Every schedule that may get seeds has an entry, the baseline included.
  inv.seeds_of.try_emplace(inv.baseline);
  int64_t largest = 0;
  bool any = false;
  for (int64_t s : SequenceOf(spec, inv.seed_set)) {
    largest = any ? std::max(largest, s) : s;
    any = true;
    if (inv.seed_set.count(s)) {
      inv.seeds.push_back(s);
    } else {
      inv.fresh.push_back(s);
    }
  }
  // Then the integers above the largest: enough for any request within the
  // seed limits (kMaxPolicySeeds per schedule).
  for (int64_t i = 1; i <= 64 && largest <= INT64_MAX - i; ++i) {
    inv.fresh.push_back(largest + i);
  }
  return inv;
}

// ChooseSeeds returns the seeds each schedule getting seeds should have
// among its own (to_seeds: the experiment's first N; otherwise the new
// ones), or an empty list when only schedules are added.
absl::StatusOr<std::vector<int64_t>> ChooseSeeds(const v1::ExtendRequest& r,
                                                 const Inventory& inv) {
  std::vector<int64_t> chosen;
  if (r.add_seeds() > 0) {
    if (r.add_seeds() > static_cast<int>(inv.fresh.size())) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "add_seeds is ", r.add_seeds(), "; limit 64 seeds per schedule"));
    }
    chosen.assign(inv.fresh.begin(), inv.fresh.begin() + r.add_seeds());
  } else if (r.to_seeds() > 0) {
    const int have = static_cast<int>(inv.seeds.size());
    if (r.to_seeds() <= have) {
      return Invalid(
          absl::StrCat("to_seeds: ", r.to_seeds(), " is not above the ", have,
                       " seeds the experiment has"),
          absl::StrCat(" (", absl::StrJoin(inv.seeds, ", "), ")"));
    }
    if (r.to_seeds() - have > static_cast<int>(inv.fresh.size())) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "to_seeds is ", r.to_seeds(), "; limit 64 seeds per schedule"));
    }
    chosen = inv.seeds;
    chosen.insert(chosen.end(), inv.fresh.begin(),
                  inv.fresh.begin() + (r.to_seeds() - have));
  } else {
    for (int i = 0; i < r.seeds_size(); ++i) {
      if (inv.seed_set.count(r.seeds(i))) {
        return Invalid(
            absl::StrCat("seeds[", i,
                         "]: the experiment already "
                         "has seed ",
                         r.seeds(i)),
            absl::StrCat(" (its seeds: ", absl::StrJoin(inv.seeds, ", "), ")"));
      }
      chosen.push_back(r.seeds(i));
    }
  }
  return chosen;
}

// SeedTargets returns the schedules that get the new seeds: the ranked ones
// (or seed_schedules, each one of them) and the baseline, first.
absl::StatusOr<std::vector<std::string>> SeedTargets(const v1::ExtendRequest& r,
                                                     const Inventory& inv) {
  std::vector<std::string> targets = {inv.baseline};
  if (r.seed_schedules().empty()) {
    for (const std::string& s : inv.ranked) targets.push_back(s);
    return targets;
  }
  std::set<std::string> seen = {inv.baseline};
  for (int i = 0; i < r.seed_schedules_size(); ++i) {
    const std::string field =
        absl::StrCat("seed_schedules[", i, "] '", r.seed_schedules(i), "': ");
    absl::StatusOr<Schedule> s = ParseSchedule(r.seed_schedules(i));
    if (!s.ok()) return Invalid(field, s.status().message());
    const std::string canonical = s->ToString();
    if (canonical != inv.baseline && !inv.ranked.count(canonical)) {
      return Invalid(field,
                     "is not a schedule this experiment trained to the whole "
                     "budget (`prism results` lists them)");
    }
    if (seen.insert(canonical).second) targets.push_back(canonical);
  }
  return targets;
}

// NewSchedules checks and canonicalises request.schedules.
absl::StatusOr<std::vector<std::string>> NewSchedules(
    const v1::ExtendRequest& r, const v1::ExperimentSpec& spec,
    const Inventory& inv) {
  const SpaceSpec space = SpaceForSpec(spec);
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (int i = 0; i < r.schedules_size(); ++i) {
    const std::string field = absl::StrCat("schedules[", i, "]");
    PRISM_ASSIGN_OR_RETURN(Schedule s,
                           CheckScheduleInSpace(space, field, r.schedules(i)));
    const std::string canonical = s.ToString();
    const std::string where = absl::StrCat(field, " '", r.schedules(i), "': ");
    if (inv.seeds_of.count(canonical)) {
      return Invalid(where,
                     "the experiment already has it (add seeds to it with "
                     "seed_schedules)");
    }
    if (!seen.insert(canonical).second) {
      return Invalid(where, "is listed twice");
    }
    out.push_back(canonical);
  }
  return out;
}

// UpdatedSpec is the stored spec with the new seeds appended (taken out of
// racing's further seeds) and, where the spec lists its schedules, the new
// schedules.
v1::ExperimentSpec UpdatedSpec(const v1::ExperimentSpec& spec,
                               const std::vector<int64_t>& seeds_added,
                               const std::vector<std::string>& schedules) {
  v1::ExperimentSpec out = spec;
  std::set<int64_t> have(out.seeds().begin(), out.seeds().end());
  for (int64_t s : seeds_added) {
    if (have.insert(s).second) out.add_seeds(s);
  }
  if (out.racing().seeds_size() > 0) {
    std::vector<int64_t> further;
    for (int64_t s : out.racing().seeds()) {
      if (!have.count(s)) further.push_back(s);
    }
    *out.mutable_racing()->mutable_seeds() = {further.begin(), further.end()};
  }
  if (!out.schedules().empty()) {
    for (const std::string& s : schedules) out.add_schedules(s);
  }
  return out;
}

}  // namespace

absl::StatusOr<ExtensionPlan> PlanExtension(
    const v1::Experiment& experiment,
    const std::vector<storage::TrialKey>& keys,
    const v1::ExtendRequest& request) {
  PRISM_RETURN_IF_ERROR(CheckRequestShape(request));
  const v1::ExperimentSpec& spec = experiment.spec();
  const Inventory inv = TakeInventory(spec, keys);
  PRISM_ASSIGN_OR_RETURN(std::vector<int64_t> chosen,
                         ChooseSeeds(request, inv));
  PRISM_ASSIGN_OR_RETURN(std::vector<std::string> targets,
                         SeedTargets(request, inv));
  PRISM_ASSIGN_OR_RETURN(std::vector<std::string> schedules,
                         NewSchedules(request, spec, inv));

  ExtensionPlan plan;
  for (int64_t s : chosen) {
    if (!inv.seed_set.count(s)) plan.seeds_added.push_back(s);
  }
  const auto note_seeds = [&](const std::string& schedule, int count) {
    if (count > plan.most_seeds) {
      plan.most_seeds = count;
      plan.most_seeds_schedule = schedule;
    }
  };
  if (!chosen.empty()) {
    for (const std::string& t : targets) {
      const std::set<int64_t>& has = inv.seeds_of.at(t);
      int count = static_cast<int>(has.size());
      for (int64_t s : chosen) {
        if (has.count(s)) continue;
        plan.trials.push_back(storage::NewTrial{t, s, t == inv.baseline});
        ++count;
      }
      note_seeds(t, count);
    }
  }
  // New schedules train on every seed: the experiment's and the new ones.
  std::vector<int64_t> every = inv.seeds;
  every.insert(every.end(), plan.seeds_added.begin(), plan.seeds_added.end());
  for (const std::string& s : schedules) {
    for (int64_t seed : every) {
      plan.trials.push_back(storage::NewTrial{s, seed, false});
    }
    note_seeds(s, static_cast<int>(every.size()));
  }
  if (plan.trials.empty()) {
    return Invalid(
        "nothing to add: every schedule named already has those seeds");
  }
  plan.schedules_added = schedules;
  plan.spec = UpdatedSpec(spec, plan.seeds_added, schedules);
  for (const storage::TrialKey& k : keys) {
    if (k.state == v1::TRIAL_COMPLETED || k.state == v1::TRIAL_DIVERGED) {
      ++plan.trials_reused;
    }
  }
  plan.trials_after = static_cast<int64_t>(keys.size() + plan.trials.size());
  return plan;
}

}  // namespace prism::server
