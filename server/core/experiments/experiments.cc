#include "server/core/experiments/experiments.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "scheduler/strategy/adaptive_seeds.h"
#include "server/core/experiments/ladder.h"
#include "server/core/experiments/plan.h"
#include "server/core/infra/convert.h"

namespace prism::server {

ExperimentManager::ExperimentManager(storage::ExperimentStore* experiments,
                                     storage::TokenStore* tokens,
                                     storage::WorkerStore* workers,
                                     const Clock* clock, EventBus* events,
                                     PlanOptions plan_options, Limits limits,
                                     QueueManager* queue)
    : experiments_(experiments),
      tokens_(tokens),
      workers_(workers),
      clock_(clock),
      events_(events),
      plan_options_(plan_options),
      limits_(limits),
      queue_(queue) {}

absl::Status ExperimentManager::FillStandings(
    const std::vector<v1::Experiment*>& experiments) {
  bool waiting = false;
  for (v1::Experiment* e : experiments) {
    if (e->counts().queued() == 0) continue;
    if (e->state() == v1::EXPERIMENT_PAUSED) {
      e->set_queue_reason(absl::StrCat("paused: `prism resume ", e->id(),
                                       "` queues its trials again"));
    } else if (e->state() == v1::EXPERIMENT_ACTIVE) {
      waiting = true;
    }
  }
  if (!waiting || queue_ == nullptr) return absl::OkStatus();
  PRISM_ASSIGN_OR_RETURN(auto standings, queue_->Standings());
  for (v1::Experiment* e : experiments) {
    auto it = standings.find(e->id());
    if (it == standings.end()) continue;
    e->set_queue_position(it->second.position);
    e->set_queue_reason(it->second.reason);
  }
  return absl::OkStatus();
}

UserLimits ExperimentManager::LimitsFor(
    const Caller& caller, const storage::UserPolicy& policy) const {
  // A quota an admin set holds for everyone; the defaults only for users.
  const bool defaults = caller.role != v1::ROLE_ADMIN;
  UserLimits out;
  out.max_queued = policy.max_queued > 0
                       ? policy.max_queued
                       : (defaults ? limits_.max_queued_trials_per_user : 0);
  out.max_active =
      policy.max_active > 0
          ? policy.max_active
          : (defaults ? limits_.max_active_experiments_per_user : 0);
  return out;
}

absl::StatusOr<v1::Headroom> ExperimentManager::CheckHeadroom(
    const Caller& caller, int64_t adding, int64_t spec_bytes,
    int new_experiments) {
  PRISM_ASSIGN_OR_RETURN(auto policies, tokens_->ListUserPolicies());
  auto it = policies.find(caller.user);
  const UserLimits user_limits = LimitsFor(
      caller, it == policies.end() ? storage::UserPolicy{} : it->second);
  PRISM_ASSIGN_OR_RETURN(int64_t active,
                         experiments_->CountActiveExperiments(caller.user));
  PRISM_ASSIGN_OR_RETURN(int64_t queued,
                         experiments_->CountQueuedTrialsOf(caller.user));
  // How to get past a limit: a user asks an admin.
  const auto raise = [&](absl::string_view flag) {
    return caller.role == v1::ROLE_ADMIN
               ? std::string()
               : absl::StrCat("; an admin may raise it: prism user set ",
                              caller.user, " ", flag, " N");
  };
  if (new_experiments > 0 && user_limits.max_active > 0 &&
      active + new_experiments > user_limits.max_active) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "user '", caller.user, "' has ", active,
        " active or paused experiments; limit ",
        it != policies.end() && it->second.max_active > 0
            ? "max_active="
            : "--max-active-experiments-per-user=",
        user_limits.max_active, " (cancel one, or wait for one to finish",
        raise("--max-active"), ")"));
  }
  if (user_limits.max_queued > 0 && queued + adding > user_limits.max_queued) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "user '", caller.user, "' has ", queued,
        " queued trials and this adds ", adding, "; quota ",
        it != policies.end() && it->second.max_queued > 0
            ? "max_queued="
            : "--max-queued-trials-per-user=",
        user_limits.max_queued, " (wait for some to run, cancel one",
        raise("--max-queued"), ")"));
  }
  v1::Headroom headroom;
  headroom.set_queued_trials(queued + adding);
  headroom.set_max_queued_trials(user_limits.max_queued);
  headroom.set_active_experiments(
      static_cast<int32_t>(active + new_experiments));
  headroom.set_max_active_experiments(user_limits.max_active);
  headroom.set_trials(adding);
  headroom.set_max_trials_per_experiment(limits_.max_trials_per_experiment);
  headroom.set_spec_bytes(spec_bytes);
  headroom.set_max_stored_spec_bytes(limits_.max_stored_spec_bytes);
  return headroom;
}

