#include "model/internal/runtime.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "model/device.h"
#include "model/internal/mfu.h"

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
                              int blas_threads, bool keep_best) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  torch::NoGradGuard no_grad;
  double flops = 0.0;
  if (device.is_cuda()) {
    constexpr int64_t kN = 8192;
    constexpr int kGroups = 5;
    constexpr int kPerGroup = 4;
    const auto options =
        torch::TensorOptions().dtype(torch::kBFloat16).device(device);
    const torch::Tensor a = torch::randn({kN, kN}, options);
    const torch::Tensor b = torch::randn({kN, kN}, options);
    torch::Tensor c = torch::matmul(a, b);
    Synchronize(device);
    double best = std::numeric_limits<double>::infinity();
    for (int group = 0; group < kGroups; ++group) {
      const Clock::time_point start = Clock::now();
      for (int i = 0; i < kPerGroup; ++i) c = torch::matmul(a, b);
      Synchronize(device);
      best = std::min(best, seconds_since(start) / kPerGroup);
    }
    flops = 2.0 * kN * kN * kN / best;
  } else {
    // Many short GEMMs rather than a few long ones: the scheduler hands a
    // shared core out in slices of a few milliseconds, so the fastest short
    // GEMM ran on the core alone, while a long one always averages in the
    // other processes' share.
    constexpr double kBudgetSeconds = 0.25;
    constexpr int kMinGemms = 8;
    const int64_t n = CpuGemmSize(blas_threads);
    std::vector<double> best(pool->size());
    pool->Run([&](int shard) {
      torch::NoGradGuard shard_no_grad;
      const torch::Tensor a = torch::randn({n, n});
      const torch::Tensor b = torch::randn({n, n});
      torch::Tensor c = torch::matmul(a, b);
      double fastest = std::numeric_limits<double>::infinity();
      const Clock::time_point start = Clock::now();
      for (int i = 0; i < kMinGemms || seconds_since(start) < kBudgetSeconds;
           ++i) {
        const Clock::time_point gemm_start = Clock::now();
        c = torch::matmul(a, b);
        fastest = std::min(fastest, seconds_since(gemm_start));
      }
      best[shard] = 2.0 * n * n * n / fastest;
    });
    for (double shard_flops : best) flops += shard_flops;
  }
  if (!keep_best) return flops;
  return ProcessBestPeaks().Record(
      absl::StrCat(device.str(), " shards=", pool->size(),
                   " blas=", blas_threads),
      flops);
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
