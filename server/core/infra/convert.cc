#include "server/core/infra/convert.h"

#include <cmath>
#include <set>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace prism::server {

v1::Principle PrincipleToProto(Principle p) {
  switch (p) {
    case Principle::kSmooth:
      return v1::PRINCIPLE_SMOOTH;
    case Principle::kBaseline:
      return v1::PRINCIPLE_BASELINE;
    case Principle::kPow2:
      return v1::PRINCIPLE_POW2;
  }
  return v1::PRINCIPLE_UNSPECIFIED;
}

absl::StatusOr<PrincipleSet> PrinciplesFromProto(
    const google::protobuf::RepeatedField<int>& principles) {
  PrincipleSet set;
  for (int p : principles) {
    switch (p) {
      case v1::PRINCIPLE_SMOOTH:
        set.smooth = true;
        break;
      case v1::PRINCIPLE_BASELINE:
        set.baseline = true;
        break;
      case v1::PRINCIPLE_POW2:
        set.pow2 = true;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("principle ", p,
                         " is not one of PRINCIPLE_SMOOTH, PRINCIPLE_BASELINE, "
                         "PRINCIPLE_POW2"));
    }
  }
  return set;
}

absl::StatusOr<SpaceSpec> SpaceFromProto(const v1::SpaceSpec& space) {
  SpaceSpec spec;
  spec.d_model = space.d_model();
  spec.layers = space.layers();
  spec.base_heads = space.base_heads();
  absl::StatusOr<PrincipleSet> principles =
      PrinciplesFromProto(space.principles());
  if (!principles.ok()) return principles.status();
  spec.principles = *principles;
  if (space.min_run() != 0) spec.min_run = space.min_run();
  if (space.max_run() != 0) spec.max_run = space.max_run();
  absl::Status valid = ValidateSpace(spec);
  if (!valid.ok()) return valid;
  return spec;
}

SpaceSpec SpaceForSpec(const v1::ExperimentSpec& resolved) {
  SpaceSpec spec;
  spec.d_model = resolved.model().d_model();
  spec.layers = resolved.model().layers();
  spec.base_heads = resolved.model().base_heads();
  absl::StatusOr<PrincipleSet> principles =
      PrinciplesFromProto(resolved.principles());
  if (principles.ok()) spec.principles = *principles;
  if (resolved.min_run() != 0) spec.min_run = resolved.min_run();
  if (resolved.max_run() != 0) spec.max_run = resolved.max_run();
  return spec;
}

v1::PrincipleReport PrincipleReportToProto(const Schedule& s,
                                           const SchedulePrinciples& p,
                                           int base_heads) {
  v1::PrincipleReport r;
  r.set_schedule(s.ToString());
  for (int h : s.heads()) r.add_heads(h);
  for (int d : p.head_dims) r.add_head_dims(d);
  r.set_smooth(p.smooth);
  r.set_baseline(p.baseline);
  r.set_pow2(p.pow2);
  r.set_transitions(p.transitions);
  r.set_max_adjacent_ratio(p.max_adjacent_ratio);
  r.set_baseline_fraction(p.baseline_fraction);
  r.set_is_uniform(s.IsUniform() && !s.heads().empty() &&
                   s.heads().front() == base_heads);
  return r;
}

v1::PrincipleReport ReportSchedule(const SpaceSpec& space,
                                   const std::string& schedule) {
  absl::StatusOr<Schedule> s = ParseSchedule(schedule);
  if (!s.ok()) {
    v1::PrincipleReport r;
    r.set_schedule(schedule);
    return r;
  }
  return PrincipleReportToProto(*s, ReportPrinciples(space, *s),
                                space.base_heads);
}

v1::Verdict VerdictToProto(Verdict v) {
  switch (v) {
    case Verdict::kBetter:
      return v1::VERDICT_BETTER;
    case Verdict::kWorse:
      return v1::VERDICT_WORSE;
    case Verdict::kInconclusive:
      return v1::VERDICT_INCONCLUSIVE;
    case Verdict::kNeedsSeeds:
      return v1::VERDICT_NEEDS_SEEDS;
    case Verdict::kNone:
      break;
  }
  return v1::VERDICT_UNSPECIFIED;
}

v1::EffectStatus EffectStatusToProto(EffectStatus s) {
  switch (s) {
    case EffectStatus::kEstimated:
      return v1::EFFECT_ESTIMATED;
    case EffectStatus::kNothingViolates:
      return v1::EFFECT_NOTHING_VIOLATES;
    case EffectStatus::kEverythingViolates:
      return v1::EFFECT_EVERYTHING_VIOLATES;
    case EffectStatus::kNotSeparable:
      return v1::EFFECT_NOT_SEPARABLE;
    case EffectStatus::kTooFewSchedules:
      return v1::EFFECT_TOO_FEW_SCHEDULES;
  }
  return v1::EFFECT_STATUS_UNSPECIFIED;
}