absl::StatusOr<v1::SubmitResponse> ExperimentManager::Submit(
    const Caller& caller, const v1::SubmitRequest& request) {
  // Every bound on what the request multiplies is checked before planning:
  // nothing is resolved, enumerated or stored for a spec over a limit.
  v1::ExperimentSpec spec = request.spec();
  if (!request.spec_text().empty()) {
    PRISM_RETURN_IF_ERROR(CheckSpecTextLength(request.spec_text(), limits_));
    PRISM_ASSIGN_OR_RETURN(spec, ParseSpecText(request.spec_text()));
  }
  PRISM_RETURN_IF_ERROR(CheckSpecLimits(spec, caller, limits_));
  if (!spec.ladder_carried().empty() && !spec.has_ladder()) {
    return absl::InvalidArgumentError(
        "ladder_carried: is set by the coordinator");
  }
  if (spec.has_ladder()) {
    // The first rung runs now; the ladder submits the rest
    // (server/core/experiments/ladder.h).
    PRISM_ASSIGN_OR_RETURN(v1::ExperimentSpec normal,
                           CheckLadder(spec, plan_options_));
    spec = RungSpec(normal, 0);
  }
  PRISM_ASSIGN_OR_RETURN(ExperimentPlan plan,
                         PlanExperiment(spec, plan_options_));
  PRISM_RETURN_IF_ERROR(CheckPlanLimits(plan, limits_));
  const auto spec_bytes = static_cast<int64_t>(plan.spec.ByteSizeLong());
  PRISM_RETURN_IF_ERROR(CheckStoredSpecBytes(spec_bytes, limits_));
  storage::NewExperiment e =
      ToNewExperiment(std::move(plan), caller.user, clock_->NowMs());
  const auto adding = static_cast<int64_t>(e.trials.size());
  v1::SubmitResponse response;
  {
    // The bill, before anything is stored (a dry run's whole answer).
    absl::flat_hash_set<std::string> schedules;
    for (const storage::NewTrial& t : e.trials) schedules.insert(t.schedule);
    PRISM_ASSIGN_OR_RETURN(PlanContext context,
                           LoadPlanContext(experiments_, workers_));
    *response.mutable_plan() = EstimatePlan(
        e.spec, adding, static_cast<int64_t>(schedules.size()), context);
  }
  absl::StatusOr<storage::CreatedExperiment> created;
  {
    absl::MutexLock lock(&submit_mu_);
    PRISM_ASSIGN_OR_RETURN(*response.mutable_headroom(),
                           CheckHeadroom(caller, adding, spec_bytes));
    if (request.dry_run()) {
      v1::Experiment* planned = response.mutable_experiment();
      planned->set_name(e.name);
      planned->set_owner(e.owner);
      planned->set_state(v1::EXPERIMENT_ACTIVE);
      planned->set_priority(e.priority);
      planned->set_strategy(e.spec.strategy());
      planned->set_grid_steps(e.grid_steps);
      planned->mutable_counts()->set_queued(static_cast<int32_t>(adding));
      planned->mutable_counts()->set_total(static_cast<int32_t>(adding));
      *planned->mutable_spec() = std::move(e.spec);
      response.set_trials_created(static_cast<int32_t>(adding));
      return response;
    }
    created = experiments_->CreateExperiment(e);
  }
  if (!created.ok()) return created.status();
  Failpoint("submit.committed");
  PRISM_ASSIGN_OR_RETURN(v1::Experiment experiment,
                         experiments_->GetExperiment(created->id));
  FillSearchCost(&experiment);
  Log(LogLevel::kInfo, "experiment submitted")
      .Kv("experiment", created->id)
      .Kv("name", experiment.name())
      .Kv("owner", caller.user)
      .Kv("trials", created->trials_created);
  *response.mutable_experiment() = std::move(experiment);
  response.set_trials_created(created->trials_created);
  return response;
}

