#include "server/core/experiments/limits.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "scheduler/space/presets.h"

namespace prism::server {
namespace {

absl::Status Invalid(absl::string_view what, int64_t value,
                     absl::string_view flag, int64_t limit) {
  return OverLimit(absl::StatusCode::kInvalidArgument, what, value, flag,
                   limit);
}

absl::Status CheckStrings(
    absl::string_view field,
    const google::protobuf::RepeatedPtrField<std::string>& values,
    const Limits& limits) {
  for (int i = 0; i < values.size(); ++i) {
    PRISM_RETURN_IF_ERROR(CheckStringLength(absl::StrCat(field, "[", i, "]"),
                                            values.Get(i),
                                            limits.max_string_bytes));
  }
  return absl::OkStatus();
}

// CheckShape bounds the shape fields in the order that keeps the parameter
// count from overflowing: every factor is bounded before it is multiplied.
absl::Status CheckShape(const ModelShape& shape, const Limits& limits) {
  if (shape.layers > limits.max_layers) {
    return Invalid("model.layers", shape.layers, "max-layers",
                   limits.max_layers);
  }
  if (shape.d_model > limits.max_d_model) {
    return Invalid("model.d_model", shape.d_model, "max-d-model",
                   limits.max_d_model);
  }
  if (shape.base_heads > limits.max_heads) {
    return Invalid("model.base_heads", shape.base_heads, "max-heads",
                   limits.max_heads);
  }
  if (shape.context > limits.max_context) {
    return Invalid("model.context", shape.context, "max-context",
                   limits.max_context);
  }
  const int64_t parameters = CountParameters(shape).total;
  if (parameters > limits.max_parameters) {
    return Invalid("the model's parameter count", parameters, "max-parameters",
                   limits.max_parameters);
  }
  return absl::OkStatus();
}

// CheckModelFields bounds the shape fields a spec (or a ladder rung) sets
// directly, before a preset fills the rest (a huge d_model would overflow
// the parameter count).
absl::Status CheckModelFields(absl::string_view field, const v1::ModelConfig& m,
                              const Limits& limits) {
  if (m.layers() > limits.max_layers) {
    return Invalid(absl::StrCat(field, ".layers"), m.layers(), "max-layers",
                   limits.max_layers);
  }
  if (m.d_model() > limits.max_d_model) {
    return Invalid(absl::StrCat(field, ".d_model"), m.d_model(), "max-d-model",
                   limits.max_d_model);
  }
  if (m.base_heads() > limits.max_heads) {
    return Invalid(absl::StrCat(field, ".base_heads"), m.base_heads(),
                   "max-heads", limits.max_heads);
  }
  if (m.context() > limits.max_context) {
    return Invalid(absl::StrCat(field, ".context"), m.context(), "max-context",
                   limits.max_context);
  }
  return absl::OkStatus();
}

absl::Status CheckLossTargets(absl::string_view field, const v1::Budget& budget,
                              const Limits& limits) {
  if (budget.loss_targets_size() <= limits.max_loss_targets) {
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat(field, ".loss_targets' count"),
                 budget.loss_targets_size(), "max-loss-targets",
                 limits.max_loss_targets);
}

// CheckLadderLimits bounds what a ladder multiplies: its rungs, and each
// rung's seeds and loss targets (merged over the spec's at planning).
absl::Status CheckLadderLimits(const v1::LadderPolicy& ladder,
                               const Limits& limits) {
  if (ladder.rungs_size() > limits.max_ladder_rungs) {
    return Invalid("ladder.rungs' count", ladder.rungs_size(),
                   "max-ladder-rungs", limits.max_ladder_rungs);
  }
  for (int i = 0; i < ladder.rungs_size(); ++i) {
    const v1::LadderRung& rung = ladder.rungs(i);
    const std::string field = absl::StrCat("ladder.rungs[", i, "]");
    if (rung.seeds_size() > limits.max_seeds) {
      return Invalid(absl::StrCat(field, ".seeds' count"), rung.seeds_size(),
                     "max-seeds", limits.max_seeds);
    }
    PRISM_RETURN_IF_ERROR(CheckLossTargets(absl::StrCat(field, ".budget"),
                                           rung.budget(), limits));
    PRISM_RETURN_IF_ERROR(
        CheckStringLength(absl::StrCat(field, ".model.preset"),
                          rung.model().preset(), limits.max_string_bytes));
    PRISM_RETURN_IF_ERROR(
        CheckModelFields(absl::StrCat(field, ".model"), rung.model(), limits));
  }
  if (ladder.has_budget()) {
    return absl::InvalidArgumentError(
        "ladder.budget: is set by the coordinator (set the spec's budget, or "
        "a rung's)");
  }
  return absl::OkStatus();
}

}  // namespace

int64_t MaxRequestBytes(const Limits& l) {
  const int64_t report = l.max_points_per_report * kMaxLossPointWireBytes;
  return std::min(l.max_message_bytes,
                  std::max(l.max_spec_bytes, report) + kRequestOverheadBytes);
}

absl::Status ValidateLimits(const Limits& l) {
  const struct {
    const char* flag;
    int64_t value;
  } positive[] = {
      {"max-message-bytes", l.max_message_bytes},
      {"max-trials-per-experiment", l.max_trials_per_experiment},
      {"max-seeds", l.max_seeds},
      {"max-points-per-report", l.max_points_per_report},
      {"max-string-bytes", l.max_string_bytes},
      {"max-spec-bytes", l.max_spec_bytes},
      {"max-page-bytes", l.max_page_bytes},
      {"max-watch-streams", l.max_watch_streams},
      {"max-watch-streams-per-user", l.max_watch_streams_per_user},
      {"max-event-streams", l.max_event_streams},
      {"max-event-streams-per-user", l.max_event_streams_per_user},
      {"max-stream-buffer-bytes", l.max_stream_buffer_bytes},
      {"watch-interval-ms", l.watch_interval_ms},
      {"max-live-points", l.max_live_points},
      {"max-waiting-reads", l.max_waiting_reads},
      {"grpc-max-streams-per-connection", l.grpc_max_streams_per_connection},
      {"grpc-max-buffered-bytes", l.grpc_max_buffered_bytes},
      {"http-max-connections", l.http_max_connections},
      {"http-max-connections-per-peer", l.http_max_connections_per_peer},
      {"http-max-head-bytes", l.http_max_head_bytes},
      {"http-header-timeout-ms", l.http_header_timeout_ms},
      {"max-active-experiments-per-user", l.max_active_experiments_per_user},
      {"max-queued-trials-per-user", l.max_queued_trials_per_user},
      {"max-ladder-rungs", l.max_ladder_rungs},
      {"max-loss-targets", l.max_loss_targets},
      {"max-listed-schedules", l.max_listed_schedules},
      {"max-stored-spec-bytes", l.max_stored_spec_bytes},
      {"max-attempts-limit", l.max_attempts_limit},
      {"max-layers", l.max_layers},
      {"max-d-model", l.max_d_model},
      {"max-heads", l.max_heads},
      {"max-context", l.max_context},
      {"max-parameters", l.max_parameters},
  };
  for (const auto& p : positive) {
    if (p.value < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", p.flag, " must be at least 1 (got ", p.value, ")"));
    }
  }
  if (l.grpc_max_buffered_bytes < MaxRequestBytes(l)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--grpc-max-buffered-bytes=", l.grpc_max_buffered_bytes,
        " cannot hold the largest request (", MaxRequestBytes(l),
        " bytes, from --max-spec-bytes and --max-points-per-report)"));
  }
  if (l.max_concurrent_reads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-concurrent-reads must not be negative (got ",
                     l.max_concurrent_reads, ")"));
  }
  if (l.read_nice < 0 || l.read_nice > 19) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--read-nice must be from 0 to 19 nice steps (got ", l.read_nice, ")"));
  }
  if (l.max_user_priority < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-user-priority must not be negative (got ",
                     l.max_user_priority, ")"));
  }
  // gRPC takes an int; a message of 2 GiB or more cannot be framed.
  if (l.max_message_bytes > (int64_t{1} << 31) - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-message-bytes must be below 2 GiB (got ",
                     l.max_message_bytes, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckPriority(const Caller& caller, int64_t priority,
                           const Limits& limits) {
  if (caller.role == v1::ROLE_ADMIN ||
      std::llabs(priority) <= limits.max_user_priority) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "priority is ", priority, "; limit --max-user-priority=",
      limits.max_user_priority, " (users may use -", limits.max_user_priority,
      "..", limits.max_user_priority, "; admins any)"));
}

