// LeaseExpiry: the queue's lease clock. Once the servers accept calls,
// ExtendAfterStart gives every live lease its restart grace (workers could
// not heartbeat while the coordinator was down); then a thread expires the
// leases whose deadline passed every `interval_ms` (QueueManager::
// ExpireLeases), and after each pass runs `after_pass` (the coordinator
// writes the tokens' last uses there).
//
// Storage faults (server/core/infra/storage_health.h): while writes fail or
// commits stall no heartbeat is recorded, so the loop expires nothing; once
// a probe write succeeds it first gives every live lease a fresh grace, as
// after a restart. A pass that finds a stall or failure begun while it
// waited for the write lock stands down (the deadlines it would act on are
// stale).
//
//   LeaseExpiry expiry(queue, &health, probe_write, flush, options);
//   PRISM_RETURN_IF_ERROR(expiry.ExtendAfterStart());
//   expiry.Start();
//   expiry.Stop();        // joins the thread; the destructor does too
//
// Thread-safety: ExtendAfterStart, Start and Stop are called by the
// coordinator's thread; the loop runs on a thread of its own.
#ifndef PRISM_SERVER_CORE_QUEUE_LEASE_EXPIRY_H_
#define PRISM_SERVER_CORE_QUEUE_LEASE_EXPIRY_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/core/infra/storage_health.h"
#include "server/core/queue/queue.h"

namespace prism::server {

struct LeaseExpiryOptions {
  int64_t interval_ms = 1000;  // --expiry-interval-ms
  // For the grace's log line (v1::RestartGraceMs).
  int lease_seconds = 0;
  int heartbeat_seconds = 0;
};

class LeaseExpiry {
 public:
  // `probe_write` commits a write that changes nothing
  // (storage::Store::ProbeWrite), to learn whether the disk takes writes
  // again when nothing else writes.
  LeaseExpiry(QueueManager* queue, const StorageHealth* health,
              std::function<absl::Status()> probe_write,
              std::function<void()> after_pass, LeaseExpiryOptions options);
  ~LeaseExpiry();
  LeaseExpiry(const LeaseExpiry&) = delete;
  LeaseExpiry& operator=(const LeaseExpiry&) = delete;

  // ExtendAfterStart gives every live lease its restart grace (call it once
  // the servers accept calls: the grace counts from then). When writes fail
  // the coordinator serves anyway, not ready, and the loop extends the
  // leases once a write succeeds; a failure on a healthy store is returned.
  absl::Status ExtendAfterStart();
  // Start runs the loop on its own thread.
  void Start();
  // Stop ends the loop and joins its thread; idempotent.
  void Stop();

 private:
  // GraceAfterDisruption extends every live lease when writes were
  // disrupted since `*seen` (or are still) and updates `*seen`; returns
  // false while writes still fail or stall (expire nothing then).
  bool GraceAfterDisruption(int64_t* seen);
  void Loop();

  QueueManager* const queue_;
  const StorageHealth* const health_;
  const std::function<absl::Status()> probe_write_;
  const std::function<void()> after_pass_;
  const LeaseExpiryOptions options_;
  // health_->disruptions() when ExtendAfterStart extended the leases (-1
  // when it could not); then the loop's.
  int64_t disruptions_at_extension_ = 0;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_QUEUE_LEASE_EXPIRY_H_
