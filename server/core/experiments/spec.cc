#include "server/core/experiments/spec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/data_roots.h"
#include "base/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/text_format.h"
#include "scheduler/space/space.h"
#include "scheduler/strategy/adaptive_seeds.h"
#include "scheduler/strategy/asha.h"
#include "scheduler/strategy/guided.h"
#include "scheduler/strategy/racing.h"
#include "scheduler/strategy/screening.h"
#include "scheduler/strategy/surrogate.h"
#include "server/core/auth/auth.h"
#include "server/core/infra/convert.h"

namespace prism::server {
namespace {

// Budget fields without a per-preset value default to what the trainer
// would use for a run of this length.
constexpr int kDefaultGradAccum = 1;
constexpr int kDefaultEvalBatches = 4;
constexpr int kMaxEvalEvery = 50;
constexpr int kMaxLogEvery = 10;
constexpr double kDefaultMinLrRatio = 0.1;
constexpr double kDefaultWeightDecay = 0.1;
// A spec without a preset gives the shape itself; its recipe is the smallest
// preset's.
constexpr int kCustomBatchSize = 8;
constexpr int64_t kCustomSteps = 200;
constexpr double kCustomLearningRate = 1e-3;
constexpr int kCustomWarmupSteps = 20;

class CollectFirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) {
      first_ =
          absl::StrCat("spec_text:", line + 1, ":", column + 1, ": ", message);
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

absl::Status Invalid(absl::string_view a, absl::string_view b = "",
                     absl::string_view c = "") {
  return absl::InvalidArgumentError(absl::StrCat(a, b, c));
}

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

absl::StatusOr<ModelShape> ResolveShape(const v1::ModelConfig& m) {
  ModelShape shape;
  if (!m.preset().empty()) {
    absl::StatusOr<ModelShape> preset = FindPreset(m.preset());
    if (!preset.ok()) return Prefixed("model.preset: ", preset.status());
    shape = *preset;
  } else {
    std::vector<std::string> missing;
    if (m.d_model() == 0) missing.push_back("d_model");
    if (m.layers() == 0) missing.push_back("layers");
    if (m.base_heads() == 0) missing.push_back("base_heads");
    if (m.context() == 0) missing.push_back("context");
    if (m.vocab_size() == 0) missing.push_back("vocab_size");
    if (!missing.empty()) {
      return Invalid("model: name a preset or give every shape field (missing ",
                     absl::StrJoin(missing, ", "), ")");
    }
    shape.name = "custom";
    shape.batch_size = kCustomBatchSize;
    shape.steps = kCustomSteps;
    shape.learning_rate = kCustomLearningRate;
    shape.warmup_steps = kCustomWarmupSteps;
  }
  if (m.d_model() != 0) shape.d_model = m.d_model();
  if (m.layers() != 0) shape.layers = m.layers();
  if (m.base_heads() != 0) shape.base_heads = m.base_heads();
  if (m.context() != 0) shape.context = m.context();
  if (m.vocab_size() != 0) shape.vocab_size = m.vocab_size();
  switch (m.positions()) {
    case v1::POSITION_ENCODING_UNSPECIFIED:
      break;
    case v1::POSITION_LEARNED:
      shape.positions = Positions::kLearned;
      break;
    case v1::POSITION_ROTARY:
      shape.positions = Positions::kRotary;
      break;
    default:
      return Invalid("model.positions: unknown position encoding");
  }
  if (m.dropout() != 0.0f) shape.dropout = m.dropout();
  absl::Status valid = ValidateShape(shape);
  if (!valid.ok()) return Prefixed("model: ", valid);
  return shape;
}

v1::ModelConfig ModelToProto(const ModelShape& shape) {
  v1::ModelConfig m;
  m.set_preset(shape.name);
  m.set_d_model(shape.d_model);
  m.set_layers(shape.layers);
  m.set_base_heads(shape.base_heads);
  m.set_context(shape.context);
  m.set_vocab_size(shape.vocab_size);
  m.set_positions(shape.positions == Positions::kRotary ? v1::POSITION_ROTARY
                                                        : v1::POSITION_LEARNED);
  m.set_dropout(shape.dropout);
  return m;
}

absl::Status CheckNotNegative(absl::string_view field, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return Invalid(
      "budget.", field,
      absl::StrCat(" must be a non-negative number (got ", value, ")"));
}

absl::StatusOr<v1::Budget> ResolveBudget(const v1::Budget& in,
                                         const ModelShape& shape) {
  PRISM_RETURN_IF_ERROR(CheckNotNegative("steps", in.steps()));
  PRISM_RETURN_IF_ERROR(CheckNotNegative("batch_size", in.batch_size()));
  PRISM_RETURN_IF_ERROR(CheckNotNegative("grad_accum", in.grad_accum()));
  PRISM_RETURN_IF_ERROR(CheckNotNegative("eval_every", in.eval_every()));
  PRISM_RETURN_IF_ERROR(CheckNotNegative("eval_batches", in.eval_batches()));
  PRISM_RETURN_IF_ERROR(CheckNotNegative("learning_rate", in.learning_rate()));
  PRISM_RETURN_IF_ERROR(CheckNotNegative("min_lr_ratio", in.min_lr_ratio()));
  PRISM_RETURN_IF_ERROR(CheckNotNegative("warmup_steps", in.warmup_steps()));
  PRISM_RETURN_IF_ERROR(CheckNotNegative("weight_decay", in.weight_decay()));
  PRISM_RETURN_IF_ERROR(
      CheckNotNegative("checkpoint_every", in.checkpoint_every()));
  PRISM_RETURN_IF_ERROR(CheckNotNegative("log_every", in.log_every()));
  if (in.min_lr_ratio() > 1.0) {
    return Invalid("budget.min_lr_ratio must be at most 1 (got ",
                   absl::StrCat(in.min_lr_ratio()), ")");
  }
  for (double target : in.loss_targets()) {
    if (!std::isfinite(target) || target <= 0) {
      return Invalid("budget.loss_targets must be positive numbers (got ",
                     absl::StrCat(target), ")");
    }
  }

  v1::Budget b = in;
  if (b.steps() == 0) b.set_steps(shape.steps);
  if (b.batch_size() == 0) b.set_batch_size(shape.batch_size);
  if (b.grad_accum() == 0) b.set_grad_accum(kDefaultGradAccum);
  if (b.eval_every() == 0) {
    b.set_eval_every(static_cast<int32_t>(
        std::clamp<int64_t>(b.steps() / 4, 1, kMaxEvalEvery)));
  }
  if (b.eval_batches() == 0) b.set_eval_batches(kDefaultEvalBatches);
  if (b.learning_rate() == 0) b.set_learning_rate(shape.learning_rate);
  if (b.min_lr_ratio() == 0) b.set_min_lr_ratio(kDefaultMinLrRatio);
  if (b.warmup_steps() == 0) {
    b.set_warmup_steps(static_cast<int32_t>(
        std::min<int64_t>(shape.warmup_steps, b.steps() / 2)));
  }
  if (b.weight_decay() == 0) b.set_weight_decay(kDefaultWeightDecay);
  if (b.checkpoint_every() == 0) b.set_checkpoint_every(b.eval_every());
  if (b.log_every() == 0) {
    b.set_log_every(std::min<int32_t>(kMaxLogEvery, b.eval_every()));
  }
  if (b.warmup_steps() > b.steps()) {
    return Invalid("budget.warmup_steps (", absl::StrCat(b.warmup_steps()),
                   absl::StrCat(") exceeds budget.steps (", b.steps(), ")"));
  }
  return b;
}

absl::Status CheckSeedsPolicy(const v1::SeedsPolicy& policy, int listed) {
  if (policy.min() < 2) {
    return Invalid("seeds_policy.min must be at least 2 (a verdict needs 2 ",
                   absl::StrCat("paired seeds; got ", policy.min(), ")"));
  }
  if (policy.max() < policy.min()) {
    return Invalid(
        "seeds_policy.max (", absl::StrCat(policy.max()),
        absl::StrCat(") is below seeds_policy.min (", policy.min(), ")"));
  }
  if (policy.max() > kMaxPolicySeeds) {
    return Invalid("seeds_policy.max must be at most ",
                   absl::StrCat(kMaxPolicySeeds, " (got ", policy.max(), ")"));
  }
  if (listed > policy.max()) {
    return Invalid("seeds lists ", absl::StrCat(listed),
                   absl::StrCat(" seeds, more than seeds_policy.max (",
                                policy.max(), ")"));
  }
  return absl::OkStatus();
}

// ResolveRacing checks the spec's racing policy and returns it with every
// field explicit, or nothing when the experiment does not race: racing is
// on by default for STRATEGY_ASHA and STRATEGY_GUIDED_SCREENING with 3 or
// more seeds (not on a ladder), and for any other search only when set.
// `seeds` is the spec's seed count.
absl::StatusOr<std::optional<v1::RacingPolicy>> ResolveRacing(
    const v1::ExperimentSpec& spec, v1::Strategy strategy, int seeds) {
  const bool screens = strategy == v1::STRATEGY_ASHA ||
                       strategy == v1::STRATEGY_GUIDED_SCREENING;
  const bool ladder = spec.has_ladder() || !spec.ladder_carried().empty();
  if (!spec.has_racing()) {
    if (!screens || seeds < 3 || ladder || spec.has_seeds_policy()) {
      return std::nullopt;
    }
  } else if (spec.racing().off()) {
    v1::RacingPolicy off;
    off.set_off(true);
    return off;
  } else {
    if (strategy == v1::STRATEGY_GUIDED) {
      return Invalid(
          "racing: not with STRATEGY_GUIDED (its surrogate chooses what to "
          "train from every seed); race after a grid, STRATEGY_RANDOM, "
          "STRATEGY_ASHA or STRATEGY_GUIDED_SCREENING");
    }
    if (spec.has_seeds_policy()) {
      return Invalid(
          "racing: cannot be combined with seeds_policy (both decide which "
          "schedules get more seeds)");
    }
    if (ladder) {
      return Invalid(
          "racing: not on a ladder (a ladder carries rung 1's best-set up "
          "instead)");
    }
    if (seeds < 2) {
      return Invalid(
          "racing: needs at least 2 seeds in `seeds` (a best-set needs 2 "
          "paired seeds; got ",
          absl::StrCat(seeds, ")"));
    }
  }
  if (!spec.racing().seeds().empty()) {
    return Invalid("racing.seeds: is set by the coordinator");
  }
  v1::RacingPolicy r = spec.racing();
  if (r.max_seeds() == 0) r.set_max_seeds(DefaultRacingMaxSeeds(seeds));
  if (r.max_seeds() < seeds || r.max_seeds() > kMaxPolicySeeds) {
    return Invalid("racing.max_seeds must be from the spec's ",
                   absl::StrCat(seeds, " seeds to ", kMaxPolicySeeds, " (got ",
                                r.max_seeds(), ")"));
  }
  for (int64_t seed : spec.seeds()) {
    if (seed > std::numeric_limits<int64_t>::max() - r.max_seeds()) {
      return Invalid("seeds: seed ", absl::StrCat(seed),
                     " leaves no room for racing's further seeds");
    }
  }
  if (r.budget() == 0.0) r.set_budget(kDefaultRacingBudget);
  if (!(r.budget() > 0.0 && r.budget() <= 1.0)) {
    return Invalid(
        "racing.budget must be in (0, 1]: the steps racing may add as a "
        "share of the grid's (got ",
        absl::StrCat(r.budget(), ")"));
  }
  if (r.racers() == 0) r.set_racers(kDefaultRacers);
  if (r.racers() < 1 || r.racers() > kMaxPolicySeeds) {
    return Invalid("racing.racers must be from 1 to ",
                   absl::StrCat(kMaxPolicySeeds, " (got ", r.racers(), ")"));
  }
  // The seeds it may add, recorded: the sequence past the spec's seeds.
  const std::vector<int64_t> sequence =
      SeedSequence({spec.seeds().begin(), spec.seeds().end()}, r.max_seeds());
  for (size_t i = static_cast<size_t>(seeds); i < sequence.size(); ++i) {
    r.add_seeds(sequence[i]);
  }
  return r;
}

// ResolveVerdicts checks the spec's verdict policy and returns it with
// every field explicit (moderated t, Benjamini-Hochberg, 0.05 by default).
absl::StatusOr<v1::VerdictPolicy> ResolveVerdicts(
    const v1::ExperimentSpec& spec) {
  v1::VerdictPolicy policy = spec.verdicts();
  switch (policy.method()) {
    case v1::VERDICT_METHOD_UNSPECIFIED:
      policy.set_method(v1::VERDICT_METHOD_MODERATED_T);
      break;
    case v1::VERDICT_METHOD_MODERATED_T:
    case v1::VERDICT_METHOD_PAIRED_T:
      break;
    default:
      return Invalid(
          "verdicts.method: unknown method ",
          absl::StrCat(static_cast<int>(policy.method())),
          " (VERDICT_METHOD_MODERATED_T or VERDICT_METHOD_PAIRED_T)");
  }
  switch (policy.family()) {
    case v1::VERDICT_FAMILY_UNSPECIFIED:
      policy.set_family(v1::VERDICT_FAMILY_BH);
      break;
    case v1::VERDICT_FAMILY_BH:
    case v1::VERDICT_FAMILY_HOLM:
      break;
    default:
      return Invalid("verdicts.family: unknown family ",
                     absl::StrCat(static_cast<int>(policy.family())),
                     " (VERDICT_FAMILY_BH or VERDICT_FAMILY_HOLM)");
  }
  if (policy.alpha() == 0.0) {
    policy.set_alpha(kVerdictAlpha);
  } else if (!(policy.alpha() > 0.0 && policy.alpha() < 0.5)) {
    return Invalid("verdicts.alpha must be in (0, 0.5) (got ",
                   absl::StrCat(policy.alpha()), ")");
  }
  return policy;
}

// PlannedSeeds checks the spec's seeds (and seeds policy) and returns the
// seeds to plan trials for now and the resolved spec's seed list: the same
// list without a policy; with one, the first `min` of the policy's sequence
// and the whole sequence.
absl::Status PlannedSeeds(const v1::ExperimentSpec& spec,
                          std::vector<int64_t>* first_round,
                          std::vector<int64_t>* resolved) {
  const bool adaptive = spec.has_seeds_policy();
  if (adaptive) {
    PRISM_RETURN_IF_ERROR(
        CheckSeedsPolicy(spec.seeds_policy(), spec.seeds_size()));
  } else if (spec.seeds().empty()) {
    return Invalid("seeds: at least one seed is required (e.g. seeds: 1)");
  }
  absl::flat_hash_set<int64_t> seen;
  int64_t largest = 0;
  for (int64_t seed : spec.seeds()) {
    if (seed < 0) {
      return Invalid("seeds: seed ", absl::StrCat(seed),
                     " is negative (seeds are non-negative)");
    }
    if (!seen.insert(seed).second) {
      return Invalid("seeds: seed ", absl::StrCat(seed), " is listed twice");
    }
    largest = std::max(largest, seed);
  }
  resolved->assign(spec.seeds().begin(), spec.seeds().end());
  if (!adaptive) {
    *first_round = *resolved;
    return absl::OkStatus();
  }
  const int max = spec.seeds_policy().max();
  if (largest > std::numeric_limits<int64_t>::max() - max) {
    return Invalid("seeds: seed ", absl::StrCat(largest),
                   " leaves no room for the seeds_policy's further seeds");
  }
  *resolved = SeedSequence(*resolved, max);
  first_round->assign(resolved->begin(),
                      resolved->begin() + spec.seeds_policy().min());
  return absl::OkStatus();
}

// ResolveAsha checks STRATEGY_ASHA's settings against the resolved budget and
// the experiment's `seeds` and fills the defaults: STRATEGY_ASHA's default
// plan (AshaPolicy's comment: staged with kStagedMinSeeds seeds or more,
// else DefaultAshaRungs at eta 3 on every seed), or DefaultScreeningRungs at
// eta 3 for STRATEGY_GUIDED_SCREENING.
absl::StatusOr<v1::AshaPolicy> ResolveAsha(const v1::ExperimentSpec& spec,
                                           const v1::Budget& budget,
                                           int seeds) {
  if (spec.has_seeds_policy()) {
    return Invalid("seeds_policy cannot be combined with STRATEGY_ASHA");
  }
  v1::AshaPolicy a = spec.asha();
  const bool screening = spec.strategy() == v1::STRATEGY_GUIDED_SCREENING;
  if (a.screen_seeds() != 0) {
    if (screening) {
      return Invalid(
          "asha.screen_seeds: STRATEGY_GUIDED_SCREENING screens every "
          "bracket on every seed (screen_seeds is for STRATEGY_ASHA)");
    }
    if (a.screen_seeds() < 1 || a.screen_seeds() > seeds) {
      return Invalid(absl::StrCat("asha.screen_seeds = ", a.screen_seeds(),
                                  " must be between 1 and the experiment's ",
                                  seeds, " seed(s)"));
    }
  }
  if (!screening) {
    const AshaPlan plan = ResolveAshaPlan(
        AshaPlan{
            {a.rungs().begin(), a.rungs().end()}, a.eta(), a.screen_seeds()},
        budget.steps(), static_cast<int>(budget.eval_every()), seeds);
    a.set_eta(plan.eta);
    a.set_screen_seeds(plan.screen_seeds);
    *a.mutable_rungs() = {plan.rungs.begin(), plan.rungs.end()};
  }
  if (a.eta() == 0) a.set_eta(kDefaultAshaEta);
  if (!v1::AshaMode_IsValid(a.mode())) {
    return Invalid("asha.mode: unknown mode ",
                   absl::StrCat(static_cast<int>(a.mode())));
  }
  if (a.mode() == v1::ASHA_MODE_UNSPECIFIED) {
    a.set_mode(v1::ASHA_MODE_SYNCHRONOUS);
  }
  std::vector<int64_t> rungs(a.rungs().begin(), a.rungs().end());
  if (rungs.empty() && screening) {
    rungs = DefaultScreeningRungs(budget.steps(), a.eta(), budget.eval_every());
  }
  PRISM_RETURN_IF_ERROR(
      CheckAshaPlan(rungs, a.eta(), budget.steps(), budget.eval_every()));
  *a.mutable_rungs() = {rungs.begin(), rungs.end()};
  return a;
}

// CheckGuided checks STRATEGY_GUIDED's settings (and that nothing else
// chooses the schedules) and returns the policy with its defaults filled in.
absl::StatusOr<v1::GuidedPolicy> ResolveGuided(const v1::ExperimentSpec& spec,
                                               int seeds, int64_t max_trials) {
  if (!spec.schedules().empty()) {
    return Invalid(
        "schedules cannot be listed with STRATEGY_GUIDED: it "
        "chooses the schedules itself");
  }
  if (spec.has_seeds_policy()) {
    return Invalid("seeds_policy cannot be combined with STRATEGY_GUIDED");
  }
  if (spec.samples() <= 0) {
    return Invalid("samples (the schedule budget) must be positive for ",
                   absl::StrCat("STRATEGY_GUIDED (got ", spec.samples(), ")"));
  }
  // The search grows to samples schedules and the baseline, on every seed.
  if ((static_cast<int64_t>(spec.samples()) + 1) * seeds > max_trials) {
    return Invalid(
        absl::StrCat("samples ", spec.samples(), " and the baseline x ", seeds,
                     " seeds exceeds the limit of ", max_trials, " trials"));
  }
  v1::GuidedPolicy g = spec.guided();
  if (g.initial() < 0 || g.parallel() < 0) {
    return Invalid("guided.initial and guided.parallel must not be negative");
  }
  if (g.initial() == 0) g.set_initial(DefaultGuidedInitial(spec.samples()));
  if (g.initial() < kMinSurrogateSchedules) {
    return Invalid(
        absl::StrCat("guided.initial must be at least ", kMinSurrogateSchedules,
                     " (the surrogate's minimum of finished schedules; got ",
                     g.initial(), ")"));
  }
  if (spec.samples() < g.initial()) {
    return Invalid(absl::StrCat("samples (", spec.samples(),
                                ") is below guided.initial (", g.initial(),
                                "): the budget must cover the initial design"));
  }
  if (g.parallel() == 0) g.set_parallel(kDefaultGuidedParallel);
  return g;
}

// ResolveScreening checks STRATEGY_GUIDED_SCREENING's settings (and that
// nothing else chooses the schedules) and returns the policy with its
// defaults filled in.
absl::StatusOr<v1::ScreeningPolicy> ResolveScreening(
    const v1::ExperimentSpec& spec) {
  if (!spec.schedules().empty()) {
    return Invalid(
        "schedules cannot be listed with STRATEGY_GUIDED_SCREENING: it "
        "chooses the schedules itself");
  }
  if (spec.samples() != 0) {
    return Invalid(
        "samples is not used by STRATEGY_GUIDED_SCREENING: its budget is "
        "screening.grid_fraction");
  }
  if (spec.has_seeds_policy()) {
    return Invalid(
        "seeds_policy cannot be combined with STRATEGY_GUIDED_SCREENING");
  }
  v1::ScreeningPolicy p = spec.screening();
  if (!p.has_bracket_size()) p.set_bracket_size(kDefaultScreeningBracketSize);
  if (!p.has_explore()) p.set_explore(kDefaultScreeningExplore);
  if (!p.has_grid_fraction()) {
    p.set_grid_fraction(kDefaultScreeningGridFraction);
  }
  if (p.bracket_size() < 1) {
    return Invalid(
        absl::StrCat("screening.bracket_size must be at least 1 "
                     "(got ",
                     p.bracket_size(), ")"));
  }
  if (!(p.explore() >= 0.0 && p.explore() <= 1.0)) {
    return Invalid(absl::StrCat("screening.explore must be in [0, 1] (got ",
                                p.explore(), ")"));
  }
  if (!(p.grid_fraction() > 0.0 && p.grid_fraction() <= 1.0)) {
    return Invalid(
        absl::StrCat("screening.grid_fraction must be in (0, 1] "
                     "(got ",
                     p.grid_fraction(), ")"));
  }
  return p;
}

std::string DescribeSpace(const SpaceSpec& s) {
  return absl::StrCat("d_model ", s.d_model, ", ", s.layers, " layers, ",
                      s.base_heads, " base heads, runs ", s.min_run, "..",
                      s.max_run);
}

absl::Status NoScheduleLeft(const SpaceSpec& space) {
  return Invalid("principles ", space.principles.ToString(),
                 absl::StrCat(" leave no schedule for ", DescribeSpace(space)));
}

// FirstScreeningBracket checks that the most trials a screening search can
// reach fit the limit and returns its first bracket (DecideScreening on no
// trials). A bracket opens only while the projected steps stay within the
// budget, and each of its schedules trains at least seeds x the first rung,
// so at most budget / (seeds x first rung) schedules are screened after the
// first bracket.
absl::StatusOr<std::vector<Schedule>> FirstScreeningBracket(
    const v1::ExperimentSpec& resolved, int64_t max_trials) {
  const ScreeningSearch search = ScreeningSearchOf(resolved);
  if (search.grid_steps <= 0.0) {
    return Invalid(
        "STRATEGY_GUIDED_SCREENING: the space is too large to "
        "count its grid's steps (its budget is a share of them)");
  }
  const double per_schedule =
      static_cast<double>(search.seeds) * static_cast<double>(search.rungs[0]);
  const double grid_schedules =
      search.grid_steps / search.seeds / static_cast<double>(search.steps);
  const double most = std::min(
      grid_schedules,
      1.0 + search.plan.size +
          std::floor(search.grid_fraction * search.grid_steps / per_schedule));
  if (most * search.seeds > static_cast<double>(max_trials)) {
    return Invalid(
        absl::StrCat("screening.grid_fraction ", search.grid_fraction,
                     " lets the search "
                     "reach ",
                     static_cast<int64_t>(most), " schedules x ", search.seeds,
                     " seeds, over the limit of ", max_trials, " trials"));
  }
  PRISM_ASSIGN_OR_RETURN(ScreeningDecision d, DecideScreening(search, {}));
  if (d.added.schedules.empty()) return NoScheduleLeft(search.plan.space);
  std::vector<Schedule> out;
  for (const std::string& text : d.added.schedules) {
    PRISM_ASSIGN_OR_RETURN(Schedule s, ParseSchedule(text));
    out.push_back(std::move(s));
  }
  return out;
}

// ExplicitSchedules checks and canonicalises the spec's own list.
absl::StatusOr<std::vector<Schedule>> ExplicitSchedules(
    const v1::ExperimentSpec& spec, const SpaceSpec& space) {
  std::vector<Schedule> out;
  std::set<Schedule> seen;
  for (int i = 0; i < spec.schedules_size(); ++i) {
    absl::StatusOr<Schedule> s = CheckScheduleInSpace(
        space, absl::StrCat("schedules[", i, "]"), spec.schedules(i));
    if (!s.ok()) return s.status();
    if (seen.insert(*s).second) out.push_back(*s);
  }
  return out;
}

absl::StatusOr<std::vector<Schedule>> GridSchedules(const SpaceSpec& space,
                                                    int seeds,
                                                    int64_t max_trials) {
  PRISM_ASSIGN_OR_RETURN(SpaceCount count, CountSchedules(space));
  if (count.value == 0) return NoScheduleLeft(space);
  if (count.exceeds_uint64 ||
      count.value > static_cast<uint64_t>(max_trials / seeds)) {
    return Invalid(
        absl::StrCat("the grid has ", count.ToString(), " schedules x ", seeds,
                     " seeds, over the limit of ", max_trials, " trials; "),
        "use strategy: STRATEGY_RANDOM with samples: N (or stricter "
        "principles)");
  }
  PRISM_ASSIGN_OR_RETURN(ScheduleEnumerator e,
                         ScheduleEnumerator::Create(space));
  std::vector<Schedule> out;
  out.reserve(count.value);
  while (e.Next()) out.emplace_back(e.heads());
  return out;
}

std::string Fingerprint(const v1::ExperimentSpec& resolved) {
  v1::ExperimentSpec config;
  *config.mutable_model() = resolved.model();
  *config.mutable_data() = resolved.data();
  *config.mutable_budget() = resolved.budget();
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    config.SerializeToCodedStream(&coded);
  }
  return Sha256Hex(bytes);
}

// FirstInvalidUtf8 returns the path ("data.train[0]") of the first string
// field of `message` that is not valid UTF-8, or "" when all are. The text
// format parser accepts escapes such as "\377" in string fields, but the wire
// parser refuses them in proto3, so such a spec could be stored and never
// read back. The check is protobuf's own, the one its wire parser applies.
std::string FirstInvalidUtf8(const google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const int count =
        field->is_repeated() ? reflection.FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string where = field->is_repeated()
                                    ? absl::StrCat(field->name(), "[", i, "]")
                                    : field->name();
      if (field->type() == FieldDescriptor::TYPE_STRING) {
        const std::string value =
            field->is_repeated()
                ? reflection.GetRepeatedString(message, field, i)
                : reflection.GetString(message, field);
        if (!google::protobuf::internal::IsStructurallyValidUTF8(value)) {
          return where;
        }
      } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const std::string inner = FirstInvalidUtf8(
            field->is_repeated()
                ? reflection.GetRepeatedMessage(message, field, i)
                : reflection.GetMessage(message, field));
        if (!inner.empty()) return absl::StrCat(where, ".", inner);
      }
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<Schedule> CheckScheduleInSpace(const SpaceSpec& space,
                                              absl::string_view field,
                                              absl::string_view text) {
  const std::string where = absl::StrCat(field, " '", text, "': ");
  absl::StatusOr<Schedule> s = ParseSchedule(text);
  if (!s.ok()) return Prefixed(where, s.status());
  if (s->layers() != space.layers) {
    return Invalid(
        where, absl::StrCat("has ", s->layers(), " layers but the model has ",
                            space.layers));
  }
  absl::Status hard = CheckHardConstraints(space, *s);
  if (!hard.ok()) return Prefixed(where, hard);
  const SchedulePrinciples report = ReportPrinciples(space, *s);
  for (Principle p : kAllPrinciples) {
    if (space.principles.Has(p) && !report.Satisfies(p)) {
      return Invalid(where, "violates the principle ",
                     absl::StrCat(PrincipleName(p), " the spec requires"));
    }
  }
  return s;
}

storage::NewExperiment ToNewExperiment(ExperimentPlan plan, std::string owner,
                                       int64_t now_ms) {
  storage::NewExperiment e;
  e.name = plan.spec.name();
  e.owner = std::move(owner);
  e.priority = plan.spec.priority();
  e.max_attempts = plan.spec.max_attempts();
  e.total_steps = plan.spec.budget().steps();
  e.config_fingerprint = std::move(plan.config_fingerprint);
  e.now_ms = now_ms;
  e.grid_steps = GridStepsOf(plan.spec);
  e.spec = std::move(plan.spec);
  e.trials = std::move(plan.trials);
  return e;
}

absl::StatusOr<ModelShape> ResolveModelShape(const v1::ModelConfig& model) {
  return ResolveShape(model);
}

absl::StatusOr<v1::ExperimentSpec> ParseSpecText(absl::string_view text) {
  google::protobuf::TextFormat::Parser parser;
  CollectFirstError errors;
  parser.RecordErrorsTo(&errors);
  v1::ExperimentSpec spec;
  if (!parser.ParseFromString(std::string(text), &spec)) {
    return absl::InvalidArgumentError(
        errors.first().empty() ? "spec_text: does not parse" : errors.first());
  }
  if (const std::string field = FirstInvalidUtf8(spec); !field.empty()) {
    return Invalid("spec_text: ", field, " is not valid UTF-8");
  }
  return spec;
}

ModelShape ShapeForSpec(const v1::ExperimentSpec& resolved) {
  const v1::ModelConfig& m = resolved.model();
  ModelShape shape;
  shape.name = m.preset();
  shape.d_model = m.d_model();
  shape.layers = m.layers();
  shape.base_heads = m.base_heads();
  shape.context = m.context();
  shape.vocab_size = m.vocab_size();
  shape.positions = m.positions() == v1::POSITION_ROTARY ? Positions::kRotary
                                                         : Positions::kLearned;
  shape.dropout = m.dropout();
  return shape;
}

absl::StatusOr<ExperimentPlan> PlanExperiment(const v1::ExperimentSpec& spec,
                                              const PlanOptions& options) {
  ExperimentPlan plan;
  PRISM_ASSIGN_OR_RETURN(plan.shape, ResolveShape(spec.model()));
  PRISM_ASSIGN_OR_RETURN(v1::Budget budget,
                         ResolveBudget(spec.budget(), plan.shape));
  std::vector<int64_t> first_round;
  std::vector<int64_t> all_seeds;
  PRISM_RETURN_IF_ERROR(PlannedSeeds(spec, &first_round, &all_seeds));
  if (spec.max_attempts() < 0) {
    return Invalid("max_attempts must not be negative (got ",
                   absl::StrCat(spec.max_attempts()), ")");
  }
  for (const auto& [field, paths] :
       {std::make_pair("data.train: ", &spec.data().train()),
        std::make_pair("data.val: ", &spec.data().val())}) {
    for (const std::string& path : *paths) {
      if (path.empty()) return Invalid(field, "empty path");
      if (options.data_roots.empty()) continue;
      absl::StatusOr<std::string> confined =
          ConfineDataPath(path, options.data_roots);
      if (!confined.ok()) return Invalid(field, confined.status().message());
    }
  }

  PRISM_ASSIGN_OR_RETURN(v1::VerdictPolicy verdicts, ResolveVerdicts(spec));
  PRISM_ASSIGN_OR_RETURN(PrincipleSet principles,
                         PrinciplesFromProto(spec.principles()));
  plan.space.d_model = plan.shape.d_model;
  plan.space.layers = plan.shape.layers;
  plan.space.base_heads = plan.shape.base_heads;
  plan.space.principles = principles;
  if (spec.min_run() != 0) plan.space.min_run = spec.min_run();
  if (spec.max_run() != 0) plan.space.max_run = spec.max_run();
  absl::Status space_ok = ValidateSpace(plan.space);
  if (!space_ok.ok()) return Prefixed("space: ", space_ok);

  // The trial limits count every seed a schedule may get.
  const int seeds = static_cast<int>(all_seeds.size());
  v1::Strategy strategy = spec.strategy() == v1::STRATEGY_UNSPECIFIED
                              ? v1::STRATEGY_GRID
                              : spec.strategy();
  std::vector<Schedule> schedules;
  if (spec.has_guided() && strategy != v1::STRATEGY_GUIDED) {
    return Invalid("guided is set but strategy is not STRATEGY_GUIDED");
  }
  if (spec.has_screening() && strategy != v1::STRATEGY_GUIDED_SCREENING) {
    return Invalid(
        "screening is set but strategy is not STRATEGY_GUIDED_SCREENING");
  }
  std::optional<v1::AshaPolicy> asha;
  std::optional<v1::ScreeningPolicy> screening;
  if (strategy == v1::STRATEGY_ASHA) {
    PRISM_ASSIGN_OR_RETURN(asha, ResolveAsha(spec, budget, seeds));
  } else if (strategy == v1::STRATEGY_GUIDED_SCREENING) {
    PRISM_ASSIGN_OR_RETURN(screening, ResolveScreening(spec));
    if (spec.asha().mode() != v1::ASHA_MODE_UNSPECIFIED &&
        spec.asha().mode() != v1::ASHA_MODE_SYNCHRONOUS) {
      return Invalid(
          "asha.mode: STRATEGY_GUIDED_SCREENING decides each "
          "bracket by ASHA_MODE_SYNCHRONOUS (got ",
          v1::AshaMode_Name(spec.asha().mode()), ")");
    }
    PRISM_ASSIGN_OR_RETURN(asha, ResolveAsha(spec, budget, seeds));
  } else if (strategy == v1::STRATEGY_GUIDED &&
             (spec.asha().mode() == v1::ASHA_MODE_SYNCHRONOUS ||
              spec.asha().mode() == v1::ASHA_MODE_GUARDED)) {
    return Invalid("asha.mode: ", v1::AshaMode_Name(spec.asha().mode()),
                   " waits for every member of a rung, but STRATEGY_GUIDED "
                   "adds schedules as it goes (its members are not known up "
                   "front)");
  } else if (spec.has_asha()) {
    return Invalid(
        "asha is set but strategy is not STRATEGY_ASHA or "
        "STRATEGY_GUIDED_SCREENING");
  }
  PRISM_ASSIGN_OR_RETURN(std::optional<v1::RacingPolicy> racing,
                         ResolveRacing(spec, strategy, seeds));
  const std::string baseline_text =
      Schedule::Uniform(plan.shape.base_heads, plan.shape.layers).ToString();
  std::optional<v1::GuidedPolicy> guided;
  if (strategy == v1::STRATEGY_GUIDED) {
    PRISM_ASSIGN_OR_RETURN(guided,
                           ResolveGuided(spec, seeds, options.max_trials));
    PRISM_ASSIGN_OR_RETURN(
        schedules, GuidedInitialDesign(plan.space, baseline_text,
                                       guided->initial(), spec.sample_seed()));
    if (schedules.empty()) return NoScheduleLeft(plan.space);
  } else if (strategy == v1::STRATEGY_GUIDED_SCREENING) {
    // The first bracket is drawn once the resolved spec is complete (below).
  } else if (!spec.schedules().empty()) {
    PRISM_ASSIGN_OR_RETURN(schedules, ExplicitSchedules(spec, plan.space));
  } else if (strategy == v1::STRATEGY_RANDOM ||
             (strategy == v1::STRATEGY_ASHA && spec.samples() > 0)) {
    if (spec.samples() <= 0) {
      return Invalid("samples must be positive for STRATEGY_RANDOM (got ",
                     absl::StrCat(spec.samples()), ")");
    }
    if (static_cast<int64_t>(spec.samples()) * seeds > options.max_trials) {
      return Invalid(absl::StrCat("samples ", spec.samples(), " x ", seeds,
                                  " seeds exceeds the limit of ",
                                  options.max_trials, " trials"));
    }
    PRISM_ASSIGN_OR_RETURN(
        schedules,
        SampleSchedules(plan.space, spec.samples(), spec.sample_seed()));
    if (schedules.empty()) return NoScheduleLeft(plan.space);
  } else if (strategy == v1::STRATEGY_GRID || strategy == v1::STRATEGY_ASHA) {
    PRISM_ASSIGN_OR_RETURN(
        schedules, GridSchedules(plan.space, seeds, options.max_trials));
  } else {
    return Invalid("strategy: unknown strategy ",
                   absl::StrCat(static_cast<int>(spec.strategy())));
  }

  // The resolved spec is what trials are reproduced from.
  plan.spec = spec;
  *plan.spec.mutable_model() = ModelToProto(plan.shape);
  // A custom shape has no preset name: every field is explicit.
  if (spec.model().preset().empty()) plan.spec.mutable_model()->clear_preset();
  *plan.spec.mutable_budget() = budget;
  plan.spec.set_min_run(plan.space.min_run);
  plan.spec.set_max_run(plan.space.max_run);
  plan.spec.set_strategy(strategy);
  if (guided.has_value()) *plan.spec.mutable_guided() = *guided;
  if (asha.has_value()) *plan.spec.mutable_asha() = *asha;
  if (screening.has_value()) *plan.spec.mutable_screening() = *screening;
  if (racing.has_value()) *plan.spec.mutable_racing() = *racing;
  *plan.spec.mutable_verdicts() = verdicts;
  *plan.spec.mutable_seeds() = {all_seeds.begin(), all_seeds.end()};
  plan.spec.set_max_attempts(spec.max_attempts() > 0
                                 ? spec.max_attempts()
                                 : options.default_max_attempts);
  if (plan.spec.name().empty()) {
    plan.spec.set_name(absl::StrCat(plan.shape.name, " search"));
  }

  if (screening.has_value()) {
    PRISM_ASSIGN_OR_RETURN(
        schedules, FirstScreeningBracket(plan.spec, options.max_trials));
  }

  const Schedule baseline =
      Schedule::Uniform(plan.shape.base_heads, plan.shape.layers);
  plan.baseline = baseline.ToString();
  // Under ASHA every schedule but the baseline trains to the first rung.
  const int64_t first_target = asha.has_value() ? asha->rungs(0) : 0;
  // Workers lease in queue order: queue the schedules in an order shuffled
  // by sample_seed, never the enumeration's, which correlates with quality.
  schedules = ShuffleSchedules(std::move(schedules), spec.sample_seed());
  // Staged ASHA screens every schedule on its first screen_seeds seeds; the
  // baseline trains on every seed, so each rung pairs.
  const int screen_seeds =
      strategy == v1::STRATEGY_ASHA ? asha->screen_seeds() : 0;
  plan.trials.reserve((schedules.size() + 1) * first_round.size());
  for (size_t k = 0; k < first_round.size(); ++k) {
    const int64_t seed = first_round[k];
    plan.trials.push_back(storage::NewTrial{plan.baseline, seed, true});
    if (screen_seeds > 0 && static_cast<int>(k) >= screen_seeds) continue;
    for (const Schedule& s : schedules) {
      if (s == baseline) continue;
      plan.trials.push_back(
          storage::NewTrial{s.ToString(), seed, false, first_target});
    }
  }
  plan.config_fingerprint = Fingerprint(plan.spec);
  return plan;
}

v1::TrialTask PlannedTask(const ExperimentPlan& plan,
                          const storage::NewTrial& trial) {
  v1::TrialTask task;
  *task.mutable_model() = plan.spec.model();
  *task.mutable_data() = plan.spec.data();
  *task.mutable_budget() = plan.spec.budget();
  task.mutable_trial()->set_schedule(trial.schedule);
  task.mutable_trial()->set_seed(trial.seed);
  return task;
}

}  // namespace prism::server
