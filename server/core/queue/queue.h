// QueueManager: the work queue's policy and the worker protocol — register,
// lease, heartbeat, report, complete, fail — plus lease expiry. SQL stays in
// storage; this decides which trial goes next and what each call means.
//
// Lease order: server/core/queue/fair_share.h (priority, then the owner's
// decayed usage per share, then live trials per share, then age), the
// experiment's lowest queued trial id first. Owners at a running quota (theirs,
// or
// --max-running-per-user) are passed over.
//
// A lease gives the trial to one worker for lease_seconds (attempt + 1, the
// number of leases granted so far); Start (the step the trainer resumed
// from), heartbeats and reports renew it and the first one moves the trial
// to running. ExpireLeases (run by the coordinator's loop) requeues expired
// leases, or fails a trial once the experiment's max attempts have failed
// (expired or failed; a Fail with `released`, a worker handing the trial
// back on shutdown, requeues it without counting). A call from a superseded
// attempt or worker is FailedPrecondition (Heartbeat answers stop=true
// instead, so a worker learns to drop the trial). Reports are committed in
// groups by the IngestWriter before they are acknowledged.
//
// Thread-safety: all methods are thread-safe; leases are decided one at a
// time.
#ifndef PRISM_SERVER_CORE_QUEUE_QUEUE_H_
#define PRISM_SERVER_CORE_QUEUE_QUEUE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prism/v1/prism.pb.h"
#include "server/core/auth/auth.h"
#include "server/core/infra/clock.h"
#include "server/core/infra/events.h"
#include "server/core/infra/finish_signal.h"
#include "server/core/queue/fair_share.h"
#include "server/core/queue/ingest.h"
#include "storage/curve_store.h"
#include "storage/experiment_store.h"
#include "storage/queue_store.h"
#include "storage/token_store.h"
#include "storage/worker_store.h"

namespace prism::server {

inline constexpr int kDefaultLeaseSeconds = 30;
inline constexpr int kDefaultHeartbeatSeconds = 5;

struct QueueOptions {
  int lease_seconds = kDefaultLeaseSeconds;
  int heartbeat_seconds = kDefaultHeartbeatSeconds;
  int max_running_per_user = 0;  // 0: no limit
  int64_t fair_share_half_life_ms = kDefaultFairShareHalfLifeMs;
  int idle_retry_ms = 1000;            // LeaseResponse.retry_after_ms when idle
  int max_points_per_report = 100000;  // Limits::max_points_per_report
  int max_string_bytes = 4096;         // Limits::max_string_bytes
};

// CurveCompleteThrough returns the last step through which a trial's stored
// curve is complete (every point the trainer emits at or before it is
// stored), given the highest stored step of each split and the resolved
// budget's cadence; 0 when even the val point at step 0 is missing. Stored
// curves are prefixes of the trainer's order, so that is the step before the
// first point still missing.
int64_t CurveCompleteThrough(const v1::Budget& budget,
                             const storage::LastStored& stored);

class QueueManager {
 public:
  using ReportDone = std::function<void(absl::StatusOr<v1::ReportResponse>)>;
  // Lease deadlines, heartbeats, expiry, worker liveness and usage all run
  // on clock->LeaseMs() (a wall-clock step moves none of them); events carry
  // clock->NowMs(). Each time a trial finishes (completed, diverged, or
  // failed by Fail or lease expiry) the queue publishes the experiment's id
  // on `finished` (when set), on that call's thread, after the finish is
  // committed and before the experiment's event is published.
  QueueManager(storage::QueueStore* queue,
               storage::ExperimentStore* experiments,
               storage::TokenStore* tokens, storage::WorkerStore* workers,
               storage::CurveStore* curves, const Clock* clock,
               EventBus* events, IngestWriter* ingest, QueueOptions options,
               const FinishSignal* finished = nullptr);

