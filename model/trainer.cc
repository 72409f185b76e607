#include "model/trainer.h"

#include <ATen/autocast_mode.h>
#include <time.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "model/data.h"
#include "model/internal/attention.h"
#include "model/internal/attention_tuner.h"
#include "model/internal/checkpoint.h"
#include "model/internal/cpu_allocator.h"
#include "model/internal/decoder.h"
#include "model/internal/heap.h"
#include "model/internal/mfu.h"
#include "model/internal/optimizer.h"
#include "model/internal/runtime.h"
#include "model/internal/shard_pool.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/space.h"

namespace prism::model {
namespace {

using internal::Checkpoint;
using internal::CheckpointIdentity;
using internal::FlatAdamW;
using internal::PrismDecoder;
using internal::ShardPool;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// ProcessCpuSeconds is the CPU time of every thread of this process so far.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

absl::Status Invalid(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, " ", problem));
}

absl::Status ValidateConfig(const TrainConfig& c) {
  if (absl::Status s = ValidateShape(c.shape); !s.ok()) return s;
  SpaceSpec spec;
  spec.d_model = c.shape.d_model;
  spec.layers = c.shape.layers;
  spec.base_heads = c.shape.base_heads;
  if (absl::Status s = CheckHardConstraints(spec, c.schedule); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule '", c.schedule.ToString(), "': ", s.message()));
  }
  if (c.steps <= 0) return Invalid("steps", "must be positive");
  if (c.batch_size <= 0) return Invalid("batch_size", "must be positive");
  if (c.grad_accum <= 0) return Invalid("grad_accum", "must be positive");
  if (c.context < 0 || c.context > c.shape.context) {
    return Invalid("context", absl::StrCat("must be in [0, ", c.shape.context,
                                           "], got ", c.context));
  }
  if (c.eval_every <= 0) return Invalid("eval_every", "must be positive");
  if (c.eval_batches <= 0) return Invalid("eval_batches", "must be positive");
  if (c.log_every <= 0) return Invalid("log_every", "must be positive");
  if (!(c.learning_rate > 0.0) || !std::isfinite(c.learning_rate)) {
    return Invalid("learning_rate", "must be positive");
  }
  if (!(c.min_lr_ratio >= 0.0 && c.min_lr_ratio <= 1.0)) {
    return Invalid("min_lr_ratio", "must be in [0, 1]");
  }
  if (c.warmup_steps < 0) return Invalid("warmup_steps", "must be >= 0");
  if (!(c.weight_decay >= 0.0)) return Invalid("weight_decay", "must be >= 0");
  if (!(c.grad_clip > 0.0)) return Invalid("grad_clip", "must be positive");
  if (c.threads < 0) return Invalid("threads", "must be >= 0");
  if (c.checkpoint_every < 0) {
    return Invalid("checkpoint_every", "must be >= 0");
  }
  if (c.stop_at_step < 0 || c.stop_at_step >= c.steps ||
      c.stop_at_step % c.eval_every != 0) {
    return Invalid(
        "stop_at_step",
        absl::StrCat("must be 0 or a multiple of eval_every (", c.eval_every,
                     ") below steps (", c.steps, "), got ", c.stop_at_step));
  }
  if (c.resume && c.checkpoint_dir.empty()) {
    return Invalid("resume", "needs a checkpoint_dir");
  }
  return absl::OkStatus();
}

// LearningRate is nanoGPT's schedule for the update with 0-based index
// `step`: linear warmup, then cosine decay to min_lr_ratio * learning_rate.
double LearningRate(const TrainConfig& c, int64_t step) {
  const double max_lr = c.learning_rate;
  const double min_lr = max_lr * c.min_lr_ratio;
  if (step < c.warmup_steps) {
    return max_lr * static_cast<double>(step + 1) / (c.warmup_steps + 1);
  }
  const double span = std::max<int64_t>(1, c.steps - c.warmup_steps);
  const double ratio = std::min(1.0, (step - c.warmup_steps) / span);
  return min_lr + 0.5 * (1.0 + std::cos(M_PI * ratio)) * (max_lr - min_lr);
}

