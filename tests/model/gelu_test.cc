#include "model/internal/gelu.h"

#include <torch/torch.h>

#include "gtest/gtest.h"

namespace prism::model::internal {
namespace {

TEST(TanhGeluTest, MatchesTorchForwardAndBackward) {
  // Odd lengths exercise the vector tail; the extremes its saturation.
  for (int64_t n : {1, 15, 16, 17, 1000, 70001}) {
    torch::manual_seed(n);
    torch::Tensor x = torch::randn({n}) * 4;
    x[0] = n % 2 == 0 ? 60.0f : -60.0f;
    const torch::Tensor ours_in = x.clone().requires_grad_(true);
    const torch::Tensor ref_in = x.clone().requires_grad_(true);
    const torch::Tensor weight = torch::randn({n});
    const torch::Tensor ours = TanhGelu(ours_in);
    const torch::Tensor ref = torch::gelu(ref_in, "tanh");
    EXPECT_TRUE(torch::allclose(ours, ref, 1e-5, 1e-6))
        << n << ": " << (ours - ref).abs().max().item<float>();
    (ours * weight).sum().backward();
    (ref * weight).sum().backward();
    EXPECT_TRUE(torch::allclose(ours_in.grad(), ref_in.grad(), 1e-4, 1e-5))
        << n << ": "
        << (ours_in.grad() - ref_in.grad()).abs().max().item<float>();
  }
}

TEST(TanhGeluTest, NonContiguousAndDoubleInputsFallBackToTorch) {
  const torch::Tensor x = torch::randn({8, 6}).t();
  EXPECT_TRUE(torch::allclose(TanhGelu(x), torch::gelu(x, "tanh")));
  const torch::Tensor d = torch::randn({9}, torch::kFloat64);
  EXPECT_TRUE(torch::equal(TanhGelu(d), torch::gelu(d, "tanh")));
}

}  // namespace
}  // namespace prism::model::internal