absl::StatusOr<v1::Experiment> ExperimentManager::Get(int64_t id) {
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e, experiments_->GetExperiment(id));
  FillSearchCost(&e);
  PRISM_RETURN_IF_ERROR(FillStandings({&e}));
  return e;
}

absl::StatusOr<v1::ListExperimentsResponse> ExperimentManager::List(
    const v1::ListExperimentsRequest& request) {
  PRISM_ASSIGN_OR_RETURN(
      int limit,
      ClampPageSize(request.page_size(), kDefaultPageSize, kMaxPageSize));
  PRISM_ASSIGN_OR_RETURN(int64_t after,
                         DecodePageToken("experiments", request.page_token()));
  PRISM_ASSIGN_OR_RETURN(
      storage::ExperimentPage page,
      experiments_->ListExperimentSummaries(request.owner(), limit, after));
  v1::ListExperimentsResponse response;
  // Summaries (no spec) whatever the specs hold; the page also stops at
  // max_page_bytes (at least one experiment).
  int64_t bytes = 0;
  int64_t next_after_id = page.next_after_id;
  int64_t last_id = 0;
  for (v1::Experiment& e : page.experiments) {
    if (e.grid_steps() < 0) {
      // Stored before summaries had their own columns: read it whole once.
      PRISM_ASSIGN_OR_RETURN(e, experiments_->GetExperiment(e.id()));
      FillSearchCost(&e);
      e.clear_spec();
    }
    bytes += static_cast<int64_t>(e.ByteSizeLong());
    if (last_id != 0 && bytes > limits_.max_page_bytes) {
      next_after_id = last_id;
      break;
    }
    last_id = e.id();
    *response.add_experiments() = std::move(e);
  }
  page.next_after_id = next_after_id;
  std::vector<v1::Experiment*> listed;
  for (v1::Experiment& e : *response.mutable_experiments())
    listed.push_back(&e);
  PRISM_RETURN_IF_ERROR(FillStandings(listed));
  if (page.next_after_id != 0) {
    response.set_next_page_token(
        EncodePageToken("experiments", page.next_after_id));
  }
  return response;
}

absl::Status ExperimentManager::CheckOwner(const Caller& caller, int64_t id) {
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e, experiments_->GetExperiment(id));
  return AuthorizeOwner(caller, e.owner());
}

void ExperimentManager::Publish(const v1::Experiment& experiment) {
  if (!events_->HasSubscribers(experiment.id())) return;
  v1::ExperimentEvent event;
  event.set_unix_ms(clock_->NowMs());
  *event.mutable_experiment_updated() = experiment;
  events_->Publish(experiment.id(), std::move(event));
}

absl::StatusOr<v1::Experiment> ExperimentManager::Cancel(const Caller& caller,
                                                         int64_t id) {
  PRISM_RETURN_IF_ERROR(CheckOwner(caller, id));
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e,
                         experiments_->CancelExperiment(id, clock_->NowMs()));
  Log(LogLevel::kInfo, "experiment cancelled")
      .Kv("experiment", id)
      .Kv("by", caller.user);
  Publish(e);
  return e;
}