// AutocastScope turns on bf16 autocast for CUDA work on this thread and
// drops the cast-weight cache when it ends (the weights change every step).
class AutocastScope {
 public:
  explicit AutocastScope(const torch::Device& device)
      : enabled_(device.is_cuda()) {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
#else
    at::autocast::set_enabled(true);
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
#endif
  }
  ~AutocastScope() {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
};

// Rows [first, last) of a batch of `rows` belong to shard s of n.
std::pair<int, int> ShardRows(int rows, int n, int s) {
  return {rows * s / n, rows * (s + 1) / n};
}

// TrainingRun is one call of Train: setup, the step loop, the measurements.
class TrainingRun {
 public:
  TrainingRun(const TrainConfig& config, TrainObserver* observer)
      : config_(config), observer_(observer) {}

  absl::StatusOr<TrainResult> Execute();

 private:
  absl::Status Setup();
  // ChooseAttention sets kernel_ from config_.attention (timing the
  // candidates for kAuto on the CPU) and records the choice in result_.
  absl::Status ChooseAttention();
  absl::Status Resume();
  // AdoptKernel switches an auto-chosen kernel to the one a checkpoint was
  // trained with (its AttentionKernelKey), when this CPU has it.
  void AdoptKernel(const std::string& key);
  // TrainStep runs forward and backward for update `step` (0-based) and
  // returns the mean train loss; NaN or inf means divergence.
  double TrainStep(int64_t step);
  double Evaluate();
  std::vector<double> ProbeAttention();
  // Identity is this run's checkpoint identity (set up by Setup).
  CheckpointIdentity Identity() const;
  // WriteCheckpoint writes the checkpoint for `step` unless the observer
  // vetoes it (then it counts a skipped checkpoint and returns OK).
  absl::Status WriteCheckpoint(int64_t step);
  // Batch fills (rows, T) inputs and targets from `window(row)`.
  std::pair<torch::Tensor, torch::Tensor> Batch(
      int first, int last, const std::function<const uint16_t*(int)>& window);
  void AddPoint(CurveSplit split, int64_t step, double loss, double lr,
                double tokens_per_second);
  double Elapsed() const {
    return elapsed_before_ + Seconds(Clock::now() - start_);
  }

