// Model-facing subcommands, run locally through model/ (no coordinator):
//
//   prism presets                          the model shapes, with parameter
//   counts prism train --preset tiny --schedule 1x2,2x2,4x2 --steps 200 prism
//   data prepare --input /usr/share/games/fortunes --out data/fortunes prism
//   eval --preset tiny --schedule 1x2,2x2,4x2 --checkpoint-dir ckpt
//              --eval-file hellaswag_val.bin
//
// `prism train` shows a progress bar (step, loss, tokens/s, ETA) on a
// terminal and plain lines otherwise, prints a summary table, and with
// --json-out writes the whole result as a GetTrialResponse (the trial with
// its TrialMetrics, and every LossPoint) in protobuf's JSON mapping, the
// same names the RPC API uses. Ctrl-C stops at the next step, writing a
// checkpoint when --checkpoint-dir is set, so --resume with the same training
// flags continues it (other flags: refused, naming the ones that differ).
#include <signal.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/output.h"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "model/data.h"
#include "model/eval.h"
#include "model/trainer.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/principles.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"
#include "worker/task_config.h"

namespace prism::cli {
namespace {

struct PresetsOptions {
  std::string format = "text";
};

struct TrainOptions {
  std::string preset = "tiny";
  std::string schedule;  // "": the preset's uniform baseline
  int64_t steps = 0;     // 0: the preset's default
  int batch_size = 0;
  int grad_accum = 1;
  int context = 0;
  double learning_rate = 0.0;
  int warmup_steps = -1;
  int eval_every = 0;
  int eval_batches = 0;
  int log_every = 0;
  std::vector<std::string> data;
  std::vector<std::string> val;
  uint64_t seed = 0;
  std::string device = "auto";
  int threads = 0;
  std::string attention = "auto";
  std::string positions;
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  bool resume = false;
  std::vector<double> loss_targets;
  std::string json_out;
  std::string format = "text";
};

struct PrepareCommandOptions {
  std::vector<std::string> inputs;
  std::string out;
  double val_fraction = 0.05;
  std::string format = "text";
};

struct EvalOptions {
  std::string preset = "tiny";
  std::string schedule;
  std::string positions;
  std::string checkpoint_dir;
  std::string eval_file;
  std::string device = "auto";
  int threads = 0;
  int64_t limit = 0;
  std::string format = "text";
};

// AttentionText is "fused (avx512)" plus what auto timed, when it did.
std::string AttentionText(const model::TrainResult& r) {
  std::string text = r.isa.empty()
                         ? r.attention_kernel
                         : absl::StrCat(r.attention_kernel, " (", r.isa, ")");
  std::vector<std::string> timings;
  for (const model::AttentionTiming& t : r.attention_timings) {
    timings.push_back(fmt::format("{}{}{} {:.1f} ms", t.kernel,
                                  t.isa.empty() ? "" : "/", t.isa,
                                  t.milliseconds));
  }
  if (!timings.empty()) {
    absl::StrAppend(&text, ", fastest of ", absl::StrJoin(timings, ", "),
                    " (fwd+bwd, one shard)");
  }
  return text;
}

std::string Millions(int64_t n) {
  return fmt::format("{:.2f}M", static_cast<double>(n) / 1e6);
}

absl::StatusOr<ModelShape> ShapeFor(const std::string& preset,
                                    const std::string& positions) {
  absl::StatusOr<ModelShape> shape = FindPreset(preset);
  if (!shape.ok()) return shape.status();
  if (positions == "rotary") {
    shape->positions = Positions::kRotary;
  } else if (!positions.empty() && positions != "learned") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--positions must be learned or rotary, got '", positions, "'"));
  }
  return shape;
}

// ScheduleFor parses --schedule (default: the uniform baseline) and checks
// it against the shape's hard constraints.
absl::StatusOr<Schedule> ScheduleFor(const ModelShape& shape,
                                     const std::string& text) {
  if (text.empty()) return Schedule::Uniform(shape.base_heads, shape.layers);
  absl::StatusOr<Schedule> schedule = ParseSchedule(text);
  if (!schedule.ok()) return schedule.status();
  SpaceSpec spec;
  spec.d_model = shape.d_model;
  spec.layers = shape.layers;
  spec.base_heads = shape.base_heads;
  if (absl::Status s = CheckHardConstraints(spec, *schedule); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule '", text, "' does not fit preset ", shape.name,
                     ": ", s.message()));
  }
  return schedule;
}

