#include "worker/device.h"

#include <torch/cuda.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace prism::worker {

absl::StatusOr<std::string> ResolveDevice(absl::string_view requested) {
  const std::string name = absl::AsciiStrToLower(requested);
  const int cuda_devices = torch::cuda::is_available()
                               ? static_cast<int>(torch::cuda::device_count())
                               : 0;
  if (name == "cpu") return name;
  if (name == "auto") return cuda_devices > 0 ? "cuda:0" : "cpu";
  int index = 0;
  if (name != "cuda") {
    if (!absl::StartsWith(name, "cuda:") ||
        !absl::SimpleAtoi(name.substr(5), &index) || index < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown device '", requested, "' (use auto, cpu, cuda or cuda:N)"));
    }
  }
  if (index >= cuda_devices) {
    return absl::FailedPreconditionError(
        absl::StrCat("device '", requested, "' asked for but ", cuda_devices,
                     " CUDA device(s) are available to this build"));
  }
  return absl::StrCat("cuda:", index);
}

}  // namespace prism::worker
