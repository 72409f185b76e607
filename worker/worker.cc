#include "worker/worker.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "worker/report_buffer.h"

namespace prism::worker {

// TrialRun is one attempt at one trial: the trainer's observer, the report
// buffer between the training thread and the reporter, and the heartbeat
// thread. Execute() runs on Run's thread and acts as the reporter.
class Worker::TrialRun final : public model::TrainObserver {
 public:
  TrialRun(Worker* worker, const v1::TrialTask& task, std::string worker_id,
           absl::Duration heartbeat_interval, uint64_t seed)
      : worker_(worker),
        task_(task),
        worker_id_(std::move(worker_id)),
        heartbeat_interval_(heartbeat_interval),
        buffer_(worker->options_.buffer_capacity),
        backoff_(worker->options_.backoff, seed) {}

  TrialOutcome Execute();

  // model::TrainObserver, called on the training thread.
  void OnStart(const model::TrainConfig& config, int64_t start_step) override {
    Log(LogLevel::kInfo, "train_start")
        .Kv("trial", trial_id())
        .Kv("attempt", attempt())
        .Kv("resumed_from_step", start_step)
        .Kv("steps", config.steps)
        .Kv("device", config.device)
        .Kv("threads", config.threads);
    absl::MutexLock lock(&start_mu_);
    resumed_from_step_ = start_step;
    start_known_ = true;
  }
  void OnPoint(const model::CurvePoint& point) override {
    // The coordinator refuses non-finite values. The trainer ends a run at
    // a non-finite loss without emitting it; should one get here anyway,
    // the trial is reported diverged at its step, and no later point is
    // sent (stored curves stay prefixes of the trainer's order).
    if (nonfinite_step_.load() >= 0) return;
    if (!std::isfinite(point.loss) || !std::isfinite(point.learning_rate) ||
        !std::isfinite(point.tokens_per_second) ||
        !std::isfinite(point.elapsed_seconds)) {
      Log(LogLevel::kWarning, "nonfinite_point")
          .Kv("trial", trial_id())
          .Kv("step", point.step)
          .Kv("loss", point.loss);
      nonfinite_step_.store(point.step);
      return;
    }
    buffer_.Add(ToLossPoint(point));
  }
  void OnStep(int64_t step, double loss, double tokens_per_second) override {
    (void)loss;
    step_.store(step);
    tokens_per_second_.store(
        std::isfinite(tokens_per_second) ? tokens_per_second : 0.0);
  }
  bool BeforeCheckpoint(int64_t step) override {
    // A checkpoint ahead of the stored curve would leave a hole when any
    // worker resumes from it, so it is written only once every point before
    // it was acknowledged. Wait without limit while the attempt is live;
    // once it was superseded, or after Shutdown's grace, skip it: the
    // previous checkpoint stays, and the next attempt redoes the steps since.
    while (!buffer_.WaitDrained(absl::Seconds(1))) {
      if (buffer_.closed() || worker_->GiveUpRetrying()) {
        Log(LogLevel::kWarning, "checkpoint_skipped")
            .Kv("trial", trial_id())
            .Kv("step", step)
            .Kv("unacknowledged_points", buffer_.size());
        return false;
      }
    }
    return true;
  }
  void OnCheckpoint(int64_t step) override {
    Log(LogLevel::kInfo, "checkpoint").Kv("trial", trial_id()).Kv("step", step);
  }
  bool ShouldStop() override {
    return superseded_.load() || worker_->shutting_down();
  }

 private:
  int64_t trial_id() const { return task_.trial().id(); }
  int attempt() const { return task_.trial().attempt(); }

