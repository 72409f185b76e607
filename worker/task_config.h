// Conversions between the wire types of a leased trial and the trainer's
// domain types: TrialTask -> model::TrainConfig on the way in, curve points
// and TrainResult -> LossPoint / TrialMetrics on the way out.
//
// Thread-safety: pure functions.
#ifndef PRISM_WORKER_TASK_CONFIG_H_
#define PRISM_WORKER_TASK_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/trainer.h"
#include "prism/v1/prism.pb.h"

namespace prism::worker {

// WorkerResources are the machine-side settings a task does not carry.
struct WorkerResources {
  std::string device = "cpu";   // "cpu", "cuda:N", or "auto"
  int threads = 0;              // 0: all cores
  std::string checkpoint_root;  // "" disables checkpoints
  // The attention kernel (kAuto: timed at each trial's start on the CPU);
  // see model::TrainConfig::attention.
  model::AttentionMode attention = model::AttentionMode::kAuto;
  // Resolved directories a task's data paths must lie in (the worker's
  // --data-root; base/data_roots.h); empty: not checked.
  std::vector<std::string> data_roots;
};

// CheckpointDirFor returns `<checkpoint_root>/<task.checkpoint_key>`, or ""
// when the root is "" (checkpoints off).
std::string CheckpointDirFor(const v1::TrialTask& task,
                             const WorkerResources& resources);

// TrainConfigForTask builds the trainer's config: the preset's shape with the
// task's non-zero overrides, the trial's schedule and seed, the data paths,
// the budget (zero fields keep the trainer's defaults) and the worker's
// resources; resume is on, so an existing checkpoint is continued; the
// task's stop_at_step (an ASHA rung) ends the run early. Returns
// InvalidArgument naming the field for an unknown preset, a malformed
// schedule, a shape that fails ValidateShape, or a data path, or a shard in
// a data directory, outside resources.data_roots (after resolving `..` and
// symlinks) or not a regular file or directory (NotFound when missing).
absl::StatusOr<model::TrainConfig> TrainConfigForTask(
    const v1::TrialTask& task, const WorkerResources& resources);

// ToLossPoint converts one curve point to its wire form.
v1::LossPoint ToLossPoint(const model::CurvePoint& point);

// ToTrialMetrics converts a finished run's result to its wire form.
v1::TrialMetrics ToTrialMetrics(const model::TrainResult& result);

}  // namespace prism::worker

#endif  // PRISM_WORKER_TASK_CONFIG_H_
