// MFU bookkeeping (private to model/, torch-free): which matmul peak a run's
// model FLOPs utilisation is measured against.
//
// The peak is measured (runtime.h) as the best of many short GEMMs, so a core
// shared with other processes still shows its own speed. Two safeguards keep
// a bad measurement from reaching a user: a process keeps the highest peak it
// measured per (device, thread layout), and a run whose model FLOP/s beat the
// peak gets that achieved rate as its reference (MFU 1), with the measured
// figure reported beside it rather than an MFU above 100%.
//
//   MfuReference ref = ChooseMfuReference(achieved_flops, measured_peak);
//   // ref.peak >= ref.measured_peak, ref.mfu <= 1
//
// Thread-safety: ChooseMfuReference and CpuGemmSize are pure; BestPeaks is
// thread-safe.
#ifndef PRISM_MODEL_INTERNAL_MFU_H_
#define PRISM_MODEL_INTERNAL_MFU_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace prism::model::internal {

struct MfuReference {
  double peak = 0.0;           // what mfu divides by
  double measured_peak = 0.0;  // the matmul measurement; < peak when raised
  double mfu = 0.0;            // achieved / peak, in [0, 1]
};

// ChooseMfuReference returns the measured peak as the reference, or the
// achieved rate when that is higher (a measurement slowed down by other
// processes, or a model FLOP count above what the kernels execute). A
// non-positive measurement also falls back to the achieved rate; with
// nothing achieved every field but measured_peak is 0.
MfuReference ChooseMfuReference(double achieved_flops,
                                double measured_peak_flops);

// CpuGemmSize returns the square GEMM size for timing `blas_threads` OpenBLAS
// threads: 384 for one thread (about a millisecond on one Zen 4 core, short
// enough to run between two preemptions on a shared core), scaled so each
// thread keeps about that much work, in multiples of 64.
int64_t CpuGemmSize(int blas_threads);

// BestPeaks keeps the highest peak seen per key ("cpu shards=2 blas=1").
class BestPeaks {
 public:
  // Record stores `flops` when it beats the key's best and returns the best
  // so far (`flops` for a new key).
  double Record(const std::string& key, double flops);

 private:
  absl::Mutex mu_;
  std::map<std::string, double> best_ ABSL_GUARDED_BY(mu_);
};

// ProcessBestPeaks is this process's BestPeaks, shared by every Train call.
BestPeaks& ProcessBestPeaks();

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_MFU_H_