  TrainConfig config_;
  TrainObserver* observer_;
  int context_ = 0;
  torch::Device device_ = torch::kCPU;
  internal::AttentionKernel kernel_ = internal::AttentionKernel::kAuto;
  std::unique_ptr<ShardPool> pool_;
  int blas_threads_ = 1;  // OpenBLAS threads per shard
  std::optional<TokenDataset> data_;
  PrismDecoder model_{nullptr};
  std::unique_ptr<FlatAdamW> optimizer_;
  std::string recipe_;  // internal::RecipeKey of this run
  TrainResult result_;
  int64_t start_step_ = 0;
  bool seen_val_ = false;  // min_val_loss holds a real value
  double elapsed_before_ = 0.0;
  // Whole-trial training time and tokens (checkpointed, so a resumed run's
  // tokens_per_second covers every step), and the train-loss window since
  // the last train point.
  double train_seconds_ = 0.0;
  int64_t train_tokens_ = 0;
  // The process CPU seconds of those steps, and the threads they may use
  // (TrainResult::cpu_share); cpu_measured_ is false on CUDA and after a
  // resume from a checkpoint that did not record them.
  double train_cpu_seconds_ = 0.0;
  int cpu_threads_ = 0;
  bool cpu_measured_ = false;
  double window_loss_ = 0.0;
  double window_seconds_ = 0.0;
  int64_t window_steps_ = 0;
  Clock::time_point start_;
};

absl::Status TrainingRun::Setup() {
  if (absl::Status s = ValidateConfig(config_); !s.ok()) return s;
  context_ = config_.context > 0 ? config_.context : config_.shape.context;
  absl::StatusOr<torch::Device> device =
      internal::ResolveDevice(config_.device);
  if (!device.ok()) return device.status();
  device_ = *device;
  cpu_measured_ = device_.is_cpu();

  // CPU "shards": one shard thread per core, each single-threaded in
  // LibTorch and OpenBLAS (see shard_pool.h). CUDA: one shard; CPU threads
  // for LibTorch.
  const int threads =
      config_.threads > 0 ? config_.threads : internal::HardwareThreads();
  // Every step frees and reallocates the same activations: keep their pages
  // (see heap.h), on every thread (see cpu_allocator.h).
  if (device_.is_cpu()) {
    internal::RetainFreedHeapMemory();
    internal::UseCachingCpuAllocator();
  }
  if (device_.is_cpu() && config_.cpu_threading == CpuThreading::kShards) {
    internal::SetBlasThreads(1);
    at::set_num_threads(1);
    pool_ = std::make_unique<ShardPool>(std::min(threads, config_.batch_size));
    cpu_threads_ = pool_->size();
  } else if (device_.is_cpu()) {
    internal::SetBlasThreads(threads);
    at::set_num_threads(config_.cpu_threading == CpuThreading::kBoth ? threads
                                                                     : 1);
    pool_ = std::make_unique<ShardPool>(1);
    blas_threads_ = threads;
    cpu_threads_ = threads;
  } else {
    internal::SetBlasThreads(threads);
    at::set_num_threads(threads);
    torch::manual_seed(config_.seed);
    pool_ = std::make_unique<ShardPool>(1);
  }

  if (absl::Status s = ChooseAttention(); !s.ok()) return s;

  std::vector<std::string> train = config_.train_paths;
  std::vector<std::string> val = config_.val_paths;
  if (train.empty()) {
    absl::StatusOr<CorpusFiles> corpus = EnsureDemoCorpus(DefaultDataDir());
    if (!corpus.ok()) return corpus.status();
    train = {corpus->train};
    if (val.empty()) val = {corpus->val};
  }
  recipe_ = internal::RecipeKey(config_, context_, train, val);
  absl::StatusOr<TokenDataset> data =
      TokenDataset::Open(train, val, config_.shape.vocab_size, context_);
  if (!data.ok()) return data.status();
  data_.emplace(*std::move(data));

  model_ = PrismDecoder(config_.shape, config_.schedule);
  model_->InitializeWeights(config_.seed);
  model_->to(device_);
  model_->train();
  internal::AdamWOptions adam;
  adam.weight_decay = config_.weight_decay;
  optimizer_ = std::make_unique<FlatAdamW>(model_->DecayedParameters(),
                                           model_->OtherParameters(), adam);
  // Backward accumulates straight into the flat gradient buffer.
  for (size_t i = 0; i < optimizer_->parameters().size(); ++i) {
    torch::Tensor p = optimizer_->parameters()[i];
    p.mutable_grad() = optimizer_->gradients()[i];
  }

  const ParameterCounts counts = CountParameters(config_.shape);
  result_.parameters = optimizer_->flat_parameters().numel();
  result_.parameters_nanogpt =
      result_.parameters - (counts.total - counts.nanogpt);
  ModelShape measured = config_.shape;
  measured.context = context_;
  result_.flops_per_token = 3 * ForwardFlopsPerToken(measured);
  result_.device =
      device_.is_cpu()
          ? absl::StrCat("cpu (", pool_->size(),
                         pool_->size() == 1 ? " thread)" : " threads)")
          : device_.str();
  for (double target : config_.loss_targets) {
    result_.milestones.push_back({target, -1});
  }
  return absl::OkStatus();
}

absl::Status TrainingRun::ChooseAttention() {
  // PRISM_ISA is checked whatever the kernel, so a typo fails every run.
  absl::StatusOr<internal::Isa> isa = internal::IsaFromEnvironment();
  if (!isa.ok()) return isa.status();
  const bool cpu32 = device_.is_cpu();
  if (config_.attention == AttentionMode::kFused) {
    if (!cpu32) {
      return Invalid("attention",
                     "'fused' is the CPU kernel; use auto or sdpa");
    }
    kernel_ = internal::FusedAt(*isa);
  } else if (config_.attention == AttentionMode::kMasked) {
    kernel_ = internal::AttentionKernel::kMaskedSoftmax;
  } else if (config_.attention == AttentionMode::kSdpa) {
    kernel_ = internal::AttentionKernel::kSdpa;
  } else if (!cpu32) {
    kernel_ = internal::kHaveSdpa ? internal::AttentionKernel::kSdpa
                                  : internal::AttentionKernel::kMaskedSoftmax;
  } else {
    // Time the candidates as one shard runs them: its rows, this thread's
    // LibTorch setting (1 in "shards", see above).
    internal::AttentionShape shape;
    shape.rows = std::max(1, config_.batch_size / pool_->size());
    shape.context = context_;
    shape.channels = config_.shape.d_model;
    for (int heads : config_.schedule.heads()) {
      shape.layer_heads.push_back(heads);
    }
    const char* forced = std::getenv("PRISM_ISA");
    const bool isa_forced = forced != nullptr && *forced != '\0';
    const internal::AttentionChoice choice = internal::ChooseAttentionKernel(
        shape,
        internal::AttentionCandidates(
            isa_forced ? std::optional<internal::Isa>(*isa) : std::nullopt));
    kernel_ = choice.kernel;
    for (const internal::AttentionTiming& t : choice.timings) {
      const std::optional<internal::Isa> level = internal::FusedLevel(t.kernel);
      result_.attention_timings.push_back(
          {internal::AttentionKernelName(t.kernel),
           level ? internal::IsaName(*level) : "", t.milliseconds});
    }
  }
  result_.attention_kernel = internal::AttentionKernelName(kernel_);
  const std::optional<internal::Isa> level = internal::FusedLevel(kernel_);
  result_.isa = level ? internal::IsaName(*level) : "";
  return absl::OkStatus();
}

CheckpointIdentity TrainingRun::Identity() const {
  CheckpointIdentity identity;
  identity.shape = internal::ShapeKey(config_.shape);
  identity.schedule = config_.schedule.ToString();
  identity.seed = config_.seed;
  identity.recipe = recipe_;
  return identity;
}

absl::Status TrainingRun::Resume() {
  if (!config_.resume) return absl::OkStatus();
  absl::StatusOr<std::optional<Checkpoint>> loaded =
      internal::LoadCheckpoint(config_.checkpoint_dir, Identity());
  if (!loaded.ok()) return loaded.status();
  if (!loaded->has_value()) return absl::OkStatus();
  Checkpoint& checkpoint = **loaded;
  if (config_.max_resume_step >= 0 &&
      checkpoint.step > config_.max_resume_step) {
    // Its curve runs past what the caller stored: resuming would leave the
    // steps in between without points. This run's first checkpoint replaces
    // the file.
    result_.discarded_checkpoint_step = checkpoint.step;
    return absl::OkStatus();
  }
  if (checkpoint.parameters.numel() != optimizer_->flat_parameters().numel()) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint in ", config_.checkpoint_dir, " has ",
                     checkpoint.parameters.numel(), " parameters, the model ",
                     optimizer_->flat_parameters().numel()));
  }
  torch::NoGradGuard no_grad;
  optimizer_->flat_parameters().copy_(checkpoint.parameters);
  optimizer_->exp_avg().copy_(checkpoint.exp_avg);
  optimizer_->exp_avg_sq().copy_(checkpoint.exp_avg_sq);
  optimizer_->set_step_count(checkpoint.adam_steps);
  start_step_ = checkpoint.step;
  result_.resumed_from_step = checkpoint.step;
  result_.curve = std::move(checkpoint.curve);
  if (!checkpoint.milestones.empty()) {
    result_.milestones = std::move(checkpoint.milestones);
  }
  for (const CurvePoint& point : result_.curve) {
    seen_val_ = seen_val_ || point.split == CurveSplit::kVal;
  }
  result_.min_val_loss = checkpoint.min_val_loss;
  result_.final_val_loss = checkpoint.final_val_loss;
  result_.final_train_loss = checkpoint.final_train_loss;
  elapsed_before_ = checkpoint.elapsed_seconds;
  train_seconds_ = checkpoint.train_seconds;
  train_tokens_ = checkpoint.train_tokens;
  train_cpu_seconds_ = checkpoint.train_cpu_seconds;
  cpu_measured_ = cpu_measured_ && checkpoint.train_cpu_seconds >= 0.0;
  window_loss_ = checkpoint.window_loss;
  window_seconds_ = checkpoint.window_seconds;
  window_steps_ = checkpoint.window_steps;
  AdoptKernel(checkpoint.attention_kernel);
  return absl::OkStatus();
}

