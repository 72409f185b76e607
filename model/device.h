// Device names for training: the one place that turns `--device
// auto|cpu|cuda|cuda:N` into the device a run trains on. Torch-free, so the
// worker and the CLI can resolve and report a device without LibTorch
// headers; the trainer and the eval resolve their config's device here too.
//
//   absl::StatusOr<std::string> device = ResolveDevice("auto");  // "cpu"
//
// Thread-safety: pure functions (each call asks the CUDA runtime).
#ifndef PRISM_MODEL_DEVICE_H_
#define PRISM_MODEL_DEVICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism::model {

// CudaDeviceCount returns how many CUDA devices this LibTorch build can use:
// 0 for a CPU-only build or a machine without one.
int CudaDeviceCount();

// ResolveDevice returns "cpu" or "cuda:N" for `requested` (any case): "auto"
// or "" is cuda:0 when a CUDA device is available, else cpu; "cuda" is
// cuda:0. Returns InvalidArgument for any other name or for an index past the
// devices present, FailedPrecondition when CUDA is asked for but none is
// available to this build.
absl::StatusOr<std::string> ResolveDevice(absl::string_view requested);

}  // namespace prism::model

#endif  // PRISM_MODEL_DEVICE_H_