absl::Status ExperimentManager::CheckLadderDeletable(
    const v1::Experiment& experiment) {
  if (experiment.ladder_id() == 0) return absl::OkStatus();
  PRISM_ASSIGN_OR_RETURN(std::vector<v1::Experiment> rungs,
                         experiments_->ListLadder(experiment.ladder_id()));
  const std::string self = absl::StrCat(
      "experiment ", experiment.id(), " is rung ", experiment.ladder_rung() + 1,
      " of ladder ", experiment.ladder_id(), ", whose rung ");
  for (const v1::Experiment& rung : rungs) {
    if (rung.id() == experiment.id()) continue;
    const std::string other =
        absl::StrCat(rung.ladder_rung() + 1, " (experiment ", rung.id(), ")");
    if (rung.state() == v1::EXPERIMENT_ACTIVE ||
        rung.state() == v1::EXPERIMENT_PAUSED) {
      return absl::FailedPreconditionError(absl::StrCat(
          self, other, " is still ",
          rung.state() == v1::EXPERIMENT_PAUSED ? "paused" : "active",
          ": delete a ladder's rungs once it finished (or cancel that rung "
          "first)"));
    }
    if (rung.ladder_rung() < experiment.ladder_rung()) {
      return absl::FailedPreconditionError(absl::StrCat(
          self, other,
          " is still stored: delete a ladder from its first rung up (a "
          "stored rung would submit the next one again)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::DeleteExperimentResponse> ExperimentManager::Delete(
    const Caller& caller, int64_t id) {
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e, experiments_->GetExperiment(id));
  PRISM_RETURN_IF_ERROR(AuthorizeOwner(caller, e.owner()));
  PRISM_RETURN_IF_ERROR(CheckLadderDeletable(e));
  PRISM_ASSIGN_OR_RETURN(storage::DeletedExperiment deleted,
                         experiments_->DeleteExperiment(id));
  Log(LogLevel::kInfo, "experiment deleted")
      .Kv("experiment", id)
      .Kv("name", deleted.experiment.name())
      .Kv("owner", deleted.experiment.owner())
      .Kv("by", caller.user)
      .Kv("trials", deleted.trials)
      .Kv("attempts", deleted.attempts)
      .Kv("points", deleted.points);
  v1::DeleteExperimentResponse response;
  response.set_id(id);
  response.set_name(deleted.experiment.name());
  response.set_owner(deleted.experiment.owner());
  response.set_trials(deleted.trials);
  response.set_attempts(deleted.attempts);
  response.set_points(deleted.points);
  return response;
}

absl::Status ExperimentManager::CheckExtensionLimits(
    const v1::ExperimentSpec& spec, const ExtensionPlan& plan) const {
  const auto over = [&](absl::string_view limit, int64_t value) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "schedule ", plan.most_seeds_schedule, " would have ", plan.most_seeds,
        " seeds; limit ", limit, "=", value, " (nothing added)"));
  };
  if (spec.has_seeds_policy() && plan.most_seeds > spec.seeds_policy().max()) {
    return over("seeds_policy.max", spec.seeds_policy().max());
  }
  if (RacingOn(spec) && plan.most_seeds > spec.racing().max_seeds()) {
    return over("racing.max_seeds", spec.racing().max_seeds());
  }
  if (plan.most_seeds > kMaxPolicySeeds) {
    return absl::ResourceExhaustedError(
        absl::StrCat("schedule ", plan.most_seeds_schedule, " would have ",
                     plan.most_seeds, " seeds; limit ", kMaxPolicySeeds,
                     " seeds per schedule (nothing added)"));
  }
  if (plan.trials_after > limits_.max_trials_per_experiment) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the experiment would have ", plan.trials_after, " trials (",
        plan.trials.size(), " new); limit --max-trials-per-experiment=",
        limits_.max_trials_per_experiment, " (nothing added)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::ExtendResponse> ExperimentManager::Extend(
    const Caller& caller, const v1::ExtendRequest& request) {
  for (const auto* list : {&request.schedules(), &request.seed_schedules()}) {
    if (list->size() > limits_.max_listed_schedules) {
      return OverLimit(absl::StatusCode::kInvalidArgument,
                       "the schedules listed", list->size(),
                       "max-listed-schedules", limits_.max_listed_schedules);
    }
    for (const std::string& s : *list) {
      PRISM_RETURN_IF_ERROR(
          CheckStringLength("schedule", s, limits_.max_string_bytes));
    }
  }
  if (request.seeds_size() > kMaxPolicySeeds) {
    return absl::ResourceExhaustedError(
        absl::StrCat("seeds lists ", request.seeds_size(), " seeds; limit ",
                     kMaxPolicySeeds, " seeds per schedule (nothing added)"));
  }
  // A trial finishing between the read and the write makes the plan stale:
  // plan again (the store refuses a stale one).
  constexpr int kMaxPlanAttempts = 8;
  PRISM_ASSIGN_OR_RETURN(const PlanContext context,
                         LoadPlanContext(experiments_, workers_));
  for (int attempt = 0; attempt < kMaxPlanAttempts; ++attempt) {
    PRISM_ASSIGN_OR_RETURN(v1::Experiment e,
                           experiments_->GetExperiment(request.id()));
    PRISM_RETURN_IF_ERROR(AuthorizeOwner(caller, e.owner()));
    if (e.state() == v1::EXPERIMENT_CANCELLED) {
      return absl::FailedPreconditionError(absl::StrCat(
          "experiment ", e.id(), " is cancelled: submit it again to train it"));
    }
    if (e.ladder_id() != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "experiment ", e.id(), " is rung ", e.ladder_rung() + 1,
          " of ladder ", e.ladder_id(),
          ", which carried its ranking up already: extend a ladder by "
          "submitting it with more seeds"));
    }
    PRISM_ASSIGN_OR_RETURN(std::vector<storage::TrialKey> keys,
                           experiments_->ListTrialKeys(e.id()));
    PRISM_ASSIGN_OR_RETURN(ExtensionPlan plan, PlanExtension(e, keys, request));
    PRISM_RETURN_IF_ERROR(CheckExtensionLimits(e.spec(), plan));
    const auto spec_bytes = static_cast<int64_t>(plan.spec.ByteSizeLong());
    PRISM_RETURN_IF_ERROR(CheckStoredSpecBytes(spec_bytes, limits_));
    const auto adding = static_cast<int64_t>(plan.trials.size());
    v1::ExtendResponse response;
    // The bill of the new trials: each trains to its target, the whole
    // budget unless it says otherwise.
    double new_steps = 0;
    for (const storage::NewTrial& t : plan.trials) {
      new_steps += static_cast<double>(
          t.target_steps > 0 ? t.target_steps : plan.spec.budget().steps());
    }
    *response.mutable_plan() =
        PlanTrials(plan.spec, adding, new_steps, context);
    response.set_trials_reused(static_cast<int32_t>(plan.trials_reused));
    *response.mutable_seeds_added() = {plan.seeds_added.begin(),
                                       plan.seeds_added.end()};
    *response.mutable_schedules_added() = {plan.schedules_added.begin(),
                                           plan.schedules_added.end()};
    absl::StatusOr<storage::ExtendedExperiment> extended;
    {
      absl::MutexLock lock(&submit_mu_);
      PRISM_ASSIGN_OR_RETURN(
          *response.mutable_headroom(),
          CheckHeadroom(caller, adding, spec_bytes,
                        e.state() == v1::EXPERIMENT_DONE ? 1 : 0));
      response.mutable_headroom()->set_trials(plan.trials_after);
      if (request.dry_run()) {
        FillSearchCost(&e);
        *response.mutable_experiment() = std::move(e);
        response.set_trials_created(static_cast<int32_t>(adding));
        return response;
      }
      storage::ExperimentExtension x;
      x.experiment_id = e.id();
      x.spec = plan.spec;
      x.grid_steps = GridStepsOf(plan.spec);
      x.trials = plan.trials;
      x.seen_trials = static_cast<int64_t>(keys.size());
      x.now_ms = clock_->NowMs();
      extended = experiments_->ExtendExperiment(x);
    }
    if (absl::IsAborted(extended.status())) continue;
    if (!extended.ok()) return extended.status();
    v1::Experiment& after = extended->experiment;
    FillSearchCost(&after);
    Log(LogLevel::kInfo, "experiment extended")
        .Kv("experiment", after.id())
        .Kv("owner", after.owner())
        .Kv("by", caller.user)
        .Kv("trials", extended->added)
        .Kv("reused", plan.trials_reused)
        .Kv("seeds", absl::StrJoin(plan.seeds_added, ","))
        .Kv("schedules", absl::StrJoin(plan.schedules_added, ","))
        .Kv("state", v1::ExperimentState_Name(after.state()));
    Publish(after);
    response.set_trials_created(extended->added);
    *response.mutable_experiment() = std::move(after);
    return response;
  }
  return absl::AbortedError(absl::StrCat(
      "experiment ", request.id(), ": trials kept finishing while ",
      kMaxPlanAttempts, " extensions were planned; try again"));
}

