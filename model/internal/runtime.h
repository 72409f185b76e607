// Runtime: devices, thread settings and hardware measurements for the
// trainer (private to model/).
//
// Thread-safety: ResolveDevice and PeakMemoryBytes are pure; SetBlasThreads
// changes process-wide state; MeasurePeakMatmulFlops may run on any thread
// (one at a time per pool).
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

// MeasurePeakMatmulFlops returns the matmul peak, FLOP/s, of the thread
// layout in force. CPU: every shard thread of `pool` times fp32 GEMMs of
// CpuGemmSize(blas_threads) at once for about a quarter second, and the
// shards' fastest single GEMMs add up: a GEMM that ran undisturbed shows the
// core's speed even while other processes share it. CUDA: the fastest of
// five groups of four 8192^3 bf16 GEMMs. With `keep_best`, the answer is
// the highest so far for this (device, layout) in the process (mfu.h).
double MeasurePeakMatmulFlops(const torch::Device& device, ShardPool* pool,
                              int blas_threads, bool keep_best = true);

// PeakMemoryBytes is the CUDA allocator's peak for a CUDA device, else the
// process's peak resident set size.
int64_t PeakMemoryBytes(const torch::Device& device);

// Synchronize waits for queued work on `device` (no-op on the CPU).
void Synchronize(const torch::Device& device);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_RUNTIME_H_