v1::Interval IntervalToProto(const Interval& i) {
  v1::Interval out;
  out.set_mean(i.mean);
  if (i.has_bounds) {
    out.set_low(i.low);
    out.set_high(i.high);
  }
  out.set_n(i.n);
  return out;
}

v1::ThroughputPairing ThroughputPairingToProto(ThroughputPairing p) {
  switch (p) {
    case ThroughputPairing::kWorker:
      return v1::THROUGHPUT_PAIRING_WORKER;
    case ThroughputPairing::kDevice:
      return v1::THROUGHPUT_PAIRING_DEVICE;
    case ThroughputPairing::kUnpaired:
      return v1::THROUGHPUT_PAIRING_UNPAIRED;
    case ThroughputPairing::kNone:
      break;
  }
  return v1::THROUGHPUT_PAIRING_UNSPECIFIED;
}

v1::RankedSchedule RankedRowToProto(const RankedRow& row, int base_heads) {
  v1::RankedSchedule r;
  r.set_rank(row.rank);
  r.set_schedule(row.schedule);
  r.set_is_baseline(row.is_baseline);
  absl::StatusOr<Schedule> s = ParseSchedule(row.schedule);
  if (s.ok()) {
    *r.mutable_principles() =
        PrincipleReportToProto(*s, row.principles, base_heads);
  } else {
    r.mutable_principles()->set_schedule(row.schedule);
  }
  *r.mutable_final_val_loss() = IntervalToProto(row.final_val_loss);
  *r.mutable_delta_vs_baseline() = IntervalToProto(row.delta_vs_baseline);
  r.set_min_val_loss(row.min_val_loss);
  r.set_steps_to_baseline(row.steps_to_baseline);
  r.set_convergence_speedup(row.convergence_speedup);
  r.set_tokens_per_second(row.tokens_per_second);
  r.set_tokens_per_second_ratio(row.tokens_per_second_ratio);
  for (double d : row.attention_distance_shift) {
    r.add_attention_distance_shift(d);
  }
  for (double d : row.attention_distance) r.add_attention_distance(d);
  r.set_seeds_completed(row.seeds_completed);
  for (int64_t id : row.trial_ids) r.add_trial_ids(id);
  r.set_verdict(VerdictToProto(row.verdict));
  if (row.p_value.has_value()) r.set_p_value(*row.p_value);
  if (row.adjusted_p_value.has_value()) {
    r.set_adjusted_p_value(*row.adjusted_p_value);
  }
  r.set_seeds_diverged(row.seeds_diverged);
  r.set_seeds_failed(row.seeds_failed);
  r.set_paired_seeds(row.paired_seeds);
  r.set_diverged(row.diverged);
  *r.mutable_speedup() = IntervalToProto(row.speedup);
  r.set_speedup_seeds(row.speedup_seeds);
  *r.mutable_throughput_ratio() = IntervalToProto(row.throughput_ratio);
  r.set_throughput_pairs(row.throughput_pairs);
  r.set_throughput_pairing(ThroughputPairingToProto(row.throughput_pairing));
  *r.mutable_adjusted_delta() = IntervalToProto(row.adjusted_delta);
  r.set_adjusted_confidence(row.adjusted_confidence);
  r.set_delta_sd(row.delta_sd);
  r.set_dof(row.dof);
  r.set_seeds_needed(row.seeds_needed);
  r.set_decided_at_seeds(row.decided_at_seeds);
  r.set_in_best_set(row.in_best_set);
  r.set_seeds_excluded(row.seeds_excluded);
  r.set_throughput_hardware(row.throughput_hardware);
  return r;
}

v1::PrincipleEffect PrincipleEffectToProto(const PrincipleEffect& e) {
  v1::PrincipleEffect out;
  out.set_principle(PrincipleToProto(e.principle));
  out.set_satisfied(e.satisfied);
  out.set_violated(e.violated);
  out.set_mean_delta_satisfied(e.mean_delta_satisfied);
  out.set_mean_delta_violated(e.mean_delta_violated);
  out.set_status(EffectStatusToProto(e.status));
  if (e.status == EffectStatus::kEstimated && e.effect.has_value()) {
    v1::Interval* effect = out.mutable_effect();
    effect->set_mean(*e.effect);
    if (e.low.has_value() && e.high.has_value()) {
      effect->set_low(*e.low);
      effect->set_high(*e.high);
    }
    effect->set_n(e.satisfied + e.violated);  // schedules in the fit
    if (e.standard_error.has_value()) {
      out.set_standard_error(*e.standard_error);
    }
    if (e.p_value.has_value()) out.set_p_value(*e.p_value);
  }
  out.set_dof(e.dof);
  out.set_note(e.note);
  return out;
}

