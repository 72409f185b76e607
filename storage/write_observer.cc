#include "storage/write_observer.h"

namespace prism::storage {

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
