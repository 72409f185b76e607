#include "server/core/infra/storage_health.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log.h"

namespace prism::server {
namespace {

// ActionFor says what the coordinator does while `fault` lasts and what the
// operator should do about it.
const char* ActionFor(storage::StorageFault fault) {
  switch (fault) {
    case storage::StorageFault::kDiskFull:
      return "refusing writes with UNAVAILABLE (workers keep their points "
             "and retry); /readyz answers 503; free space on the database's "
             "filesystem and writes resume by themselves";
    case storage::StorageFault::kIoError:
      return "refusing writes with UNAVAILABLE (workers retry); /readyz "
             "answers 503; check the disk and the kernel log";
    case storage::StorageFault::kBusy:
      return "refusing writes with UNAVAILABLE (workers retry); /readyz "
             "answers 503; find the other process holding the database";
    case storage::StorageFault::kReadOnly:
      return "refusing writes with UNAVAILABLE (workers retry); /readyz "
             "answers 503; remount the filesystem read-write or fix the "
             "file's permissions";
  }
  return "";
}

std::string DirectoryOf(const std::string& db_path) {
  std::string dir = std::filesystem::path(db_path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

StorageHealth::StorageHealth(std::string db_path,
                             absl::Duration stall_threshold)
    : db_dir_(DirectoryOf(db_path)), stall_threshold_(stall_threshold) {}

void StorageHealth::WriteFailed(storage::StorageFault fault,
                                const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  ++errors_[fault];
  const bool changed = state_ != State::kFailing || fault_ != fault;
  if (state_ != State::kFailing) {
    ++disruptions_;
    since_ = absl::Now();
  }
  state_ = State::kFailing;
  opening_ = false;
  fault_ = fault;
  cause_ = std::string(status.message());
  if (changed) {
    Log(LogLevel::kError, "storage writes failing")
        .Kv("fault", storage::StorageFaultName(fault))
        .Kv("cause", cause_)
        .Kv("dir", db_dir_)
        .Kv("action", ActionFor(fault));
  }
}

void StorageHealth::OpenFailed(storage::StorageFault fault,
                               const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  ++errors_[fault];
  if (state_ != State::kFailing) {
    ++disruptions_;
    since_ = absl::Now();
  }
  state_ = State::kFailing;
  opening_ = true;
  fault_ = fault;
  cause_ = std::string(status.message());
}

void StorageHealth::WriteCommitted(absl::Duration took) {
  absl::MutexLock lock(&mu_);
  if (took > stall_threshold_) {
    last_stall_ = took;
    if (state_ == State::kStalled) return;
    if (state_ == State::kOk) ++disruptions_;
    state_ = State::kStalled;
    since_ = absl::Now();
    Log(LogLevel::kWarning, "storage commits stalled")
        .Kv("commit_ms", absl::ToInt64Milliseconds(took))
        .Kv("threshold_ms", absl::ToInt64Milliseconds(stall_threshold_))
        .Kv("dir", db_dir_)
        .Kv("action",
            "heartbeats and reports wait for the disk; live leases are "
            "extended once commits are prompt again");
    return;
  }
  if (state_ == State::kOk) return;
  Log(LogLevel::kInfo, "storage writes succeed again")
      .Kv("after", state_ == State::kFailing ? storage::StorageFaultName(fault_)
                                             : absl::string_view("stall"))
      .Kv("lasted_ms", absl::ToInt64Milliseconds(absl::Now() - since_));
  state_ = State::kOk;
  opening_ = false;
  cause_.clear();
}

absl::Status StorageHealth::Ready() const {
  std::string message;
  bool opening = false;
  {
    absl::MutexLock lock(&mu_);
    if (state_ != State::kFailing) return absl::OkStatus();
    opening = opening_;
    message =
        absl::StrCat(opening_ ? "database cannot be opened for writing for "
                              : "storage writes failing for ",
                     absl::ToInt64Seconds(absl::Now() - since_),
                     "s: ", storage::StorageFaultName(fault_), ": ", cause_);
  }
  // SQLite reports a full disk at open as an I/O error (no room for its
  // shared-memory index): the free space tells which it is.
  if (opening) {
    if (absl::StatusOr<int64_t> free = FreeBytes(); free.ok()) {
      absl::StrAppend(&message, " (", *free, " bytes free on ", db_dir_, ")");
    }
  }
  return absl::UnavailableError(message);
}

std::string StorageHealth::Condition() const {
  absl::MutexLock lock(&mu_);
  switch (state_) {
    case State::kOk:
      return "";
    case State::kFailing:
      return absl::StrCat(opening_
                              ? "database cannot be opened for writing for "
                              : "storage writes failing for ",
                          absl::ToInt64Seconds(absl::Now() - since_), "s (",
                          storage::StorageFaultName(fault_), ": ", cause_,
                          "); ", ActionFor(fault_));
    case State::kStalled:
      return absl::StrCat("storage commits stalled (last took ",
                          absl::ToInt64Milliseconds(last_stall_),
                          " ms); heartbeats and reports wait for the disk");
  }
  return "";
}

void StorageHealth::WriteBegun() {
  absl::MutexLock lock(&mu_);
  write_begun_ = absl::Now();
}

void StorageHealth::WriteEnded() {
  absl::MutexLock lock(&mu_);
  write_begun_.reset();
}

bool StorageHealth::normal() const {
  absl::MutexLock lock(&mu_);
  if (write_begun_.has_value() &&
      absl::Now() - *write_begun_ > stall_threshold_) {
    return false;
  }
  return state_ == State::kOk;
}

int64_t StorageHealth::disruptions() const {
  absl::MutexLock lock(&mu_);
  return disruptions_;
}

std::map<std::string, int64_t> StorageHealth::ErrorsByFault() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, int64_t> out;
  for (storage::StorageFault fault : storage::kStorageFaults) {
    auto it = errors_.find(fault);
    out[std::string(storage::StorageFaultName(fault))] =
        it == errors_.end() ? 0 : it->second;
  }
  return out;
}

absl::StatusOr<int64_t> StorageHealth::FreeBytes() const {
  struct statvfs fs;
  if (statvfs(db_dir_.c_str(), &fs) != 0) {
    return absl::UnavailableError(
        absl::StrCat("statvfs ", db_dir_, ": ", std::strerror(errno)));
  }
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

}  // namespace prism::server