void TrainingRun::AdoptKernel(const std::string& key) {
  // Only a measured choice gives way: a kernel the caller named stays.
  if (key.empty() || config_.attention != AttentionMode::kAuto ||
      !device_.is_cpu() || key == internal::AttentionKernelKey(kernel_)) {
    return;
  }
  absl::StatusOr<internal::Isa> isa = internal::IsaFromEnvironment();
  const char* forced = std::getenv("PRISM_ISA");
  const bool isa_forced = isa.ok() && forced != nullptr && *forced != '\0';
  const std::optional<internal::AttentionKernel> kernel =
      internal::KernelFromKey(
          key,
          internal::AttentionCandidates(
              isa_forced ? std::optional<internal::Isa>(*isa) : std::nullopt));
  // A level this CPU lacks: the timed choice trains on, and the curve
  // differs from an uninterrupted run's in float rounding.
  if (!kernel.has_value()) return;
  kernel_ = *kernel;
  result_.attention_kernel = internal::AttentionKernelName(kernel_);
  const std::optional<internal::Isa> level = internal::FusedLevel(kernel_);
  result_.isa = level ? internal::IsaName(*level) : "";
}

std::pair<torch::Tensor, torch::Tensor> TrainingRun::Batch(
    int first, int last, const std::function<const uint16_t*(int)>& window) {
  const int rows = last - first;
  torch::Tensor inputs = torch::empty({rows, context_}, torch::kInt64);
  torch::Tensor targets = torch::empty({rows, context_}, torch::kInt64);
  int64_t* in = inputs.data_ptr<int64_t>();
  int64_t* out = targets.data_ptr<int64_t>();
  for (int r = 0; r < rows; ++r) {
    const uint16_t* w = window(first + r);
    for (int t = 0; t < context_; ++t) {
      in[r * context_ + t] = w[t];
      out[r * context_ + t] = w[t + 1];
    }
  }
  return {inputs.to(device_), targets.to(device_)};
}

