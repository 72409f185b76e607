#include "server/core/queue/queue.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "proto/enum_names.h"
#include "proto/worker_protocol.h"
#include "server/core/infra/checks.h"
#include "server/core/infra/convert.h"

namespace prism::server {
namespace {

constexpr size_t kMaxWorkerIdLength = 128;
constexpr size_t kMaxFailMessageLength = 4096;

absl::Status CheckAttemptRef(int64_t trial_id, int32_t attempt,
                             const std::string& worker_id) {
  if (worker_id.empty())
    return absl::InvalidArgumentError("worker_id is required");
  if (trial_id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_id must be positive (got ", trial_id, ")"));
  }
  if (attempt <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("attempt must be positive (got ", attempt, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckPoints(
    const google::protobuf::RepeatedPtrField<v1::LossPoint>& points,
    int max_points) {
  if (points.size() > max_points) {
    return absl::InvalidArgumentError(
        absl::StrCat("a report carries ", points.size(),
                     " points; limit --max-points-per-report=", max_points,
                     " (send several)"));
  }
  for (const v1::LossPoint& p : points) {
    if (p.split() != v1::SPLIT_TRAIN && p.split() != v1::SPLIT_VAL) {
      return absl::InvalidArgumentError(
          absl::StrCat("point at step ", p.step(),
                       " has no split (SPLIT_TRAIN or SPLIT_VAL)"));
    }
    if (p.step() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("point step must not be negative (got ", p.step(), ")"));
    }
    // SQLite stores NaN as NULL, which the points table would refuse:
    // non-finite values are refused here, by name, never dropped. A trainer
    // whose loss is not finite reports the trial diverged instead.
    const struct {
      const char* field;
      double value;
    } values[] = {{"loss", p.loss()},
                  {"learning_rate", p.learning_rate()},
                  {"tokens_per_second", p.tokens_per_second()},
                  {"elapsed_seconds", p.elapsed_seconds()}};
    for (const auto& v : values) {
      if (!std::isfinite(v.value)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "point ", EnumValueName(p.split()), " step ", p.step(), ": ",
            v.field, " is ", v.value,
            "; values must be finite (report a diverged trial with "
            "Complete and metrics.diverged)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> NewWorkerId() {
  PRISM_ASSIGN_OR_RETURN(std::string token, GenerateToken());
  // Twelve hex digits of fresh randomness are plenty to tell workers apart.
  return absl::StrCat("w-", token.substr(token.size() - 12));
}

}  // namespace

QueueManager::QueueManager(storage::QueueStore* queue,
                           storage::ExperimentStore* experiments,
                           storage::TokenStore* tokens,
                           storage::WorkerStore* workers,
                           storage::CurveStore* curves, const Clock* clock,
                           EventBus* events, IngestWriter* ingest,
                           QueueOptions options, const FinishSignal* finished)
    : queue_(queue),
      experiments_(experiments),
      tokens_(tokens),
      workers_(workers),
      curves_(curves),
      clock_(clock),
      events_(events),
      ingest_(ingest),
      options_(options),
      finished_(finished) {}

absl::StatusOr<v1::ExperimentSpec> QueueManager::SpecFor(
    int64_t experiment_id) {
  {
    absl::MutexLock lock(&mu_);
    auto it = specs_.find(experiment_id);
    if (it != specs_.end()) return it->second;
  }
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e,
                         experiments_->GetExperiment(experiment_id));
  absl::MutexLock lock(&mu_);
  specs_.emplace(experiment_id, e.spec());
  return e.spec();
}

absl::Status QueueManager::CheckWorker(const Caller& caller,
                                       const std::string& worker_id) {
  std::string owner;
  {
    absl::MutexLock lock(&mu_);
    auto it = worker_users_.find(worker_id);
    if (it != worker_users_.end()) owner = it->second;
  }
  if (owner.empty()) {
    absl::StatusOr<v1::Worker> w = workers_->GetWorker(worker_id);
    if (absl::IsNotFound(w.status())) {
      return absl::NotFoundError(absl::StrCat(
          "worker '", worker_id, "' is not registered; call Register first"));
    }
    if (!w.ok()) return w.status();
    owner = w->user();
    absl::MutexLock lock(&mu_);
    worker_users_[worker_id] = owner;
  }
  if (owner != caller.user && caller.role != v1::ROLE_ADMIN) {
    return absl::PermissionDeniedError(
        absl::StrCat("worker '", worker_id, "' belongs to user '", owner, "'"));
  }
  return absl::OkStatus();
}

v1::Trial QueueManager::WithPrinciples(v1::Trial trial,
                                       const v1::ExperimentSpec& spec) {
  *trial.mutable_principles() =
      ReportSchedule(SpaceForSpec(spec), trial.schedule());
  return trial;
}

void QueueManager::PublishTrial(const v1::Trial& trial) {
  if (!events_->HasSubscribers(trial.experiment_id())) return;
  v1::ExperimentEvent event;
  event.set_unix_ms(clock_->NowMs());
  *event.mutable_trial_updated() = trial;
  events_->Publish(trial.experiment_id(), std::move(event));
}

void QueueManager::PublishExperiment(int64_t experiment_id) {
  if (!events_->HasSubscribers(experiment_id)) return;
  absl::StatusOr<v1::Experiment> e = experiments_->GetExperiment(experiment_id);
  if (!e.ok()) return;
  v1::ExperimentEvent event;
  event.set_unix_ms(clock_->NowMs());
  *event.mutable_experiment_updated() = *std::move(e);
  events_->Publish(experiment_id, std::move(event));
}

absl::StatusOr<v1::RegisterResponse> QueueManager::Register(
    const Caller& caller, const v1::RegisterRequest& request) {
  PRISM_RETURN_IF_ERROR(
      CheckStringLength("host", request.host(), options_.max_string_bytes));
  PRISM_RETURN_IF_ERROR(
      CheckStringLength("device", request.device(), options_.max_string_bytes));
  v1::Worker worker;
  if (request.worker_id().empty()) {
    PRISM_ASSIGN_OR_RETURN(std::string id, NewWorkerId());
    worker.set_id(id);
  } else {
    if (request.worker_id().size() > kMaxWorkerIdLength) {
      return absl::InvalidArgumentError(absl::StrCat(
          "worker_id's length in bytes is ", request.worker_id().size(),
          "; limit ", kMaxWorkerIdLength));
    }
    worker.set_id(request.worker_id());
  }
  worker.set_host(request.host());
  worker.set_device(request.device());
  worker.set_threads(request.threads());
  worker.set_user(caller.user);
  // The store checks ownership in the same statement that writes: two
  // users racing for one id cannot both win. Admins may take an id over.
  PRISM_ASSIGN_OR_RETURN(
      v1::Worker stored,
      workers_->UpsertWorker(worker, clock_->LeaseMs(),
                             /*take_over=*/caller.role == v1::ROLE_ADMIN));
  {
    absl::MutexLock lock(&mu_);
    worker_users_[stored.id()] = stored.user();
  }
  Log(LogLevel::kInfo, "worker registered")
      .Kv("worker", stored.id())
      .Kv("host", stored.host())
      .Kv("device", stored.device())
      .Kv("user", stored.user());
  v1::RegisterResponse response;
  response.set_worker_id(stored.id());
  response.set_lease_seconds(options_.lease_seconds);
  response.set_heartbeat_seconds(options_.heartbeat_seconds);
  return response;
}

int64_t CurveCompleteThrough(const v1::Budget& budget,
                             const storage::LastStored& stored) {
  const int64_t steps = budget.steps();
  // NextPoint: the step of the first point after `last` of a split emitted
  // every `every` steps and at the last step.
  auto next_point = [steps](int64_t last, int64_t every) {
    if (last >= steps) return steps + 1;
    return std::min(steps, (last / every + 1) * every);
  };
  if (stored.val < 0) return 0;
  const int64_t next =
      std::min(next_point(std::max<int64_t>(stored.train, 0),
                          std::max(1, budget.log_every())),
               next_point(stored.val, std::max(1, budget.eval_every())));
  return std::max<int64_t>(0, next - 1);
}

absl::StatusOr<v1::LeaseResponse> QueueManager::Lease(
    const Caller& caller, const v1::LeaseRequest& request) {
  if (request.worker_id().empty()) {
    return absl::InvalidArgumentError("worker_id is required");
  }
  PRISM_RETURN_IF_ERROR(CheckWorker(caller, request.worker_id()));
  std::optional<v1::Trial> leased;
  bool redelivered = false;
  {
    absl::MutexLock lock(&lease_mu_);
    const int64_t now = clock_->LeaseMs();
    PRISM_ASSIGN_OR_RETURN(
        leased,
        queue_->RedeliverLease(request.worker_id(), now, DeadlineFrom(now)));
    redelivered = leased.has_value();
    if (!redelivered) {
      PRISM_ASSIGN_OR_RETURN(std::vector<QueueSlot> order, Order());
      for (const QueueSlot& slot : order) {
        if (slot.at_quota) continue;
        const int64_t at = clock_->LeaseMs();
        PRISM_ASSIGN_OR_RETURN(
            leased,
            queue_->LeaseNextTrial(slot.candidate.experiment_id,
                                   request.worker_id(), at, DeadlineFrom(at)));
        if (leased.has_value()) break;
      }
    }
  }
  if (leased.has_value()) Failpoint("lease.committed");
  v1::LeaseResponse response;
  if (!leased.has_value()) {
    response.set_retry_after_ms(options_.idle_retry_ms);
    return response;
  }
  PRISM_ASSIGN_OR_RETURN(v1::ExperimentSpec spec,
                         SpecFor(leased->experiment_id()));
  v1::TrialTask* task = response.mutable_task();
  *task->mutable_trial() = WithPrinciples(*leased, spec);
  *task->mutable_model() = spec.model();
  *task->mutable_data() = spec.data();
  *task->mutable_budget() = spec.budget();
  task->set_resume_step(leased->last_step());
  task->set_stop_at_step(leased->target_steps());
  PRISM_ASSIGN_OR_RETURN(storage::LastStored stored,
                         curves_->LastStoredSteps(leased->id()));
  task->set_stored_step(CurveCompleteThrough(spec.budget(), stored));
  task->set_checkpoint_key(
      absl::StrCat("exp", leased->experiment_id(), "-trial", leased->id()));
  Log(LogLevel::kInfo, redelivered ? "lease delivered again" : "trial leased")
      .Kv("trial", leased->id())
      .Kv("experiment", leased->experiment_id())
      .Kv("schedule", leased->schedule())
      .Kv("seed", leased->seed())
      .Kv("attempt", leased->attempt())
      .Kv("worker", request.worker_id());
  PublishTrial(task->trial());
  return response;
}

absl::StatusOr<v1::StartResponse> QueueManager::Start(
    const Caller& caller, const v1::StartRequest& request) {
  PRISM_RETURN_IF_ERROR(CheckAttemptRef(request.trial_id(), request.attempt(),
                                        request.worker_id()));
  if (request.resumed_from_step() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("resumed_from_step must not be negative (got ",
                     request.resumed_from_step(), ")"));
  }
  PRISM_RETURN_IF_ERROR(CheckWorker(caller, request.worker_id()));
  const int64_t now = clock_->LeaseMs();
  PRISM_ASSIGN_OR_RETURN(
      int64_t deadline,
      queue_->StartAttempt(
          storage::AttemptRef{request.trial_id(), request.attempt(),
                              request.worker_id()},
          request.resumed_from_step(), now, DeadlineFrom(now)));
  Log(LogLevel::kInfo, "trial started")
      .Kv("trial", request.trial_id())
      .Kv("attempt", request.attempt())
      .Kv("resumed_from_step", request.resumed_from_step())
      .Kv("worker", request.worker_id());
  v1::StartResponse response;
  response.set_lease_deadline_unix_ms(deadline);
  return response;
}

absl::StatusOr<v1::HeartbeatResponse> QueueManager::Heartbeat(
    const Caller& caller, const v1::HeartbeatRequest& request) {
  if (request.worker_id().empty()) {
    return absl::InvalidArgumentError("worker_id is required");
  }
  PRISM_RETURN_IF_ERROR(
      CheckFinite("tokens_per_second", request.tokens_per_second()));
  PRISM_RETURN_IF_ERROR(CheckWorker(caller, request.worker_id()));
  const int64_t now = clock_->LeaseMs();
  v1::HeartbeatResponse response;
  if (request.trial_id() != 0) {
    PRISM_RETURN_IF_ERROR(CheckAttemptRef(request.trial_id(), request.attempt(),
                                          request.worker_id()));
    absl::StatusOr<storage::HeartbeatResult> hb = queue_->Heartbeat(
        storage::AttemptRef{request.trial_id(), request.attempt(),
                            request.worker_id()},
        request.step(), now, DeadlineFrom(now));
    // A trial that no longer exists was deleted with its (cancelled)
    // experiment: its worker stops as for a cancelled one.
    if (absl::IsNotFound(hb.status()))
      hb = storage::HeartbeatResult{/*stop=*/true};
    if (!hb.ok()) return hb.status();
    response.set_stop(hb->stop);
    response.set_lease_deadline_unix_ms(hb->lease_deadline_ms);
    if (hb->stop) {
      Log(LogLevel::kInfo, "heartbeat told worker to stop")
          .Kv("trial", request.trial_id())
          .Kv("attempt", request.attempt())
          .Kv("worker", request.worker_id());
    }
  }
  PRISM_RETURN_IF_ERROR(workers_->TouchWorker(storage::WorkerUpdate{
      request.worker_id(), response.stop() ? 0 : request.trial_id(), now,
      request.tokens_per_second()}));
  return response;
}

void QueueManager::Report(const Caller& caller,
                          const v1::ReportRequest& request, ReportDone done) {
  absl::Status valid = CheckAttemptRef(request.trial_id(), request.attempt(),
                                       request.worker_id());
  if (valid.ok())
    valid = CheckPoints(request.points(), options_.max_points_per_report);
  if (valid.ok()) valid = CheckWorker(caller, request.worker_id());
  if (!valid.ok()) {
    done(valid);
    return;
  }
  storage::ReportWrite write;
  write.ref = storage::AttemptRef{request.trial_id(), request.attempt(),
                                  request.worker_id()};
  write.points.assign(request.points().begin(), request.points().end());
  write.now_ms = clock_->LeaseMs();
  write.lease_deadline_ms = DeadlineFrom(write.now_ms);
  const int64_t trial_id = request.trial_id();
  const int32_t attempt = request.attempt();
  const std::string worker_id = request.worker_id();
  // Watchers get the points too, read from the request (alive until `done`)
  // only when someone watches.
  ingest_->Enqueue(
      std::move(write),
      [this, done = std::move(done), trial_id, attempt, worker_id,
       request_points = &request.points()](const storage::ReportOutcome& out) {
        if (!out.status.ok()) {
          done(out.status);
          return;
        }
        v1::ReportResponse response;
        response.set_stored(out.stored);
        response.set_duplicates(out.duplicates);
        if (events_->HasSubscribers(out.experiment_id)) {
          v1::ExperimentEvent event;
          event.set_unix_ms(clock_->NowMs());
          v1::Trial* t = event.mutable_trial_updated();
          t->set_id(trial_id);
          t->set_experiment_id(out.experiment_id);
          t->set_state(v1::TRIAL_RUNNING);
          t->set_attempt(attempt);
          t->set_worker_id(worker_id);
          for (const v1::LossPoint& p : *request_points) {
            t->set_last_step(std::max(t->last_step(), p.step()));
            *event.add_points() = p;
          }
          events_->Publish(out.experiment_id, std::move(event));
        }
        done(response);
      });
}

absl::StatusOr<v1::CompleteResponse> QueueManager::Complete(
    const Caller& caller, const v1::CompleteRequest& request) {
  PRISM_RETURN_IF_ERROR(CheckAttemptRef(request.trial_id(), request.attempt(),
                                        request.worker_id()));
  PRISM_RETURN_IF_ERROR(
      CheckPoints(request.points(), options_.max_points_per_report));
  PRISM_RETURN_IF_ERROR(CheckMetricsFinite(request.metrics()));
  PRISM_RETURN_IF_ERROR(CheckWorker(caller, request.worker_id()));
  const std::vector<v1::LossPoint> points(request.points().begin(),
                                          request.points().end());
  PRISM_ASSIGN_OR_RETURN(
      v1::Trial trial,
      queue_->CompleteTrial(
          storage::AttemptRef{request.trial_id(), request.attempt(),
                              request.worker_id()},
          request.metrics(), points, clock_->LeaseMs()));
  Failpoint("complete.committed");
  PRISM_ASSIGN_OR_RETURN(v1::ExperimentSpec spec,
                         SpecFor(trial.experiment_id()));
  Log(LogLevel::kInfo, "trial finished")
      .Kv("trial", trial.id())
      .Kv("state", v1::TrialState_Name(trial.state()))
      .Kv("final_val_loss", trial.metrics().final_val_loss())
      .Kv("worker", request.worker_id());
  if (finished_ != nullptr) finished_->Publish(trial.experiment_id());
  v1::CompleteResponse response;
  *response.mutable_trial() = WithPrinciples(std::move(trial), spec);
  PublishTrial(response.trial());
  PublishExperiment(response.trial().experiment_id());
  return response;
}

absl::StatusOr<v1::FailResponse> QueueManager::Fail(
    const Caller& caller, const v1::FailRequest& request) {
  PRISM_RETURN_IF_ERROR(CheckAttemptRef(request.trial_id(), request.attempt(),
                                        request.worker_id()));
  PRISM_RETURN_IF_ERROR(CheckWorker(caller, request.worker_id()));
  const std::string message =
      request.message().substr(0, kMaxFailMessageLength);
  const storage::AttemptRef ref{request.trial_id(), request.attempt(),
                                request.worker_id()};
  PRISM_ASSIGN_OR_RETURN(
      v1::Trial trial,
      request.released() ? queue_->ReleaseTrial(ref, message, clock_->LeaseMs())
                         : queue_->FailTrial(ref, message, request.retryable(),
                                             clock_->LeaseMs()));
  PRISM_ASSIGN_OR_RETURN(v1::ExperimentSpec spec,
                         SpecFor(trial.experiment_id()));
  if (request.released()) {
    Log(LogLevel::kInfo, "trial released by worker")
        .Kv("trial", trial.id())
        .Kv("attempt", request.attempt())
        .Kv("worker", request.worker_id())
        .Kv("message", message);
  } else {
    Log(LogLevel::kWarning, "trial attempt failed")
        .Kv("trial", trial.id())
        .Kv("attempt", request.attempt())
        .Kv("state", v1::TrialState_Name(trial.state()))
        .Kv("retryable", request.retryable())
        .Kv("error", message);
  }
  if (trial.state() == v1::TRIAL_FAILED && finished_ != nullptr) {
    finished_->Publish(trial.experiment_id());
  }
  v1::FailResponse response;
  *response.mutable_trial() = WithPrinciples(std::move(trial), spec);
  PublishTrial(response.trial());
  PublishExperiment(response.trial().experiment_id());
  return response;
}

absl::StatusOr<v1::DeregisterResponse> QueueManager::Deregister(
    const Caller& caller, const v1::DeregisterRequest& request) {
  if (request.worker_id().empty()) {
    return absl::InvalidArgumentError("worker_id is required");
  }
  PRISM_RETURN_IF_ERROR(CheckWorker(caller, request.worker_id()));
  PRISM_RETURN_IF_ERROR(
      workers_->StopWorker(request.worker_id(), clock_->LeaseMs()));
  Log(LogLevel::kInfo, "worker stopped").Kv("worker", request.worker_id());
  return v1::DeregisterResponse();
}

absl::StatusOr<int64_t> QueueManager::CountQueued() {
  return queue_->CountQueued();
}

absl::StatusOr<v1::ListWorkersResponse> QueueManager::ListWorkers() {
  PRISM_ASSIGN_OR_RETURN(std::vector<v1::Worker> workers,
                         workers_->ListWorkers());
  const int64_t lost_before =
      clock_->LeaseMs() - int64_t{options_.lease_seconds} * 1000;
  v1::ListWorkersResponse response;
  for (v1::Worker& w : workers) {
    if (w.stopped_unix_ms() != 0) {
      w.set_state(v1::WORKER_STOPPED);
    } else if (w.last_heartbeat_unix_ms() < lost_before) {
      w.set_state(v1::WORKER_LOST);
    } else if (w.current_trial_id() != 0) {
      w.set_state(v1::WORKER_BUSY);
    } else {
      w.set_state(v1::WORKER_IDLE);
    }
    *response.add_workers() = std::move(w);
  }
  return response;
}

absl::StatusOr<int> QueueManager::ExpireLeases(
    const std::function<bool()>& proceed) {
  PRISM_ASSIGN_OR_RETURN(std::vector<storage::ExpiredLease> expired,
                         queue_->ExpireLeases(clock_->LeaseMs(), proceed));
  for (const storage::ExpiredLease& x : expired) {
    Log(LogLevel::kWarning, "lease expired")
        .Kv("trial", x.trial.id())
        .Kv("attempt", x.trial.attempt())
        .Kv("worker", x.worker_id)
        .Kv("state", v1::TrialState_Name(x.trial.state()));
    PublishTrial(x.trial);
    if (x.trial.state() == v1::TRIAL_FAILED) {
      if (finished_ != nullptr) finished_->Publish(x.trial.experiment_id());
      PublishExperiment(x.trial.experiment_id());
    }
  }
  return static_cast<int>(expired.size());
}

absl::StatusOr<std::map<std::string, UserStanding>>
QueueManager::UserStandings() {
  const int64_t now = clock_->LeaseMs();
  const int64_t half_life = options_.fair_share_half_life_ms;
  PRISM_ASSIGN_OR_RETURN(
      std::vector<storage::UsageSpan> spans,
      queue_->ListUsageSpans(UsageHorizonMs(now, half_life)));
  PRISM_ASSIGN_OR_RETURN(auto live, queue_->CountLiveTrialsByUser());
  PRISM_ASSIGN_OR_RETURN(auto policies, tokens_->ListUserPolicies());
  std::map<std::string, UserStanding> users;
  for (const auto& [user, seconds] :
       DecayedUsageSeconds(spans, now, half_life)) {
    users[user].usage_seconds = seconds;
  }
  for (const auto& [user, n] : live) users[user].live = n;
  const int global = options_.max_running_per_user;
  for (const auto& [user, policy] : policies) {
    UserStanding& u = users[user];
    u.share = policy.share;
    u.max_running = policy.max_running;
  }
  if (global > 0) {
    for (auto& [user, u] : users) {
      u.max_running =
          u.max_running > 0 ? std::min(u.max_running, global) : global;
    }
  }
  return users;
}

absl::StatusOr<std::vector<QueueSlot>> QueueManager::Order() {
  PRISM_ASSIGN_OR_RETURN(std::vector<storage::LeaseCandidate> candidates,
                         queue_->ListLeaseCandidates());
  if (candidates.empty()) return std::vector<QueueSlot>();
  PRISM_ASSIGN_OR_RETURN(auto users, UserStandings());
  return OrderQueue(candidates, users);
}

absl::StatusOr<std::map<int64_t, QueueStanding>> QueueManager::Standings() {
  PRISM_ASSIGN_OR_RETURN(std::vector<QueueSlot> order, Order());
  if (order.empty()) return std::map<int64_t, QueueStanding>();
  PRISM_ASSIGN_OR_RETURN(v1::ListWorkersResponse workers, ListWorkers());
  WorkerCounts counts;
  for (const v1::Worker& w : workers.workers()) {
    if (w.state() == v1::WORKER_IDLE) ++counts.idle;
    if (w.state() == v1::WORKER_IDLE || w.state() == v1::WORKER_BUSY) {
      ++counts.alive;
    }
  }
  return ExplainQueue(order, counts);
}

absl::StatusOr<int> QueueManager::ExtendLeasesAfterRestart() {
  return queue_->ExtendLiveLeases(
      clock_->LeaseMs() +
      v1::RestartGraceMs(options_.lease_seconds, options_.heartbeat_seconds));
}

}  // namespace prism::server
