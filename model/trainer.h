// Trainer: trains one Prism decoder (one trial) and measures everything the
// paper reports. The public API is torch-free so the worker and CLI do not
// compile LibTorch headers; torch lives in the .cc files.
//
//   TrainConfig config;            // shape, schedule, data, budget ...
//   StdoutObserver progress;       // or the worker's reporter
//   absl::StatusOr<TrainResult> r = Train(config, &progress);
//
// Recipe: AdamW (betas 0.9/0.95, weight decay on 2-D weights only), linear
// warmup then cosine decay to a floor, gradient clipping at 1.0, gradient
// accumulation, bf16 autocast on CUDA and fp32 on CPU. A non-finite loss
// (train, or val as a float) ends the run as diverged at that step (an OK
// result with diverged = true); the non-finite value is never emitted.
//
// Checkpoints (model, optimizer, step, the progress so far, and the run's
// identity: shape, schedule, seed and recipe) go to checkpoint_dir every
// checkpoint_every steps and at the end, written to a temp file and renamed;
// the observer may veto one (BeforeCheckpoint). With resume the run continues
// from the latest one, unless it was written by another trial or recipe
// (FailedPrecondition) or lies past max_resume_step (a fresh start). Batches
// and dropout masks are pure functions of (seed, step, micro-batch), so the
// step is the whole data cursor: on CPU the resumed run reproduces the
// uninterrupted run's later losses bitwise; on CUDA it draws the same batches
// and masks. A resumed run, even one resumed from its final checkpoint,
// reports whole-trial numbers (curve, tokens_per_second, final losses,
// attention distance) as the uninterrupted run does.
//
// Threads: on the CPU, Train sets LibTorch's and OpenBLAS's thread counts for
// the process (see cpu_threading); with kShards it runs its own threads.
//
// Thread-safety: Train may run on any thread; the observer is called from
// that thread only.
#ifndef PRISM_MODEL_TRAINER_H_
#define PRISM_MODEL_TRAINER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"

namespace prism::model {

// AttentionMode is the attention kernel a run asks for (TrainConfig's
// attention): kAuto times the candidates on the CPU and takes the fastest.
enum class AttentionMode { kAuto, kFused, kMasked, kSdpa };

// ParseAttentionMode reads "auto", "fused", "masked" or "sdpa"; anything
// else is InvalidArgument naming the value and the accepted ones.
absl::StatusOr<AttentionMode> ParseAttentionMode(absl::string_view name);

// AttentionModeName is the name ParseAttentionMode reads for `mode`.
absl::string_view AttentionModeName(AttentionMode mode);

// CpuThreading is how a CPU run uses its threads: kShards splits each
// micro-batch over that many single-threaded shards (fastest here, see
// bench/RESULTS.md); kBlas runs one shard with OpenBLAS on every thread and
// LibTorch on one; kBoth gives every thread to both.
enum class CpuThreading { kShards, kBlas, kBoth };

// ParseCpuThreading reads "shards", "blas" or "both"; anything else is
// InvalidArgument naming the value and the accepted ones.
absl::StatusOr<CpuThreading> ParseCpuThreading(absl::string_view name);

struct TrainConfig {
  ModelShape shape;
  Schedule schedule;  // must satisfy the hard constraints for `shape`
  // Token shard files or directories (llm.c format). Empty train: the demo
  // corpus (see data.h). Empty val: a train directory's val shard, else the
  // train shards' held-out tail (see TokenDataset::Open).
  std::vector<std::string> train_paths;
  std::vector<std::string> val_paths;

  int64_t steps = 200;
  int batch_size = 8;  // sequences per micro-batch
  int grad_accum = 1;
  int context = 0;       // 0: shape.context
  int eval_every = 50;   // steps between val evaluations (and at the end)
  int eval_batches = 4;  // fixed val batches per evaluation
  int log_every = 10;    // steps between train-loss points
  double learning_rate = 1e-3;
  double min_lr_ratio = 0.1;
  int warmup_steps = 20;
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  std::vector<double> loss_targets;  // convergence milestones (val loss)
  uint64_t seed = 0;

