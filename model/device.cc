#include "model/device.h"

#include <torch/cuda.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace prism::model {

int CudaDeviceCount() {
  return torch::cuda::is_available()
             ? static_cast<int>(torch::cuda::device_count())
             : 0;
}

absl::StatusOr<std::string> ResolveDevice(absl::string_view requested) {
  const std::string name = absl::AsciiStrToLower(requested);
  if (name == "cpu") return name;
  const int cuda_devices = CudaDeviceCount();
  if (name.empty() || name == "auto") {
    return cuda_devices > 0 ? "cuda:0" : "cpu";
  }
  int index = 0;
  if (name != "cuda" &&
      (!absl::StartsWith(name, "cuda:") ||
       !absl::SimpleAtoi(absl::string_view(name).substr(5), &index) ||
       index < 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown device '", requested, "' (use auto, cpu, cuda or cuda:N)"));
  }
  if (cuda_devices == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("device '", requested,
                     "' asks for CUDA, but this build sees no CUDA device"));
  }
  if (index >= cuda_devices) {
    return absl::InvalidArgumentError(
        absl::StrCat("device '", requested, "': only ", cuda_devices,
                     " CUDA device(s), cuda:0 to cuda:", cuda_devices - 1));
  }
  return absl::StrCat("cuda:", index);
}

}  // namespace prism::model