absl::StatusOr<v1::Experiment> ExperimentManager::Pause(const Caller& caller,
                                                        int64_t id) {
  return SetState(caller, id, v1::EXPERIMENT_PAUSED, "experiment paused");
}

absl::StatusOr<v1::Experiment> ExperimentManager::Resume(const Caller& caller,
                                                         int64_t id) {
  return SetState(caller, id, v1::EXPERIMENT_ACTIVE, "experiment resumed");
}

absl::StatusOr<v1::Experiment> ExperimentManager::SetState(
    const Caller& caller, int64_t id, v1::ExperimentState state,
    const char* logged) {
  PRISM_RETURN_IF_ERROR(CheckOwner(caller, id));
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e, experiments_->SetExperimentState(
                                               id, state, clock_->NowMs()));
  Log(LogLevel::kInfo, logged).Kv("experiment", id).Kv("by", caller.user);
  Publish(e);
  return e;
}

absl::StatusOr<v1::Experiment> ExperimentManager::SetPriority(
    const Caller& caller, const v1::SetPriorityRequest& request) {
  PRISM_RETURN_IF_ERROR(CheckOwner(caller, request.id()));
  PRISM_RETURN_IF_ERROR(CheckPriority(caller, request.priority(), limits_));
  PRISM_ASSIGN_OR_RETURN(
      v1::Experiment e, experiments_->SetExperimentPriority(
                            request.id(), request.priority(), clock_->NowMs()));
  Log(LogLevel::kInfo, "experiment priority set")
      .Kv("experiment", request.id())
      .Kv("priority", request.priority())
      .Kv("by", caller.user);
  Publish(e);
  return e;
}