absl::Status CheckSpecTextLength(absl::string_view spec_text,
                                 const Limits& limits) {
  if (static_cast<int64_t>(spec_text.size()) <= limits.max_spec_bytes) {
    return absl::OkStatus();
  }
  return Invalid("spec_text's length in bytes",
                 static_cast<int64_t>(spec_text.size()), "max-spec-bytes",
                 limits.max_spec_bytes);
}

absl::Status CheckTrialCount(int64_t trials, const Limits& limits) {
  if (trials <= limits.max_trials_per_experiment) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("spec has ", trials, " trials; limit --max-trials-per-",
                   "experiment=", limits.max_trials_per_experiment));
}

absl::Status CheckSpecLimits(const v1::ExperimentSpec& spec,
                             const Caller& caller, const Limits& limits) {
  PRISM_RETURN_IF_ERROR(
      CheckStringLength("name", spec.name(), limits.max_string_bytes));
  PRISM_RETURN_IF_ERROR(CheckStringLength("model.preset", spec.model().preset(),
                                          limits.max_string_bytes));
  PRISM_RETURN_IF_ERROR(CheckStrings("schedules", spec.schedules(), limits));
  PRISM_RETURN_IF_ERROR(
      CheckStrings("data.train", spec.data().train(), limits));
  PRISM_RETURN_IF_ERROR(CheckStrings("data.val", spec.data().val(), limits));
  const int64_t data_paths =
      int64_t{spec.data().train_size()} + spec.data().val_size();
  if (data_paths > limits.max_seeds) {
    // Paths are few in practice; the seed limit is a generous bound.
    return Invalid("data's number of paths", data_paths, "max-seeds",
                   limits.max_seeds);
  }
  if (spec.seeds_size() > limits.max_seeds) {
    return Invalid("seeds' count", spec.seeds_size(), "max-seeds",
                   limits.max_seeds);
  }
  if (spec.has_seeds_policy() && spec.seeds_policy().max() > limits.max_seeds) {
    return Invalid("seeds_policy.max", spec.seeds_policy().max(), "max-seeds",
                   limits.max_seeds);
  }
  PRISM_RETURN_IF_ERROR(CheckLossTargets("budget", spec.budget(), limits));
  if (spec.schedules_size() > limits.max_listed_schedules) {
    return Invalid("schedules' count", spec.schedules_size(),
                   "max-listed-schedules", limits.max_listed_schedules);
  }
  PRISM_RETURN_IF_ERROR(CheckLadderLimits(spec.ladder(), limits));
  // Planning keeps every listed schedule for every seed (then adds the
  // baseline's and drops repeats): bound that before planning builds it.
  const int64_t listed =
      int64_t{spec.schedules_size()} * std::max(1, spec.seeds_size());
  if (listed > limits.max_trials_per_experiment) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec lists ", spec.schedules_size(), " schedules x ",
                     spec.seeds_size(), " seeds = ", listed,
                     " trials; limit --max-trials-per-experiment=",
                     limits.max_trials_per_experiment));
  }
  if (spec.max_attempts() > limits.max_attempts_limit) {
    return Invalid("max_attempts", spec.max_attempts(), "max-attempts-limit",
                   limits.max_attempts_limit);
  }
  PRISM_RETURN_IF_ERROR(CheckPriority(caller, spec.priority(), limits));
  return CheckModelFields("model", spec.model(), limits);
}

absl::Status CheckPlanLimits(const ExperimentPlan& plan, const Limits& limits) {
  const int64_t planned = static_cast<int64_t>(plan.trials.size());
  const v1::SeedsPolicy& policy = plan.spec.seeds_policy();
  if (plan.spec.has_seeds_policy() && policy.min() > 0) {
    // The plan holds the first round, min seeds per schedule; later rounds
    // may give every schedule (and the baseline) up to max: bound that.
    const int64_t most = planned / policy.min() * policy.max();
    if (most > limits.max_trials_per_experiment) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec may grow to ", most, " trials (",
                       planned / policy.min(), " schedules x seeds_policy.max ",
                       policy.max(), "); limit --max-trials-per-experiment=",
                       limits.max_trials_per_experiment));
    }
  }
  PRISM_RETURN_IF_ERROR(CheckTrialCount(planned, limits));
  return CheckShape(plan.shape, limits);
}

absl::Status CheckStoredSpecBytes(int64_t bytes, const Limits& limits) {
  if (bytes <= limits.max_stored_spec_bytes) return absl::OkStatus();
  return Invalid("the resolved spec's size in bytes", bytes,
                 "max-stored-spec-bytes", limits.max_stored_spec_bytes);
}

}  // namespace prism::server