  // RemoveStaleCheckpoint deletes a checkpoint dir the trial cannot own.
  void RemoveStaleCheckpoint(const std::string& dir);
  void HeartbeatLoop();
  // SendStart waits until the trainer started (or ended without starting)
  // and then tells the coordinator the step it resumed from, before any
  // Report, retrying while the coordinator is unreachable.
  void SendStart();
  void ReportLoop();
  // SendOldest sends up to one batch of the oldest points; returns the
  // Report status (OK with nothing to send).
  absl::Status SendOldest();
  // Flush sends until at most `leave` points remain buffered. Returns false
  // when the attempt was superseded or the worker gave up retrying.
  bool Flush(size_t leave);
  // HandleSendError superseded the attempt or pauses before a retry.
  void HandleSendError(const absl::Status& status, absl::string_view what);
  void Supersede(absl::string_view why);
  // PauseForRetry sleeps the next backoff delay, or less when a heartbeat
  // finds the coordinator reachable again meanwhile.
  void PauseForRetry();
  TrialOutcome Finish(const absl::StatusOr<model::TrainResult>& result);
  TrialOutcome SendFail(const std::string& message, bool retryable,
                        TrialOutcome outcome);

  Worker* const worker_;
  const v1::TrialTask& task_;
  const std::string worker_id_;
  const absl::Duration heartbeat_interval_;
  ReportBuffer buffer_;
  Backoff backoff_;  // used by the reporter (Execute's thread) only
  std::atomic<bool> superseded_{false};
  std::atomic<int64_t> step_{0};
  std::atomic<double> tokens_per_second_{0.0};
  // The step of the first non-finite point the trainer emitted; -1: none.
  std::atomic<int64_t> nonfinite_step_{-1};
  absl::Mutex start_mu_;
  // Set by OnStart, or once training ended without starting.
  bool start_known_ ABSL_GUARDED_BY(start_mu_) = false;
  std::optional<int64_t> resumed_from_step_ ABSL_GUARDED_BY(start_mu_);
  absl::Notification training_done_;
  absl::Mutex retry_mu_;
  bool retry_now_ ABSL_GUARDED_BY(retry_mu_) = false;
};

void Worker::TrialRun::RemoveStaleCheckpoint(const std::string& dir) {
  // Every checkpoint is written only after the points before it were
  // stored, so while the coordinator holds no point of this trial no
  // checkpoint can belong to it: one found here is left over from another
  // database, and resuming it would leave the curve without its start.
  std::error_code error;
  if (!std::filesystem::exists(dir, error)) return;
  std::filesystem::remove_all(dir, error);
  Log(error ? LogLevel::kWarning : LogLevel::kInfo, "stale_checkpoint_removed")
      .Kv("trial", trial_id())
      .Kv("dir", dir)
      .Kv("error", error ? error.message() : "none");
}

TrialOutcome Worker::TrialRun::Execute() {
  absl::StatusOr<model::TrainConfig> config =
      TrainConfigForTask(task_, worker_->options_.resources);
  if (!config.ok()) {
    return SendFail(std::string(config.status().message()),
                    /*retryable=*/false, TrialOutcome::kFailed);
  }
  step_.store(task_.resume_step());
  const int64_t stored_step =
      task_.has_stored_step() ? task_.stored_step() : task_.resume_step();
  if (stored_step == 0 && !config->checkpoint_dir.empty()) {
    RemoveStaleCheckpoint(config->checkpoint_dir);
  }

  absl::StatusOr<model::TrainResult> result =
      absl::InternalError("trainer did not run");
  std::thread training([&] {
    result = worker_->launcher_->Train(*config, this);
    {
      absl::MutexLock lock(&start_mu_);
      start_known_ = true;
    }
    // Nothing more will be added; wake the reporter for the final flush.
    buffer_.Close();
    training_done_.Notify();
  });
  std::thread heartbeat([this] { HeartbeatLoop(); });
  SendStart();
  ReportLoop();
  training.join();
  heartbeat.join();
  return Finish(result);
}

void Worker::TrialRun::HeartbeatLoop() {
  bool reachable = true;
  while (!training_done_.WaitForNotificationWithTimeout(heartbeat_interval_)) {
    if (superseded_.load()) return;
    v1::HeartbeatRequest request;
    request.set_worker_id(worker_id_);
    request.set_trial_id(trial_id());
    request.set_attempt(attempt());
    request.set_step(step_.load());
    request.set_tokens_per_second(tokens_per_second_.load());
    absl::StatusOr<v1::HeartbeatResponse> response =
        worker_->client_->Heartbeat(request);
    if (response.ok()) {
      if (!reachable) {
        Log(LogLevel::kInfo, "coordinator_reachable").Kv("trial", trial_id());
        // Wake a reporter that is backing off: the coordinator is back.
        absl::MutexLock lock(&retry_mu_);
        retry_now_ = true;
      }
      reachable = true;
      if (response->stop()) Supersede("heartbeat asked to stop");
      continue;
    }
    if (response.status().code() == absl::StatusCode::kFailedPrecondition) {
      Supersede(response.status().message());
    } else if (reachable) {
      reachable = false;
      Log(LogLevel::kWarning, "heartbeat_failed")
          .Kv("trial", trial_id())
          .Kv("error", response.status().ToString());
    }
  }
}

void Worker::TrialRun::SendStart() {
  std::optional<int64_t> resumed_from_step;
  {
    absl::MutexLock lock(&start_mu_);
    start_mu_.Await(absl::Condition(&start_known_));
    resumed_from_step = resumed_from_step_;
  }
  if (!resumed_from_step.has_value()) return;
  v1::StartRequest request;
  request.set_worker_id(worker_id_);
  request.set_trial_id(trial_id());
  request.set_attempt(attempt());
  request.set_resumed_from_step(*resumed_from_step);
  while (!superseded_.load()) {
    absl::StatusOr<v1::StartResponse> response =
        worker_->client_->Start(request);
    if (response.ok()) {
      backoff_.Reset();
      return;
    }
    if (response.status().code() == absl::StatusCode::kUnimplemented) {
      // A coordinator from before Start: the attempt's resume step simply
      // goes unrecorded there; training and reports are unaffected.
      Log(LogLevel::kWarning, "start_unsupported")
          .Kv("trial", trial_id())
          .Kv("error", response.status().ToString());
      return;
    }
    HandleSendError(response.status(), "start");
    if (worker_->GiveUpRetrying()) return;
  }
}

void Worker::TrialRun::ReportLoop() {
  const WorkerOptions& options = worker_->options_;
  while (!training_done_.HasBeenNotified() && !superseded_.load()) {
    buffer_.WaitForBatch(options.report_batch, options.report_interval);
    // Send everything buffered now; a failed send retries after a pause.
    while (buffer_.size() > 0 && !superseded_.load()) {
      absl::Status sent = SendOldest();
      if (!sent.ok()) {
        HandleSendError(sent, "report");
        break;
      }
    }
  }
}

absl::Status Worker::TrialRun::SendOldest() {
  std::vector<v1::LossPoint> points =
      buffer_.Oldest(worker_->options_.report_batch);
  if (points.empty()) return absl::OkStatus();
  v1::ReportRequest request;
  request.set_worker_id(worker_id_);
  request.set_trial_id(trial_id());
  request.set_attempt(attempt());
  for (v1::LossPoint& point : points) *request.add_points() = std::move(point);
  absl::StatusOr<v1::ReportResponse> response =
      worker_->client_->Report(request);
  if (!response.ok()) return response.status();
  Failpoint("worker.report_sent");
  buffer_.Acknowledge(points.size());
  if (backoff_.retries() > 0) {
    Log(LogLevel::kInfo, "reports_resumed")
        .Kv("trial", trial_id())
        .Kv("retries", backoff_.retries())
        .Kv("buffered", buffer_.size());
  }
  backoff_.Reset();
  absl::MutexLock lock(&worker_->mu_);
  worker_->stats_.points_acknowledged += static_cast<int64_t>(points.size());
  return absl::OkStatus();
}

void Worker::TrialRun::HandleSendError(const absl::Status& status,
                                       absl::string_view what) {
  if (status.code() == absl::StatusCode::kFailedPrecondition) {
    Supersede(status.message());
    return;
  }
  if (!IsTransient(status)) {
    // A refusal that retrying cannot fix (a revoked token, a bad request):
    // the attempt cannot be reported, so stop spending compute on it.
    Log(LogLevel::kError, absl::StrCat(what, "_refused"))
        .Kv("trial", trial_id())
        .Kv("error", status.ToString());
    Supersede(status.message());
    return;
  }
  if (backoff_.retries() == 0) {
    Log(LogLevel::kWarning, absl::StrCat(what, "_failed"))
        .Kv("trial", trial_id())
        .Kv("buffered", buffer_.size())
        .Kv("error", status.ToString());
  }
  {
    absl::MutexLock lock(&worker_->mu_);
    ++worker_->stats_.report_retries;
  }
  PauseForRetry();
}

void Worker::TrialRun::PauseForRetry() {
  absl::Duration delay = backoff_.Next();
  // After Shutdown keep retrying, but briskly: the grace period is short.
  if (worker_->shutting_down()) delay = std::min(delay, absl::Seconds(1));
  absl::MutexLock lock(&retry_mu_);
  retry_mu_.AwaitWithTimeout(absl::Condition(&retry_now_), delay);
  retry_now_ = false;
}

bool Worker::TrialRun::Flush(size_t leave) {
  while (buffer_.size() > leave) {
    if (superseded_.load()) return false;
    absl::Status sent = SendOldest();
    if (sent.ok()) continue;
    HandleSendError(sent, "report");
    if (worker_->GiveUpRetrying()) return false;
  }
  return !superseded_.load();
}

void Worker::TrialRun::Supersede(absl::string_view why) {
  if (superseded_.exchange(true)) return;
  Log(LogLevel::kWarning, "trial_superseded")
      .Kv("trial", trial_id())
      .Kv("attempt", attempt())
      .Kv("reason", why);
  // Nothing more is accepted for this attempt: unblock a trainer waiting on
  // a full buffer or a checkpoint drain.
  buffer_.Close();
}

TrialOutcome Worker::TrialRun::SendFail(const std::string& message,
                                        bool retryable, TrialOutcome outcome) {
  v1::FailRequest request;
  request.set_worker_id(worker_id_);
  request.set_trial_id(trial_id());
  request.set_attempt(attempt());
  request.set_message(message);
  request.set_retryable(retryable);
  // A shutdown hands the trial back intact: released, it does not use up one
  // of the trial's attempts.
  request.set_released(outcome == TrialOutcome::kInterrupted);
  while (true) {
    absl::StatusOr<v1::FailResponse> response = worker_->client_->Fail(request);
    if (response.ok()) break;
    if (response.status().code() == absl::StatusCode::kFailedPrecondition) {
      return TrialOutcome::kSuperseded;
    }
    if (!IsTransient(response.status()) || worker_->GiveUpRetrying()) {
      Log(LogLevel::kError, "fail_not_delivered")
          .Kv("trial", trial_id())
          .Kv("error", response.status().ToString());
      break;
    }
    PauseForRetry();
  }
  const bool handed_back = outcome == TrialOutcome::kInterrupted;
  Log(handed_back ? LogLevel::kInfo : LogLevel::kError,
      handed_back ? "trial_handed_back" : "trial_failed")
      .Kv("trial", trial_id())
      .Kv("attempt", attempt())
      .Kv("retryable", retryable ? "true" : "false")
      .Kv("message", message);
  return outcome;
}

TrialOutcome Worker::TrialRun::Finish(
    const absl::StatusOr<model::TrainResult>& result) {
  if (superseded_.load()) return TrialOutcome::kSuperseded;
  if (!result.ok()) {
    Flush(/*leave=*/0);
    if (superseded_.load()) return TrialOutcome::kSuperseded;
    if (result.status().code() == absl::StatusCode::kResourceExhausted) {
      // This machine ran out of something (its checkpoint disk): another
      // worker may do the trial, and this one can do none until it is fixed.
      worker_->StopForLocalFault(result.status());
    }
    return SendFail(result.status().ToString(), IsTransient(result.status()),
                    TrialOutcome::kFailed);
  }
  if (result->stopped) {
    Flush(/*leave=*/0);
    if (superseded_.load()) return TrialOutcome::kSuperseded;
    return SendFail(absl::StrCat("worker shut down at step ", result->steps),
                    /*retryable=*/true, TrialOutcome::kInterrupted);
  }

  // The last partial batch rides along with Complete.
  if (!Flush(worker_->options_.report_batch)) {
    return superseded_.load() ? TrialOutcome::kSuperseded
                              : TrialOutcome::kInterrupted;
  }
  v1::CompleteRequest request;
  request.set_worker_id(worker_id_);
  request.set_trial_id(trial_id());
  request.set_attempt(attempt());
  *request.mutable_metrics() = ToTrialMetrics(*result);
  if (const int64_t bad = nonfinite_step_.load();
      bad >= 0 && !request.metrics().diverged()) {
    request.mutable_metrics()->set_diverged(true);
    request.mutable_metrics()->set_diverged_step(bad);
  }
  for (v1::LossPoint& point : buffer_.Oldest(buffer_.size())) {
    *request.add_points() = std::move(point);
  }
  while (true) {
    absl::StatusOr<v1::CompleteResponse> response =
        worker_->client_->Complete(request);
    if (response.ok()) break;
    if (response.status().code() == absl::StatusCode::kFailedPrecondition) {
      Supersede(response.status().message());
      return TrialOutcome::kSuperseded;
    }
    if (!IsTransient(response.status()) || worker_->GiveUpRetrying()) {
      Log(LogLevel::kError, "complete_not_delivered")
          .Kv("trial", trial_id())
          .Kv("error", response.status().ToString());
      return TrialOutcome::kInterrupted;
    }
    HandleSendError(response.status(), "complete");
  }
  buffer_.Acknowledge(request.points_size());
  {
    absl::MutexLock lock(&worker_->mu_);
    worker_->stats_.points_acknowledged += request.points_size();
  }
  Log(LogLevel::kInfo, "trial_completed")
      .Kv("trial", trial_id())
      .Kv("attempt", attempt())
      .Kv("steps", result->steps)
      .Kv("final_val_loss", result->final_val_loss)
      .Kv("diverged", result->diverged ? "true" : "false")
      .Kv("tokens_per_second", result->tokens_per_second)
      .Kv("attention", result->attention_kernel)
      .Kv("isa", result->isa)
      .Kv("wall_seconds", result->wall_seconds)
      .Kv("checkpoints_skipped", result->checkpoints_skipped)
      .Kv("discarded_checkpoint_step", result->discarded_checkpoint_step);

  const std::string dir = CheckpointDirFor(task_, worker_->options_.resources);
  // A trial stopped at an ASHA rung may be promoted and resume from its
  // checkpoint there: only a final trial's are removed.
  if (!dir.empty() && !worker_->options_.keep_checkpoints &&
      task_.stop_at_step() == 0) {
    // The trial is final; its checkpoints (GBs at 124M) are no longer needed.
    std::error_code error;
    std::filesystem::remove_all(dir, error);
    if (error) {
      Log(LogLevel::kWarning, "checkpoint_cleanup_failed")
          .Kv("dir", dir)
          .Kv("error", error.message());
    }
  }
  return TrialOutcome::kCompleted;
}

Worker::Worker(WorkerOptions options, CoordinatorClient* client,
               TrainerLauncher* launcher)
    : options_(std::move(options)),
      client_(client),
      launcher_(launcher),
      backoff_seed_(options_.seed != 0 ? options_.seed
                                       : std::random_device{}()) {
  worker_id_ = options_.worker_id;
}

absl::Status Worker::Register() {
  Backoff backoff(options_.backoff, backoff_seed());
  while (true) {
    v1::RegisterRequest request;
    request.set_host(options_.host);
    request.set_device(options_.resources.device);
    request.set_threads(options_.resources.threads);
    request.set_worker_id(worker_id());
    absl::StatusOr<v1::RegisterResponse> response = client_->Register(request);
    if (response.ok()) {
      absl::MutexLock lock(&mu_);
      worker_id_ = response->worker_id();
      if (options_.heartbeat_interval > absl::ZeroDuration()) {
        heartbeat_interval_ = options_.heartbeat_interval;
      } else if (response->heartbeat_seconds() > 0) {
        heartbeat_interval_ = absl::Seconds(response->heartbeat_seconds());
      }
      Log(LogLevel::kInfo, "registered")
          .Kv("worker_id", worker_id_)
          .Kv("host", options_.host)
          .Kv("device", options_.resources.device)
          .Kv("threads", options_.resources.threads)
          .Kv("heartbeat_seconds", response->heartbeat_seconds())
          .Kv("lease_seconds", response->lease_seconds());
      return absl::OkStatus();
    }
    if (!IsTransient(response.status())) return response.status();
    if (backoff.retries() == 0) {
      Log(LogLevel::kWarning, "register_failed")
          .Kv("error", response.status().ToString());
    }
    if (!SleepFor(backoff.Next())) {
      return absl::CancelledError("shut down before registering");
    }
  }
}

absl::Status Worker::Run() {
  if (absl::Status registered = Register(); !registered.ok()) {
    return registered.code() == absl::StatusCode::kCancelled ? absl::OkStatus()
                                                             : registered;
  }
  Backoff backoff(options_.backoff, backoff_seed() + 1);
  int handled = 0;
  absl::Time idle_since = absl::Now();
  while (!shutting_down() && local_fault().ok()) {
    if (options_.max_trials > 0 && handled >= options_.max_trials) {
      Log(LogLevel::kInfo, "max_trials_reached").Kv("trials", handled);
      break;
    }
    v1::LeaseRequest request;
    request.set_worker_id(worker_id());
    absl::StatusOr<v1::LeaseResponse> lease = client_->Lease(request);
    if (!lease.ok()) {
      if (lease.status().code() == absl::StatusCode::kNotFound) {
        // The coordinator no longer knows this worker (a new database).
        Log(LogLevel::kWarning, "worker_unknown")
            .Kv("error", lease.status().message());
        {
          absl::MutexLock lock(&mu_);
          worker_id_.clear();
        }
        absl::Status registered = Register();
        if (!registered.ok() &&
            registered.code() != absl::StatusCode::kCancelled) {
          return registered;
        }
        continue;
      }
      if (!IsTransient(lease.status())) return lease.status();
      if (backoff.retries() == 0) {
        Log(LogLevel::kWarning, "lease_failed")
            .Kv("error", lease.status().ToString());
      }
      SleepFor(backoff.Next());
      continue;
    }
    if (backoff.retries() > 0) {
      Log(LogLevel::kInfo, "coordinator_reachable")
          .Kv("retries", backoff.retries());
    }
    backoff.Reset();
    if (!lease->has_task()) {
      if (options_.idle_exit > absl::ZeroDuration() &&
          absl::Now() - idle_since >= options_.idle_exit) {
        Log(LogLevel::kInfo, "idle_exit")
            .Kv("idle_seconds", absl::ToInt64Seconds(absl::Now() - idle_since));
        break;
      }
      SendIdleHeartbeat();
      SleepFor(lease->retry_after_ms() > 0
                   ? absl::Milliseconds(lease->retry_after_ms())
                   : absl::Seconds(1));
      continue;
    }

    const v1::TrialTask& task = lease->task();
    Log(LogLevel::kInfo, "lease")
        .Kv("trial", task.trial().id())
        .Kv("attempt", task.trial().attempt())
        .Kv("experiment", task.trial().experiment_id())
        .Kv("schedule", task.trial().schedule())
        .Kv("seed", task.trial().seed())
        .Kv("resume_step", task.resume_step())
        .Kv("stored_step", task.stored_step());
    RunTrial(task);
    ++handled;
    idle_since = absl::Now();
  }
  SayGoodbye();
  absl::MutexLock lock(&mu_);
  return local_fault_;
}

void Worker::StopForLocalFault(const absl::Status& status) {
  Log(LogLevel::kError, "stopping_for_local_fault")
      .Kv("error", status.ToString());
  absl::MutexLock lock(&mu_);
  if (local_fault_.ok()) local_fault_ = status;
}

void Worker::SayGoodbye() {
  v1::DeregisterRequest request;
  request.set_worker_id(worker_id());
  if (request.worker_id().empty()) return;
  // Best effort: without it the worker reads as lost once its heartbeats
  // stop, which is what a crash looks like too.
  if (absl::StatusOr<v1::DeregisterResponse> bye = client_->Deregister(request);
      !bye.ok()) {
    Log(LogLevel::kInfo, "deregister_failed")
        .Kv("error", bye.status().ToString());
  }
}

TrialOutcome Worker::RunTrial(const v1::TrialTask& task) {
  absl::Duration heartbeat_interval;
  uint64_t seed;
  std::string id;
  {
    absl::MutexLock lock(&mu_);
    heartbeat_interval = heartbeat_interval_;
    seed = ++backoff_seed_;
    id = worker_id_;
  }
  TrialRun run(this, task, id, heartbeat_interval, seed);
  const TrialOutcome outcome = run.Execute();
  absl::MutexLock lock(&mu_);
  switch (outcome) {
    case TrialOutcome::kCompleted:
      ++stats_.trials_completed;
      break;
    case TrialOutcome::kFailed:
      ++stats_.trials_failed;
      break;
    case TrialOutcome::kSuperseded:
      ++stats_.trials_superseded;
      break;
    case TrialOutcome::kInterrupted:
      ++stats_.trials_interrupted;
      break;
  }
  return outcome;
}

void Worker::SendIdleHeartbeat() {
  absl::Time now = absl::Now();
  v1::HeartbeatRequest request;
  {
    absl::MutexLock lock(&mu_);
    if (now - last_heartbeat_ < heartbeat_interval_) return;
    last_heartbeat_ = now;
    request.set_worker_id(worker_id_);
  }
  // Idle liveness only; a failure shows up again at the next Lease.
  (void)client_->Heartbeat(request);
}

void Worker::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return;
  shutdown_ = true;
  shutdown_at_ = absl::Now();
}

absl::Status Worker::local_fault() const {
  absl::MutexLock lock(&mu_);
  return local_fault_;
}

bool Worker::shutting_down() const {
  absl::MutexLock lock(&mu_);
  return shutdown_;
}

bool Worker::GiveUpRetrying() const {
  absl::MutexLock lock(&mu_);
  return shutdown_ && absl::Now() - shutdown_at_ >= options_.shutdown_grace;
}

bool Worker::SleepFor(absl::Duration d) const {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&shutdown_), d);
  return !shutdown_;
}

uint64_t Worker::backoff_seed() const {
  absl::MutexLock lock(&mu_);
  return backoff_seed_;
}

std::string Worker::worker_id() const {
  absl::MutexLock lock(&mu_);
  return worker_id_;
}

WorkerStats Worker::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace prism::worker