absl::StatusOr<v1::UserPolicy> ExperimentManager::SetUserPolicy(
    const Caller& caller, const v1::SetUserPolicyRequest& request) {
  PRISM_RETURN_IF_ERROR(Authorize(caller, Permission::kAdmin));
  if (request.user().empty()) {
    return absl::InvalidArgumentError("user is required");
  }
  PRISM_RETURN_IF_ERROR(
      CheckStringLength("user", request.user(), limits_.max_string_bytes));
  constexpr double kMaxShare = 1e6;
  if (request.has_share() &&
      !(std::isfinite(request.share()) && request.share() > 0 &&
        request.share() <= kMaxShare)) {
    return absl::InvalidArgumentError(
        absl::StrCat("share must be above 0 and at most ", kMaxShare, " (got ",
                     request.share(), ")"));
  }
  const int global_running =
      queue_ != nullptr ? queue_->options().max_running_per_user : 0;
  if (request.has_max_running()) {
    if (request.max_running() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("max_running must not be negative (got ",
                       request.max_running(), "; 0: no quota)"));
    }
    if (global_running > 0 && request.max_running() > global_running) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_running is ", request.max_running(),
          "; above the coordinator's --max-running-per-user=", global_running));
    }
  }
  const int64_t queued_limit = limits_.max_trials_per_experiment *
                               int64_t{limits_.max_active_experiments_per_user};
  if (request.has_max_active() &&
      (request.max_active() < 0 || request.max_active() > kMaxActiveQuota)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_active must be from 0 to ", kMaxActiveQuota, " (got ",
        request.max_active(), "; 0: --max-active-experiments-per-user)"));
  }
  if (request.has_max_queued()) {
    if (request.max_queued() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_queued must not be negative (got ", request.max_queued(),
          "; 0: --max-queued-trials-per-user)"));
    }
    if (request.max_queued() > queued_limit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_queued is ", request.max_queued(),
          "; above the coordinator's --max-trials-per-experiment x "
          "--max-active-experiments-per-user=",
          queued_limit));
    }
  }
  PRISM_ASSIGN_OR_RETURN(auto policies, tokens_->ListUserPolicies());
  storage::UserPolicy policy = policies[request.user()];
  if (request.has_share()) policy.share = request.share();
  if (request.has_max_running()) policy.max_running = request.max_running();
  if (request.has_max_queued()) policy.max_queued = request.max_queued();
  if (request.has_max_active()) policy.max_active = request.max_active();
  PRISM_RETURN_IF_ERROR(
      tokens_->SetUserPolicy(request.user(), policy, clock_->NowMs()));
  Log(LogLevel::kInfo, "user policy set")
      .Kv("user", request.user())
      .Kv("share", policy.share)
      .Kv("max_running", policy.max_running)
      .Kv("max_queued", policy.max_queued)
      .Kv("max_active", policy.max_active)
      .Kv("by", caller.user);
  PRISM_ASSIGN_OR_RETURN(v1::ListUsersResponse all, ListUsers());
  for (const v1::UserPolicy& u : all.users()) {
    if (u.user() == request.user()) return u;
  }
  return absl::InternalError("the user policy just stored is missing");
}

