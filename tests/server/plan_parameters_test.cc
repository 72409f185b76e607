// The bill's parameter count (server/core/experiments/plan.h) against the
// LibTorch decoder the workers train, built for each preset's uniform baseline.
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "model/internal/decoder.h"
#include "scheduler/space/schedule.h"
#include "server/core/experiments/plan.h"
#include "server/core/experiments/spec.h"

namespace prism::server {
namespace {

int64_t Numel(model::internal::PrismDecoder& model) {
  int64_t n = 0;
  for (const torch::Tensor& p : model->parameters()) n += p.numel();
  return n;
}

TEST(PlanParametersTest, ParametersAreTheBuiltModelsForEveryPreset) {
  // 124m is the largest built here (half a gigabyte); the larger presets
  // share its formula and model/decoder_test builds them.
  for (const char* preset : {"tiny", "small", "124m"}) {
    for (const char* positions : {"POSITION_LEARNED", "POSITION_ROTARY"}) {
      absl::StatusOr<v1::ExperimentSpec> spec =
          ParseSpecText(std::string("model { preset: \"") + preset +
                        "\" positions: " + positions + " }\nseeds: [ 1 ]");
      ASSERT_TRUE(spec.ok()) << spec.status();
      absl::StatusOr<ExperimentPlan> plan = PlanExperiment(*spec, {});
      ASSERT_TRUE(plan.ok()) << plan.status();
      const v1::PlanEstimate bill = EstimatePlan(
          plan->spec, static_cast<int64_t>(plan->trials.size()), 1, {});
      absl::StatusOr<Schedule> baseline = ParseSchedule(plan->baseline);
      ASSERT_TRUE(baseline.ok()) << baseline.status();
      model::internal::PrismDecoder built(plan->shape, *baseline);
      EXPECT_EQ(bill.parameters(), Numel(built)) << preset << " " << positions;
    }
  }
}

}  // namespace
}  // namespace prism::server
