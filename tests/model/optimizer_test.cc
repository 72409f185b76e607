#include "model/internal/optimizer.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "model/internal/shard_pool.h"

namespace prism::model::internal {
namespace {

std::vector<torch::Tensor> MakeParams(int64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({7, 5}), torch::randn({3, 11}), torch::randn({13}),
          torch::randn({4})};
}

// FlatAdamW against torch::optim::AdamW with the same two parameter groups
// (decay on the 2-D tensors only) and clip_grad_norm_, over a few steps on
// 1 and 3 shard threads.
TEST(FlatAdamWTest, MatchesTorchAdamWWithClipping) {
  for (int threads : {1, 3}) {
    std::vector<torch::Tensor> ours = MakeParams(0);
    std::vector<torch::Tensor> theirs;
    for (const torch::Tensor& p : ours) {
      theirs.push_back(p.clone().requires_grad_(true));
    }
    for (torch::Tensor& p : ours) p.requires_grad_(true);

    FlatAdamW flat({ours[0], ours[1]}, {ours[2], ours[3]}, AdamWOptions{});
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{theirs[0], theirs[1]},
                        std::make_unique<torch::optim::AdamWOptions>(
                            torch::optim::AdamWOptions(0.01)
                                .betas({0.9, 0.95})
                                .weight_decay(0.1)));
    groups.emplace_back(std::vector<torch::Tensor>{theirs[2], theirs[3]},
                        std::make_unique<torch::optim::AdamWOptions>(
                            torch::optim::AdamWOptions(0.01)
                                .betas({0.9, 0.95})
                                .weight_decay(0.0)));
    torch::optim::AdamW reference(std::move(groups));
    ShardPool pool(threads);

    for (int step = 0; step < 4; ++step) {
      torch::manual_seed(100 + step);
      // Large gradients on some steps so clipping engages.
      const double scale = step % 2 == 0 ? 10.0 : 0.01;
      flat.ZeroGrad();
      reference.zero_grad();
      for (size_t i = 0; i < ours.size(); ++i) {
        const torch::Tensor g = torch::randn(ours[i].sizes()) * scale;
        flat.gradients()[i].copy_(g);
        theirs[i].mutable_grad() = g.clone();
      }
      const double norm = flat.Step(0.01, 1.0, &pool);
      const double expected_norm =
          torch::nn::utils::clip_grad_norm_(theirs, 1.0);
      reference.step();
      EXPECT_NEAR(norm, expected_norm, 1e-4 * expected_norm);
      for (size_t i = 0; i < ours.size(); ++i) {
        EXPECT_TRUE(torch::allclose(ours[i], theirs[i], 1e-5, 1e-6))
            << "step " << step << " tensor " << i << " threads " << threads;
      }
    }
    EXPECT_EQ(flat.step_count(), 4);
  }
}

TEST(FlatAdamWTest, ParametersAreViewsOfTheFlatBuffer) {
  std::vector<torch::Tensor> params = MakeParams(1);
  const torch::Tensor before = params[1].clone();
  FlatAdamW flat({params[0], params[1]}, {params[2], params[3]}, {});
  EXPECT_TRUE(torch::equal(params[1], before));
  ASSERT_EQ(flat.flat_parameters().numel(), 35 + 33 + 13 + 4);
  flat.flat_parameters().fill_(2.0f);
  EXPECT_EQ(params[1].sum().item<float>(), 2.0f * 33);
}

TEST(FlatAdamWTest, NonFiniteGradientLeavesEverythingUnchanged) {
  std::vector<torch::Tensor> params = MakeParams(2);
  FlatAdamW flat({params[0]}, {params[2]}, {});
  ShardPool pool(2);
  const torch::Tensor before = flat.flat_parameters().clone();
  flat.gradients()[0].fill_(1.0f);
  flat.gradients()[1][3] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(std::isfinite(flat.Step(0.1, 1.0, &pool)));
  EXPECT_TRUE(torch::equal(flat.flat_parameters(), before));
  EXPECT_EQ(flat.step_count(), 0);
}

TEST(ShardPoolTest, RunsEveryShardOnceAndRethrowsTheFirstError) {
  ShardPool pool(3);
  ASSERT_EQ(pool.size(), 3);
  std::vector<int> hits(3, 0);
  for (int round = 0; round < 5; ++round) {
    pool.Run([&](int shard) { ++hits[shard]; });
  }
  EXPECT_EQ(hits, (std::vector<int>{5, 5, 5}));
  EXPECT_THROW(pool.Run([](int shard) {
    if (shard == 2) throw std::runtime_error("shard 2 failed");
  }),
               std::runtime_error);
  // The pool still works after an error.
  pool.Run([&](int shard) { ++hits[shard]; });
  EXPECT_EQ(hits, (std::vector<int>{6, 6, 6}));
}

}  // namespace
}  // namespace prism::model::internal
