#include "server/core/experiments/ladder.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/analysis/transfer.h"
#include "scheduler/space/profile.h"
#include "scheduler/space/schedule.h"
#include "server/core/infra/convert.h"

namespace prism::server {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

std::string RungField(int rung) {
  return absl::StrCat("ladder.rungs[", rung, "]");
}

// Carry is one schedule chosen at a rung to run at the next.
struct Carry {
  std::string schedule;
  std::string role;
};

// ChooseCarried returns the best-set (by rank, at most top_k), then the
// worst and the median ranked schedule when not already in it. Empty when
// the best-set is.
std::vector<Carry> ChooseCarried(const Ranking& ranking, int top_k) {
  std::vector<Carry> carried;
  std::set<std::string> taken;
  for (const std::string& s : ranking.verdicts.best_set) {
    if (ranking.baseline && s == ranking.baseline->schedule) continue;
    if (static_cast<int>(carried.size()) >= top_k) break;
    carried.push_back({s, "best-set"});
    taken.insert(s);
  }
  if (carried.empty()) return carried;
  // Controls come from the schedules with a verdict (2+ paired seeds),
  // which RankedRow orders by mean paired delta.
  std::vector<std::string> ranked;
  for (const RankedRow& r : ranking.rows) {
    if (r.is_baseline || r.verdict == Verdict::kNeedsSeeds ||
        r.verdict == Verdict::kNone) {
      continue;
    }
    ranked.push_back(r.schedule);
  }
  if (ranked.empty()) return carried;
  for (const auto& [s, role] :
       {std::make_pair(ranked.back(), "worst"),
        std::make_pair(ranked[(ranked.size() - 1) / 2], "median")}) {
    if (taken.insert(s).second) carried.push_back({s, role});
  }
  return carried;
}

}  // namespace

std::string LadderSizeName(const ModelShape& shape) {
  absl::StatusOr<ModelShape> preset = FindPreset(shape.name);
  if (preset.ok() && preset->d_model == shape.d_model &&
      preset->layers == shape.layers &&
      preset->base_heads == shape.base_heads) {
    return preset->name;
  }
  return absl::StrCat("d", shape.d_model, "-l", shape.layers, "-h",
                      shape.base_heads);
}

