// Checkpoints of a training run (private to model/).
//
// One file per run directory, <dir>/checkpoint.pt (a LibTorch archive): the
// flat parameters, both AdamW moments and their step count, the step, what
// the run has measured so far (curve, milestones, training seconds and
// tokens, the unfinished train-loss window), and the identity of the run:
// shape, schedule, seed and recipe (RecipeKey: every other setting that
// changes the weights' trajectory or the recorded curve), so a checkpoint is
// never resumed into a different trial or a different recipe.
//
// No RNG state is stored: batches are counter-based functions of (seed,
// step, micro-batch), and so are dropout masks: the CPU draws those from a
// generator created per (seed, step, micro-batch, shard); CUDA reseeds the
// device's default generator per (seed, step, micro-batch) before each
// micro-batch (see TrainStep in trainer.cc). So the step is the whole cursor.
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
  // RecipeKey(...); empty in a checkpoint written before recipes were
  // recorded (format version 1), which matches no recipe.
  std::string recipe;
  bool check_seed = true;    // false: any seed's weights will do (evaluation)
  bool check_recipe = true;  // false: any recipe's weights will do (same)
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
  double final_train_loss = 0.0;
  // Seconds spent in optimizer steps and the tokens they consumed, over the
  // whole trial: TrainResult::tokens_per_second is their ratio.
  double train_seconds = 0.0;
  int64_t train_tokens = 0;
  // The process CPU seconds of those steps (TrainResult::cpu_share); -1
  // when unknown (a CUDA run, or a checkpoint before format version 4).
  double train_cpu_seconds = -1.0;
  // The train-loss window since the last train point (summed loss, seconds
  // and steps), so the next point averages the same steps as without resume.
  double window_loss = 0.0;
  double window_seconds = 0.0;
  int64_t window_steps = 0;
  // The attention kernel the run trained with (AttentionKernelKey, e.g.
  // "fused:avx2"), so a resumed run keeps it: kernels differ in float
  // rounding, and a resume must continue the same trajectory. Empty before
  // format version 3.
  std::string attention_kernel;
};

// ShapeKey describes everything about a shape that the weights depend on.
std::string ShapeKey(const ModelShape& shape);

// RecipeKey describes the rest of a run's settings that change the weights'
// trajectory or the recorded curve, as "key=value;..." in a fixed order:
// steps, batch_size, grad_accum, context (the effective one, `context`),
// eval_every, eval_batches, log_every, learning_rate, min_lr_ratio,
// warmup_steps, weight_decay, grad_clip, loss_targets, dropout, and the data
// files `train` and `val` (as given, or the demo corpus's files). Numbers are
// exact (shortest text that reads back to the same double); '%', ';' and ','
// inside a value are percent-escaped.
std::string RecipeKey(const TrainConfig& config, int context,
                      const std::vector<std::string>& train,
                      const std::vector<std::string>& val);

// CheckpointPath is <dir>/checkpoint.pt.
std::string CheckpointPath(const std::string& dir);

// SaveCheckpoint writes `checkpoint` atomically. ResourceExhausted when the
// disk is full (naming the file and the error), Internal on other I/O errors;
// the previous checkpoint is left as it was either way.
absl::Status SaveCheckpoint(const std::string& dir,
                            const Checkpoint& checkpoint);

// LoadCheckpoint returns the checkpoint in `dir`, or nullopt when there is
// none. FailedPrecondition naming the field when it belongs to a different
// run (shape, schedule or seed differ) or a different recipe (naming every
// recipe field that differs, with the checkpoint's value first; a checkpoint
// that records no recipe is a different one); DataLoss when it is
// unreadable.
absl::StatusOr<std::optional<Checkpoint>> LoadCheckpoint(
    const std::string& dir, const CheckpointIdentity& expected);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_CHECKPOINT_H_