std::string EncodePageToken(absl::string_view kind, int64_t value) {
  return absl::WebSafeBase64Escape(absl::StrCat(kind, ":", value));
}

absl::StatusOr<int64_t> DecodePageToken(absl::string_view kind,
                                        absl::string_view token) {
  if (token.empty()) return 0;
  std::string raw;
  int64_t value = 0;
  absl::string_view rest;
  if (absl::WebSafeBase64Unescape(token, &raw)) {
    rest = raw;
    if (absl::ConsumePrefix(&rest, kind) && absl::ConsumePrefix(&rest, ":") &&
        absl::SimpleAtoi(rest, &value) && value > 0) {
      return value;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "page_token '", token, "' is not a token this list returned"));
}

absl::StatusOr<int> ClampPageSize(int page_size, int default_size,
                                  int max_size) {
  if (page_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size must not be negative (got ", page_size, ")"));
  }
  if (page_size == 0) return default_size;
  return page_size > max_size ? max_size : page_size;
}

VerdictOptions VerdictOptionsOf(const v1::ExperimentSpec& resolved) {
  VerdictOptions options;
  const v1::VerdictPolicy& policy = resolved.verdicts();
  if (policy.method() == v1::VERDICT_METHOD_PAIRED_T) {
    options.method = VerdictMethod::kPairedT;
  }
  if (policy.family() == v1::VERDICT_FAMILY_HOLM) {
    options.family = VerdictFamily::kHolm;
  }
  if (policy.alpha() > 0.0) options.alpha = policy.alpha();
  if (resolved.has_seeds_policy()) {
    options.seed_sequence.assign(resolved.seeds().begin(),
                                 resolved.seeds().end());
    options.looks = LooksForSeeds(resolved.seeds_policy().min(),
                                  resolved.seeds_policy().max());
  } else if (RacingOn(resolved)) {
    // Every seed count racing may reach is a look
    // (scheduler/strategy/racing.h).
    options.seed_sequence = RacingSequence(resolved);
    options.looks =
        LooksForSeeds(resolved.seeds_size(), resolved.racing().max_seeds());
  }
  return options;
}

std::vector<int64_t> RacingSequence(const v1::ExperimentSpec& resolved) {
  std::vector<int64_t> sequence(resolved.seeds().begin(),
                                resolved.seeds().end());
  if (resolved.racing().seeds().empty()) {  // stored before the field
    return SeedSequence(sequence, resolved.racing().max_seeds());
  }
  sequence.insert(sequence.end(), resolved.racing().seeds().begin(),
                  resolved.racing().seeds().end());
  return sequence;
}

bool RacingOn(const v1::ExperimentSpec& resolved) {
  return resolved.has_racing() && !resolved.racing().off() &&
         resolved.racing().max_seeds() > 0;
}

v1::RaceReport RaceReportOf(const RaceDecision& race,
                            const v1::ExperimentSpec& resolved) {
  v1::RaceReport r;
  r.set_state(RaceStateName(race.state));
  for (const std::string& c : race.contenders) r.add_contenders(c);
  r.set_started(race.started);
  r.set_best(race.best);
  r.set_best_is_baseline(race.best_is_baseline);
  r.set_best_seeds(race.best_seeds);
  r.set_look_seeds(race.look_seeds);
  r.set_seeds_added(race.seeds_added);
  const double grid = GridStepsOf(resolved);
  if (grid > 0) r.set_race_share(race.steps_added / grid);
  r.set_max_seeds(resolved.racing().max_seeds());
  r.set_budget(resolved.racing().budget());
  r.set_note(race.note);
  return r;
}

RacingPlan RacingPlanOf(const v1::ExperimentSpec& resolved) {
  RacingPlan plan;
  plan.space = SpaceForSpec(resolved);
  plan.baseline =
      Schedule::Uniform(plan.space.base_heads, plan.space.layers).ToString();
  plan.sequence = RacingSequence(resolved);
  plan.first = resolved.seeds_size();
  plan.verdicts = VerdictOptionsOf(resolved);
  plan.steps = resolved.budget().steps();
  plan.step_budget = resolved.racing().budget() * GridStepsOf(resolved);
  plan.racers = resolved.racing().racers();
  return plan;
}

