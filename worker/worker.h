// Worker: the process that turns leased trials into loss curves. It registers
// with the coordinator, then loops: Lease -> train the trial through the
// TrainerLauncher on a training thread -> stream batched loss points (Report
// about every second or every `report_batch` points) -> heartbeat on its own
// thread at the coordinator's interval -> Complete with the final metrics, or
// Fail with the error (retryable for transient errors). Once the trainer has
// started, and before any Report, Start tells the coordinator the step it
// resumed from (the loaded checkpoint's, 0 for a fresh start).
//
// Protocol rules it keeps (see ../shared/DESIGN.md):
//   * A point leaves the in-memory ReportBuffer only after the coordinator
//     acknowledged it. If the coordinator goes away the worker keeps training,
//     buffers (bounded: the trainer pauses when the buffer is full), retries
//     with exponential backoff and jitter, and re-sends; the coordinator
//     stores a point once per (trial, split, step), so re-sending is safe.
//   * The curve rule: a stored curve never has a gap. A checkpoint is written
//     only after every earlier point was acknowledged; when that cannot
//     happen (the attempt was superseded, or Shutdown's grace ran out) the
//     checkpoint is skipped and the previous one stays. And a worker never
//     resumes from a checkpoint past the trial's last stored step
//     (TrialTask.stored_step): it starts from an earlier one, or afresh. So
//     every resumed attempt starts at or before the end of the stored curve
//     and redoes the steps in between (the coordinator ignores the repeats;
//     on the CPU they are bitwise the same values).
//   * FailedPrecondition on a report or heartbeat, or a heartbeat saying
//     `stop`, means this attempt was superseded or cancelled: the trainer is
//     told to stop (TrainObserver::ShouldStop), nothing more is sent for it,
//     and the worker leases again.
//   * Shutdown stops the current trial at its next step (the trainer writes a
//     checkpoint), flushes its points, and hands the trial back with a
//     released Fail: it is requeued at once for another worker to resume,
//     without using up one of its attempts.
//   * A normal end of Run deregisters: the coordinator shows the worker as
//     stopped rather than lost.
//
//   std::unique_ptr<CoordinatorClient> client = NewGrpcCoordinatorClient(...);
//   std::unique_ptr<TrainerLauncher> launcher = NewModelTrainerLauncher();
//   Worker worker(options, client.get(), launcher.get());
//   absl::Status s = worker.Run();    // Shutdown() from another thread
//
// Thread-safety: Run is called once, from one thread; Shutdown may be called
// from any thread at any time. The client and launcher must outlive Run.
#ifndef PRISM_WORKER_WORKER_H_
#define PRISM_WORKER_WORKER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prism/v1/prism.pb.h"
#include "worker/backoff.h"
#include "worker/coordinator_client.h"
#include "worker/task_config.h"
#include "worker/trainer_launcher.h"

namespace prism::worker {

struct WorkerOptions {
  std::string host;  // reported at Register
  // The id to register as ("": the coordinator picks one), e.g. the batch
  // job's `slurm-<job id>`, which the coordinator's scaler looks for.
  std::string worker_id;
  WorkerResources resources;      // device, threads, checkpoint root
  bool keep_checkpoints = false;  // false: delete a trial's after Complete
  int max_trials = 0;             // stop after this many trials; 0: no limit
  // Exit after the coordinator had no work for this long; zero: never.
  absl::Duration idle_exit = absl::ZeroDuration();
  size_t buffer_capacity = 100000;  // points held while unacknowledged
  size_t report_batch = 256;        // points per Report
  absl::Duration report_interval = absl::Seconds(1);
  // Heartbeat period; zero: the coordinator's heartbeat_seconds.
  absl::Duration heartbeat_interval = absl::ZeroDuration();
  // After Shutdown, how long to keep trying to hand results back.
  absl::Duration shutdown_grace = absl::Seconds(30);
  BackoffPolicy backoff;
  uint64_t seed = 0;  // jitter seed
};

// TrialOutcome says how RunTrial ended.
enum class TrialOutcome {
  kCompleted,    // Complete was acknowledged (finished or diverged)
  kFailed,       // the trainer failed; Fail was sent
  kSuperseded,   // the coordinator took the trial away (cancel or re-lease)
  kInterrupted,  // Shutdown: handed back with a released Fail
};

struct WorkerStats {
  int trials_completed = 0;
  int trials_failed = 0;
  int trials_superseded = 0;
  int trials_interrupted = 0;
  int64_t points_acknowledged = 0;
  int64_t report_retries = 0;
};

class Worker {
 public:
  Worker(WorkerOptions options, CoordinatorClient* client,
         TrainerLauncher* launcher);
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Run registers, then leases and trains trials until max_trials were
  // handled, the coordinator had no work for idle_exit, or Shutdown was
  // called; then it deregisters and returns OK. Returns Unauthenticated /
  // PermissionDenied / InvalidArgument at once when the coordinator refuses
  // this worker; an unreachable coordinator is retried, never an error.
  // A trial that fails with ResourceExhausted (this machine's checkpoint disk
  // is full) is failed as retryable, so another worker can take it, and Run
  // then stops leasing and returns that status: this worker can do no trial
  // until someone frees the disk.
  absl::Status Run();

  // RunTrial trains one leased task to its end, reporting as it goes, and
  // returns how it ended. Run calls it; Register must have succeeded first.
  TrialOutcome RunTrial(const v1::TrialTask& task);

  // Register registers (or re-registers) with the coordinator, retrying while
  // it is unreachable. Returns OK, the coordinator's refusal, or Cancelled
  // after Shutdown.
  absl::Status Register();

  // Shutdown asks Run to return soon; see the header comment.
  void Shutdown();
  bool shutting_down() const;

  std::string worker_id() const;
  WorkerStats stats() const;

 private:
  class TrialRun;

  // SleepFor waits `d` or until Shutdown; returns false after Shutdown.
  bool SleepFor(absl::Duration d) const;
  // GiveUpRetrying is true once Shutdown was called more than
  // shutdown_grace ago.
  bool GiveUpRetrying() const;
  void SendIdleHeartbeat();
  // SayGoodbye deregisters the worker as Run ends normally, so that it
  // shows as stopped rather than lost.
  void SayGoodbye();
  // StopForLocalFault makes Run stop leasing and return `status`.
  void StopForLocalFault(const absl::Status& status);
  absl::Status local_fault() const;
  // backoff_seed reads the seed under mu_: RunTrial advances it, and
  // Register is public, so it may run beside a trial.
  uint64_t backoff_seed() const;

  const WorkerOptions options_;
  CoordinatorClient* const client_;
  TrainerLauncher* const launcher_;

  mutable absl::Mutex mu_;
  std::string worker_id_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_) = absl::Seconds(5);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time shutdown_at_ ABSL_GUARDED_BY(mu_);
  absl::Time last_heartbeat_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  WorkerStats stats_ ABSL_GUARDED_BY(mu_);
  uint64_t backoff_seed_ ABSL_GUARDED_BY(mu_);
  absl::Status local_fault_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::worker

#endif  // PRISM_WORKER_WORKER_H_