int ListPresets(const PresetsOptions& o) {
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError("presets", format.status());
  // Column names double as JSON keys, hence snake_case.
  Table table({"name", "d_model", "layers", "base_heads", "context", "vocab",
               "params", "params_nanogpt", "batch", "steps", "lr", "warmup",
               "description"});
  for (const ModelShape& s : prism::Presets()) {
    const ParameterCounts counts = CountParameters(s);
    const bool text = *format == Format::kText;
    table.AddRow(
        {s.name, absl::StrCat(s.d_model), absl::StrCat(s.layers),
         absl::StrCat(s.base_heads), absl::StrCat(s.context),
         absl::StrCat(s.vocab_size),
         text ? Millions(counts.total) : absl::StrCat(counts.total),
         text ? Millions(counts.nanogpt) : absl::StrCat(counts.nanogpt),
         absl::StrCat(s.batch_size), absl::StrCat(s.steps),
         fmt::format("{:g}", s.learning_rate), absl::StrCat(s.warmup_steps),
         s.description});
  }
  table.Print(std::cout, *format);
  return kExitOk;
}

// The first Ctrl-C asks the trainer to stop after the current step (and
// write a checkpoint); a second one ends the process.
std::atomic<bool> stop_requested{false};

extern "C" void OnInterrupt(int) { stop_requested.store(true); }

class ProgressObserver final : public model::TrainObserver {
 public:
  // The bar starts once training does, so a config error prints one line.
  void OnStart(const model::TrainConfig& config, int64_t start_step) override {
    progress_.emplace("train", config.steps);
    if (start_step > 0) {
      std::cerr << fmt::format("resuming {} from step {}\n",
                               config.schedule.ToString(), start_step);
    }
  }
  void OnPoint(const model::CurvePoint& point) override {
    if (point.split == model::CurveSplit::kVal) val_ = point.loss;
  }
  void OnStep(int64_t step, double loss, double tokens_per_second) override {
    std::string suffix =
        fmt::format("loss {:.3f}  {:.0f} tok/s", loss, tokens_per_second);
    if (val_ >= 0) absl::StrAppend(&suffix, fmt::format("  val {:.3f}", val_));
    progress_->Update(step, suffix);
  }
  bool ShouldStop() override { return stop_requested.load(); }
  void Finish(absl::string_view suffix) {
    if (progress_.has_value()) progress_->Finish(suffix);
  }

 private:
  std::optional<Progress> progress_;
  double val_ = -1.0;
};

v1::GetTrialResponse ToResponse(const model::TrainConfig& config,
                                const model::TrainResult& result) {
  v1::GetTrialResponse response;
  v1::Trial* trial = response.mutable_trial();
  trial->set_schedule(config.schedule.ToString());
  trial->set_seed(static_cast<int64_t>(config.seed));
  trial->set_is_baseline(config.schedule.IsUniform());
  trial->set_state(result.diverged  ? v1::TRIAL_DIVERGED
                   : result.stopped ? v1::TRIAL_RUNNING
                                    : v1::TRIAL_COMPLETED);
  trial->set_last_step(result.steps);
  trial->set_total_steps(config.steps);
  *trial->mutable_metrics() = worker::ToTrialMetrics(result);
  for (const model::CurvePoint& point : result.curve) {
    *response.add_points() = worker::ToLossPoint(point);
  }
  return response;
}

void PrintSummary(const model::TrainConfig& config, const model::TrainResult& r,
                  Format format) {
  Table table({"metric", "value"});
  auto add = [&](std::string name, std::string value) {
    table.AddRow({std::move(name), std::move(value)});
  };
  add("schedule", config.schedule.ToString());
  add("steps",
      absl::StrCat(r.steps, r.resumed_from_step > 0
                                ? absl::StrCat(" (resumed from ",
                                               r.resumed_from_step, ")")
                                : ""));
  if (r.diverged) add("diverged at step", absl::StrCat(r.diverged_step));
  add("final val loss", fmt::format("{:.4f}", r.final_val_loss));
  add("min val loss", fmt::format("{:.4f}", r.min_val_loss));
  add("final train loss", fmt::format("{:.4f}", r.final_train_loss));
  for (const model::Milestone& m : r.milestones) {
    add(fmt::format("first step to val {:g}", m.target),
        m.step < 0 ? "never" : absl::StrCat(m.step));
  }
  add("tokens/s", fmt::format("{:.0f}", r.tokens_per_second));
  if (r.peak_matmul_flops > r.measured_peak_matmul_flops) {
    add("MFU", fmt::format("{:.1f}% of {:.1f} GFLOP/s achieved (above the "
                           "{:.1f} GFLOP/s matmul measured)",
                           100 * r.mfu, r.peak_matmul_flops / 1e9,
                           r.measured_peak_matmul_flops / 1e9));
  } else if (r.peak_matmul_flops > 0) {
    add("MFU", fmt::format("{:.1f}% of {:.1f} GFLOP/s measured", 100 * r.mfu,
                           r.peak_matmul_flops / 1e9));
  }
  add("parameters",
      fmt::format("{} ({} nanoGPT-style)", r.parameters, r.parameters_nanogpt));
  std::vector<std::string> distances;
  for (double d : r.attention_distance) {
    distances.push_back(fmt::format("{:.1f}", d));
  }
  if (!distances.empty()) {
    add("attention distance by layer", absl::StrJoin(distances, " "));
  }
  add("peak memory",
      fmt::format("{:.0f} MiB", r.peak_memory_bytes / 1048576.0));
  add("wall time", FormatDuration(r.wall_seconds));
  add("device", r.device);
  if (r.cpu_share > 0.0) add("cpu share", fmt::format("{:.2f}", r.cpu_share));
  if (!r.attention_kernel.empty()) add("attention", AttentionText(r));
  table.Print(std::cout, format);
}

