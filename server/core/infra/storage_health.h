// StorageHealth: whether the coordinator can write its database right now,
// and what an operator should know about it. The store feeds it (it is the
// store's storage::WriteObserver); /readyz, /metrics, `prism status` (for an
// admin) and the lease-expiry loop read it.
//
// States: ok; failing (the last write failed with a storage fault: disk
// full, I/O error, busy, read-only); stalled (the last commit took longer
// than `stall_threshold`). Each change of state, or of the fault while
// failing, is logged once: at error level when writes start failing (the
// fault, SQLite's message, what the coordinator does about it), at warning
// level when commits stall, at info level when writes succeed again. A
// success is what ends a failing state: nothing needs resetting by hand.
//
//   StorageHealth health(db_path, absl::Seconds(1));
//   store->SetWriteObserver(&health);
//   absl::Status ready = health.Ready();  // Unavailable while writes fail
//
// disruptions() counts the times writes were unavailable (each failing or
// stalled period, counted when it starts): while the store could not record
// heartbeats, workers could not renew their leases, so the expiry loop
// expires nothing until writes are normal() again and then extends every
// live lease once before it expires any.
//
// Thread-safety: all methods are thread-safe; the observer methods never
// call back into the store.
#ifndef PRISM_SERVER_STORAGE_HEALTH_H_
#define PRISM_SERVER_STORAGE_HEALTH_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/write_observer.h"

namespace prism::server {

class StorageHealth final : public storage::WriteObserver {
 public:
  // `db_path`: the database file, whose filesystem FreeBytes measures.
  StorageHealth(std::string db_path, absl::Duration stall_threshold);

  void WriteFailed(storage::StorageFault fault,
                   const absl::Status& status) override;
  void WriteCommitted(absl::Duration took) override;
  void WriteBegun() override;
  void WriteEnded() override;
  // OpenFailed records that the database cannot even be opened for writing
  // (a start on a full disk: SQLite has no room for its shared-memory
  // index). Counted like a failed write of `fault`, but not logged: the
  // caller retries every second and says so once. Ready then names the
  // open, until a write succeeds.
  void OpenFailed(storage::StorageFault fault, const absl::Status& status);

  // Ready returns OK unless the last write (or the open) failed; then
  // Unavailable with the fault, SQLite's message and how long writes have
  // failed; after OpenFailed "database cannot be opened for writing for 3s:
  // io_error: ... (0 bytes free on DIR)".
  absl::Status Ready() const;
  // Condition returns "" while the last write succeeded promptly, else one
  // line for an operator (the failing fault and cause, or the stall).
  std::string Condition() const;
  // normal is true while the last write committed promptly (neither
  // failing nor stalled) and no write has been in progress for longer than
  // the stall threshold.
  bool normal() const;
  // disruptions returns how many failing or stalled periods have begun.
  int64_t disruptions() const;
  // ErrorsByFault returns every fault's name with how many writes failed
  // for it (0 for those that never did).
  std::map<std::string, int64_t> ErrorsByFault() const;
  // FreeBytes returns the bytes this process may still write on the
  // database's filesystem (statvfs of its directory), or Unavailable.
  absl::StatusOr<int64_t> FreeBytes() const;

 private:
  enum class State { kOk, kFailing, kStalled };

  const std::string db_dir_;
  const absl::Duration stall_threshold_;
  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kOk;
  storage::StorageFault fault_ ABSL_GUARDED_BY(mu_) =
      storage::StorageFault::kDiskFull;
  std::string cause_ ABSL_GUARDED_BY(mu_);
  bool opening_ ABSL_GUARDED_BY(mu_) = false;  // failing since OpenFailed
  absl::Time since_ ABSL_GUARDED_BY(mu_);
  absl::Duration last_stall_ ABSL_GUARDED_BY(mu_);
  int64_t disruptions_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::Time> write_begun_ ABSL_GUARDED_BY(mu_);
  std::map<storage::StorageFault, int64_t> errors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_STORAGE_HEALTH_H_