absl::StatusOr<v1::ExperimentSpec> CheckLadder(const v1::ExperimentSpec& spec,
                                               const PlanOptions& options) {
  const v1::LadderPolicy& ladder = spec.ladder();
  if (ladder.rungs_size() < 2) {
    return Invalid("ladder.rungs",
                   absl::StrCat("a ladder needs at least 2 rungs, smallest "
                                "first (got ",
                                ladder.rungs_size(), ")"));
  }
  if (ladder.has_top_k() && ladder.top_k() < 1) {
    return Invalid("ladder.top_k", absl::StrCat("must be at least 1 (got ",
                                                ladder.top_k(), ")"));
  }
  const std::pair<const char*, bool> own[] = {
      {"model", spec.has_model()},
      {"strategy", spec.strategy() != v1::STRATEGY_UNSPECIFIED},
      {"samples", spec.samples() != 0},
      {"guided", spec.has_guided()},
      {"asha", spec.has_asha()},
      {"screening", spec.has_screening()},
  };
  for (const auto& [field, set] : own) {
    if (set) {
      return Invalid(field,
                     "a ladder's rungs say it (set it in ladder.rungs[i])");
    }
  }
  if (spec.has_seeds_policy()) {
    return Invalid("seeds_policy",
                   "not combinable with a ladder: each rung lists its seeds");
  }
  if (!spec.ladder_carried().empty()) {
    return Invalid("ladder_carried", "is set by the coordinator");
  }
  // The spec's budget is stored once, for the whole ladder; each rung keeps
  // only its own fields (RungSpec merges them), so a ladder stores what was
  // submitted, not a copy of the budget per rung.
  v1::ExperimentSpec normal = spec;
  *normal.mutable_ladder()->mutable_budget() = spec.budget();
  std::vector<ModelShape> shapes;
  for (int i = 0; i < ladder.rungs_size(); ++i) {
    v1::LadderRung* rung = normal.mutable_ladder()->mutable_rungs(i);
    const std::string field = RungField(i);
    if (!rung->has_model()) {
      return Invalid(absl::StrCat(field, ".model"),
                     "required (a preset and/or a shape); an empty rung has "
                     "no size");
    }
    if (i > 0 && ((rung->strategy() != v1::STRATEGY_UNSPECIFIED &&
                   rung->strategy() != v1::STRATEGY_GRID) ||
                  rung->samples() != 0 || rung->has_guided() ||
                  rung->has_asha() || rung->has_screening())) {
      return Invalid(absl::StrCat(field, ".strategy"),
                     "only the first rung searches; a later rung trains "
                     "exactly the schedules carried up, as a grid");
    }
    if (rung->seeds().empty()) *rung->mutable_seeds() = spec.seeds();
    absl::StatusOr<ModelShape> shape = ResolveModelShape(rung->model());
    if (!shape.ok()) {
      return Invalid(field, shape.status().message());
    }
    if (!shapes.empty()) {
      const ModelShape& below = shapes.back();
      if (shape->layers < below.layers || shape->d_model < below.d_model ||
          (shape->layers == below.layers && shape->d_model == below.d_model)) {
        return Invalid(
            absl::StrCat(field, ".model"),
            absl::StrCat("sizes must grow, smallest first: rung ", i + 1, " (",
                         LadderSizeName(*shape), ": d_model ", shape->d_model,
                         ", ", shape->layers,
                         " layers) is not larger than rung ", i, " (",
                         LadderSizeName(below), ": d_model ", below.d_model,
                         ", ", below.layers, " layers)"));
      }
    }
    shapes.push_back(*shape);
  }
  // Plan every rung: rung 0 as it will run, a later one over its baseline
  // only (its schedules are known when the rung below is done).
  for (int i = 0; i < ladder.rungs_size(); ++i) {
    v1::ExperimentSpec rung = RungSpec(normal, i);
    if (i > 0) {
      rung.add_schedules(
          Schedule::Uniform(shapes[i].base_heads, shapes[i].layers).ToString());
    }
    absl::StatusOr<ExperimentPlan> plan = PlanExperiment(rung, options);
    if (!plan.ok()) return Invalid(RungField(i), plan.status().message());
  }
  // A listed first-rung schedule must map all the way up.
  for (const std::string& text : spec.schedules()) {
    absl::StatusOr<Schedule> s = ParseSchedule(text);
    if (!s.ok()) return Invalid("schedules", s.status().message());
    Schedule current = *s;
    for (size_t i = 1; i < shapes.size(); ++i) {
      absl::StatusOr<ScheduleMapping> m =
          MapSchedule(current, shapes[i - 1], shapes[i]);
      if (!m.ok()) {
        return Invalid(
            absl::StrCat(RungField(static_cast<int>(i)), ".model"),
            absl::StrCat("schedule ", text, " cannot be carried to rung ",
                         i + 1, " (", LadderSizeName(shapes[i]),
                         "): ", m.status().message()));
      }
      current = m->mapped;
    }
  }
  return normal;
}

namespace {

// LadderName is the name the ladder was submitted under: every rung's
// experiment, rung 1's included, carries it with a " [rung i/n: size]"
// suffix, and the next rung is planned from the rung below's spec.
std::string LadderName(const std::string& name) {
  const size_t at = name.rfind(" [rung ");
  if (at == std::string::npos || !absl::EndsWith(name, "]")) return name;
  return name.substr(0, at);
}

}  // namespace

v1::ExperimentSpec RungSpec(const v1::ExperimentSpec& spec, int rung) {
  v1::ExperimentSpec out = spec;
  const v1::LadderRung& r = spec.ladder().rungs(rung);
  *out.mutable_model() = r.model();
  // A ladder stored before ladder.budget existed has each rung's whole
  // budget in the rung (and no ladder budget): merging over nothing keeps it.
  v1::Budget budget = spec.ladder().budget();
  budget.MergeFrom(r.budget());
  *out.mutable_budget() = std::move(budget);
  *out.mutable_seeds() = r.seeds();
  out.clear_ladder_carried();
  out.clear_strategy();
  out.clear_samples();
  out.clear_guided();
  out.clear_asha();
  out.clear_screening();
  if (rung == 0) {
    out.set_strategy(r.strategy());
    out.set_samples(r.samples());
    if (r.has_guided()) *out.mutable_guided() = r.guided();
    if (r.has_asha()) *out.mutable_asha() = r.asha();
    if (r.has_screening()) *out.mutable_screening() = r.screening();
  } else {
    out.set_strategy(v1::STRATEGY_GRID);
    out.clear_schedules();
  }
  const std::string size = r.model().preset().empty()
                               ? absl::StrCat("d", r.model().d_model())
                               : r.model().preset();
  out.set_name(absl::StrCat(LadderName(spec.name()), " [rung ", rung + 1, "/",
                            spec.ladder().rungs_size(), ": ", size, "]"));
  return out;
}

