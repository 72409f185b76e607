// WriteObserver: how the store tells its owner that writes to the database
// fail, or succeed again, without the owner parsing error messages. The
// store classifies the SQLite result of every failed write statement, BEGIN
// and COMMIT on its writer connection into a StorageFault, and reports every
// committed write transaction with how long it took (a stalled disk shows as
// a slow commit).
//
//   class Tracker : public storage::WriteObserver { ... };
//   store->SetWriteObserver(&tracker);  // before the store is shared
//
// Failures that are not the environment's (a constraint, a missing row, a
// stale attempt) are not reported: they say nothing about the disk.
//
// Thread-safety: the store calls an observer from whichever thread wrote,
// while it holds its write lock: an observer must be thread-safe and must
// not call back into the store.
#ifndef PRISM_STORAGE_WRITE_OBSERVER_H_
#define PRISM_STORAGE_WRITE_OBSERVER_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace prism::storage {

// StorageFault is why a write failed, from SQLite's primary result code.
enum class StorageFault {
  kDiskFull,  // SQLITE_FULL: no space on the database's filesystem
  kIoError,   // SQLITE_IOERR: the disk failed (or, at open, had no room)
  kBusy,      // SQLITE_BUSY, SQLITE_LOCKED: another process holds the file
  kReadOnly,  // SQLITE_READONLY: the file or its filesystem is read-only
};

// kStorageFaults lists every fault, for metrics that show each one.
inline constexpr StorageFault kStorageFaults[] = {
    StorageFault::kDiskFull, StorageFault::kIoError, StorageFault::kBusy,
    StorageFault::kReadOnly};

// StorageFaultName returns "disk_full", "io_error", "busy" or "read_only".
absl::string_view StorageFaultName(StorageFault fault);

// StorageFaultOf returns the fault a status from storage/ carries (its
// SQLite result code rides along as a payload), or nullopt when it is none
// of them: not from SQLite, or a constraint, a missing row, a bad path.
std::optional<StorageFault> StorageFaultOf(const absl::Status& status);

class WriteObserver {
 public:
  virtual ~WriteObserver() = default;
  // WriteFailed: a write failed for `fault`; `status` carries SQLite's
  // message (e.g. "COMMIT: database or disk is full").
  virtual void WriteFailed(StorageFault fault, const absl::Status& status) = 0;
  // WriteCommitted: a write transaction committed after `took` (from BEGIN
  // to the end of COMMIT).
  virtual void WriteCommitted(absl::Duration took) = 0;
  // WriteBegun and WriteEnded bracket every write transaction (committed,
  // failed or rolled back), so a stall shows while it lasts, not only once
  // its commit returns.
  virtual void WriteBegun() {}
  virtual void WriteEnded() {}
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_WRITE_OBSERVER_H_
