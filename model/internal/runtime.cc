#include "model/internal/runtime.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "model/device.h"

#ifdef PRISM_HAVE_C10_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace prism::model::internal {

absl::StatusOr<torch::Device> ResolveDevice(const std::string& spec) {
  absl::StatusOr<std::string> name = model::ResolveDevice(spec);
  if (!name.ok()) return name.status();
  // Only "cpu" or "cuda:N" comes back, which torch::Device parses without
  // throwing.
  return torch::Device(*name);
}

int HardwareThreads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    return std::max(1, CPU_COUNT(&set));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

bool SetBlasThreads(int threads) {
  // OpenBLAS is reached through LibTorch's BLAS dependency, not linked by us,
  // so look its setter up at run time; other BLAS builds simply lack it.
  using SetThreads = void (*)(int);
  static const auto set = reinterpret_cast<SetThreads>(
      dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set == nullptr) return false;
  set(threads);
  return true;
}

double MeasurePeakMatmulFlops(const torch::Device& device, ShardPool* pool,
                              bool cached) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* cache = new std::map<std::pair<std::string, int>, double>();
  const std::pair<std::string, int> key(device.str(), pool->size());
  absl::MutexLock lock(&mu);
  if (auto it = cache->find(key); cached && it != cache->end()) {
    return it->second;
  }

  torch::NoGradGuard no_grad;
  double flops = 0.0;
  if (device.is_cuda()) {
    constexpr int64_t kN = 8192;
    constexpr int kReps = 20;
    const auto options =
        torch::TensorOptions().dtype(torch::kBFloat16).device(device);
    const torch::Tensor a = torch::randn({kN, kN}, options);
    const torch::Tensor b = torch::randn({kN, kN}, options);
    torch::Tensor c = torch::matmul(a, b);
    Synchronize(device);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kReps; ++i) c = torch::matmul(a, b);
    Synchronize(device);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    flops = 2.0 * kN * kN * kN * kReps / seconds;
  } else {
    // One single-threaded GEMM per shard thread at once: the trainer's own
    // execution model, and on OpenBLAS within a few percent of one GEMM
    // across all cores.
    constexpr int64_t kN = 2048;
    constexpr int kReps = 3;
    std::vector<double> seconds(pool->size());
    pool->Run([&](int shard) {
      torch::NoGradGuard shard_no_grad;
      const torch::Tensor a = torch::randn({kN, kN});
      const torch::Tensor b = torch::randn({kN, kN});
      torch::Tensor c = torch::matmul(a, b);
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kReps; ++i) c = torch::matmul(a, b);
      seconds[shard] = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
    });
    const double slowest = *std::max_element(seconds.begin(), seconds.end());
    flops = 2.0 * kN * kN * kN * kReps * pool->size() / slowest;
  }
  (*cache)[key] = flops;
  return flops;
}

int64_t PeakMemoryBytes(const torch::Device& device) {
#ifdef PRISM_HAVE_C10_CUDA
  if (device.is_cuda()) {
    // Index 0 of each StatArray is the aggregate over the allocator's pools.
    return c10::cuda::CUDACachingAllocator::getDeviceStats(device.index())
        .allocated_bytes[0]
        .peak;
  }
#endif
  (void)device;
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
}

void Synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace prism::model::internal