LadderPlanner::LadderPlanner(storage::ExperimentStore* experiments,
                             const Clock* clock, PlanOptions plan_options)
    : experiments_(experiments),
      clock_(clock),
      plan_options_(std::move(plan_options)) {}

void LadderPlanner::SubscribeTo(FinishSignal* finished) {
  finished->Subscribe("ladder", [this](int64_t experiment_id) {
    absl::StatusOr<int64_t> next = ExperimentChanged(experiment_id);
    if (!next.ok()) {
      Log(LogLevel::kWarning, "ladder advance failed")
          .Kv("experiment", experiment_id)
          .Kv("error", next.status().ToString());
    }
  });
}

absl::StatusOr<int64_t> LadderPlanner::ExperimentChanged(
    int64_t experiment_id) {
  absl::MutexLock lock(&mu_);
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e,
                         experiments_->GetExperiment(experiment_id));
  if (e.ladder_id() == 0 || !e.spec().has_ladder() ||
      e.state() != v1::EXPERIMENT_DONE) {
    return 0;
  }
  const int next = e.ladder_rung() + 1;
  const v1::LadderPolicy& ladder = e.spec().ladder();
  if (next >= ladder.rungs_size()) return 0;
  PRISM_ASSIGN_OR_RETURN(int64_t existing,
                         experiments_->FindLadderRung(e.ladder_id(), next));
  if (existing != 0) {
    if (e.ladder_note().empty()) {
      PRISM_RETURN_IF_ERROR(experiments_->SetLadderNote(
          e.id(),
          absl::StrCat("rung ", next + 1, " submitted as experiment ",
                       existing),
          clock_->NowMs()));
    }
    return existing;
  }
  if (absl::StartsWith(e.ladder_note(), "FAILED_PRECONDITION")) return 0;

  const ModelShape from = ShapeForSpec(e.spec());
  PRISM_ASSIGN_OR_RETURN(ModelShape to,
                         ResolveModelShape(ladder.rungs(next).model()));
  const std::string from_name = LadderSizeName(from);
  const std::string to_name = LadderSizeName(to);
  auto stop = [&](const std::string& why) -> absl::StatusOr<int64_t> {
    const std::string note =
        absl::StrCat("FAILED_PRECONDITION: the ladder stops at rung ",
                     e.ladder_rung() + 1, " (", from_name, "): ", why);
    Log(LogLevel::kWarning, "ladder stopped")
        .Kv("experiment", e.id())
        .Kv("ladder", e.ladder_id())
        .Kv("why", note);
    PRISM_RETURN_IF_ERROR(
        experiments_->SetLadderNote(e.id(), note, clock_->NowMs()));
    return 0;
  };

  const SpaceSpec space = SpaceForSpec(e.spec());
  const std::string baseline =
      Schedule::Uniform(space.base_heads, space.layers).ToString();
  PRISM_ASSIGN_OR_RETURN(std::vector<TrialOutcome> outcomes,
                         experiments_->ListFinishedOutcomes(e.id()));
  const Ranking ranking =
      RankSchedules(space, baseline, outcomes, VerdictOptionsOf(e.spec()));
  const int top_k = ladder.has_top_k() ? ladder.top_k() : kDefaultLadderTopK;
  const std::vector<Carry> chosen = ChooseCarried(ranking, top_k);
  if (chosen.empty()) {
    return stop(absl::StrCat(
        "its best-set is empty (no schedule has 2 seeds paired with the "
        "baseline ",
        baseline, "), so nothing can be carried to rung ", next + 1, " (",
        to_name, ")"));
  }
  MapOptions map_options;
  map_options.min_run = space.min_run;
  map_options.max_run = space.max_run;
  const std::string to_baseline =
      Schedule::Uniform(to.base_heads, to.layers).ToString();
  v1::ExperimentSpec spec = RungSpec(e.spec(), next);
  std::set<std::string> taken = {to_baseline};
  for (const Carry& c : chosen) {
    absl::StatusOr<Schedule> s = ParseSchedule(c.schedule);
    if (!s.ok()) return s.status();
    absl::StatusOr<ScheduleMapping> m = MapSchedule(*s, from, to, map_options);
    if (!m.ok()) {
      return stop(absl::StrCat("schedule ", c.schedule, " (", c.role,
                               ") cannot be mapped to rung ", next + 1, " (",
                               to_name, "): ", m.status().message()));
    }
    const std::string image = m->mapped.ToString();
    if (!taken.insert(image).second) continue;
    spec.add_schedules(image);
    v1::LadderCarried* carried = spec.add_ladder_carried();
    carried->set_source(c.schedule);
    carried->set_schedule(image);
    carried->set_role(c.role);
    carried->set_max_error(m->distortion.max_error);
  }
  v1::LadderCarried* base = spec.add_ladder_carried();
  base->set_source(baseline);
  base->set_schedule(to_baseline);
  base->set_role("baseline");
  absl::StatusOr<ExperimentPlan> plan = PlanExperiment(spec, plan_options_);
  if (!plan.ok()) {
    return stop(absl::StrCat(
        "rung ", next + 1, " (", to_name,
        ") cannot run the carried schedules: ", plan.status().message()));
  }
  storage::NewExperiment created =
      ToNewExperiment(std::move(*plan), e.owner(), clock_->NowMs());
  created.ladder_id = e.ladder_id();
  created.ladder_rung = next;
  Failpoint("ladder.rung_done");
  absl::StatusOr<storage::CreatedExperiment> stored =
      experiments_->CreateExperiment(created);
  if (absl::IsAlreadyExists(stored.status())) {
    return experiments_->FindLadderRung(e.ladder_id(), next);
  }
  if (!stored.ok()) return stored.status();
  Failpoint("ladder.submitted");
  const int carried = spec.ladder_carried_size() - 1;
  PRISM_RETURN_IF_ERROR(experiments_->SetLadderNote(
      e.id(),
      absl::StrCat("rung ", next + 1, " submitted as experiment ", stored->id),
      clock_->NowMs()));
  Log(LogLevel::kInfo, "ladder rung submitted")
      .Kv("ladder", e.ladder_id())
      .Kv("rung", next + 1)
      .Kv("size", to_name)
      .Kv("experiment", stored->id)
      .Kv("schedules", carried);
  return stored->id;
}