absl::StatusOr<v1::ListUsersResponse> ExperimentManager::ListUsers() {
  PRISM_ASSIGN_OR_RETURN(auto policies, tokens_->ListUserPolicies());
  std::map<std::string, UserStanding> standings;
  v1::ListUsersResponse response;
  if (queue_ != nullptr) {
    PRISM_ASSIGN_OR_RETURN(standings, queue_->UserStandings());
    response.set_half_life_seconds(
        static_cast<double>(queue_->options().fair_share_half_life_ms) /
        1000.0);
  }
  // Users whose live tokens are all admin tokens.
  PRISM_ASSIGN_OR_RETURN(std::vector<v1::TokenInfo> tokens,
                         tokens_->ListTokens(""));
  const int64_t now = clock_->NowMs();
  absl::flat_hash_set<std::string> admins_only, not_admin;
  for (const v1::TokenInfo& t : tokens) {
    if (t.revoked_unix_ms() != 0 ||
        (t.expires_unix_ms() != 0 && t.expires_unix_ms() <= now)) {
      continue;
    }
    (t.role() == v1::ROLE_ADMIN ? admins_only : not_admin).insert(t.user());
  }
  for (const std::string& user : not_admin) admins_only.erase(user);
  for (const auto& [user, policy] : policies) {
    v1::UserPolicy* u = response.add_users();
    u->set_user(user);
    u->set_share(policy.share);
    u->set_max_running(policy.max_running);
    u->set_max_queued(policy.max_queued);
    u->set_max_active(policy.max_active);
    // In force for the user's submissions: the defaults hold for a user
    // who submits with a user token, none for one who holds admin tokens
    // only (an admin has no default limits).
    Caller holder;
    holder.user = user;
    if (admins_only.contains(user)) holder.role = v1::ROLE_ADMIN;
    const UserLimits in_force = LimitsFor(holder, policy);
    u->set_effective_max_queued(static_cast<int32_t>(in_force.max_queued));
    u->set_effective_max_active(in_force.max_active);
    PRISM_ASSIGN_OR_RETURN(int64_t active,
                           experiments_->CountActiveExperiments(user));
    u->set_active(static_cast<int32_t>(active));
    auto it = standings.find(user);
    if (it != standings.end()) {
      u->set_usage_seconds(it->second.usage_seconds);
      u->set_usage_per_share(it->second.usage_seconds / policy.share);
      u->set_running(it->second.live);
    }
    PRISM_ASSIGN_OR_RETURN(int64_t queued,
                           experiments_->CountQueuedTrialsOf(user));
    u->set_queued(static_cast<int32_t>(queued));
  }
  return response;
}

absl::StatusOr<v1::ListTrialsResponse> ExperimentManager::ListTrials(
    const v1::ListTrialsRequest& request) {
  if (!v1::TrialState_IsValid(request.state())) {
    return absl::InvalidArgumentError(
        absl::StrCat("state ", request.state(), " is not a trial state"));
  }
  PRISM_ASSIGN_OR_RETURN(
      int limit,
      ClampPageSize(request.page_size(), kDefaultPageSize, kMaxPageSize));
  PRISM_ASSIGN_OR_RETURN(int64_t after,
                         DecodePageToken("trials", request.page_token()));
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e,
                         experiments_->GetExperiment(request.experiment_id()));
  PRISM_ASSIGN_OR_RETURN(
      storage::TrialPage page,
      experiments_->ListTrials(request.experiment_id(), request.state(), limit,
                               after));
  const SpaceSpec space = SpaceForSpec(e.spec());
  v1::ListTrialsResponse response;
  // The page also stops at max_page_bytes (at least one trial): deep models'
  // trials carry per-layer reports and distances.
  int64_t bytes = 0;
  int64_t next_after_id = page.next_after_id;
  int64_t last_id = 0;
  for (v1::Trial& t : page.trials) {
    *t.mutable_principles() = ReportSchedule(space, t.schedule());
    bytes += static_cast<int64_t>(t.ByteSizeLong());
    if (last_id != 0 && bytes > limits_.max_page_bytes) {
      next_after_id = last_id;
      break;
    }
    last_id = t.id();
    *response.add_trials() = std::move(t);
  }
  if (next_after_id != 0) {
    response.set_next_page_token(EncodePageToken("trials", next_after_id));
  }
  response.set_total(page.total);
  return response;
}

}  // namespace prism::server
