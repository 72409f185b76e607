// Checkpoints of a training run (private to model/).
//
// One file per run directory, <dir>/checkpoint.pt (a LibTorch archive): the
// flat parameters, both AdamW moments and their step count, the step, what
// the run has measured so far, and the identity of the run (shape, schedule,
// seed) so a checkpoint is never resumed into a different trial. There is no
// RNG state to store: batches and dropout masks are counter-based functions
// of (seed, step), so the step is the whole data cursor.
//
// Writes go to a temp file that is synced and then renamed over the old
// checkpoint, so the previous checkpoint stays intact until the new one is
// complete, and a kill mid-write leaves it as it was.
//
// Thread-safety: functions touch only their arguments and the directory.
#ifndef PRISM_MODEL_INTERNAL_CHECKPOINT_H_
#define PRISM_MODEL_INTERNAL_CHECKPOINT_H_

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/trainer.h"

namespace prism::model::internal {

struct CheckpointIdentity {
  std::string shape;     // ShapeKey(shape)
  std::string schedule;  // canonical text
  uint64_t seed = 0;
  bool check_seed = true;  // false: any seed's weights will do (evaluation)
};

struct Checkpoint {
  CheckpointIdentity identity;
  int64_t step = 0;  // optimizer steps completed
  int64_t adam_steps = 0;
  torch::Tensor parameters;  // flat, CPU
  torch::Tensor exp_avg;
  torch::Tensor exp_avg_sq;
  // Progress so far, so a resumed run reports the whole trial.
  std::vector<CurvePoint> curve;
  std::vector<Milestone> milestones;
  double elapsed_seconds = 0.0;
  double min_val_loss = 0.0;
  double final_val_loss = 0.0;
};

// ShapeKey describes everything about a shape that the weights depend on.
std::string ShapeKey(const ModelShape& shape);

// CheckpointPath is <dir>/checkpoint.pt.
std::string CheckpointPath(const std::string& dir);

// SaveCheckpoint writes `checkpoint` atomically. Internal on I/O errors.
absl::Status SaveCheckpoint(const std::string& dir,
                            const Checkpoint& checkpoint);

// LoadCheckpoint returns the checkpoint in `dir`, or nullopt when there is
// none. FailedPrecondition naming the field when it belongs to a different
// run (shape, schedule or seed differ); DataLoss when it is unreadable.
absl::StatusOr<std::optional<Checkpoint>> LoadCheckpoint(
    const std::string& dir, const CheckpointIdentity& expected);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_CHECKPOINT_H_
