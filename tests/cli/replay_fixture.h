// TinyReplayFixture writes a replay fixture (worker/replay_launcher.h) of a
// made-up 40-step run of every schedule and seed of the tiny preset, with
// the config a worker builds for a budget of 40 steps, evals every 10 and
// train points every 5: the val loss at each step is `val_loss(schedule
// index, seed, step)`, the train loss 0.1 above it, every point and the
// run at `tokens_per_second`. For the tests that drive replay workers
// through a real coordinator.
#ifndef PRISM_TESTS_CLI_REPLAY_FIXTURE_H_
#define PRISM_TESTS_CLI_REPLAY_FIXTURE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "worker/replay_launcher.h"
#include "worker/task_config.h"

namespace prism::testing {

// kTinyPrincipledSchedules: the tiny preset's principled grid, the baseline
// 4x6 first, then the four schedules that hold all three principles.
inline const std::vector<std::string> kTinyPrincipledSchedules = {
    "4x6", "1x2,4x4", "2x2,4x4", "1x3,4x3", "2x3,4x3"};

inline std::string TinyReplayFixture(
    const std::vector<std::string>& schedules,
    const std::vector<int64_t>& seeds,
    const std::function<float(int, int64_t, int64_t)>& val_loss,
    double tokens_per_second = 5000.0) {
  v1::TrialTask task;
  task.mutable_model()->set_preset("tiny");
  task.mutable_budget()->set_steps(40);
  task.mutable_budget()->set_eval_every(10);
  task.mutable_budget()->set_log_every(5);
  std::string text;
  for (size_t i = 0; i < schedules.size(); ++i) {
    for (int64_t seed : seeds) {
      task.mutable_trial()->set_schedule(schedules[i]);
      task.mutable_trial()->set_seed(seed);
      absl::StatusOr<model::TrainConfig> config =
          worker::TrainConfigForTask(task, worker::WorkerResources{});
      EXPECT_TRUE(config.ok()) << config.status();
      if (!config.ok()) return text;
      if (text.empty()) text = worker::FormatReplayHeader(*config);
      model::TrainResult run;
      for (int64_t step = 0; step <= 40; step += 5) {
        const float loss = val_loss(static_cast<int>(i), seed, step);
        if (step > 0) {
          run.curve.push_back({model::CurveSplit::kTrain, step, loss + 0.1f,
                               1e-3f, tokens_per_second, 0.01 * step});
        }
        if (step % 10 == 0) {
          run.curve.push_back({model::CurveSplit::kVal, step, loss, 1e-3f,
                               tokens_per_second, 0.01 * step});
        }
      }
      run.steps = 40;
      run.tokens_per_second = tokens_per_second;
      run.device = "cpu";
      text += worker::FormatReplayTrial(*config, run);
    }
  }
  return text;
}

}  // namespace prism::testing

#endif  // PRISM_TESTS_CLI_REPLAY_FIXTURE_H_
