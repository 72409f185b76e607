#include "storage/write_observer.h"

#include <sqlite3.h>

#include "absl/strings/numbers.h"
#include "storage/internal/sqlite.h"

namespace prism::storage {

std::optional<StorageFault> StorageFaultOf(const absl::Status& status) {
  auto payload = status.GetPayload(internal::kSqliteCodePayload);
  int rc = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &rc)) {
    return std::nullopt;
  }
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return StorageFault::kDiskFull;
    case SQLITE_IOERR:
      return StorageFault::kIoError;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StorageFault::kBusy;
    case SQLITE_READONLY:
      return StorageFault::kReadOnly;
    default:
      return std::nullopt;
  }
}

absl::string_view StorageFaultName(StorageFault fault) {
  switch (fault) {
    case StorageFault::kDiskFull:
      return "disk_full";
    case StorageFault::kIoError:
      return "io_error";
    case StorageFault::kBusy:
      return "busy";
    case StorageFault::kReadOnly:
      return "read_only";
  }
  return "unknown";
}

}  // namespace prism::storage