double TrainingRun::TrainStep(int64_t step) {
  optimizer_->ZeroGrad();
  const int shards = pool_->size();
  const double scale = 1.0 / (static_cast<double>(config_.batch_size) *
                              context_ * config_.grad_accum);
  const std::vector<torch::Tensor>& params = optimizer_->parameters();
  std::vector<double> shard_loss(shards, 0.0);
  std::vector<std::vector<torch::Tensor>> shard_grads(shards);
  double loss = 0.0;
  for (int micro = 0; micro < config_.grad_accum; ++micro) {
    if (config_.shape.dropout > 0.0f && device_.is_cuda()) {
      // CUDA draws dropout masks from the device's default generator (one
      // shard runs there). Its state is not checkpointed, so reseed it per
      // (seed, step, micro-batch), as at::manual_seed seeds it: the masks are
      // then a function of the step like the CPU's per-shard generators, and
      // a resumed run draws the same masks as an uninterrupted one.
      at::Generator generator = at::globalContext().defaultGenerator(device_);
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_current_seed(
          MixBits(config_.seed, static_cast<uint64_t>(step),
                  static_cast<uint64_t>(micro), 0x5eed0000u));
    }
    pool_->Run([&](int s) {
      const auto [first, last] = ShardRows(config_.batch_size, shards, s);
      if (first == last) return;
      auto [inputs, targets] = Batch(first, last, [&](int row) {
        return data_->TrainWindow(config_.seed, step, micro, row);
      });
      std::optional<at::Generator> dropout;
      if (config_.shape.dropout > 0.0f && device_.is_cpu()) {
        dropout = at::detail::createCPUGenerator(
            MixBits(config_.seed, static_cast<uint64_t>(step),
                    static_cast<uint64_t>(micro), 0x5eed0000u + s));
      }
      torch::Tensor shard_loss_tensor;
      {
        AutocastScope autocast(device_);
        shard_loss_tensor =
            model_->Loss(inputs, targets, kernel_, dropout) * scale;
      }
      shard_loss[s] = shard_loss_tensor.item<double>();
      if (shards == 1) {
        shard_loss_tensor.backward();
      } else {
        shard_grads[s] = torch::autograd::grad({shard_loss_tensor}, params);
      }
    });
    if (shards > 1) {
      // Each thread sums a fixed subset of tensors, shards in order.
      pool_->Run([&](int s) {
        torch::NoGradGuard no_grad;
        for (size_t i = s; i < params.size(); i += shards) {
          for (int k = 0; k < shards; ++k) {
            if (!shard_grads[k].empty()) {
              optimizer_->gradients()[i].add_(shard_grads[k][i]);
            }
          }
        }
      });
      for (auto& grads : shard_grads) grads.clear();
    }
    for (double l : shard_loss) loss += l;
    std::fill(shard_loss.begin(), shard_loss.end(), 0.0);
  }
  return loss;
}

