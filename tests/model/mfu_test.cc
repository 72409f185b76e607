#include "model/internal/mfu.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace prism::model::internal {
namespace {

TEST(MfuReferenceTest, MeasuredPeakAboveTheAchievedRateIsTheReference) {
  const MfuReference ref = ChooseMfuReference(/*achieved_flops=*/40e9,
                                              /*measured_peak_flops=*/100e9);
  EXPECT_DOUBLE_EQ(ref.peak, 100e9);
  EXPECT_DOUBLE_EQ(ref.measured_peak, 100e9);
  EXPECT_DOUBLE_EQ(ref.mfu, 0.4);
}

TEST(MfuReferenceTest, AchievedRateAboveTheMeasurementRaisesThePeak) {
  // A peak measured while other processes held the core: 13 GFLOP/s against
  // a run that did 46. The run is reported at 100% of its own rate, and the
  // low measurement stays visible next to it.
  const MfuReference ref = ChooseMfuReference(/*achieved_flops=*/46e9,
                                              /*measured_peak_flops=*/13e9);
  EXPECT_DOUBLE_EQ(ref.peak, 46e9);
  EXPECT_DOUBLE_EQ(ref.measured_peak, 13e9);
  EXPECT_DOUBLE_EQ(ref.mfu, 1.0);
}

TEST(MfuReferenceTest, MissingMeasurementFallsBackToTheAchievedRate) {
  const MfuReference ref = ChooseMfuReference(/*achieved_flops=*/5e9,
                                              /*measured_peak_flops=*/0.0);
  EXPECT_DOUBLE_EQ(ref.peak, 5e9);
  EXPECT_DOUBLE_EQ(ref.measured_peak, 0.0);
  EXPECT_DOUBLE_EQ(ref.mfu, 1.0);
}

TEST(MfuReferenceTest, NothingAchievedHasNoMfu) {
  const MfuReference ref = ChooseMfuReference(/*achieved_flops=*/0.0,
                                              /*measured_peak_flops=*/80e9);
  EXPECT_DOUBLE_EQ(ref.peak, 0.0);
  EXPECT_DOUBLE_EQ(ref.measured_peak, 80e9);
  EXPECT_DOUBLE_EQ(ref.mfu, 0.0);
}

TEST(CpuGemmSizeTest, KeepsTheWorkPerBlasThreadInMultiplesOf64) {
  EXPECT_EQ(CpuGemmSize(1), 384);
  EXPECT_EQ(CpuGemmSize(0), 384);  // a non-positive count is one thread
  EXPECT_EQ(CpuGemmSize(-3), 384);
  EXPECT_EQ(CpuGemmSize(2), 512);  // 384 * 2^(1/3) = 484
  EXPECT_EQ(CpuGemmSize(8), 768);
  EXPECT_EQ(CpuGemmSize(16), 960);  // 384 * 16^(1/3) = 968
  for (int threads = 1; threads <= 64; ++threads) {
    EXPECT_EQ(CpuGemmSize(threads) % 64, 0) << threads;
    EXPECT_GE(CpuGemmSize(threads), CpuGemmSize(threads - 1)) << threads;
  }
}

TEST(BestPeaksTest, KeepsTheHighestPeakPerKey) {
  BestPeaks peaks;
  EXPECT_DOUBLE_EQ(peaks.Record("cpu shards=1 blas=1", 90e9), 90e9);
  // A later measurement taken while the core was shared does not lower it.
  EXPECT_DOUBLE_EQ(peaks.Record("cpu shards=1 blas=1", 13e9), 90e9);
  EXPECT_DOUBLE_EQ(peaks.Record("cpu shards=1 blas=1", 103e9), 103e9);
  // Another thread layout is its own entry.
  EXPECT_DOUBLE_EQ(peaks.Record("cpu shards=2 blas=1", 150e9), 150e9);
  EXPECT_DOUBLE_EQ(peaks.Record("cpu shards=1 blas=1", 0.0), 103e9);
}

TEST(BestPeaksTest, ConcurrentRecordsKeepTheMaximum) {
  BestPeaks peaks;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&peaks, t] {
      for (int i = 0; i < 1000; ++i) peaks.Record("cuda:0", t * 1000 + i);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_DOUBLE_EQ(peaks.Record("cuda:0", 0.0), 3999.0);
}

}  // namespace
}  // namespace prism::model::internal