  // Register creates or re-registers (same worker_id) a worker owned by the
  // caller. PermissionDenied when the id belongs to another user (checked
  // and written atomically; an admin may take an id over); InvalidArgument
  // for a worker_id, host or device over its length limit.
  absl::StatusOr<v1::RegisterResponse> Register(
      const Caller& caller, const v1::RegisterRequest& request);
  // Lease returns the next trial's task, or no task and retry_after_ms. A
  // trial already leased to this worker and never started is returned again
  // first (the answer to the worker's earlier Lease was lost).
  // NotFound for an unregistered worker (every call below answers that too:
  // the worker should Register again, e.g. after the database was replaced).
  absl::StatusOr<v1::LeaseResponse> Lease(const Caller& caller,
                                          const v1::LeaseRequest& request);
  // Start records the step the attempt's trainer resumed from and renews
  // the lease. InvalidArgument for a negative step; FailedPrecondition for a
  // stale attempt; NotFound for an unknown trial.
  absl::StatusOr<v1::StartResponse> Start(const Caller& caller,
                                          const v1::StartRequest& request);
  // Heartbeat records liveness and renews the lease; stop=true when the
  // trial is no longer this attempt's, or no longer exists (deleted with its
  // experiment); InvalidArgument for a non-finite tokens_per_second.
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const Caller& caller, const v1::HeartbeatRequest& request);
  // Report validates the points and hands them to the group commit; `done`
  // runs (on the writer thread, or at once for bad input) with the stored
  // and duplicate counts, or FailedPrecondition for a stale attempt.
  // InvalidArgument for more than max_points_per_report points, a point
  // with a non-finite value or a step outside the trial's budget (0 to its
  // total steps; nothing of the report is stored).
  // `request` must stay alive until `done` has run.
  void Report(const Caller& caller, const v1::ReportRequest& request,
              ReportDone done);
  // Complete finishes the trial (diverged when metrics say so); idempotent
  // for the same attempt. FailedPrecondition for a stale attempt;
  // InvalidArgument for a non-finite point, a point outside the budget, a
  // non-finite metric of a trial not reported diverged, or metrics.steps
  // other than what was trained (the budget, or the ASHA rung; within the
  // budget when diverged).
  absl::StatusOr<v1::CompleteResponse> Complete(
      const Caller& caller, const v1::CompleteRequest& request);
  // Fail requeues (released; or retryable with attempts left) or fails the
  // trial. FailedPrecondition for a stale attempt.
  absl::StatusOr<v1::FailResponse> Fail(const Caller& caller,
                                        const v1::FailRequest& request);
  // Deregister marks the worker stopped (a clean exit); a trial it still
  // holds keeps its lease until it expires. NotFound for an unknown worker.
  absl::StatusOr<v1::DeregisterResponse> Deregister(
      const Caller& caller, const v1::DeregisterRequest& request);
  // ListWorkers returns every worker with its state derived from its last
  // heartbeat (LOST after lease_seconds of silence) and its Deregister
  // (STOPPED).
  absl::StatusOr<v1::ListWorkersResponse> ListWorkers();
  // CountQueued counts the queued trials of active experiments (the queue's
  // depth).
  absl::StatusOr<int64_t> CountQueued();

  // ExpireLeases requeues or fails every expired lease; returns how many.
  // `proceed` (see storage::Store::ExpireLeases) is asked under the store's
  // write lock; false expires nothing.
  absl::StatusOr<int> ExpireLeases(
      const std::function<bool()>& proceed = nullptr);
  // ExtendLeasesAfterRestart gives every live lease v1::RestartGraceMs from
  // now (workers could not heartbeat while the coordinator was down: a
  // lease, a heartbeat and the workers' reconnect bound), so a restart
  // shorter than a lease supersedes nobody.
  absl::StatusOr<int> ExtendLeasesAfterRestart();

  // UserStandings returns every user's usage, share, live trials and
  // effective running quota now (users with no trial and no policy are
  // absent: they stand at the defaults).
  absl::StatusOr<std::map<std::string, UserStanding>> UserStandings();
  // Order returns the experiments with queued trials in lease order.
  absl::StatusOr<std::vector<QueueSlot>> Order();
  // Standings explains Order: each waiting experiment's position and reason.
  absl::StatusOr<std::map<int64_t, QueueStanding>> Standings();

  const QueueOptions& options() const { return options_; }

 private:
  absl::StatusOr<v1::ExperimentSpec> SpecFor(int64_t experiment_id);
  absl::Status CheckWorker(const Caller& caller, const std::string& worker_id);
  v1::Trial WithPrinciples(v1::Trial trial, const v1::ExperimentSpec& spec);
  void PublishTrial(const v1::Trial& trial);
  void PublishExperiment(int64_t experiment_id);
  int64_t DeadlineFrom(int64_t now_ms) const {
    return now_ms + int64_t{options_.lease_seconds} * 1000;
  }

  storage::QueueStore* const queue_;
  storage::ExperimentStore* const experiments_;
  storage::TokenStore* const tokens_;
  storage::WorkerStore* const workers_;
  storage::CurveStore* const curves_;
  const Clock* const clock_;
  EventBus* const events_;
  IngestWriter* const ingest_;
  const QueueOptions options_;
  const FinishSignal* const finished_;  // nullptr: nobody listens
  absl::Mutex lease_mu_;
  absl::Mutex mu_;
  // Resolved specs never change after submit; cached for every lease.
  absl::flat_hash_map<int64_t, v1::ExperimentSpec> specs_ ABSL_GUARDED_BY(mu_);
  // worker id -> owning user, for the ownership check on every call.
  absl::flat_hash_map<std::string, std::string> worker_users_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_QUEUE_QUEUE_H_