  std::string device = "auto";  // "auto", "cpu", "cuda", "cuda:N"
  int threads = 0;              // 0: all cores
  std::string checkpoint_dir;   // "" disables checkpoints
  int checkpoint_every = 0;     // 0: only at the end
  bool resume = false;          // continue from checkpoint_dir's latest
  // With resume: a checkpoint past this step is not resumed; the run starts
  // from step 0 instead (TrainResult::discarded_checkpoint_step), and its
  // first checkpoint replaces it. The worker passes the last step whose
  // points the coordinator stored, so a resumed curve never has a gap.
  // Negative: no limit.
  int64_t max_resume_step = -1;
  // Stop after this step (0: train all `steps`), keeping `steps`' learning
  // rate schedule, and write the final checkpoint there: the run is the
  // uninterrupted run's prefix, so a later run resumed from that checkpoint
  // continues it exactly (an ASHA rung). A multiple of eval_every below
  // steps, so the run ends on a val loss.
  int64_t stop_at_step = 0;
  bool measure_attention = true;
  bool measure_mfu = true;
  // Attention kernel: auto, fused, masked (explicit masked softmax) or sdpa
  // (see AttentionMode; ParseAttentionMode reads the names). On the CPU,
  // auto times the fused kernel at every
  // instruction set the CPU has and the masked path for this run's shape and
  // threads (a fraction of a second at start) and trains with the fastest;
  // on CUDA it is SDPA with LibTorch 2.x, else masked. "fused" runs the
  // fused kernel at the widest instruction set. The PRISM_ISA environment
  // variable (baseline, avx2, avx512) forces the fused kernel's level for
  // auto and fused alike (see model/internal/kernels.h).
  AttentionMode attention = AttentionMode::kAuto;
  // How the CPU uses `threads` (see CpuThreading). Ignored on CUDA.
  CpuThreading cpu_threading = CpuThreading::kShards;
};

// AttentionTiming is one candidate's forward + backward time over every
// layer, as measured by attention "auto" at the start of a run.
struct AttentionTiming {
  std::string kernel;  // "fused" or "masked"
  std::string isa;     // the fused kernel's instruction set; "" otherwise
  double milliseconds = 0.0;
};

enum class CurveSplit { kTrain, kVal };

struct CurvePoint {
  CurveSplit split = CurveSplit::kTrain;
  int64_t step = 0;
  float loss = 0.0f;
  float learning_rate = 0.0f;
  double tokens_per_second = 0.0;
  double elapsed_seconds = 0.0;
};

struct Milestone {
  double target = 0.0;
  int64_t step = -1;  // -1: never reached
};

struct TrainResult {
  std::vector<CurvePoint> curve;  // every point emitted, in order
  double final_val_loss = 0.0;
  double min_val_loss = 0.0;
  double final_train_loss = 0.0;
  int64_t steps = 0;              // steps completed
  int64_t resumed_from_step = 0;  // 0: fresh start
  // The step of a checkpoint not resumed because it lay past
  // TrainConfig::max_resume_step; 0 if none.
  int64_t discarded_checkpoint_step = 0;
  // Checkpoints not written because BeforeCheckpoint returned false.
  int64_t checkpoints_skipped = 0;
  double tokens_per_second = 0.0;  // over every step of the trial
  // The share of its cores the CPU run got while it stepped: the process's
  // CPU seconds over (stepping seconds x the threads it trains with), over
  // every step of the trial, like tokens_per_second. About 1 when nothing
  // else ran on those cores, about 0.5 beside one equally busy process. 0:
  // not measured (a CUDA run, or one resumed from a checkpoint written
  // before it was recorded).
  double cpu_share = 0.0;
  // MFU: model FLOP/s (flops_per_token x tokens_per_second) over
  // peak_matmul_flops, at most 1. The peak is the matmul measurement, or the
  // model FLOP/s themselves when they beat it; then the measurement, kept in
  // measured_peak_matmul_flops, is the lower number (see internal/mfu.h).
  double mfu = 0.0;
  double peak_matmul_flops = 0.0;
  double measured_peak_matmul_flops = 0.0;
  int64_t flops_per_token = 0;
  int64_t peak_memory_bytes = 0;
  int64_t parameters = 0;
  int64_t parameters_nanogpt = 0;
  std::vector<Milestone> milestones;
  std::vector<double> attention_distance;  // per layer, tokens
  bool diverged = false;
  int64_t diverged_step = 0;
  bool stopped = false;  // the observer asked to stop
  double wall_seconds = 0.0;
  std::string device;
  // The attention path trained with: "fused", "masked" or "sdpa", and for
  // "fused" its instruction set ("avx512", "avx2", "baseline"; "" for the
  // others). attention_timings lists what "auto" measured to choose it
  // (empty when nothing was timed: an explicit kernel, CUDA, one candidate).
  std::string attention_kernel;
  std::string isa;
  std::vector<AttentionTiming> attention_timings;
};

// TrainObserver receives progress as it happens. Default methods do nothing.
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  // OnStart is called once the model is built (and any checkpoint loaded).
  virtual void OnStart(const TrainConfig& config, int64_t start_step) {
    (void)config;
    (void)start_step;
  }
  virtual void OnPoint(const CurvePoint& point) { (void)point; }
  // OnStep is called after every optimizer step.
  virtual void OnStep(int64_t step, double loss, double tokens_per_second) {
    (void)step;
    (void)loss;
    (void)tokens_per_second;
  }
  // BeforeCheckpoint is called before the checkpoint for `step` is written,
  // after every point up to `step` (train and val) went to OnPoint, and
  // returns whether it may be written. The worker waits here until the
  // coordinator stored those points and returns false when it could not
  // make sure of that: the trainer then skips this checkpoint (the previous
  // one stays as it was, TrainResult::checkpoints_skipped counts it) and
  // carries on, or stops if it was the stop checkpoint. So a checkpoint is
  // never ahead of the stored curve.
  virtual bool BeforeCheckpoint(int64_t step) {
    (void)step;
    return true;
  }
  // OnCheckpoint is called once the checkpoint for `step` is written.
  virtual void OnCheckpoint(int64_t step) { (void)step; }
  // ShouldStop is polled every step; true ends the run early (stopped=true)
  // after writing a checkpoint (if BeforeCheckpoint allows it).
  virtual bool ShouldStop() { return false; }
};

// MeasurePeakMatmulFlops times matmuls the way TrainResult's MFU reference
// is measured (fp32 on the CPU with `threads` shard threads, 0 = all cores;
// bf16 on CUDA) and returns FLOP/s, measured afresh on every call (about a
// quarter second on the CPU). InvalidArgument / FailedPrecondition for a bad
// device, as Train.
absl::StatusOr<double> MeasurePeakMatmulFlops(const std::string& device,
                                              int threads);

// Train runs one trial. Returns InvalidArgument for a bad config (named
// field), NotFound / DataLoss for missing or corrupt data (file and offset),
// Internal for a LibTorch error (message, no stack trace).
absl::StatusOr<TrainResult> Train(const TrainConfig& config,
                                  TrainObserver* observer);

}  // namespace prism::model

#endif  // PRISM_MODEL_TRAINER_H_
