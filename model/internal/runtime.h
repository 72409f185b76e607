// Runtime: devices, thread settings and hardware measurements for the
// trainer (private to model/).
//
// Thread-safety: ResolveDevice and PeakMemoryBytes are pure; SetBlasThreads
// changes process-wide state; MeasurePeakMatmulFlops caches its answer per
// (device, threads) behind a mutex.
#ifndef PRISM_MODEL_INTERNAL_RUNTIME_H_
#define PRISM_MODEL_INTERNAL_RUNTIME_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "model/internal/shard_pool.h"

namespace prism::model::internal {

// ResolveDevice is model/device.h's ResolveDevice as a torch::Device, with
// the same errors.
absl::StatusOr<torch::Device> ResolveDevice(const std::string& spec);

// HardwareThreads is the number of cores this process may use (at least 1).
int HardwareThreads();

// SetBlasThreads sets OpenBLAS's thread count when LibTorch's BLAS is
// OpenBLAS (looked up at run time); returns false when it is not.
bool SetBlasThreads(int threads);

// MeasurePeakMatmulFlops times a large matmul and returns FLOP/s: fp32 on
// the CPU, one single-threaded GEMM per shard thread at once (the way the
// trainer runs); bf16 on CUDA. With `cached`, the first answer per (device,
// threads) is kept for the process.
double MeasurePeakMatmulFlops(const torch::Device& device, ShardPool* pool,
                              bool cached = true);

// PeakMemoryBytes is the CUDA allocator's peak for a CUDA device, else the
// process's peak resident set size.
int64_t PeakMemoryBytes(const torch::Device& device);

// Synchronize waits for queued work on `device` (no-op on the CPU).
void Synchronize(const torch::Device& device);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_RUNTIME_H_