v1::VerdictReport VerdictReportToProto(const VerdictSummary& summary) {
  v1::VerdictReport r;
  r.set_method(summary.method == VerdictMethod::kPairedT
                   ? v1::VERDICT_METHOD_PAIRED_T
                   : v1::VERDICT_METHOD_MODERATED_T);
  r.set_family(summary.family == VerdictFamily::kHolm ? v1::VERDICT_FAMILY_HOLM
                                                      : v1::VERDICT_FAMILY_BH);
  r.set_alpha(summary.alpha);
  r.set_method_description(summary.method_description);
  r.set_fell_back(summary.fell_back);
  if (summary.prior.fitted) {
    r.set_prior_variance(summary.prior.variance);
    r.set_prior_dof(std::isinf(summary.prior.dof) ? -1.0 : summary.prior.dof);
  }
  r.set_better(summary.better);
  r.set_worse(summary.worse);
  r.set_inconclusive(summary.inconclusive);
  r.set_needs_seeds(summary.needs_seeds);
  for (const std::string& s : summary.best_set) r.add_best_set(s);
  r.set_best_set_critical(summary.best_set_critical);
  r.set_excluded_trials(summary.excluded_trials);
  for (const LookSummary& look : summary.looks) {
    v1::VerdictLook* l = r.add_looks();
    l->set_seeds(look.seeds);
    l->set_alpha(look.alpha);
    l->set_tested(look.family);
    l->set_rejected(look.rejected);
  }
  return r;
}

AshaSettings AshaSettingsOf(const v1::ExperimentSpec& resolved) {
  AshaSettings settings;
  settings.rungs.assign(resolved.asha().rungs().begin(),
                        resolved.asha().rungs().end());
  settings.eta = resolved.asha().eta();
  const int screen = resolved.asha().screen_seeds();
  if (screen > 0 && screen < resolved.seeds_size()) {
    settings.all_seeds.assign(resolved.seeds().begin(), resolved.seeds().end());
    settings.first_rung_seeds.assign(resolved.seeds().begin(),
                                     resolved.seeds().begin() + screen);
  }
  switch (resolved.asha().mode()) {
    case v1::ASHA_MODE_SYNCHRONOUS:
      settings.mode = AshaMode::kSynchronous;
      break;
    case v1::ASHA_MODE_GUARDED:
      settings.mode = AshaMode::kGuarded;
      break;
    default:
      settings.mode = AshaMode::kAsynchronous;
      break;
  }
  return settings;
}

double GridStepsOf(const v1::ExperimentSpec& resolved) {
  const SpaceSpec space = SpaceForSpec(resolved);
  double schedules = 0.0;
  if (!resolved.schedules().empty()) {
    std::set<std::string> distinct(resolved.schedules().begin(),
                                   resolved.schedules().end());
    distinct.insert(
        Schedule::Uniform(space.base_heads, space.layers).ToString());
    schedules = static_cast<double>(distinct.size());
  } else {
    absl::StatusOr<SpaceCount> n = CountSchedules(space);
    if (!n.ok() || n->exceeds_uint64) return 0.0;
    schedules = static_cast<double>(n->value);
  }
  return schedules * resolved.seeds_size() *
         static_cast<double>(resolved.budget().steps());
}

ScreeningSearch ScreeningSearchOf(const v1::ExperimentSpec& resolved) {
  ScreeningSearch s;
  s.plan.space = SpaceForSpec(resolved);
  s.plan.baseline =
      Schedule::Uniform(s.plan.space.base_heads, s.plan.space.layers)
          .ToString();
  s.plan.size = resolved.screening().bracket_size();
  s.plan.explore = resolved.screening().explore();
  s.plan.seed = resolved.sample_seed();
  const AshaSettings asha = AshaSettingsOf(resolved);
  s.rungs = asha.rungs;
  s.eta = asha.eta;
  s.seeds = resolved.seeds_size();
  s.steps = resolved.budget().steps();
  s.grid_steps = GridStepsOf(resolved);
  s.grid_fraction = resolved.screening().grid_fraction();
  return s;
}

void FillSearchCost(v1::Experiment* e) {
  if (e->grid_steps() < 0) e->set_grid_steps(GridStepsOf(e->spec()));
}

v1::AshaRung AshaRungToProto(const AshaRungView& rung) {
  v1::AshaRung out;
  out.set_step(rung.step);
  out.set_paired(rung.paired);
  out.set_promote_quota(rung.quota);
  out.set_members(rung.members);
  out.set_promoted(rung.Promoted());
  out.set_complete(rung.complete);
  for (const AshaRungEntry& e : rung.entries) {
    v1::AshaRungEntry* entry = out.add_schedules();
    entry->set_schedule(e.schedule);
    entry->set_score(e.score);
    entry->set_seeds(e.seeds);
    entry->set_promoted(e.promoted);
  }
  return out;
}

}  // namespace prism::server