// TrainConfigFor builds the trainer's config from the flags (zero: the
// preset's value); InvalidArgument for --resume without --checkpoint-dir
// or an unknown --attention.
absl::StatusOr<model::TrainConfig> TrainConfigFor(const TrainOptions& o,
                                                  const ModelShape& shape,
                                                  const Schedule& schedule) {
  model::TrainConfig config;
  config.shape = shape;
  config.schedule = schedule;
  config.train_paths = o.data;
  config.val_paths = o.val;
  config.steps = o.steps > 0 ? o.steps : shape.steps;
  config.batch_size = o.batch_size > 0 ? o.batch_size : shape.batch_size;
  config.grad_accum = o.grad_accum;
  config.context = o.context;
  config.learning_rate =
      o.learning_rate > 0 ? o.learning_rate : shape.learning_rate;
  config.warmup_steps =
      o.warmup_steps >= 0 ? o.warmup_steps : shape.warmup_steps;
  if (o.eval_every > 0) config.eval_every = o.eval_every;
  if (o.eval_batches > 0) config.eval_batches = o.eval_batches;
  if (o.log_every > 0) config.log_every = o.log_every;
  config.loss_targets = o.loss_targets;
  config.seed = o.seed;
  config.device = o.device;
  config.threads = o.threads;
  config.checkpoint_dir = o.checkpoint_dir;
  config.checkpoint_every = o.checkpoint_every;
  config.resume = o.resume;
  if (o.resume && o.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--resume needs --checkpoint-dir");
  }
  absl::StatusOr<model::AttentionMode> attention =
      model::ParseAttentionMode(o.attention);
  if (!attention.ok()) return attention.status();
  config.attention = *attention;
  return config;
}

int Train(const TrainOptions& o) {
  constexpr char kCommand[] = "train";
  absl::StatusOr<Format> format = ParseFormat(o.format, /*allow_csv=*/false);
  if (!format.ok()) return ReportError(kCommand, format.status());
  absl::StatusOr<ModelShape> shape = ShapeFor(o.preset, o.positions);
  if (!shape.ok()) return ReportError(kCommand, shape.status());
  absl::StatusOr<Schedule> schedule = ScheduleFor(*shape, o.schedule);
  if (!schedule.ok()) return ReportError(kCommand, schedule.status());
  absl::StatusOr<model::TrainConfig> config =
      TrainConfigFor(o, *shape, *schedule);
  if (!config.ok()) return ReportError(kCommand, config.status());

  ProgressObserver observer;
  stop_requested.store(false);
  struct sigaction action = {};
  struct sigaction previous = {};
  action.sa_handler = OnInterrupt;
  // A second Ctrl-C kills as usual; interrupted writes are restarted.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, &previous);
  absl::StatusOr<model::TrainResult> result = model::Train(*config, &observer);
  sigaction(SIGINT, &previous, nullptr);
  if (!result.ok()) {
    observer.Finish("failed");
    return ReportError(kCommand, result.status());
  }
  observer.Finish(result->diverged  ? "diverged"
                  : result->stopped ? "stopped"
                                    : "done");

  const v1::GetTrialResponse response = ToResponse(*config, *result);
  std::string json;
  google::protobuf::util::JsonPrintOptions json_options;
  json_options.add_whitespace = true;
  json_options.preserve_proto_field_names = false;
  if (!google::protobuf::util::MessageToJsonString(response, &json,
                                                   json_options)
           .ok()) {
    return ReportError(kCommand, absl::InternalError("cannot encode JSON"));
  }
  if (!o.json_out.empty()) {
    std::ofstream out(o.json_out);
    out << json;
    if (!out) {
      return ReportError(
          kCommand, absl::InvalidArgumentError(
                        absl::StrCat("cannot write --json-out ", o.json_out)));
    }
  }
  if (*format == Format::kJson) {
    std::cout << json;
  } else {
    PrintSummary(*config, *result, *format);
  }
  if (result->diverged) {
    return ReportError(kCommand,
                       absl::AbortedError(absl::StrCat(
                           "training diverged at step ", result->diverged_step,
                           " (non-finite loss); try a lower --lr")));
  }
  if (result->stopped) {
    return ReportError(
        kCommand,
        absl::CancelledError(absl::StrCat(
            "stopped at step ", result->steps,
            o.checkpoint_dir.empty()
                ? ""
                : "; continue with --resume, the same --checkpoint-dir and "
                  "the same training flags")));
  }
  return kExitOk;
}

