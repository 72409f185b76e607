// The committed replay fixtures (bench/replay/*.replay) against the specs
// they were recorded from: every planned trial is there with its whole
// curve, and the recipe is the one a replay worker builds for the spec's
// tasks, so `prism worker --replay` serves every trial of the benchmark.
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "server/core/experiments/spec.h"
#include "worker/replay_launcher.h"
#include "worker/task_config.h"

namespace prism::worker {
namespace {

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(PRISM_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class CommittedFixtureTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CommittedFixtureTest, HoldsEveryPlannedTrialWithItsWholeCurve) {
  const std::string name = GetParam();
  absl::StatusOr<v1::ExperimentSpec> spec =
      server::ParseSpecText(ReadSource("bench/replay/" + name + ".textproto"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<server::ExperimentPlan> plan =
      server::PlanExperiment(*spec, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<ReplayFixture> fixture = LoadReplayFixture(
      std::string(PRISM_SOURCE_DIR) + "/bench/replay/" + name + ".replay");
  ASSERT_TRUE(fixture.ok()) << fixture.status();

  // The bar: at least 100 valid schedules, 3 seeds, the whole grid.
  std::set<std::string> schedules;
  for (const storage::NewTrial& trial : plan->trials) {
    schedules.insert(trial.schedule);
  }
  EXPECT_GE(schedules.size(), 100u);
  EXPECT_EQ(fixture->trials.size(), plan->trials.size());

  WorkerResources resources;
  resources.device = "cpu";
  resources.threads = 1;
  resources.attention = model::AttentionMode::kFused;
  const int64_t steps = plan->spec.budget().steps();
  const int64_t eval_every = plan->spec.budget().eval_every();
  for (const storage::NewTrial& trial : plan->trials) {
    SCOPED_TRACE(trial.schedule + " seed " + std::to_string(trial.seed));
    absl::StatusOr<model::TrainConfig> config =
        TrainConfigForTask(server::PlannedTask(*plan, trial), resources);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(ReplayConfigOf(*config), fixture->config);

    auto found = fixture->trials.find(
        {trial.schedule, static_cast<uint64_t>(trial.seed)});
    ASSERT_NE(found, fixture->trials.end());
    const ReplayTrial& run = found->second;
    // A val point at step 0 and every eval_every steps up to the end (or
    // the divergence), the last one a real loss.
    const int64_t end =
        run.metrics.diverged ? run.metrics.diverged_step : steps;
    if (!run.metrics.diverged) {
      EXPECT_EQ(run.metrics.steps, steps);
    }
    std::vector<int64_t> val_steps;
    float last_val = 0.0f;
    for (const model::CurvePoint& point : run.curve) {
      if (point.split != model::CurveSplit::kVal) continue;
      val_steps.push_back(point.step);
      last_val = point.loss;
    }
    ASSERT_FALSE(val_steps.empty());
    EXPECT_EQ(val_steps.front(), 0);
    for (size_t i = 1; i < val_steps.size(); ++i) {
      EXPECT_EQ(val_steps[i] - val_steps[i - 1], eval_every);
    }
    if (!run.metrics.diverged) {
      EXPECT_EQ(val_steps.back(), end);
      EXPECT_TRUE(std::isfinite(last_val) && last_val > 0.0f) << last_val;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Bench, CommittedFixtureTest,
                         ::testing::Values("grid_d64_l8_h8",
                                           "grid_d64_l8_h8_s200"));

}  // namespace
}  // namespace prism::worker