double TrainingRun::Evaluate() {
  model_->eval();
  const int shards = pool_->size();
  const int rows = config_.batch_size;
  const int64_t windows = int64_t{config_.eval_batches} * rows;
  std::vector<double> sums(shards, 0.0);
  pool_->Run([&](int s) {
    torch::NoGradGuard no_grad;
    const auto [first, last] = ShardRows(rows, shards, s);
    if (first == last) return;
    for (int b = 0; b < config_.eval_batches; ++b) {
      auto [inputs, targets] = Batch(first, last, [&](int row) {
        return data_->ValWindow(int64_t{b} * rows + row, windows);
      });
      AutocastScope autocast(device_);
      sums[s] += model_->Loss(inputs, targets, kernel_).item<double>();
    }
  });
  model_->train();
  double total = 0.0;
  for (double s : sums) total += s;
  return total / (static_cast<double>(windows) * context_);
}

std::vector<double> TrainingRun::ProbeAttention() {
  model_->eval();
  const int shards = pool_->size();
  const int rows = config_.batch_size;
  const int64_t windows = int64_t{config_.eval_batches} * rows;
  std::vector<std::vector<double>> sums(shards);
  pool_->Run([&](int s) {
    const auto [first, last] = ShardRows(rows, shards, s);
    if (first == last) return;
    sums[s].assign(config_.shape.layers, 0.0);
    for (int b = 0; b < config_.eval_batches; ++b) {
      auto [inputs, targets] = Batch(first, last, [&](int row) {
        return data_->ValWindow(int64_t{b} * rows + row, windows);
      });
      // fp32 throughout (no autocast): the probe measures, it does not train.
      const std::vector<double> mean = model_->AttentionDistances(inputs);
      // Each layer's mean is over this chunk's rows; weight by them.
      for (size_t l = 0; l < mean.size(); ++l) {
        sums[s][l] += mean[l] * (last - first);
      }
    }
  });
  model_->train();
  std::vector<double> distance(config_.shape.layers, 0.0);
  for (const std::vector<double>& shard : sums) {
    for (size_t l = 0; l < shard.size(); ++l) distance[l] += shard[l];
  }
  for (double& d : distance) d /= static_cast<double>(windows);
  return distance;
}

absl::Status TrainingRun::WriteCheckpoint(int64_t step) {
  if (config_.checkpoint_dir.empty()) return absl::OkStatus();
  if (!observer_->BeforeCheckpoint(step)) {
    ++result_.checkpoints_skipped;
    return absl::OkStatus();
  }
  Checkpoint checkpoint;
  checkpoint.identity = Identity();
  checkpoint.step = step;
  checkpoint.adam_steps = optimizer_->step_count();
  checkpoint.parameters = optimizer_->flat_parameters();
  checkpoint.exp_avg = optimizer_->exp_avg();
  checkpoint.exp_avg_sq = optimizer_->exp_avg_sq();
  checkpoint.curve = result_.curve;
  checkpoint.milestones = result_.milestones;
  checkpoint.elapsed_seconds = Elapsed();
  checkpoint.attention_kernel = internal::AttentionKernelKey(kernel_);
  checkpoint.min_val_loss = result_.min_val_loss;
  checkpoint.final_val_loss = result_.final_val_loss;
  checkpoint.final_train_loss = result_.final_train_loss;
  checkpoint.train_seconds = train_seconds_;
  checkpoint.train_tokens = train_tokens_;
  checkpoint.train_cpu_seconds = cpu_measured_ ? train_cpu_seconds_ : -1.0;
  checkpoint.window_loss = window_loss_;
  checkpoint.window_seconds = window_seconds_;
  checkpoint.window_steps = window_steps_;
  if (absl::Status s =
          internal::SaveCheckpoint(config_.checkpoint_dir, checkpoint);
      !s.ok()) {
    return s;
  }
  observer_->OnCheckpoint(step);
  return absl::OkStatus();
}

