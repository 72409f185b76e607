#include "server/experiments.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "server/convert.h"

namespace prism::server {

ExperimentManager::ExperimentManager(storage::Store* store, const Clock* clock,
                                     EventBus* events, PlanOptions plan_options,
                                     Limits limits)
    : store_(store),
      clock_(clock),
      events_(events),
      plan_options_(plan_options),
      limits_(limits) {}

absl::StatusOr<v1::SubmitResponse> ExperimentManager::Submit(
    const Caller& caller, const v1::SubmitRequest& request) {
  v1::ExperimentSpec spec = request.spec();
  if (!request.spec_text().empty()) {
    PRISM_RETURN_IF_ERROR(CheckSpecTextLength(request.spec_text(), limits_));
    PRISM_ASSIGN_OR_RETURN(spec, ParseSpecText(request.spec_text()));
  }
  PRISM_RETURN_IF_ERROR(CheckSpecLimits(spec, caller, limits_));
  PRISM_ASSIGN_OR_RETURN(ExperimentPlan plan,
                         PlanExperiment(spec, plan_options_));
  PRISM_RETURN_IF_ERROR(CheckPlanLimits(plan, limits_));
  storage::NewExperiment e;
  e.name = plan.spec.name();
  e.owner = caller.user;
  e.priority = plan.spec.priority();
  e.max_attempts = plan.spec.max_attempts();
  e.total_steps = plan.spec.budget().steps();
  e.config_fingerprint = plan.config_fingerprint;
  e.now_ms = clock_->NowMs();
  e.spec = std::move(plan.spec);
  e.trials = std::move(plan.trials);
  absl::StatusOr<storage::CreatedExperiment> created;
  {
    absl::MutexLock lock(&submit_mu_);
    if (caller.role != v1::ROLE_ADMIN) {
      PRISM_ASSIGN_OR_RETURN(int64_t active,
                             store_->CountActiveExperiments(caller.user));
      if (active >= limits_.max_active_experiments_per_user) {
        return absl::ResourceExhaustedError(
            absl::StrCat("user '", caller.user, "' has ", active,
                         " active or paused experiments; limit "
                         "--max-active-experiments-per-user=",
                         limits_.max_active_experiments_per_user,
                         " (cancel one, or wait for one to finish)"));
      }
    }
    created = store_->CreateExperiment(e);
  }
  if (!created.ok()) return created.status();
  Failpoint("submit.committed");
  PRISM_ASSIGN_OR_RETURN(v1::Experiment experiment,
                         store_->GetExperiment(created->id));
  FillSearchCost(&experiment);
  Log(LogLevel::kInfo, "experiment submitted")
      .Kv("experiment", created->id)
      .Kv("name", experiment.name())
      .Kv("owner", caller.user)
      .Kv("trials", created->trials_created);
  v1::SubmitResponse response;
  *response.mutable_experiment() = std::move(experiment);
  response.set_trials_created(created->trials_created);
  return response;
}

absl::StatusOr<v1::Experiment> ExperimentManager::Get(int64_t id) {
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e, store_->GetExperiment(id));
  FillSearchCost(&e);
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
      store_->ListExperiments(request.owner(), limit, after));
  v1::ListExperimentsResponse response;
  for (v1::Experiment& e : page.experiments) {
    FillSearchCost(&e);
    *response.add_experiments() = std::move(e);
  }
  if (page.next_after_id != 0) {
    response.set_next_page_token(
        EncodePageToken("experiments", page.next_after_id));
  }
  return response;
}

absl::Status ExperimentManager::CheckOwner(const Caller& caller, int64_t id) {
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e, store_->GetExperiment(id));
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
                         store_->CancelExperiment(id, clock_->NowMs()));
  Log(LogLevel::kInfo, "experiment cancelled")
      .Kv("experiment", id)
      .Kv("by", caller.user);
  Publish(e);
  return e;
}

absl::StatusOr<v1::Experiment> ExperimentManager::Pause(const Caller& caller,
                                                        int64_t id) {
  PRISM_RETURN_IF_ERROR(CheckOwner(caller, id));
  PRISM_ASSIGN_OR_RETURN(
      v1::Experiment e,
      store_->SetExperimentState(id, v1::EXPERIMENT_PAUSED, clock_->NowMs()));
  Log(LogLevel::kInfo, "experiment paused")
      .Kv("experiment", id)
      .Kv("by", caller.user);
  Publish(e);
  return e;
}

absl::StatusOr<v1::Experiment> ExperimentManager::Resume(const Caller& caller,
                                                         int64_t id) {
  PRISM_RETURN_IF_ERROR(CheckOwner(caller, id));
  PRISM_ASSIGN_OR_RETURN(
      v1::Experiment e,
      store_->SetExperimentState(id, v1::EXPERIMENT_ACTIVE, clock_->NowMs()));
  Log(LogLevel::kInfo, "experiment resumed")
      .Kv("experiment", id)
      .Kv("by", caller.user);
  Publish(e);
  return e;
}

absl::StatusOr<v1::Experiment> ExperimentManager::SetPriority(
    const Caller& caller, const v1::SetPriorityRequest& request) {
  PRISM_RETURN_IF_ERROR(CheckOwner(caller, request.id()));
  PRISM_RETURN_IF_ERROR(CheckPriority(caller, request.priority(), limits_));
  PRISM_ASSIGN_OR_RETURN(
      v1::Experiment e, store_->SetExperimentPriority(
                            request.id(), request.priority(), clock_->NowMs()));
  Log(LogLevel::kInfo, "experiment priority set")
      .Kv("experiment", request.id())
      .Kv("priority", request.priority())
      .Kv("by", caller.user);
  Publish(e);
  return e;
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
                         store_->GetExperiment(request.experiment_id()));
  PRISM_ASSIGN_OR_RETURN(storage::TrialPage page,
                         store_->ListTrials(request.experiment_id(),
                                            request.state(), limit, after));
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
