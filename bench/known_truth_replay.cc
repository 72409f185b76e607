#include "bench/known_truth_replay.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "model/trainer.h"
#include "server/core/experiments/spec.h"
#include "worker/replay_launcher.h"
#include "worker/task_config.h"

namespace prism::bench {

std::string KnownTruthSpecText(const KnownTruth& truth) {
  const KnownTruthSpec& s = truth.spec;
  std::string seeds;
  for (int i = 1; i <= s.seeds; ++i) {
    absl::StrAppend(&seeds, i == 1 ? "" : ", ", i);
  }
  return absl::StrCat(
      "# Known truth: ", TruthStructureName(s.structure), ", generator seed ",
      s.seed, ".\nmodel { preset: \"tiny\" d_model: ", s.space.d_model,
      " layers: ", s.space.layers, " base_heads: ", s.space.base_heads,
      " context: 32 }\nbudget { steps: ", s.steps,
      " eval_every: ", s.eval_every, " log_every: ", s.eval_every,
      " }\nseeds: [", seeds, "]\n");
}

absl::StatusOr<std::string> KnownTruthReplay(const KnownTruth& truth,
                                             const std::string& spec_text) {
  absl::StatusOr<v1::ExperimentSpec> spec = server::ParseSpecText(spec_text);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<server::ExperimentPlan> plan =
      server::PlanExperiment(*spec, {});
  if (!plan.ok()) return plan.status();
  std::string text;
  for (const KnownTruthTrial& t : truth.trials) {
    storage::NewTrial trial;
    trial.schedule = t.schedule;
    trial.seed = t.seed;
    trial.is_baseline = t.is_baseline;
    absl::StatusOr<model::TrainConfig> config = worker::TrainConfigForTask(
        server::PlannedTask(*plan, trial), worker::WorkerResources{});
    if (!config.ok()) return config.status();
    if (text.empty()) text = worker::FormatReplayHeader(*config);
    model::TrainResult run;
    for (size_t i = 0; i < t.val_steps.size(); ++i) {
      const int64_t step = t.val_steps[i];
      const float loss = static_cast<float>(t.val_losses[i]);
      const double elapsed = 0.01 * static_cast<double>(step);
      if (step > 0) {
        run.curve.push_back({model::CurveSplit::kTrain, step, loss + 0.05f,
                             1e-3f, 5000.0, elapsed});
      }
      run.curve.push_back(
          {model::CurveSplit::kVal, step, loss, 1e-3f, 5000.0, elapsed});
    }
    run.steps = t.val_steps.back();
    run.final_val_loss = t.val_losses.back();
    run.min_val_loss = t.val_losses.back();
    for (double l : t.val_losses)
      run.min_val_loss = std::fmin(run.min_val_loss, l);
    run.final_train_loss = run.final_val_loss + 0.05;
    run.tokens_per_second = 5000.0;
    run.device = "cpu";
    run.diverged = t.diverged;
    run.diverged_step = t.diverged_step;
    text += worker::FormatReplayTrial(*config, run);
  }
  return text;
}

std::string KnownTruthTable(const KnownTruth& truth) {
  std::string out = absl::StrCat("# best ", truth.best, "\n");
  for (const std::string& s : truth.schedules) {
    absl::StrAppend(&out, s, " ", truth.true_delta.at(s), " ",
                    truth.noise_sd.at(s), "\n");
  }
  return out;
}

}  // namespace prism::bench
