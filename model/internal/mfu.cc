#include "model/internal/mfu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace prism::model::internal {

MfuReference ChooseMfuReference(double achieved_flops,
                                double measured_peak_flops) {
  MfuReference ref;
  ref.measured_peak = std::max(measured_peak_flops, 0.0);
  if (achieved_flops <= 0.0) return ref;
  ref.peak = std::max(ref.measured_peak, achieved_flops);
  ref.mfu = achieved_flops / ref.peak;
  return ref;
}

int64_t CpuGemmSize(int blas_threads) {
  constexpr double kSingleThread = 384.0;
  constexpr int64_t kMultiple = 64;
  const double n = kSingleThread * std::cbrt(std::max(blas_threads, 1));
  return std::max<int64_t>(kMultiple, std::llround(n / kMultiple) * kMultiple);
}

double BestPeaks::Record(const std::string& key, double flops) {
  absl::MutexLock lock(&mu_);
  double& best = best_.try_emplace(key, flops).first->second;
  best = std::max(best, flops);
  return best;
}

BestPeaks& ProcessBestPeaks() {
  static auto* peaks = new BestPeaks();
  return *peaks;
}

}  // namespace prism::model::internal
