// known_truth_fixture: writes a known-truth experiment (scheduler/
// known_truth.h) as a replay fixture, the spec that replays it and the truth
// itself, for searches through the real coordinator with `prism worker
// --replay` (bench/replay_bench.py, bench/reference/optuna_replay.py).
//
//   known_truth_fixture --structure isolated-best --seed 3 --steps 300 \
//       --out /tmp/isolated
//   # writes /tmp/isolated.replay, /tmp/isolated.textproto, /tmp/isolated.truth
#include <cstdio>
#include <fstream>
#include <string>

#include "CLI/CLI.hpp"
#include "bench/known_truth_replay.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "known_truth_fixture: %s\n", what.c_str());
  return 2;
}

bool Write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Write a known-truth experiment as a replay fixture");
  prism::KnownTruthSpec spec;
  std::string structure = "planted", out;
  app.add_option("--structure", structure,
                 "null, planted, smooth, isolated-best, fading-trap, "
                 "near-ties");
  app.add_option("--seeds", spec.seeds, "Seeds per schedule");
  app.add_option("--steps", spec.steps, "Training steps");
  app.add_option("--eval-every", spec.eval_every, "Steps between val evals");
  app.add_option("--noise-sd", spec.noise_sd, "Per-trial sd of the final loss");
  app.add_option("--effect", spec.effect, "Planted or smooth effect size");
  app.add_option("--planted-fraction", spec.planted_fraction,
                 "Planted: share of schedules with the effect");
  app.add_option("--best-gap", spec.best_gap, "The best's lead");
  app.add_option("--variance-spread", spec.variance_spread,
                 "sd of log(per-schedule noise sd)");
  app.add_option("--diverged", spec.diverged_trials, "Trials that diverge");
  app.add_option("--seed", spec.seed, "Generator seed");
  app.add_option("--out", out, "Path prefix of the three files")->required();
  CLI11_PARSE(app, argc, argv);

  absl::StatusOr<prism::TruthStructure> s =
      prism::ParseTruthStructure(structure);
  if (!s.ok()) return Fail(std::string(s.status().message()));
  spec.structure = *s;
  absl::StatusOr<prism::KnownTruth> truth = prism::GenerateKnownTruth(spec);
  if (!truth.ok()) return Fail(std::string(truth.status().message()));
  const std::string spec_text = prism::bench::KnownTruthSpecText(*truth);
  absl::StatusOr<std::string> replay =
      prism::bench::KnownTruthReplay(*truth, spec_text);
  if (!replay.ok()) return Fail(std::string(replay.status().message()));
  if (!Write(out + ".replay", *replay) ||
      !Write(out + ".textproto", spec_text) ||
      !Write(out + ".truth", prism::bench::KnownTruthTable(*truth))) {
    return Fail("cannot write " + out + ".{replay,textproto,truth}");
  }
  std::printf("%s.replay: %zu trials; best %s (true delta %.4f)\n", out.c_str(),
              truth->trials.size(), truth->best.c_str(),
              truth->true_delta.at(truth->best));
  return 0;
}
