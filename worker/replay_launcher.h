// Replay: a TrainerLauncher that serves recorded loss curves instead of
// training, so a whole search runs through the real coordinator, its
// strategies and the real worker protocol in seconds (the tabular-benchmark
// practice of NAS-Bench-201 / HPOBench / YAHPO). `prism worker --replay
// FIXTURE` uses it; bench/replay_record.cc records a fixture with the real
// trainer, and bench/replay_bench.py compares strategies over one.
//
//   absl::StatusOr<ReplayFixture> fixture = LoadReplayFixture("grid.replay");
//   std::unique_ptr<TrainerLauncher> launcher =
//       NewReplayTrainerLauncher(*std::move(fixture));
//   Worker worker(options, client.get(), launcher.get());
//
// A fixture is a text file:
//   prism-replay 1
//   config d_model=64 layers=8 ... steps=120 eval_every=10 ...
//   trial SCHEDULE SEED key=value...   (the run's final metrics)
//   t STEP LOSS LR TOKENS_PER_SECOND ELAPSED_SECONDS   (a train point)
//   v STEP LOSS LR TOKENS_PER_SECOND ELAPSED_SECONDS   (a val point)
// Points follow their trial line in the order the trainer emitted them. The
// config line holds the recipe fields a trial's curve depends on; a task
// whose config differs is refused (InvalidArgument naming the field), as is
// a (schedule, seed) the fixture lacks (NotFound), so a replay never serves
// a curve for another experiment than the one recorded.
//
// What a replayed attempt does, mirroring model::Train: it resumes from the
// step in `<checkpoint_dir>/replay-checkpoint` (written at a stop_at_step or
// when told to stop, after BeforeCheckpoint allowed it; one past
// max_resume_step is discarded, as the trainer does), emits the recorded
// points after that step up to stop_at_step (or the whole budget), and
// returns the recorded metrics of that prefix: final and min val loss and
// final train loss at the end step, the recorded tokens/s and model
// numbers. A recorded run that diverged ends as diverged at its step. No
// periodic checkpoints are written: only a rung or a stop is ever resumed.
//
// Thread-safety: a loaded fixture is immutable; the launcher may serve one
// job at a time per Worker, and several workers may share it.
#ifndef PRISM_WORKER_REPLAY_LAUNCHER_H_
#define PRISM_WORKER_REPLAY_LAUNCHER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/trainer.h"
#include "worker/trainer_launcher.h"

namespace prism::worker {

// ReplayTrial is one recorded run: its whole curve and final metrics.
struct ReplayTrial {
  std::vector<model::CurvePoint> curve;  // in emission order
  model::TrainResult metrics;            // curve left empty
};

struct ReplayFixture {
  // The config line, key -> value text (see ReplayConfigOf).
  std::map<std::string, std::string> config;
  // Keyed by (canonical schedule, seed).
  std::map<std::pair<std::string, uint64_t>, ReplayTrial> trials;
};

// ReplayConfigOf returns the recipe fields of `config` a fixture records and
// a replayed task must match.
std::map<std::string, std::string> ReplayConfigOf(
    const model::TrainConfig& config);

// FormatReplayHeader returns the first two lines of a fixture recorded with
// `config`'s recipe.
std::string FormatReplayHeader(const model::TrainConfig& config);

// FormatReplayTrial returns the lines of one recorded run (its trial line
// and its points).
std::string FormatReplayTrial(const model::TrainConfig& config,
                              const model::TrainResult& result);

// ParseReplayFixture parses a fixture's text. Returns InvalidArgument naming
// the line for a malformed one, an unknown version, a point before any trial
// line or a schedule that does not parse.
absl::StatusOr<ReplayFixture> ParseReplayFixture(const std::string& text);

// LoadReplayFixture reads and parses `path`; NotFound when it cannot be read,
// else as ParseReplayFixture with the path in the message.
absl::StatusOr<ReplayFixture> LoadReplayFixture(const std::string& path);

// NewReplayTrainerLauncher returns the launcher that serves `fixture`. With
// `steps_per_second` > 0 (`prism worker --replay-speed`) an attempt takes
// wall time in proportion to the steps it replays: each point is emitted
// (step - resumed step) / steps_per_second after the attempt began, so a
// queue's behaviour over time can be tested in seconds; 0 emits at once.
std::unique_ptr<TrainerLauncher> NewReplayTrainerLauncher(
    ReplayFixture fixture, double steps_per_second = 0);
// NewReplayTrainerLauncher over several fixtures (not empty), e.g. one per
// size of a ladder: a task is served by the first one recorded with its
// recipe; when none was, it is refused with the first one's mismatch.
std::unique_ptr<TrainerLauncher> NewReplayTrainerLauncher(
    std::vector<ReplayFixture> fixtures, double steps_per_second = 0);

}  // namespace prism::worker

#endif  // PRISM_WORKER_REPLAY_LAUNCHER_H_
