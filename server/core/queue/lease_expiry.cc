#include "server/core/queue/lease_expiry.h"

#include <utility>

#include "absl/time/time.h"
#include "base/log.h"
#include "proto/worker_protocol.h"

namespace prism::server {

LeaseExpiry::LeaseExpiry(QueueManager* queue, const StorageHealth* health,
                         std::function<absl::Status()> probe_write,
                         std::function<void()> after_pass,
                         LeaseExpiryOptions options)
    : queue_(queue),
      health_(health),
      probe_write_(std::move(probe_write)),
      after_pass_(std::move(after_pass)),
      options_(options) {}

LeaseExpiry::~LeaseExpiry() { Stop(); }

absl::Status LeaseExpiry::ExtendAfterStart() {
  // The grace counts from the moment the servers accept calls (the
  // contract in worker_protocol.h), not from before they were built: a
  // start slowed by a loaded host must not eat into a worker's time to
  // reconnect. Nothing expires leases before the expiry thread runs.
  // On a filesystem that refuses writes this fails: serve anyway, not
  // ready (health has the fault), and let the expiry loop extend the
  // leases once a write succeeds (it sees the disruption).
  absl::StatusOr<int> extended = queue_->ExtendLeasesAfterRestart();
  if (!extended.ok()) {
    if (health_->Ready().ok()) return extended.status();
    Log(LogLevel::kError, "serving without write access to the database")
        .Kv("error", extended.status().ToString());
    disruptions_at_extension_ = -1;
    return absl::OkStatus();
  }
  disruptions_at_extension_ = health_->disruptions();
  if (*extended > 0) {
    Log(LogLevel::kInfo, "extended live leases after the servers started")
        .Kv("leases", *extended)
        .Kv("grace_ms", v1::RestartGraceMs(options_.lease_seconds,
                                           options_.heartbeat_seconds));
  }
  return absl::OkStatus();
}

void LeaseExpiry::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void LeaseExpiry::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool LeaseExpiry::GraceAfterDisruption(int64_t* seen) {
  if (!health_->normal()) {
    // Nothing else may write for a while (no worker is connected): the
    // probe ends a failing or stalled state once the disk takes a write.
    if (!probe_write_().ok() || !health_->normal()) return false;
  }
  const int64_t disruptions = health_->disruptions();
  if (disruptions == *seen) return true;
  // A heartbeat that waited behind a stalled commit may still be queued;
  // heartbeats never lower a deadline, so the extension holds.
  absl::StatusOr<int> extended = queue_->ExtendLeasesAfterRestart();
  if (!extended.ok() || !health_->normal()) return false;
  *seen = disruptions;
  if (*extended > 0) {
    Log(LogLevel::kInfo, "extended live leases after a storage disruption")
        .Kv("leases", *extended)
        .Kv("grace_ms", v1::RestartGraceMs(options_.lease_seconds,
                                           options_.heartbeat_seconds));
  }
  return true;
}

void LeaseExpiry::Loop() {
  int64_t seen_disruptions = disruptions_at_extension_;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                               absl::Milliseconds(options_.interval_ms))) {
        return;
      }
    }
    // While writes fail or stall no heartbeat is recorded: expire nothing
    // until commits are prompt again, then give every live lease a full
    // period first.
    if (!GraceAfterDisruption(&seen_disruptions)) continue;
    // The expiry waits for the write lock like every write. A commit that
    // stalls meanwhile holds back heartbeats as well, so the deadlines would
    // be stale by the time the lock is ours: stand down if a stall or
    // failure began since the check above (the next pass extends first).
    const int64_t seen = seen_disruptions;
    absl::StatusOr<int> expired = queue_->ExpireLeases([this, seen] {
      return health_->normal() && health_->disruptions() == seen;
    });
    if (!expired.ok()) {
      Log(LogLevel::kError, "lease expiry failed")
          .Kv("error", expired.status().ToString());
    }
    if (after_pass_) after_pass_();
  }
}

}  // namespace prism::server
