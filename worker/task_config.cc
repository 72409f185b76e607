#include "worker/task_config.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/data_roots.h"
#include "model/data.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"

namespace prism::worker {
namespace {

// SetIfPositive keeps the default for a zero (unset) proto field.
template <typename T, typename U>
void SetIfPositive(T* field, U value) {
  if (value > 0) *field = static_cast<T>(value);
}

absl::StatusOr<ModelShape> ShapeForTask(const v1::ModelConfig& model) {
  ModelShape shape;
  if (!model.preset().empty()) {
    absl::StatusOr<ModelShape> preset = FindPreset(model.preset());
    if (!preset.ok()) return preset.status();
    shape = *preset;
  } else {
    shape.name = "custom";
  }
  SetIfPositive(&shape.d_model, model.d_model());
  SetIfPositive(&shape.layers, model.layers());
  SetIfPositive(&shape.base_heads, model.base_heads());
  SetIfPositive(&shape.context, model.context());
  SetIfPositive(&shape.vocab_size, model.vocab_size());
  SetIfPositive(&shape.dropout, model.dropout());
  if (model.positions() == v1::POSITION_LEARNED) {
    shape.positions = Positions::kLearned;
  } else if (model.positions() == v1::POSITION_ROTARY) {
    shape.positions = Positions::kRotary;
  }
  if (absl::Status valid = ValidateShape(shape); !valid.ok()) return valid;
  return shape;
}

// ConfineTaskData holds each data path, and each shard a data directory
// holds (a link in it could lead out), to `roots` before anything is opened;
// ExpandShardPaths refuses what is neither a regular file nor a directory.
absl::Status ConfineTaskData(const std::vector<std::string>& paths,
                             const std::vector<std::string>& roots) {
  if (roots.empty()) return absl::OkStatus();
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> confined = ConfineDataPath(path, roots);
    if (!confined.ok()) return confined.status();
    absl::StatusOr<std::vector<std::string>> files =
        model::ExpandShardPaths({path});
    if (!files.ok()) return files.status();
    for (const std::string& file : *files) {
      if (file == path) continue;
      absl::StatusOr<std::string> shard = ConfineDataPath(file, roots);
      if (!shard.ok()) return shard.status();
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string CheckpointDirFor(const v1::TrialTask& task,
                             const WorkerResources& resources) {
  if (resources.checkpoint_root.empty()) return "";
  const std::string key = task.checkpoint_key().empty()
                              ? absl::StrCat("trial-", task.trial().id())
                              : task.checkpoint_key();
  return (std::filesystem::path(resources.checkpoint_root) / key).string();
}

absl::StatusOr<model::TrainConfig> TrainConfigForTask(
    const v1::TrialTask& task, const WorkerResources& resources) {
  model::TrainConfig config;
  absl::StatusOr<ModelShape> shape = ShapeForTask(task.model());
  if (!shape.ok()) return shape.status();
  config.shape = *std::move(shape);

  absl::StatusOr<Schedule> schedule = ParseSchedule(task.trial().schedule());
  if (!schedule.ok()) return schedule.status();
  if (schedule->layers() != config.shape.layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "schedule '", task.trial().schedule(), "' has ", schedule->layers(),
        " layers but the model has ", config.shape.layers));
  }
  config.schedule = *std::move(schedule);
  config.seed = static_cast<uint64_t>(task.trial().seed());

  config.train_paths.assign(task.data().train().begin(),
                            task.data().train().end());
  config.val_paths.assign(task.data().val().begin(), task.data().val().end());
  if (absl::Status confined =
          ConfineTaskData(config.train_paths, resources.data_roots);
      !confined.ok()) {
    return confined;
  }
  if (absl::Status confined =
          ConfineTaskData(config.val_paths, resources.data_roots);
      !confined.ok()) {
    return confined;
  }

  // Trial-level budget first, then the preset's training defaults for any
  // field the coordinator left at zero.
  const v1::Budget& budget = task.budget();
  SetIfPositive(&config.steps, config.shape.steps);
  SetIfPositive(&config.batch_size, config.shape.batch_size);
  SetIfPositive(&config.learning_rate, config.shape.learning_rate);
  SetIfPositive(&config.warmup_steps, config.shape.warmup_steps);
  SetIfPositive(&config.steps, budget.steps());
  SetIfPositive(&config.batch_size, budget.batch_size());
  SetIfPositive(&config.grad_accum, budget.grad_accum());
  SetIfPositive(&config.eval_every, budget.eval_every());
  SetIfPositive(&config.eval_batches, budget.eval_batches());
  SetIfPositive(&config.learning_rate, budget.learning_rate());
  SetIfPositive(&config.min_lr_ratio, budget.min_lr_ratio());
  SetIfPositive(&config.warmup_steps, budget.warmup_steps());
  SetIfPositive(&config.weight_decay, budget.weight_decay());
  SetIfPositive(&config.checkpoint_every, budget.checkpoint_every());
  SetIfPositive(&config.log_every, budget.log_every());
  config.loss_targets.assign(budget.loss_targets().begin(),
                             budget.loss_targets().end());

  config.device = resources.device;
  config.threads = resources.threads;
  config.attention = resources.attention;
  config.checkpoint_dir = CheckpointDirFor(task, resources);
  config.resume = !config.checkpoint_dir.empty();
  if (task.has_stored_step()) config.max_resume_step = task.stored_step();
  config.stop_at_step = task.stop_at_step();
  return config;
}

v1::LossPoint ToLossPoint(const model::CurvePoint& point) {
  v1::LossPoint out;
  out.set_split(point.split == model::CurveSplit::kVal ? v1::SPLIT_VAL
                                                       : v1::SPLIT_TRAIN);
  out.set_step(point.step);
  out.set_loss(point.loss);
  out.set_learning_rate(point.learning_rate);
  out.set_tokens_per_second(point.tokens_per_second);
  out.set_elapsed_seconds(point.elapsed_seconds);
  return out;
}

v1::TrialMetrics ToTrialMetrics(const model::TrainResult& result) {
  v1::TrialMetrics m;
  m.set_final_val_loss(result.final_val_loss);
  m.set_min_val_loss(result.min_val_loss);
  m.set_final_train_loss(result.final_train_loss);
  m.set_steps(result.steps);
  m.set_tokens_per_second(result.tokens_per_second);
  m.set_mfu(result.mfu);
  m.set_peak_matmul_flops(result.peak_matmul_flops);
  m.set_measured_peak_matmul_flops(result.measured_peak_matmul_flops);
  m.set_attention_kernel(result.attention_kernel);
  m.set_isa(result.isa);
  m.set_flops_per_token(result.flops_per_token);
  m.set_peak_memory_bytes(result.peak_memory_bytes);
  m.set_parameters(result.parameters);
  m.set_parameters_nanogpt(result.parameters_nanogpt);
  for (const model::Milestone& milestone : result.milestones) {
    v1::Milestone* out = m.add_milestones();
    out->set_target(milestone.target);
    out->set_step(milestone.step);
  }
  for (double d : result.attention_distance) m.add_attention_distance(d);
  m.set_diverged(result.diverged);
  m.set_diverged_step(result.diverged_step);
  m.set_wall_seconds(result.wall_seconds);
  m.set_device(result.device);
  m.set_cpu_share(result.cpu_share);
  return m;
}

}  // namespace prism::worker
