// replay_record: records a replay fixture (worker/replay_launcher.h) with the
// real trainer: every trial a spec plans (its schedules x its seeds), trained
// in-process with the config a worker would build for it
// (worker::TrainConfigForTask), its whole curve and final metrics appended
// to --out as it finishes. Rerun with the same --out to continue after an
// interruption: recorded (schedule, seed) pairs are skipped. --shard i/n
// records every n-th trial from i, so two processes on two cores split a
// grid; concatenate their outputs (one header) into the fixture.
//
//   replay_record --spec bench/replay/grid_d64_l8_h8.textproto
//                 --out /tmp/part0.replay --shard 0/2 --threads 1
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "model/trainer.h"
#include "server/core/experiments/spec.h"
#include "worker/replay_launcher.h"
#include "worker/task_config.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "replay_record: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Record a replay fixture: train every trial of a spec");
  std::string spec_path, out_path, shard = "0/1", attention = "fused";
  int threads = 1;
  app.add_option("--spec", spec_path, "ExperimentSpec textproto")->required();
  app.add_option("--out", out_path, "Fixture to write (appended)")->required();
  app.add_option("--shard", shard, "i/n: record trials i, i+n, ...");
  app.add_option("--threads", threads, "Training threads per trial");
  app.add_option("--attention", attention, "Attention kernel (see worker)");
  CLI11_PARSE(app, argc, argv);

  std::pair<std::string, std::string> parts =
      absl::StrSplit(shard, absl::MaxSplits('/', 1));
  int shard_index = 0, shard_count = 1;
  if (!absl::SimpleAtoi(parts.first, &shard_index) ||
      !absl::SimpleAtoi(parts.second, &shard_count) || shard_count < 1 ||
      shard_index < 0 || shard_index >= shard_count) {
    return Fail("--shard must be i/n with 0 <= i < n");
  }
  absl::StatusOr<prism::model::AttentionMode> attention_mode =
      prism::model::ParseAttentionMode(attention);
  if (!attention_mode.ok()) {
    return Fail(std::string(attention_mode.status().message()));
  }

  std::ifstream spec_file(spec_path);
  if (!spec_file) return Fail("cannot read " + spec_path);
  std::stringstream spec_text;
  spec_text << spec_file.rdbuf();
  absl::StatusOr<prism::v1::ExperimentSpec> spec =
      prism::server::ParseSpecText(spec_text.str());
  if (!spec.ok()) return Fail(std::string(spec.status().message()));
  absl::StatusOr<prism::server::ExperimentPlan> plan =
      prism::server::PlanExperiment(*spec, {});
  if (!plan.ok()) return Fail(std::string(plan.status().message()));

  // What an earlier, interrupted run already recorded.
  std::set<std::pair<std::string, uint64_t>> done;
  bool has_header = false;
  {
    std::ifstream existing(out_path);
    if (existing) {
      std::stringstream text;
      text << existing.rdbuf();
      absl::StatusOr<prism::worker::ReplayFixture> fixture =
          prism::worker::ParseReplayFixture(text.str());
      if (!fixture.ok()) return Fail(std::string(fixture.status().message()));
      for (const auto& [key, trial] : fixture->trials) done.insert(key);
      has_header = true;
    }
  }

  prism::worker::WorkerResources resources;
  resources.device = "cpu";
  resources.threads = threads;
  resources.attention = *attention_mode;
  std::ofstream out(out_path, std::ios::app);
  int index = -1, recorded = 0;
  const int total = static_cast<int>(plan->trials.size());
  for (const prism::storage::NewTrial& trial : plan->trials) {
    ++index;
    if (index % shard_count != shard_index) continue;
    if (done.count({trial.schedule, static_cast<uint64_t>(trial.seed)})) {
      continue;
    }
    absl::StatusOr<prism::model::TrainConfig> config =
        prism::worker::TrainConfigForTask(
            prism::server::PlannedTask(*plan, trial), resources);
    if (!config.ok()) return Fail(std::string(config.status().message()));
    // The MFU reference is a quarter second of matmuls per trial that the
    // replay never uses.
    config->measure_mfu = false;
    if (!has_header) {
      out << prism::worker::FormatReplayHeader(*config);
      has_header = true;
    }
    prism::model::TrainObserver quiet;
    absl::StatusOr<prism::model::TrainResult> result =
        prism::model::Train(*config, &quiet);
    if (!result.ok()) return Fail(std::string(result.status().message()));
    out << prism::worker::FormatReplayTrial(*config, *result);
    out.flush();
    ++recorded;
    std::fprintf(stderr, "[%d/%d] %s seed %lld val %.4f (%.1fs)\n", index + 1,
                 total, trial.schedule.c_str(),
                 static_cast<long long>(trial.seed), result->final_val_loss,
                 result->wall_seconds);
  }
  std::fprintf(stderr, "replay_record: %d trials recorded to %s\n", recorded,
               out_path.c_str());
  return 0;
}