int Prepare(const PrepareCommandOptions& o) {
  constexpr char kCommand[] = "data prepare";
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError(kCommand, format.status());
  model::PrepareOptions options;
  options.inputs = o.inputs;
  options.out_dir = o.out;
  options.val_fraction = o.val_fraction;
  absl::StatusOr<model::PrepareResult> r = model::PrepareTextCorpus(options);
  if (!r.ok()) return ReportError(kCommand, r.status());
  Table table({"split", "tokens", "file"});
  table.AddRow({"train", absl::StrCat(r->train_tokens), r->files.train});
  table.AddRow({"val", absl::StrCat(r->val_tokens), r->files.val});
  table.Print(std::cout, *format);
  if (*format == Format::kText) {
    std::cout << fmt::format(
        "{} files read, {} skipped (symlinks, binary); byte vocabulary (256)\n",
        r->files_read, r->files_skipped);
  }
  return kExitOk;
}

int Eval(const EvalOptions& o) {
  constexpr char kCommand[] = "eval";
  absl::StatusOr<Format> format = ParseFormat(o.format);
  if (!format.ok()) return ReportError(kCommand, format.status());
  absl::StatusOr<ModelShape> shape = ShapeFor(o.preset, o.positions);
  if (!shape.ok()) return ReportError(kCommand, shape.status());
  absl::StatusOr<Schedule> schedule = ScheduleFor(*shape, o.schedule);
  if (!schedule.ok()) return ReportError(kCommand, schedule.status());
  model::EvalConfig config;
  config.shape = *shape;
  config.schedule = *schedule;
  config.checkpoint_dir = o.checkpoint_dir;
  config.eval_file = o.eval_file;
  config.device = o.device;
  config.threads = o.threads;
  config.limit = o.limit;
  absl::StatusOr<model::EvalResult> r = model::EvaluateMultipleChoice(config);
  if (!r.ok()) return ReportError(kCommand, r.status());
  Table table({"schedule", "examples", "acc", "acc_norm", "checkpoint step"});
  table.AddRow({schedule->ToString(), absl::StrCat(r->examples),
                fmt::format("{:.4f}", r->acc),
                fmt::format("{:.4f}", r->acc_norm),
                absl::StrCat(r->checkpoint_step)});
  table.Print(std::cout, *format);
  return kExitOk;
}

void AddFormatFlag(CLI::App* command, std::string* format, bool csv) {
  command
      ->add_option("--format", *format,
                   csv ? "Output: text, json or csv" : "Output: text or json")
      ->capture_default_str();
}

// RegisterPresets adds `prism presets`.
void RegisterPresets(CLI::App& app, Action* action) {
  auto o = std::make_shared<PresetsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "presets", "List the model presets with their parameter counts");
  AddFormatFlag(cmd, &o->format, true);
  cmd->callback([o, action] { *action = [o] { return ListPresets(*o); }; });
}

