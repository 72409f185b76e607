#include "model/internal/attention_tuner.h"

#include <torch/torch.h>

#include <vector>

#include "gtest/gtest.h"
#include "model/internal/kernels.h"

namespace prism::model::internal {
namespace {

TEST(PreferredCandidateTest, NearTiesKeepTheEarlierCandidate) {
  EXPECT_EQ(PreferredCandidate({10.0, 9.6, 9.7}, 0.05), 0u);
  EXPECT_EQ(PreferredCandidate({10.0, 9.4}, 0.05), 1u);
}

TEST(PreferredCandidateTest, ALaterCandidateMustBeatTheCurrentChoice) {
  // 9.0 is faster than the first but within 5% of the second, the choice.
  EXPECT_EQ(PreferredCandidate({10.0, 9.4, 9.0}, 0.05), 1u);
  EXPECT_EQ(PreferredCandidate({10.0, 9.4, 8.9}, 0.05), 2u);
  EXPECT_EQ(PreferredCandidate({10.0, 20.0, 9.0}, 0.05), 2u);
}

TEST(PreferredCandidateTest, OneOrNoCandidate) {
  EXPECT_EQ(PreferredCandidate({5.0}, 0.05), 0u);
  EXPECT_EQ(PreferredCandidate({}, 0.05), 0u);
}

TEST(ChooseAttentionKernelTest, TimesEveryCandidateInOrderAndCaches) {
  const std::vector<AttentionKernel> candidates = AttentionCandidates(
      /*forced_isa=*/std::nullopt);
  ASSERT_GE(candidates.size(), 2u);  // a fused level and masked softmax
  const AttentionShape shape{/*rows=*/2, /*context=*/32, /*channels=*/32,
                             /*layer_heads=*/{4, 2, 4}};
  const AttentionChoice first = ChooseAttentionKernel(shape, candidates);
  ASSERT_EQ(first.timings.size(), candidates.size());
  std::vector<double> times;
  for (size_t i = 0; i < candidates.size(); ++i) {
    EXPECT_EQ(first.timings[i].kernel, candidates[i]);
    EXPECT_GT(first.timings[i].milliseconds, 0.0);
    times.push_back(first.timings[i].milliseconds);
  }
  EXPECT_EQ(first.kernel, candidates[PreferredCandidate(times, 0.05)]);
  // The second call for the same shape is the cached first measurement.
  const AttentionChoice again = ChooseAttentionKernel(shape, candidates);
  EXPECT_EQ(again.kernel, first.kernel);
  for (size_t i = 0; i < candidates.size(); ++i) {
    EXPECT_EQ(again.timings[i].milliseconds, first.timings[i].milliseconds);
  }
}

TEST(ChooseAttentionKernelTest, ASingleCandidateIsNotTimed) {
  const AttentionChoice choice = ChooseAttentionKernel(
      {/*rows=*/1, /*context=*/16, /*channels=*/16, /*layer_heads=*/{2}},
      {AttentionKernel::kMaskedSoftmax});
  EXPECT_EQ(choice.kernel, AttentionKernel::kMaskedSoftmax);
  EXPECT_TRUE(choice.timings.empty());
}

}  // namespace
}  // namespace prism::model::internal
