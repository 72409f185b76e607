// Test doubles for the worker's two seams: a coordinator that stores points
// like the real one (once per (trial, split, step)) and can fail, refuse or
// stop on cue, and a trainer that emits a scripted curve and obeys the
// observer protocol (OnStart, OnPoint, OnStep, BeforeCheckpoint,
// OnCheckpoint, ShouldStop).
#ifndef PRISM_TESTS_WORKER_FAKES_H_
#define PRISM_TESTS_WORKER_FAKES_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "model/trainer.h"
#include "prism/v1/prism.pb.h"
#include "worker/coordinator_client.h"
#include "worker/trainer_launcher.h"

namespace prism::worker::testing {

// MakeTask returns a leased task for the tiny preset's uniform schedule.
inline v1::TrialTask MakeTask(int64_t trial_id, int attempt, int64_t steps,
                              int checkpoint_every = 0) {
  v1::TrialTask task;
  task.mutable_trial()->set_id(trial_id);
  task.mutable_trial()->set_experiment_id(1);
  task.mutable_trial()->set_schedule("4x6");
  task.mutable_trial()->set_seed(7);
  task.mutable_trial()->set_attempt(attempt);
  task.mutable_model()->set_preset("tiny");
  task.mutable_budget()->set_steps(steps);
  task.mutable_budget()->set_log_every(1);
  task.mutable_budget()->set_eval_every(5);
  task.mutable_budget()->set_checkpoint_every(checkpoint_every);
  task.set_checkpoint_key(absl::StrCat("trial-", trial_id));
  return task;
}

class FakeCoordinator final : public CoordinatorClient {
 public:
  using PointKey = std::tuple<int64_t, int, int64_t>;  // trial, split, step

  // --- scripting ----------------------------------------------------------
  void QueueTask(const v1::TrialTask& task) {
    absl::MutexLock lock(&mu_);
    tasks_.push_back(task);
    live_[task.trial().id()] = task.trial().attempt();
  }
  // FailNext makes the next `n` calls of every kind return Unavailable.
  void FailNext(int n) {
    absl::MutexLock lock(&mu_);
    fail_next_ = n;
  }
  void FailNextReports(int n) {
    absl::MutexLock lock(&mu_);
    fail_next_reports_ = n;
  }
  // Supersede makes the trial's current attempt stale: reports, heartbeats,
  // completions and failures for it are refused with FailedPrecondition.
  void Supersede(int64_t trial_id) {
    absl::MutexLock lock(&mu_);
    live_[trial_id] = -1;
  }
  void StopOnHeartbeat(int64_t trial_id) {
    absl::MutexLock lock(&mu_);
    stop_on_heartbeat_.insert(trial_id);
  }
  void SetRegisterStatus(absl::Status status) {
    absl::MutexLock lock(&mu_);
    register_status_ = std::move(status);
  }
  void ForgetWorkerOnce() {
    absl::MutexLock lock(&mu_);
    forget_worker_ = true;
  }

  // --- inspection ---------------------------------------------------------
  // StoredSteps returns the stored steps of a trial's split, ascending.
  std::vector<int64_t> StoredSteps(int64_t trial_id, v1::Split split) const {
    absl::MutexLock lock(&mu_);
    std::vector<int64_t> steps;
    for (const auto& [key, loss] : points_) {
      if (std::get<0>(key) == trial_id && std::get<1>(key) == split) {
        steps.push_back(std::get<2>(key));
      }
    }
    return steps;
  }
  int64_t received_points() const {
    absl::MutexLock lock(&mu_);
    return received_points_;
  }
  std::vector<v1::CompleteRequest> completions() const {
    absl::MutexLock lock(&mu_);
    return completions_;
  }
  std::vector<v1::FailRequest> failures() const {
    absl::MutexLock lock(&mu_);
    return failures_;
  }
  int registrations() const {
    absl::MutexLock lock(&mu_);
    return registrations_;
  }
  int heartbeats() const {
    absl::MutexLock lock(&mu_);
    return heartbeats_;
  }
  // refused_calls counts the calls FailNext made fail.
  int refused_calls() const {
    absl::MutexLock lock(&mu_);
    return refused_calls_;
  }
  std::vector<v1::StartRequest> starts() const {
    absl::MutexLock lock(&mu_);
    return starts_;
  }
  // deregistered lists the worker ids that said goodbye, in order.
  std::vector<std::string> deregistered() const {
    absl::MutexLock lock(&mu_);
    return deregistered_;
  }
  // reports_before_start counts Reports and Completes that arrived before
  // their attempt's Start.
  int reports_before_start() const {
    absl::MutexLock lock(&mu_);
    return reports_before_start_;
  }
  // SetStartStatus makes every Start answer `status` (e.g. Unimplemented).
  void SetStartStatus(absl::Status status) {
    absl::MutexLock lock(&mu_);
    start_status_ = std::move(status);
  }

