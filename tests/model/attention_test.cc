#include "model/internal/attention.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <tuple>

#include "gtest/gtest.h"

namespace prism::model::internal {
namespace {

// (T, C, heads): head widths 1..128, odd lengths, widths not multiple of 16.
class FusedAttentionTest
    : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(FusedAttentionTest, MatchesMaskedSoftmaxForwardAndBackward) {
  const auto [t, c, heads] = GetParam();
  torch::manual_seed(7);
  // q, k, v as views of one fused (B, T, 3C) projection, as the model has.
  torch::Tensor qkv = torch::randn({3, t, 3 * c}).requires_grad_(true);
  auto split = [&](const torch::Tensor& x) {
    return std::make_tuple(x.narrow(2, 0, c), x.narrow(2, c, c),
                           x.narrow(2, 2 * c, c));
  };
  const torch::Tensor weight = torch::randn({3, t, c});

  auto [q, k, v] = split(qkv);
  const torch::Tensor fused = FusedCausalAttention(q, k, v, heads);
  (fused * weight).sum().backward();
  const torch::Tensor fused_grad = qkv.grad().clone();

  qkv.mutable_grad().zero_();
  auto [q2, k2, v2] = split(qkv);
  const torch::Tensor reference = MaskedSoftmaxAttention(q2, k2, v2, heads);
  (reference * weight).sum().backward();

  EXPECT_TRUE(torch::allclose(fused, reference, 1e-4, 1e-5))
      << (fused - reference).abs().max().item<float>();
  EXPECT_TRUE(torch::allclose(fused_grad, qkv.grad(), 1e-4, 1e-4))
      << (fused_grad - qkv.grad()).abs().max().item<float>();
}

TEST_P(FusedAttentionTest, PackedQkvMatchesMaskedSoftmax) {
  const auto [t, c, heads] = GetParam();
  torch::manual_seed(11);
  const torch::Tensor input = torch::randn({2, t, 3 * c});
  const torch::Tensor weight = torch::randn({2, t, c});
  torch::Tensor packed_in = input.clone().requires_grad_(true);
  const torch::Tensor packed = FusedCausalAttentionPacked(packed_in, heads);
  (packed * weight).sum().backward();

  torch::Tensor ref_in = input.clone().requires_grad_(true);
  const torch::Tensor reference =
      MaskedSoftmaxAttention(ref_in.narrow(2, 0, c), ref_in.narrow(2, c, c),
                             ref_in.narrow(2, 2 * c, c), heads);
  (reference * weight).sum().backward();
  EXPECT_TRUE(torch::allclose(packed, reference, 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(packed_in.grad(), ref_in.grad(), 1e-4, 1e-4))
      << (packed_in.grad() - ref_in.grad()).abs().max().item<float>();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedAttentionTest,
    ::testing::Values(std::make_tuple(1, 8, 1), std::make_tuple(5, 12, 4),
                      std::make_tuple(37, 24, 8), std::make_tuple(64, 64, 4),
                      std::make_tuple(33, 48, 1), std::make_tuple(70, 256, 8),
                      std::make_tuple(128, 128, 1), std::make_tuple(45, 96, 32),
                      std::make_tuple(100, 256, 2)));

TEST(FusedAttentionTest, NoGradForwardMatchesGradForward) {
  torch::manual_seed(3);
  const torch::Tensor q = torch::randn({2, 50, 64});
  const torch::Tensor k = torch::randn({2, 50, 64});
  const torch::Tensor v = torch::randn({2, 50, 64});
  torch::Tensor with_probs;
  {
    const torch::Tensor qg = q.clone().requires_grad_(true);
    with_probs = FusedCausalAttention(qg, k, v, 4).detach();
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor without = FusedCausalAttention(q, k, v, 4);
  EXPECT_TRUE(torch::equal(with_probs, without));
}

TEST(FusedAttentionTest, RejectsNonFloatOrStridedChannels) {
  const torch::Tensor q = torch::randn({1, 4, 8}, torch::kFloat64);
  EXPECT_THROW(FusedCausalAttention(q, q, q, 2), c10::Error);
  const torch::Tensor strided = torch::randn({1, 4, 16}).slice(2, 0, 16, 2);
  EXPECT_THROW(FusedCausalAttention(strided, strided, strided, 2), c10::Error);
}

TEST(AttentionDistanceTest, HandBuiltMatrix) {
  // One head, T = 3:
  //   query 0 attends to itself                    -> distance 0
  //   query 1: 0.5 on key 0, 0.5 on key 1          -> 0.5 * 1 = 0.5
  //   query 2: 0.25 on key 0, 0.75 on key 2        -> 0.25 * 2 = 0.5
  const torch::Tensor probs =
      torch::tensor({1.0, 0.0, 0.0, 0.5, 0.5, 0.0, 0.25, 0.0, 0.75})
          .view({1, 1, 3, 3});
  EXPECT_DOUBLE_EQ(SumAttentionDistance(probs), 1.0);
  // Two heads: the second always looks back to key 0 -> 0 + 1 + 2.
  const torch::Tensor first_key =
      torch::tensor({1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0})
          .view({1, 1, 3, 3});
  const torch::Tensor both = torch::cat({probs, first_key}, 1);
  EXPECT_DOUBLE_EQ(SumAttentionDistance(both), 4.0);
  EXPECT_DOUBLE_EQ(SumAttentionDistance(both) / (both.numel() / 3), 4.0 / 6);
}

TEST(AttentionDistanceTest, ProbabilitiesAreCausalAndNormalized) {
  torch::manual_seed(5);
  const torch::Tensor q = torch::randn({2, 9, 12});
  const torch::Tensor k = torch::randn({2, 9, 12});
  const torch::Tensor probs = AttentionProbabilities(q, k, 3);
  ASSERT_EQ(probs.sizes(), (std::vector<int64_t>{2, 3, 9, 9}));
  EXPECT_TRUE(torch::allclose(probs.sum(-1), torch::ones({2, 3, 9})));
  EXPECT_EQ(probs.triu(1).abs().sum().item<float>(), 0.0f);
}

}  // namespace
}  // namespace prism::model::internal
