// QueueStore: the store's role for the trial queue and its leases: what the
// queue's policy asks (candidates, live trials per user, usage spans,
// depth) and the compare-and-set writes that carry a trial from queued
// through leased and running to its end (storage/store.h states the rule).
// QueueManager (server/core/queue/queue.h) is its user.
//
// A write is one transaction; thread-safety and time are as storage/store.h
// says for every role.
#ifndef PRISM_STORAGE_QUEUE_STORE_H_
#define PRISM_STORAGE_QUEUE_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "prism/v1/prism.pb.h"
#include "storage/records.h"

namespace prism::storage {

// LeaseCandidate is an active experiment with at least one queued trial.
struct LeaseCandidate {
  int64_t experiment_id = 0;
  std::string owner;
  int priority = 0;
  int64_t created_ms = 0;
};

// UsageSpan is one attempt's hold on a worker, for fair share's usage:
// from its lease (started_ms) to its end (ended_ms; 0 while it is live).
struct UsageSpan {
  std::string owner;
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
};

struct HeartbeatResult {
  // The trial is no longer this worker's (cancelled, expired, re-leased or
  // finished): the worker should stop training it.
  bool stop = false;
  int64_t lease_deadline_ms = 0;
  int64_t experiment_id = 0;
};

// ExpiredLease is a trial whose lease ExpireLeases took back, for events and
// logs.
struct ExpiredLease {
  v1::Trial trial;  // after the change: queued, or failed at max attempts
  std::string worker_id;
};

class QueueStore {
 public:
  virtual ~QueueStore() = default;

  // ListLeaseCandidates returns every ACTIVE experiment that has a queued
  // trial, in no particular order (the queue's policy orders them).
  virtual absl::StatusOr<std::vector<LeaseCandidate>> ListLeaseCandidates() = 0;
  // CountLiveTrialsByUser counts leased + running trials per owner.
  virtual absl::StatusOr<std::map<std::string, int>>
  CountLiveTrialsByUser() = 0;
  // LeaseNextTrial leases the experiment's lowest-id queued trial to
  // `worker_id`: attempt + 1, deadline, an open attempt row (its
  // resumed_from_step unset until StartAttempt), the worker's current trial.
  // Returns nullopt when it has no queued trial (or is no longer active).
  virtual absl::StatusOr<std::optional<v1::Trial>> LeaseNextTrial(
      int64_t experiment_id, const std::string& worker_id, int64_t now_ms,
      int64_t deadline_ms) = 0;
  // RedeliverLease returns the trial leased to `worker_id` that the worker
  // never started (still leased, lease not expired), its deadline renewed to
  // deadline_ms, or nullopt. A worker asks for a lease only when it holds no
  // trial, so such a trial's lease answer was lost (the coordinator died
  // after committing it): it is answered again rather than waited out.
  virtual absl::StatusOr<std::optional<v1::Trial>> RedeliverLease(
      const std::string& worker_id, int64_t now_ms, int64_t deadline_ms) = 0;
  // Heartbeat renews the lease (leased -> running on the first one) and
  // records the step; stop=true (and nothing renewed) when the trial is no
  // longer this attempt's. NotFound for an unknown trial; InvalidArgument
  // for a step outside the trial's budget (0 to total_steps).
  virtual absl::StatusOr<HeartbeatResult> Heartbeat(const AttemptRef& ref,
                                                    int64_t step,
                                                    int64_t now_ms,
                                                    int64_t deadline_ms) = 0;
  // StartAttempt records the step the attempt's trainer resumed from on its
  // open attempt row, and renews the lease like a heartbeat (leased ->
  // running). Returns the lease deadline; FailedPrecondition for a stale
  // attempt; NotFound for an unknown trial; InvalidArgument for a step
  // outside the trial's budget.
  virtual absl::StatusOr<int64_t> StartAttempt(const AttemptRef& ref,
                                               int64_t resumed_from_step,
                                               int64_t now_ms,
                                               int64_t deadline_ms) = 0;
  // CompleteTrial stores remaining points, the metrics and the compact val
  // curve; the trial becomes completed (diverged when metrics.diverged()),
  // or TRIAL_STOPPED_AT_RUNG when it has a target_steps below total_steps
  // (and did not diverge): the attempt ends there, the trial waits for an
  // ASHA decision.
  // Idempotent: the same attempt completing again returns the trial.
  // FailedPrecondition for a stale attempt. InvalidArgument for a point
  // outside the budget, or metrics.steps other than what the attempt
  // trained: total_steps, or target_steps at an ASHA rung (a diverged
  // trial: anything within the budget).
  virtual absl::StatusOr<v1::Trial> CompleteTrial(
      const AttemptRef& ref, const v1::TrialMetrics& metrics,
      const std::vector<v1::LossPoint>& points, int64_t now_ms) = 0;
  // FailTrial requeues the trial when retryable and fewer than max attempts
  // failed (this one included), else marks it failed with `message`.
  // FailedPrecondition for a stale attempt.
  virtual absl::StatusOr<v1::Trial> FailTrial(const AttemptRef& ref,
                                              const std::string& message,
                                              bool retryable,
                                              int64_t now_ms) = 0;
  // ReleaseTrial requeues the trial whatever its attempts: the worker handed
  // it back on purpose. The attempt ends TRIAL_QUEUED with "released by
  // worker" (plus `message`), which max attempts do not count.
  // FailedPrecondition for a stale attempt.
  virtual absl::StatusOr<v1::Trial> ReleaseTrial(const AttemptRef& ref,
                                                 const std::string& message,
                                                 int64_t now_ms) = 0;
  // ExpireLeases requeues every leased/running trial whose deadline is
  // before now_ms, or fails it when its failed attempts (expiries and
  // failures, this one included; releases are not counted) reached the
  // experiment's max attempts. Returns the trials it changed. `proceed`, when
  // set, is asked once the write lock is held, before anything is read: false
  // expires nothing. The coordinator's expiry loop uses it to stand down when
  // a storage stall began while it waited for the lock (heartbeats waited
  // behind the same lock, so the deadlines it would act on are stale).
  virtual absl::StatusOr<std::vector<ExpiredLease>> ExpireLeases(
      int64_t now_ms, const std::function<bool()>& proceed) = 0;
  absl::StatusOr<std::vector<ExpiredLease>> ExpireLeases(int64_t now_ms) {
    return ExpireLeases(now_ms, nullptr);
  }
  // ExtendLiveLeases sets every live lease's deadline to at least
  // deadline_ms (at coordinator start: workers could not heartbeat while it
  // was down). Returns how many leases it touched.
  virtual absl::StatusOr<int> ExtendLiveLeases(int64_t deadline_ms) = 0;
  // CountQueued counts queued trials of active experiments (queue depth).
  virtual absl::StatusOr<int64_t> CountQueued() = 0;
  // ListUsageSpans returns the attempts that hold a worker now (the trial
  // leased or running) or ended at or after `ended_since_ms`, with the
  // owner of their experiment, in no particular order.
  virtual absl::StatusOr<std::vector<UsageSpan>> ListUsageSpans(
      int64_t ended_since_ms) = 0;
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_QUEUE_STORE_H_