// RegisterTrain adds `prism train`.
void RegisterTrain(CLI::App& app, Action* action) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train one Prism decoder locally and report its metrics");
  cmd->add_option("--preset", o->preset, "Model preset (see prism presets)")
      ->capture_default_str();
  cmd->add_option("--schedule", o->schedule,
                  "Head schedule, HEADSxLAYERS blocks (default: uniform)");
  cmd->add_option("--steps", o->steps, "Optimizer steps (default: preset)");
  cmd->add_option("--batch-size", o->batch_size,
                  "Sequences per micro-batch (default: preset)");
  cmd->add_option("--grad-accum", o->grad_accum, "Micro-batches per step")
      ->capture_default_str();
  cmd->add_option("--context", o->context,
                  "Sequence length (default: the preset's context)");
  cmd->add_option("--lr", o->learning_rate,
                  "Peak learning rate (default: preset)");
  cmd->add_option("--warmup", o->warmup_steps,
                  "Warmup steps (default: preset)");
  cmd->add_option("--eval-every", o->eval_every, "Steps between val losses");
  cmd->add_option("--eval-batches", o->eval_batches,
                  "Fixed val batches per evaluation");
  cmd->add_option("--log-every", o->log_every,
                  "Steps between train-loss points");
  cmd->add_option("--data", o->data,
                  "Token shard files or directories (default: the fortunes "
                  "demo corpus under $PRISM_DATA_DIR or ./prism-data)");
  cmd->add_option("--val", o->val, "Val shard (default: from --data)");
  cmd->add_option("--seed", o->seed, "Seed for init and data order")
      ->capture_default_str();
  cmd->add_option("--device", o->device, "auto, cpu, cuda or cuda:N")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "CPU threads (0: all cores)")
      ->capture_default_str();
  cmd->add_option("--attention", o->attention,
                  "Attention kernel: auto (on the CPU, time the fused "
                  "kernel at each instruction set and masked softmax, and "
                  "use the fastest), fused, masked or sdpa. PRISM_ISA="
                  "baseline|avx2|avx512 forces the fused kernel's level")
      ->envname("PRISM_ATTENTION")
      ->capture_default_str();
  cmd->add_option("--positions", o->positions,
                  "learned or rotary (default: the preset's, learned)");
  cmd->add_option("--checkpoint-dir", o->checkpoint_dir,
                  "Write checkpoints here (and resume from it)");
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Steps between checkpoints (0: only at the end)");
  cmd->add_flag("--resume", o->resume,
                "Continue from --checkpoint-dir's checkpoint (written with "
                "the same training flags)");
  cmd->add_option("--loss-targets", o->loss_targets,
                  "Val losses whose first step to report")
      ->delimiter(',');
  cmd->add_option("--json-out", o->json_out,
                  "Write the result (metrics and curve) as JSON here");
  AddFormatFlag(cmd, &o->format, false);
  cmd->callback([o, action] { *action = [o] { return Train(*o); }; });
}

// RegisterDataPrepare adds `prism data prepare`.
void RegisterDataPrepare(CLI::App& app, Action* action) {
  CLI::App* data = app.add_subcommand("data", "Token data tools");
  data->require_subcommand(1);
  auto o = std::make_shared<PrepareCommandOptions>();
  CLI::App* cmd = data->add_subcommand(
      "prepare",
      "Byte-tokenize text files into llm.c token shards (train + val)");
  cmd->add_option("--input", o->inputs, "Text files or directories")
      ->required();
  cmd->add_option("--out", o->out, "Output directory")->required();
  cmd->add_option("--val-fraction", o->val_fraction,
                  "Fraction of the text held out for val")
      ->capture_default_str();
  AddFormatFlag(cmd, &o->format, true);
  cmd->callback([o, action] { *action = [o] { return Prepare(*o); }; });
}

// RegisterEval adds `prism eval`.
void RegisterEval(CLI::App& app, Action* action) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Zero-shot multiple-choice accuracy of a trained checkpoint "
      "(llm.c's HellaSwag file format)");
  cmd->add_option("--preset", o->preset, "Model preset")->capture_default_str();
  cmd->add_option("--schedule", o->schedule,
                  "Head schedule (default: uniform)");
  cmd->add_option("--positions", o->positions, "learned or rotary");
  cmd->add_option("--checkpoint-dir", o->checkpoint_dir,
                  "Directory with the checkpoint from prism train")
      ->required();
  cmd->add_option("--eval-file", o->eval_file, "Eval file (.bin)")->required();
  cmd->add_option("--device", o->device, "auto, cpu, cuda or cuda:N")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "CPU threads (0: all cores)")
      ->capture_default_str();
  cmd->add_option("--limit", o->limit, "Evaluate only the first N examples");
  AddFormatFlag(cmd, &o->format, true);
  cmd->callback([o, action] { *action = [o] { return Eval(*o); }; });
}

}  // namespace

void RegisterModelCommands(CLI::App& app, Action* action) {
  RegisterPresets(app, action);
  RegisterTrain(app, action);
  RegisterDataPrepare(app, action);
  RegisterEval(app, action);
}
}  // namespace prism::cli