void TrainingRun::AddPoint(CurveSplit split, int64_t step, double loss,
                           double lr, double tokens_per_second) {
  CurvePoint point;
  point.split = split;
  point.step = step;
  point.loss = static_cast<float>(loss);
  point.learning_rate = static_cast<float>(lr);
  point.tokens_per_second = tokens_per_second;
  point.elapsed_seconds = Elapsed();
  result_.curve.push_back(point);
  if (split == CurveSplit::kVal) {
    result_.min_val_loss =
        seen_val_ ? std::min(result_.min_val_loss, loss) : loss;
    seen_val_ = true;
    result_.final_val_loss = loss;
    for (Milestone& m : result_.milestones) {
      if (m.step < 0 && loss <= m.target) m.step = step;
    }
  } else {
    result_.final_train_loss = loss;
  }
  observer_->OnPoint(point);
}

absl::StatusOr<TrainResult> TrainingRun::Execute() {
  const Clock::time_point wall_start = Clock::now();
  start_ = wall_start;
  if (absl::Status s = Setup(); !s.ok()) return s;
  if (absl::Status s = Resume(); !s.ok()) return s;
  start_ = Clock::now();
  observer_->OnStart(config_, start_step_);

  const int64_t tokens_per_step =
      int64_t{config_.batch_size} * context_ * config_.grad_accum;
  if (start_step_ == 0) {
    AddPoint(CurveSplit::kVal, 0, Evaluate(), LearningRate(config_, 0), 0.0);
  }
  int64_t done = start_step_;
  const int64_t end =
      config_.stop_at_step > 0 ? config_.stop_at_step : config_.steps;
  while (done < end) {
    const int64_t step = done;
    const double lr = LearningRate(config_, step);
    const Clock::time_point t0 = Clock::now();
    const double cpu0 = ProcessCpuSeconds();
    const double loss = TrainStep(step);
    const double norm =
        std::isfinite(loss)
            ? optimizer_->Step(lr, config_.grad_clip, pool_.get())
            : std::numeric_limits<double>::quiet_NaN();
    if (!std::isfinite(loss) || !std::isfinite(norm)) {
      result_.diverged = true;
      result_.diverged_step = step + 1;
      break;
    }
    const double seconds = Seconds(Clock::now() - t0);
    done = step + 1;
    train_seconds_ += seconds;
    train_tokens_ += tokens_per_step;
    train_cpu_seconds_ += ProcessCpuSeconds() - cpu0;
    window_loss_ += loss;
    window_seconds_ += seconds;
    ++window_steps_;
    observer_->OnStep(done, loss,
                      train_tokens_ / std::max(train_seconds_, 1e-9));
    if (done % config_.log_every == 0 || done == config_.steps) {
      AddPoint(
          CurveSplit::kTrain, done, window_loss_ / window_steps_, lr,
          window_steps_ * tokens_per_step / std::max(window_seconds_, 1e-9));
      window_loss_ = window_seconds_ = 0.0;
      window_steps_ = 0;
    }
    if (done % config_.eval_every == 0 || done == config_.steps) {
      const double val_loss = Evaluate();
      // A val loss that is not finite (as a float: that is how points are
      // stored) is a divergence too; the point is not emitted.
      if (!std::isfinite(static_cast<float>(val_loss))) {
        result_.diverged = true;
        result_.diverged_step = done;
        done = step;  // as for a train loss: the steps before the bad one
        break;
      }
      AddPoint(CurveSplit::kVal, done, val_loss, lr,
               train_tokens_ / std::max(train_seconds_, 1e-9));
    }
    if (observer_->ShouldStop()) {
      if (absl::Status s = WriteCheckpoint(done); !s.ok()) return s;
      result_.stopped = true;
      break;
    }
    if (config_.checkpoint_every > 0 && done % config_.checkpoint_every == 0 &&
        done < end) {
      if (absl::Status s = WriteCheckpoint(done); !s.ok()) return s;
    }
  }
  result_.steps = done;
  // A run resumed from its final checkpoint trained nothing new to save.
  if (!result_.diverged && !result_.stopped && done > start_step_) {
    if (absl::Status s = WriteCheckpoint(done); !s.ok()) return s;
  }
  result_.tokens_per_second =
      train_seconds_ > 0.0 ? train_tokens_ / train_seconds_ : 0.0;
  if (cpu_measured_ && train_seconds_ > 0.0 && cpu_threads_ > 0) {
    result_.cpu_share = train_cpu_seconds_ / (train_seconds_ * cpu_threads_);
  }
  // The probe is a deterministic function of the weights, so a run resumed
  // from its final checkpoint measures the same distances again.
  if (!result_.diverged && !result_.stopped && config_.measure_attention) {
    result_.attention_distance = ProbeAttention();
  }
  if (config_.measure_mfu && result_.tokens_per_second > 0.0) {
    const internal::MfuReference reference = internal::ChooseMfuReference(
        static_cast<double>(result_.flops_per_token) *
            result_.tokens_per_second,
        internal::MeasurePeakMatmulFlops(device_, pool_.get(), blas_threads_));
    result_.peak_matmul_flops = reference.peak;
    result_.measured_peak_matmul_flops = reference.measured_peak;
    result_.mfu = reference.mfu;
  }
  result_.peak_memory_bytes = internal::PeakMemoryBytes(device_);
  result_.wall_seconds = elapsed_before_ + Seconds(Clock::now() - wall_start);
  return std::move(result_);
}

}  // namespace

