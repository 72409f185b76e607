// Device selection for a worker: resolves `--device auto|cpu|cuda|cuda:N`
// to the concrete device the worker registers with and trains on.
//
// Thread-safety: pure function (queries the CUDA runtime once per call).
#ifndef PRISM_WORKER_DEVICE_H_
#define PRISM_WORKER_DEVICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism::worker {

// ResolveDevice returns "cpu" or "cuda:N": `auto` is cuda:0 when a CUDA
// device is available, else cpu; `cuda` is cuda:0. Returns InvalidArgument
// for an unknown name, FailedPrecondition when CUDA is asked for but this
// build or machine has no such device.
absl::StatusOr<std::string> ResolveDevice(absl::string_view requested);

}  // namespace prism::worker

#endif  // PRISM_WORKER_DEVICE_H_
