#include "server/experiments.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "server/convert.h"

namespace prism::server {

ExperimentManager::ExperimentManager(storage::Store* store, const Clock* clock,
                                     EventBus* events, PlanOptions plan_options)
    : store_(store),
      clock_(clock),
      events_(events),
      plan_options_(plan_options) {}

absl::StatusOr<v1::SubmitResponse> ExperimentManager::Submit(
    const Caller& caller, const v1::SubmitRequest& request) {
  v1::ExperimentSpec spec = request.spec();
  if (!request.spec_text().empty()) {
    PRISM_ASSIGN_OR_RETURN(spec, ParseSpecText(request.spec_text()));
  }
  PRISM_ASSIGN_OR_RETURN(ExperimentPlan plan,
                         PlanExperiment(spec, plan_options_));
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
  PRISM_ASSIGN_OR_RETURN(storage::CreatedExperiment created,
                         store_->CreateExperiment(e));
  Failpoint("submit.committed");
  PRISM_ASSIGN_OR_RETURN(v1::Experiment experiment,
                         store_->GetExperiment(created.id));
  Log(LogLevel::kInfo, "experiment submitted")
      .Kv("experiment", created.id)
      .Kv("name", experiment.name())
      .Kv("owner", caller.user)
      .Kv("trials", created.trials_created);
  v1::SubmitResponse response;
  *response.mutable_experiment() = std::move(experiment);
  response.set_trials_created(created.trials_created);
  return response;
}

absl::StatusOr<v1::Experiment> ExperimentManager::Get(int64_t id) {
  return store_->GetExperiment(id);
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
  events_->Publish(experiment.id(), event);
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
  for (v1::Trial& t : page.trials) {
    *t.mutable_principles() = ReportSchedule(space, t.schedule());
    *response.add_trials() = std::move(t);
  }
  if (page.next_after_id != 0) {
    response.set_next_page_token(EncodePageToken("trials", page.next_after_id));
  }
  response.set_total(page.total);
  return response;
}

}  // namespace prism::server