absl::StatusOr<double> MeasurePeakMatmulFlops(const std::string& device,
                                              int threads) {
  try {
    absl::StatusOr<torch::Device> resolved = internal::ResolveDevice(device);
    if (!resolved.ok()) return resolved.status();
    if (threads < 0) return Invalid("threads", "must be >= 0");
    const int n = threads > 0 ? threads : internal::HardwareThreads();
    if (resolved->is_cpu()) {
      internal::SetBlasThreads(1);
      at::set_num_threads(1);
    }
    ShardPool pool(resolved->is_cpu() ? n : 1);
    return internal::MeasurePeakMatmulFlops(*resolved, &pool,
                                            /*blas_threads=*/1,
                                            /*keep_best=*/false);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("libtorch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("matmul peak: ", e.what()));
  }
}

absl::StatusOr<AttentionMode> ParseAttentionMode(absl::string_view name) {
  for (AttentionMode mode : {AttentionMode::kAuto, AttentionMode::kFused,
                             AttentionMode::kMasked, AttentionMode::kSdpa}) {
    if (name == AttentionModeName(mode)) return mode;
  }
  return Invalid(
      "attention",
      absl::StrCat("'", name, "' is not auto, fused, masked or sdpa"));
}

absl::string_view AttentionModeName(AttentionMode mode) {
  switch (mode) {
    case AttentionMode::kAuto:
      return "auto";
    case AttentionMode::kFused:
      return "fused";
    case AttentionMode::kMasked:
      return "masked";
    case AttentionMode::kSdpa:
      return "sdpa";
  }
  return "auto";
}

absl::StatusOr<CpuThreading> ParseCpuThreading(absl::string_view name) {
  if (name == "shards") return CpuThreading::kShards;
  if (name == "blas") return CpuThreading::kBlas;
  if (name == "both") return CpuThreading::kBoth;
  return Invalid("cpu_threading",
                 absl::StrCat("'", name, "' is not shards, blas or both"));
}

absl::StatusOr<TrainResult> Train(const TrainConfig& config,
                                  TrainObserver* observer) {
  TrainObserver silent;
  try {
    absl::StatusOr<TrainResult> result;
    {
      TrainingRun run(config, observer != nullptr ? observer : &silent);
      result = run.Execute();
    }
    // The run's tensors are freed: give what the allocator cached back, so
    // a worker's next trial of another shape does not keep this one's.
    internal::ReleaseCachedCpuMemory();
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("libtorch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("training failed: ", e.what()));
  }
}

}  // namespace prism::model
