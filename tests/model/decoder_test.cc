#include "model/internal/decoder.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"

namespace prism::model::internal {
namespace {

int64_t Numel(PrismDecoder& model) {
  int64_t n = 0;
  for (const torch::Tensor& p : model->parameters()) n += p.numel();
  return n;
}

std::vector<Schedule> EverySchedule(const ModelShape& shape) {
  SpaceSpec spec;
  spec.d_model = shape.d_model;
  spec.layers = shape.layers;
  spec.base_heads = shape.base_heads;
  absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(spec);
  EXPECT_TRUE(e.ok()) << e.status();
  std::vector<Schedule> out;
  while (e->Next()) out.emplace_back(e->heads());
  return out;
}

// Every valid schedule of the CPU presets, built for real: the parameter
// count and the forward FLOPs counted from the modules equal the analytic,
// schedule-free counts.
TEST(PrismDecoderTest, ParametersAndFlopsAreScheduleFreeForEveryCpuSchedule) {
  for (const char* name : {"tiny", "small"}) {
    for (Positions positions : {Positions::kLearned, Positions::kRotary}) {
      ModelShape shape = *FindPreset(name);
      shape.positions = positions;
      const std::vector<Schedule> schedules = EverySchedule(shape);
      ASSERT_GE(schedules.size(), name == std::string("tiny") ? 21u : 120u);
      const ParameterCounts counts = CountParameters(shape);
      const int64_t flops = ForwardFlopsPerToken(shape);
      for (const Schedule& s : schedules) {
        PrismDecoder model(shape, s);
        EXPECT_EQ(Numel(model), counts.total) << name << " " << s.ToString();
        EXPECT_EQ(model->ForwardFlopsPerToken(shape.context), flops)
            << name << " " << s.ToString();
      }
    }
  }
}

// The paper's scales: built for the uniform baseline and one Prism schedule
// (a full build takes seconds and gigabytes), and counted for every
// schedule of the principled grid.
TEST(PrismDecoderTest, PaperScalesMatchAnalyticCountsWhenBuilt) {
  const struct {
    const char* preset;
    const char* prism;
  } cases[] = {{"124m", "3x3,6x3,12x6"},
               {"354m", "4x4,8x4,16x16"},
               {"757m", "6x4,12x4,24x16"}};
  for (const auto& c : cases) {
    const ModelShape shape = *FindPreset(c.preset);
    const int64_t expected = CountParameters(shape).total;
    const int64_t flops = ForwardFlopsPerToken(shape);
    std::vector<std::string> schedules = {c.prism};
    if (std::string(c.preset) == "124m") schedules.push_back("12x12");
    for (const std::string& text : schedules) {
      PrismDecoder model(shape, *ParseSchedule(text));
      EXPECT_EQ(Numel(model), expected) << c.preset << " " << text;
      EXPECT_EQ(model->ForwardFlopsPerToken(shape.context), flops);
    }
  }
  EXPECT_EQ(CountParameters(*FindPreset("124m")).nanogpt, 123689472);
}

TEST(PrismDecoderTest, LossAtInitIsCloseToLnVocab) {
  const ModelShape shape = *FindPreset("tiny");
  PrismDecoder model(shape, *ParseSchedule("1x2,2x2,4x2"));
  model->InitializeWeights(1);
  torch::manual_seed(0);
  const torch::Tensor idx = torch::randint(0, 256, {4, 129});
  torch::NoGradGuard no_grad;
  const double loss =
      model->Loss(idx.narrow(1, 0, 128), idx.narrow(1, 1, 128)).item<double>() /
      (4 * 128);
  EXPECT_NEAR(loss, std::log(256.0), 0.05);
}

TEST(PrismDecoderTest, InitializationIsAFunctionOfTheSeed) {
  const ModelShape shape = *FindPreset("tiny");
  const Schedule s = *ParseSchedule("4x6");
  PrismDecoder a(shape, s), b(shape, s), c(shape, s);
  a->InitializeWeights(3);
  b->InitializeWeights(3);
  c->InitializeWeights(4);
  const auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
  bool all_equal = true, any_differs = false;
  for (size_t i = 0; i < pa.size(); ++i) {
    all_equal = all_equal && torch::equal(pa[i], pb[i]);
    any_differs = any_differs || !torch::equal(pa[i], pc[i]);
  }
  EXPECT_TRUE(all_equal);
  EXPECT_TRUE(any_differs);
  // Residual projections are scaled by 1 / sqrt(2L).
  const auto block = a->blocks[0]->as<BlockImpl>();
  EXPECT_NEAR(block->c_proj->weight.std().item<double>(),
              0.02 / std::sqrt(12.0), 0.002);
  EXPECT_NEAR(block->c_fc->weight.std().item<double>(), 0.02, 0.002);
}

TEST(PrismDecoderTest, FusedAndMaskedSoftmaxKernelsAgree) {
  for (Positions positions : {Positions::kLearned, Positions::kRotary}) {
    ModelShape shape = *FindPreset("tiny");
    shape.positions = positions;
    PrismDecoder model(shape, *ParseSchedule("1x2,2x2,4x2"));
    model->InitializeWeights(2);
    torch::manual_seed(1);
    const torch::Tensor idx = torch::randint(0, 256, {2, 65});
    const torch::Tensor in = idx.narrow(1, 0, 64), out = idx.narrow(1, 1, 64);
    std::vector<torch::Tensor> grads[2];
    double losses[2];
    const AttentionKernel kernels[2] = {AttentionKernel::kFused,
                                        AttentionKernel::kMaskedSoftmax};
    for (int k = 0; k < 2; ++k) {
      torch::Tensor loss = model->Loss(in, out, kernels[k]);
      losses[k] = loss.item<double>();
      grads[k] = torch::autograd::grad({loss}, model->parameters());
    }
    EXPECT_NEAR(losses[0], losses[1], 1e-3 * std::abs(losses[1]));
    for (size_t i = 0; i < grads[0].size(); ++i) {
      EXPECT_TRUE(torch::allclose(grads[0][i], grads[1][i], 1e-3, 1e-5)) << i;
    }
  }
}

TEST(RotaryTest, ScoresDependOnlyOnRelativePositionForEveryHeadWidth) {
  for (int64_t d : {1, 2, 3, 5, 8, 9, 16, 32, 64, 128}) {
    auto [cos, sin] = RotaryTables(d, 32);
    torch::manual_seed(d);
    // One head; the same query/key vector at every position.
    const torch::Tensor q = torch::randn({1, 1, d}).expand({1, 32, d});
    const torch::Tensor k = torch::randn({1, 1, d}).expand({1, 32, d});
    const torch::Tensor rq = ApplyRotary(q.contiguous(), 1, cos, sin)[0];
    const torch::Tensor rk = ApplyRotary(k.contiguous(), 1, cos, sin)[0];
    // <q_m, k_n> for (m, n) = (5, 2) and (20, 17): same offset 3.
    const double a = (rq[5] * rk[2]).sum().item<double>();
    const double b = (rq[20] * rk[17]).sum().item<double>();
    EXPECT_NEAR(a, b, 1e-4) << "head width " << d;
    // Rotation preserves each vector's length.
    EXPECT_NEAR(rq[7].norm().item<double>(), q[0][0].norm().item<double>(),
                1e-4)
        << "head width " << d;
    if (d >= 2) {
      EXPECT_FALSE(torch::allclose(rq[7], q[0][7])) << "head width " << d;
    }
  }
}

TEST(PrismDecoderTest, AttentionDistanceAtInitIsNearUniformAttention) {
  // Near-zero init gives almost uniform causal attention, whose mean
  // distance over queries 0..T-1 is (T - 1) / 4.
  const ModelShape shape = *FindPreset("tiny");
  PrismDecoder model(shape, *ParseSchedule("1x2,2x2,4x2"));
  model->InitializeWeights(0);
  torch::manual_seed(0);
  const torch::Tensor idx = torch::randint(0, 256, {2, 64});
  const std::vector<double> d = model->AttentionDistances(idx);
  ASSERT_EQ(d.size(), 6u);
  for (double layer : d) EXPECT_NEAR(layer, 63.0 / 4, 0.5);
}

}  // namespace
}  // namespace prism::model::internal
