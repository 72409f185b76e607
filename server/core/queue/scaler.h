// Scaler: worker jobs on a batch scheduler (Slurm), driven by the queue.
// While trials wait it submits one worker job per waiting trial that no
// pending, starting or idle job of its own will take, never holding more
// than `max_workers` jobs; a job whose worker sat idle with nothing waiting
// for `idle_grace`, and a pending job nothing waits for, are cancelled.
//
// Its jobs carry a tag that this database keeps (storage's `scalers` table):
// the scheduler lists them by name (`prism-worker-<tag>`), so a restarted
// coordinator adopts the jobs its previous run submitted rather than
// orphaning or doubling them, and nothing is submitted or cancelled before
// one listing succeeded. Each job's worker registers as `<backend>-<job id>`
// (deploy/slurm/prism-workers.sbatch passes --worker-id slurm-$SLURM_JOB_ID),
// which is how a job's worker is told idle or busy. The jobs it knows are
// recorded in `scaler_jobs` (submitted or adopted, and when they ended).
// A failed submission backs off (doubling from `initial_backoff` up to
// `max_backoff`) with one error line naming the scheduler's message.
//
//   SlurmJobs slurm(...);                       // a JobBackend
//   Scaler scaler(options, &slurm, store, snapshot, clock);
//   scaler.Start("node1:50051");                // a thread ticking every
//   interval
//   ...
//   scaler.Stop();                              // its jobs keep running
//
// Stopping the coordinator leaves the jobs alone: their workers reconnect to
// the restarted coordinator, which adopts them.
//
// Thread-safety: Tick from one thread at a time (Start's thread, or a test);
// Start and Stop from one thread.
#ifndef PRISM_SERVER_CORE_QUEUE_SCALER_H_
#define PRISM_SERVER_CORE_QUEUE_SCALER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prism/v1/prism.pb.h"
#include "server/core/infra/clock.h"
#include "storage/worker_store.h"

namespace prism::server {

enum class JobState { kPending, kRunning, kEnding };

// BatchJob is one job as the scheduler lists it.
struct BatchJob {
  std::string id;
  JobState state = JobState::kPending;
};

// JobBackend submits, lists and cancels worker jobs on a batch scheduler.
// The real one runs sbatch, squeue and scancel (cli/slurm_jobs.h).
class JobBackend {
 public:
  virtual ~JobBackend() = default;
  // name is the backend's name: the worker id prefix and the storage key.
  virtual std::string name() const = 0;
  // Submit submits one worker job named `job_name` whose worker dials
  // `coordinator`. Returns the job's id, or an error carrying the
  // scheduler's message.
  virtual absl::StatusOr<std::string> Submit(
      const std::string& job_name, const std::string& coordinator) = 0;
  // List returns every job named `job_name` the scheduler still holds.
  virtual absl::StatusOr<std::vector<BatchJob>> List(
      const std::string& job_name) = 0;
  // Cancel cancels a job (its worker gets SIGTERM and hands back whatever
  // it holds).
  virtual absl::Status Cancel(const std::string& id) = 0;
};

// QueueSnapshot is what the scaler reads of the queue each tick.
struct QueueSnapshot {
  int64_t waiting = 0;  // queued trials of active experiments
  std::map<std::string, v1::WorkerState> workers;  // by worker id
};

struct ScalerOptions {
  int max_workers = 4;
  absl::Duration interval = absl::Seconds(10);
  absl::Duration idle_grace = absl::Seconds(60);
  absl::Duration initial_backoff = absl::Seconds(10);
  absl::Duration max_backoff = absl::Minutes(5);
};

class QueueManager;

// SnapshotOf returns what the scaler reads of `queue`: its depth and each
// worker's derived state.
absl::StatusOr<QueueSnapshot> SnapshotOf(QueueManager* queue);

// ValidateScalerOptions returns InvalidArgument naming the first bad one.
absl::Status ValidateScalerOptions(const ScalerOptions& options);

class Scaler {
 public:
  using SnapshotFn = std::function<absl::StatusOr<QueueSnapshot>()>;

  Scaler(const ScalerOptions& options, JobBackend* backend,
         storage::WorkerStore* workers, SnapshotFn snapshot,
         const Clock* clock);
  ~Scaler();

  // Init reads (or creates) this database's tag. The store's error on
  // failure.
  absl::Status Init();
  // job_name is the name every job of this database carries.
  const std::string& job_name() const { return job_name_; }

  // Tick lists the jobs, reconciles them with the store, then submits or
  // cancels. Returns the first error (the listing's, the store's); a failed
  // submission is logged and backed off, not returned.
  absl::Status Tick() ABSL_LOCKS_EXCLUDED(mu_);

  // Start sets the address jobs dial and ticks every interval on a thread
  // until Stop.
  void Start(const std::string& coordinator_address);
  void Stop();

 private:
  absl::Status Reconcile(const std::vector<BatchJob>& jobs, int64_t now_ms);
  void Submit(int count, int64_t now_ms);

  const ScalerOptions options_;
  JobBackend* const backend_;
  storage::WorkerStore* const workers_;
  const SnapshotFn snapshot_;
  const Clock* const clock_;
  std::string job_name_;
  std::string coordinator_address_;
  // When each running job's worker was first seen idle with spare jobs.
  std::map<std::string, int64_t> idle_since_ms_;
  absl::Duration backoff_ = absl::ZeroDuration();
  int64_t next_submit_ms_ = 0;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_QUEUE_SCALER_H_