  // --- CoordinatorClient ---------------------------------------------------
  absl::StatusOr<v1::RegisterResponse> Register(
      const v1::RegisterRequest& request) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Injected(); !s.ok()) return s;
    if (!register_status_.ok()) return register_status_;
    ++registrations_;
    v1::RegisterResponse response;
    response.set_worker_id(request.worker_id().empty()
                               ? absl::StrCat("w", registrations_)
                               : request.worker_id());
    response.set_heartbeat_seconds(5);
    response.set_lease_seconds(30);
    return response;
  }
  absl::StatusOr<v1::LeaseResponse> Lease(
      const v1::LeaseRequest& request) override {
    absl::MutexLock lock(&mu_);
    (void)request;
    if (absl::Status s = Injected(); !s.ok()) return s;
    if (forget_worker_) {
      forget_worker_ = false;
      return absl::NotFoundError("unknown worker");
    }
    v1::LeaseResponse response;
    if (tasks_.empty()) {
      response.set_retry_after_ms(1);
      return response;
    }
    *response.mutable_task() = tasks_.front();
    tasks_.pop_front();
    return response;
  }
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Injected(); !s.ok()) return s;
    ++heartbeats_;
    v1::HeartbeatResponse response;
    if (request.trial_id() == 0) return response;
    if (absl::Status s = CheckLive(request.trial_id(), request.attempt());
        !s.ok()) {
      return s;
    }
    response.set_stop(stop_on_heartbeat_.count(request.trial_id()) > 0);
    return response;
  }
  absl::StatusOr<v1::ReportResponse> Report(
      const v1::ReportRequest& request) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Injected(); !s.ok()) return s;
    if (fail_next_reports_ > 0) {
      --fail_next_reports_;
      return absl::UnavailableError("injected report failure");
    }
    if (absl::Status s = CheckLive(request.trial_id(), request.attempt());
        !s.ok()) {
      return s;
    }
    CountIfNotStarted(request.trial_id(), request.attempt());
    v1::ReportResponse response;
    for (const v1::LossPoint& p : request.points()) {
      Store(request.trial_id(), p, &response);
    }
    return response;
  }
  absl::StatusOr<v1::CompleteResponse> Complete(
      const v1::CompleteRequest& request) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Injected(); !s.ok()) return s;
    if (absl::Status s = CheckLive(request.trial_id(), request.attempt());
        !s.ok()) {
      return s;
    }
    CountIfNotStarted(request.trial_id(), request.attempt());
    v1::ReportResponse ignored;
    for (const v1::LossPoint& p : request.points()) {
      Store(request.trial_id(), p, &ignored);
    }
    completions_.push_back(request);
    return v1::CompleteResponse();
  }
  absl::StatusOr<v1::FailResponse> Fail(
      const v1::FailRequest& request) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Injected(); !s.ok()) return s;
    if (absl::Status s = CheckLive(request.trial_id(), request.attempt());
        !s.ok()) {
      return s;
    }
    failures_.push_back(request);
    return v1::FailResponse();
  }
  absl::StatusOr<v1::StartResponse> Start(
      const v1::StartRequest& request) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Injected(); !s.ok()) return s;
    if (!start_status_.ok()) return start_status_;
    if (absl::Status s = CheckLive(request.trial_id(), request.attempt());
        !s.ok()) {
      return s;
    }
    starts_.push_back(request);
    started_.emplace(request.trial_id(), request.attempt());
    return v1::StartResponse();
  }
  absl::StatusOr<v1::DeregisterResponse> Deregister(
      const v1::DeregisterRequest& request) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Injected(); !s.ok()) return s;
    deregistered_.push_back(request.worker_id());
    return v1::DeregisterResponse();
  }

 private:
  absl::Status Injected() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (fail_next_ <= 0) return absl::OkStatus();
    --fail_next_;
    ++refused_calls_;
    return absl::UnavailableError("injected outage");
  }
  absl::Status CheckLive(int64_t trial_id, int attempt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = live_.find(trial_id);
    if (it == live_.end() || it->second != attempt) {
      return absl::FailedPreconditionError("attempt superseded");
    }
    return absl::OkStatus();
  }
  void CountIfNotStarted(int64_t trial_id, int attempt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (started_.count({trial_id, attempt}) == 0) ++reports_before_start_;
  }
  void Store(int64_t trial_id, const v1::LossPoint& p,
             v1::ReportResponse* response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++received_points_;
    const bool inserted =
        points_.emplace(PointKey{trial_id, p.split(), p.step()}, p.loss())
            .second;
    response->set_stored(response->stored() + (inserted ? 1 : 0));
    response->set_duplicates(response->duplicates() + (inserted ? 0 : 1));
  }

  mutable absl::Mutex mu_;
  std::deque<v1::TrialTask> tasks_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, int> live_ ABSL_GUARDED_BY(mu_);
  std::map<PointKey, float> points_ ABSL_GUARDED_BY(mu_);
  std::set<int64_t> stop_on_heartbeat_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::CompleteRequest> completions_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::FailRequest> failures_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::StartRequest> starts_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> deregistered_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<int64_t, int>> started_ ABSL_GUARDED_BY(mu_);
  absl::Status start_status_ ABSL_GUARDED_BY(mu_);
  int reports_before_start_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status register_status_ ABSL_GUARDED_BY(mu_);
  int fail_next_ ABSL_GUARDED_BY(mu_) = 0;
  int refused_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int fail_next_reports_ ABSL_GUARDED_BY(mu_) = 0;
  bool forget_worker_ ABSL_GUARDED_BY(mu_) = false;
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
  int heartbeats_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t received_points_ ABSL_GUARDED_BY(mu_) = 0;
};