absl::StatusOr<int> LadderPlanner::ReconcileAll() {
  int submitted = 0;
  int64_t after = 0;
  do {
    PRISM_ASSIGN_OR_RETURN(storage::ExperimentPage page,
                           experiments_->ListExperiments("", 100, after));
    for (const v1::Experiment& e : page.experiments) {
      if (e.ladder_id() == 0 || e.state() != v1::EXPERIMENT_DONE) continue;
      if (e.ladder_rung() + 1 >= e.spec().ladder().rungs_size()) continue;
      PRISM_ASSIGN_OR_RETURN(
          int64_t before,
          experiments_->FindLadderRung(e.ladder_id(), e.ladder_rung() + 1));
      absl::StatusOr<int64_t> next = ExperimentChanged(e.id());
      if (!next.ok()) {
        Log(LogLevel::kWarning, "ladder advance failed")
            .Kv("experiment", e.id())
            .Kv("error", next.status().ToString());
        continue;
      }
      if (before == 0 && *next != 0) ++submitted;
    }
    after = page.next_after_id;
  } while (after != 0);
  return submitted;
}

absl::StatusOr<v1::LadderTransferResponse> MeasureLadder(
    storage::ExperimentStore* experiments, int64_t experiment_id) {
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e,
                         experiments->GetExperiment(experiment_id));
  if (e.ladder_id() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", experiment_id,
                     " is not a ladder's (its spec has no "
                     "ladder)"));
  }
  PRISM_ASSIGN_OR_RETURN(std::vector<v1::Experiment> rungs,
                         experiments->ListLadder(e.ladder_id()));
  v1::LadderTransferResponse response;
  response.set_ladder_id(e.ladder_id());
  response.set_planned_rungs(e.spec().ladder().rungs_size());
  for (const v1::Experiment& r : rungs) *response.add_rungs() = r;
  for (size_t i = 0; i + 1 < rungs.size(); ++i) {
    const v1::Experiment& a = rungs[i];
    const v1::Experiment& b = rungs[i + 1];
    v1::LadderPair* pair = response.add_pairs();
    pair->set_small_rung(a.ladder_rung());
    pair->set_small_experiment_id(a.id());
    pair->set_large_experiment_id(b.id());
    const ModelShape shape_a = ShapeForSpec(a.spec());
    const ModelShape shape_b = ShapeForSpec(b.spec());
    pair->set_small_size(LadderSizeName(shape_a));
    pair->set_large_size(LadderSizeName(shape_b));
    if (b.state() != v1::EXPERIMENT_DONE) {
      pair->set_note(absl::StrCat("rung ", b.ladder_rung() + 1, " is ",
                                  v1::ExperimentState_Name(b.state()),
                                  ": measured once it is done"));
      continue;
    }
    const SpaceSpec space_a = SpaceForSpec(a.spec());
    const std::string baseline_a =
        Schedule::Uniform(space_a.base_heads, space_a.layers).ToString();
    const std::string baseline_b =
        Schedule::Uniform(shape_b.base_heads, shape_b.layers).ToString();
    TransferInput input;
    std::vector<std::string> images;
    // The baseline's delta is 0 at both sizes by construction: a fixed
    // point that would pull the correlation toward however the others sit
    // around it, so it is a point of the scatter, not of the statistics.
    std::vector<std::string> roles;
    for (const v1::LadderCarried& c : b.spec().ladder_carried()) {
      if (c.role() == "baseline") continue;
      input.schedules.push_back(c.source());
      images.push_back(c.schedule());
      roles.push_back(c.role());
    }
    PRISM_ASSIGN_OR_RETURN(std::vector<TrialOutcome> small_trials,
                           experiments->ListFinishedOutcomes(a.id()));
    PRISM_ASSIGN_OR_RETURN(std::vector<TrialOutcome> large_trials,
                           experiments->ListFinishedOutcomes(b.id()));
    const Ranking small_ranking = RankSchedules(
        space_a, baseline_a, small_trials, VerdictOptionsOf(a.spec()));
    const std::set<std::string> matched(input.schedules.begin(),
                                        input.schedules.end());
    for (const std::string& s : small_ranking.verdicts.best_set) {
      if (matched.count(s) != 0) input.small_best_set.push_back(s);
    }
    absl::StatusOr<SizeDeltas> small = CollectPairedDeltas(
        pair->small_size(), baseline_a, input.schedules, small_trials);
    absl::StatusOr<SizeDeltas> large = CollectPairedDeltas(
        pair->large_size(), baseline_b, images, large_trials);
    absl::StatusOr<TransferStatistics> t =
        !small.ok()   ? absl::StatusOr<TransferStatistics>(small.status())
        : !large.ok() ? absl::StatusOr<TransferStatistics>(large.status())
                      : [&] {
                          input.small = *std::move(small);
                          input.large = *std::move(large);
                          return MeasureTransfer(input);
                        }();
    if (!t.ok()) {
      pair->set_note(absl::StrCat("not measurable: ", t.status().message()));
      continue;
    }
    pair->set_schedules(t->schedules);
    pair->set_small_seeds(t->small_seeds);
    pair->set_large_seeds(t->large_seeds);
    pair->mutable_spearman()->set_estimate(t->spearman.estimate);
    pair->mutable_spearman()->set_low(t->spearman.low);
    pair->mutable_spearman()->set_high(t->spearman.high);
    pair->mutable_kendall()->set_estimate(t->kendall.estimate);
    pair->mutable_kendall()->set_low(t->kendall.low);
    pair->mutable_kendall()->set_high(t->kendall.high);
    for (size_t k = 0; k < input.schedules.size(); ++k) {
      if (input.schedules[k] == t->large_best) {
        pair->set_large_best(images[k]);
      }
    }
    if (t->best_set_contains_large_best.has_value()) {
      pair->set_best_set_holds_large_best(*t->best_set_contains_large_best);
    }
    pair->set_method(t->method);
    for (size_t k = 0; k < input.schedules.size(); ++k) {
      v1::LadderPoint* p = pair->add_points();
      p->set_small_schedule(input.schedules[k]);
      p->set_large_schedule(images[k]);
      p->set_role(roles[k]);
      p->set_small_delta(t->small_means[k]);
      p->set_large_delta(t->large_means[k]);
    }
    v1::LadderPoint* base = pair->add_points();
    base->set_small_schedule(baseline_a);
    base->set_large_schedule(baseline_b);
    base->set_role("baseline");
  }
  return response;
}

}  // namespace prism::server
