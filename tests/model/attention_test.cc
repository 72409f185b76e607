#include "model/internal/attention.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace prism::model::internal {
namespace {

using Shape = std::tuple<int64_t, int64_t, int64_t>;

// (T, C, heads) x instruction set: head widths 1..128, odd lengths, widths
// not a multiple of any vector width; every level the CPU has (the others
// are skipped, and named in the skip message).
class FusedAttentionTest
    : public ::testing::TestWithParam<std::tuple<Shape, Isa>> {
 protected:
  void SetUp() override {
    const std::vector<Isa> supported = SupportedIsas();
    if (std::find(supported.begin(), supported.end(), isa()) ==
        supported.end()) {
      GTEST_SKIP() << "this CPU has no " << IsaName(isa());
    }
  }
  Isa isa() const { return std::get<1>(GetParam()); }
};

// Reference returns the masked-softmax attention of the fused (B, T, 3C)
// projection `qkv` in float64, and its gradient for the loss
// sum(y * weight).
std::pair<torch::Tensor, torch::Tensor> Reference(const torch::Tensor& qkv,
                                                  const torch::Tensor& weight,
                                                  int64_t heads) {
  const int64_t c = qkv.size(2) / 3;
  torch::Tensor in = qkv.detach().to(torch::kFloat64).requires_grad_(true);
  const torch::Tensor y = MaskedSoftmaxAttention(
      in.narrow(2, 0, c), in.narrow(2, c, c), in.narrow(2, 2 * c, c), heads);
  (y * weight.to(torch::kFloat64)).sum().backward();
  return {y.detach().to(torch::kFloat32), in.grad().to(torch::kFloat32)};
}

TEST_P(FusedAttentionTest, MatchesFloat64ReferenceForwardAndBackward) {
  const auto [t, c, heads] = std::get<0>(GetParam());
  torch::manual_seed(7);
  // q, k, v as views of one fused (B, T, 3C) projection, as the model has.
  torch::Tensor qkv = torch::randn({3, t, 3 * c}).requires_grad_(true);
  auto split = [c = c](const torch::Tensor& x) {
    return std::make_tuple(x.narrow(2, 0, c), x.narrow(2, c, c),
                           x.narrow(2, 2 * c, c));
  };
  const torch::Tensor weight = torch::randn({3, t, c});
  const auto [reference, reference_grad] = Reference(qkv, weight, heads);

  auto [q, k, v] = split(qkv);
  const torch::Tensor fused = FusedCausalAttention(q, k, v, heads, isa());
  (fused * weight).sum().backward();
  const torch::Tensor fused_grad = qkv.grad().clone();

  EXPECT_TRUE(torch::allclose(fused, reference, 1e-4, 1e-5))
      << (fused - reference).abs().max().item<float>();
  EXPECT_TRUE(torch::allclose(fused_grad, reference_grad, 1e-4, 1e-4))
      << (fused_grad - reference_grad).abs().max().item<float>();

  // The masked-softmax path, in fp32, against the same reference.
  qkv.mutable_grad().zero_();
  auto [q2, k2, v2] = split(qkv);
  const torch::Tensor masked = MaskedSoftmaxAttention(q2, k2, v2, heads);
  (masked * weight).sum().backward();
  EXPECT_TRUE(torch::allclose(masked, reference, 1e-4, 1e-5))
      << (masked - reference).abs().max().item<float>();
  EXPECT_TRUE(torch::allclose(qkv.grad(), reference_grad, 1e-4, 1e-4))
      << (qkv.grad() - reference_grad).abs().max().item<float>();
}

TEST_P(FusedAttentionTest, PackedQkvMatchesFloat64Reference) {
  const auto [t, c, heads] = std::get<0>(GetParam());
  torch::manual_seed(11);
  const torch::Tensor input = torch::randn({2, t, 3 * c});
  const torch::Tensor weight = torch::randn({2, t, c});
  torch::Tensor packed_in = input.clone().requires_grad_(true);
  const torch::Tensor packed =
      FusedCausalAttentionPacked(packed_in, heads, isa());
  (packed * weight).sum().backward();

  const auto [reference, reference_grad] = Reference(input, weight, heads);
  EXPECT_TRUE(torch::allclose(packed, reference, 1e-4, 1e-5))
      << (packed - reference).abs().max().item<float>();
  EXPECT_TRUE(torch::allclose(packed_in.grad(), reference_grad, 1e-4, 1e-4))
      << (packed_in.grad() - reference_grad).abs().max().item<float>();
}

std::string ParamName(
    const ::testing::TestParamInfo<FusedAttentionTest::ParamType>& info) {
  const auto [t, c, heads] = std::get<0>(info.param);
  return std::string(IsaName(std::get<1>(info.param))) + "_T" +
         std::to_string(t) + "_C" + std::to_string(c) + "_H" +
         std::to_string(heads);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedAttentionTest,
    ::testing::Combine(
        ::testing::Values(Shape(1, 8, 1), Shape(5, 12, 4), Shape(37, 24, 8),
                          Shape(64, 64, 4), Shape(33, 48, 1), Shape(70, 256, 8),
                          Shape(128, 128, 1), Shape(45, 96, 32),
                          Shape(100, 256, 2)),
        ::testing::Values(Isa::kBaseline, Isa::kAvx2, Isa::kAvx512)),
    ParamName);

TEST(IsaTest, ParsesNamesAndRejectsOthers) {
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    absl::StatusOr<Isa> parsed = ParseIsa(IsaName(isa));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, isa);
  }
  absl::StatusOr<Isa> bad = ParseIsa("sse9");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("sse9"), std::string::npos);
  EXPECT_EQ(SupportedIsas().front(), Isa::kBaseline);
}

TEST(IsaTest, EnvironmentForcesALevel) {
  ASSERT_EQ(setenv("PRISM_ISA", "baseline", 1), 0);
  absl::StatusOr<Isa> forced = IsaFromEnvironment();
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ(*forced, Isa::kBaseline);
  ASSERT_EQ(setenv("PRISM_ISA", "neon", 1), 0);
  EXPECT_EQ(IsaFromEnvironment().status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(unsetenv("PRISM_ISA"), 0);
  absl::StatusOr<Isa> widest = IsaFromEnvironment();
  ASSERT_TRUE(widest.ok());
  EXPECT_EQ(*widest, SupportedIsas().back());
}

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