// ScriptedTrainer emits a train point every step and a val point every
// config.eval_every steps, checkpoints every config.checkpoint_every steps,
// polls ShouldStop every step, and calls `on_step` (if set) after each step.
// With fail_at_step > 0 it returns `fail_status` right after that step.
// `step_time` paces it.
class ScriptedTrainer final : public TrainerLauncher {
 public:
  std::function<void(int64_t step)> on_step;
  std::function<void(int64_t step)> after_before_checkpoint;
  absl::Status fail_status;
  int64_t fail_at_step = 0;
  // Emit a NaN val loss at this step (as a trainer that did not notice).
  int64_t nan_val_at_step = 0;
  int64_t start_step = 0;
  absl::Duration step_time = absl::ZeroDuration();

  int64_t last_step() const {
    absl::MutexLock lock(&mu_);
    return last_step_;
  }
  std::vector<model::TrainConfig> configs() const {
    absl::MutexLock lock(&mu_);
    return configs_;
  }
  // The checkpoint steps the observer let through, and those it refused.
  std::vector<int64_t> written_checkpoints() const {
    absl::MutexLock lock(&mu_);
    return written_checkpoints_;
  }
  std::vector<int64_t> skipped_checkpoints() const {
    absl::MutexLock lock(&mu_);
    return skipped_checkpoints_;
  }

  absl::StatusOr<model::TrainResult> Train(
      const model::TrainConfig& config,
      model::TrainObserver* observer) override {
    {
      absl::MutexLock lock(&mu_);
      configs_.push_back(config);
    }
    model::TrainResult result;
    result.resumed_from_step = start_step;
    observer->OnStart(config, start_step);
    int64_t step = start_step;
    while (step < config.steps) {
      if (observer->ShouldStop()) {
        result.stopped = true;
        Checkpoint(config, observer, step);
        break;
      }
      ++step;
      if (step_time > absl::ZeroDuration()) absl::SleepFor(step_time);
      const float loss = 5.0f / static_cast<float>(step);
      observer->OnPoint({model::CurveSplit::kTrain, step, loss, 1e-3f, 100.0,
                         0.01 * static_cast<double>(step)});
      if (config.eval_every > 0 && step % config.eval_every == 0) {
        const float val = step == nan_val_at_step
                              ? std::numeric_limits<float>::quiet_NaN()
                              : loss + 0.1f;
        observer->OnPoint({model::CurveSplit::kVal, step, val, 1e-3f, 100.0,
                           0.01 * static_cast<double>(step)});
        result.final_val_loss = loss + 0.1f;
      }
      observer->OnStep(step, loss, 100.0);
      {
        absl::MutexLock lock(&mu_);
        last_step_ = step;
      }
      if (config.checkpoint_every > 0 && step % config.checkpoint_every == 0) {
        Checkpoint(config, observer, step);
      }
      if (on_step) on_step(step);
      if (fail_at_step > 0 && step == fail_at_step) return fail_status;
    }
    result.steps = step;
    result.final_train_loss =
        5.0 / static_cast<double>(std::max<int64_t>(step, 1));
    result.device = "cpu";
    return result;
  }

 private:
  void Checkpoint(const model::TrainConfig& config,
                  model::TrainObserver* observer, int64_t step) {
    (void)config;
    if (!observer->BeforeCheckpoint(step)) {
      absl::MutexLock lock(&mu_);
      skipped_checkpoints_.push_back(step);
      return;
    }
    if (after_before_checkpoint) after_before_checkpoint(step);
    {
      absl::MutexLock lock(&mu_);
      written_checkpoints_.push_back(step);
    }
    observer->OnCheckpoint(step);
  }

  mutable absl::Mutex mu_;
  int64_t last_step_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<model::TrainConfig> configs_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> written_checkpoints_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> skipped_checkpoints_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::worker::testing

#endif  // PRISM_TESTS_WORKER_FAKES_H_
