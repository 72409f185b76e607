// Records that more than one of the store's roles (storage/store.h) name:
// AttemptRef is QueueStore's compare-and-set key and part of CurveStore's
// ReportWrite.
#ifndef PRISM_STORAGE_RECORDS_H_
#define PRISM_STORAGE_RECORDS_H_

#include <cstdint>
#include <string>

namespace prism::storage {

// AttemptRef names the lease a worker believes it holds.
struct AttemptRef {
  int64_t trial_id = 0;
  int32_t attempt = 0;
  std::string worker_id;
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_RECORDS_H_
