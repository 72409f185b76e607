#include "worker/replay_launcher.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "scheduler/space/schedule.h"

namespace prism::worker {
namespace {

constexpr absl::string_view kMagic = "prism-replay";
constexpr int kVersion = 1;
constexpr char kCheckpointFile[] = "replay-checkpoint";

// Text fields go on a space-separated line: spaces are written as %20 and
// an empty field as "-" (the device reads "cpu (1 thread)").
std::string EncodeText(const std::string& text) {
  return text.empty() ? "-" : absl::StrReplaceAll(text, {{" ", "%20"}});
}
std::string DecodeText(absl::string_view text) {
  return text == "-" ? "" : absl::StrReplaceAll(text, {{"%20", " "}});
}

// Key order of the trial line; each is a TrainResult field.
std::string TrialLine(const model::TrainConfig& config,
                      const model::TrainResult& r) {
  return absl::StrCat(
      "trial ", config.schedule.ToString(), " ", config.seed,
      " steps=", r.steps, " diverged=", r.diverged ? 1 : 0,
      " diverged_step=", r.diverged_step,
      " tokens_per_second=", r.tokens_per_second, " cpu_share=", r.cpu_share,
      " mfu=", r.mfu, " peak_matmul_flops=", r.peak_matmul_flops,
      " flops_per_token=", r.flops_per_token,
      " peak_memory_bytes=", r.peak_memory_bytes, " parameters=", r.parameters,
      " parameters_nanogpt=", r.parameters_nanogpt,
      " wall_seconds=", r.wall_seconds, " device=", EncodeText(r.device),
      " attention_kernel=", EncodeText(r.attention_kernel),
      " isa=", EncodeText(r.isa), "\n");
}

absl::Status LineError(int line, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("replay fixture line ", line, ": ", why));
}

// SetMetric stores one key=value of a trial line; unknown keys are kept
// out (a newer recorder may add some).
absl::Status SetMetric(absl::string_view key, absl::string_view value,
                       model::TrainResult* r) {
  auto as_int = [&](int64_t* out) {
    return absl::SimpleAtoi(value, out) ? absl::OkStatus()
                                        : absl::InvalidArgumentError(key);
  };
  auto as_double = [&](double* out) {
    return absl::SimpleAtod(value, out) ? absl::OkStatus()
                                        : absl::InvalidArgumentError(key);
  };
  auto as_text = [&](std::string* out) {
    *out = DecodeText(value);
    return absl::OkStatus();
  };
  if (key == "steps") return as_int(&r->steps);
  if (key == "diverged") {
    int64_t v = 0;
    absl::Status s = as_int(&v);
    r->diverged = v != 0;
    return s;
  }
  if (key == "diverged_step") return as_int(&r->diverged_step);
  if (key == "tokens_per_second") return as_double(&r->tokens_per_second);
  if (key == "cpu_share") return as_double(&r->cpu_share);
  if (key == "mfu") return as_double(&r->mfu);
  if (key == "peak_matmul_flops") return as_double(&r->peak_matmul_flops);
  if (key == "flops_per_token") return as_int(&r->flops_per_token);
  if (key == "peak_memory_bytes") return as_int(&r->peak_memory_bytes);
  if (key == "parameters") return as_int(&r->parameters);
  if (key == "parameters_nanogpt") return as_int(&r->parameters_nanogpt);
  if (key == "wall_seconds") return as_double(&r->wall_seconds);
  if (key == "device") return as_text(&r->device);
  if (key == "attention_kernel") return as_text(&r->attention_kernel);
  if (key == "isa") return as_text(&r->isa);
  return absl::OkStatus();
}

absl::StatusOr<model::CurvePoint> ParsePoint(
    const std::vector<absl::string_view>& f) {
  model::CurvePoint p;
  p.split = f[0] == "v" ? model::CurveSplit::kVal : model::CurveSplit::kTrain;
  double tps = 0.0, elapsed = 0.0;
  if (f.size() != 6 || !absl::SimpleAtoi(f[1], &p.step) ||
      !absl::SimpleAtof(f[2], &p.loss) ||
      !absl::SimpleAtof(f[3], &p.learning_rate) ||
      !absl::SimpleAtod(f[4], &tps) || !absl::SimpleAtod(f[5], &elapsed)) {
    return absl::InvalidArgumentError(
        "a point is `t|v STEP LOSS LR TOKENS_PER_SECOND ELAPSED_SECONDS`");
  }
  p.tokens_per_second = tps;
  p.elapsed_seconds = elapsed;
  return p;
}

// ReadCheckpoint returns the step of the replay checkpoint in `dir` for
// (schedule, seed), 0 when there is none; FailedPrecondition when it belongs
// to another run (as the trainer refuses another trial's checkpoint).
absl::StatusOr<int64_t> ReadCheckpoint(const std::string& dir,
                                       const std::string& schedule,
                                       uint64_t seed) {
  std::ifstream in(std::filesystem::path(dir) / kCheckpointFile);
  if (!in) return 0;
  std::string got_schedule;
  uint64_t got_seed = 0;
  int64_t step = 0;
  if (!(in >> got_schedule >> got_seed >> step) || step < 0) {
    return absl::DataLossError(
        absl::StrCat("replay checkpoint in ", dir, " is malformed"));
  }
  if (got_schedule != schedule || got_seed != seed) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replay checkpoint in ", dir, " belongs to schedule ", got_schedule,
        " seed ", got_seed, ", not ", schedule, " seed ", seed));
  }
  return step;
}

absl::Status WriteCheckpoint(const std::string& dir,
                             const std::string& schedule, uint64_t seed,
                             int64_t step) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const std::filesystem::path path =
      std::filesystem::path(dir) / kCheckpointFile;
  const std::filesystem::path temp = path.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << schedule << " " << seed << " " << step << "\n";
    if (!out.flush()) {
      return absl::UnavailableError(
          absl::StrCat("cannot write replay checkpoint ", temp.string()));
    }
  }
  std::filesystem::rename(temp, path, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot rename replay checkpoint to ", path.string(), ": ",
                     error.message()));
  }
  return absl::OkStatus();
}

class ReplayTrainerLauncher final : public TrainerLauncher {
 public:
  ReplayTrainerLauncher(std::vector<ReplayFixture> fixtures,
                        double steps_per_second)
      : fixtures_(std::move(fixtures)), steps_per_second_(steps_per_second) {}

  absl::StatusOr<model::TrainResult> Train(
      const model::TrainConfig& config,
      model::TrainObserver* observer) override;

 private:
  const std::vector<ReplayFixture> fixtures_;
  const double steps_per_second_;  // 0: no pacing
};

// ConfigMismatch is OK when `fixture` was recorded with `config`'s recipe,
// else InvalidArgument naming the first field that differs.
absl::Status ConfigMismatch(const ReplayFixture& fixture,
                            const model::TrainConfig& config) {
  for (const auto& [key, value] : ReplayConfigOf(config)) {
    auto it = fixture.config.find(key);
    if (it == fixture.config.end() || it->second != value) {
      return absl::InvalidArgumentError(
          absl::StrCat("replay: the fixture was recorded with ", key, "=",
                       it == fixture.config.end() ? "(none)" : it->second,
                       " but this trial has ", key, "=", value));
    }
  }
  return absl::OkStatus();
}

// FindRecording returns the recorded run that serves `config`: the first
// fixture recorded with its recipe (a ladder's rungs are one fixture per
// size), none: the first one's mismatch; NotFound when that fixture has no
// run of the schedule and seed.
absl::StatusOr<const ReplayTrial*> FindRecording(
    const std::vector<ReplayFixture>& fixtures,
    const model::TrainConfig& config) {
  const ReplayFixture* fixture = nullptr;
  for (const ReplayFixture& f : fixtures) {
    if (ConfigMismatch(f, config).ok()) {
      fixture = &f;
      break;
    }
  }
  if (fixture == nullptr) return ConfigMismatch(fixtures.front(), config);
  const std::string schedule = config.schedule.ToString();
  auto found = fixture->trials.find({schedule, config.seed});
  if (found == fixture->trials.end()) {
    return absl::NotFoundError(
        absl::StrCat("replay: the fixture has no recorded run of schedule ",
                     schedule, " seed ", config.seed));
  }
  return &found->second;
}

// ResumeStep returns the step a trial starts from: its replay checkpoint's
// when it resumes, else 0, and 0 for a checkpoint past max_resume_step (set
// as result->discarded_checkpoint_step). Returns ReadCheckpoint's errors.
absl::StatusOr<int64_t> ResumeStep(const model::TrainConfig& config,
                                   const std::string& schedule,
                                   model::TrainResult* result) {
  int64_t start = 0;
  if (config.resume && !config.checkpoint_dir.empty()) {
    absl::StatusOr<int64_t> step =
        ReadCheckpoint(config.checkpoint_dir, schedule, config.seed);
    if (!step.ok()) return step.status();
    start = *step;
    if (config.max_resume_step >= 0 && start > config.max_resume_step) {
      result->discarded_checkpoint_step = start;
      start = 0;
    }
  }
  return start;
}

// AddWholeTrialLoss folds a recorded point into the whole-trial losses, as a
// resumed trainer reports them.
void AddWholeTrialLoss(const model::CurvePoint& point, bool* seen_val,
                       model::TrainResult* result) {
  if (point.split == model::CurveSplit::kVal) {
    result->min_val_loss =
        *seen_val ? std::min<double>(result->min_val_loss, point.loss)
                  : point.loss;
    result->final_val_loss = point.loss;
    *seen_val = true;
  } else {
    result->final_train_loss = point.loss;
  }
}

// CheckpointIfAllowed writes a replay checkpoint at `step` when the trial has
// a checkpoint directory and the observer allows it. Returns WriteCheckpoint's
// errors.
absl::Status CheckpointIfAllowed(const model::TrainConfig& config,
                                 const std::string& schedule, int64_t step,
                                 model::TrainObserver* observer) {
  if (config.checkpoint_dir.empty() || !observer->BeforeCheckpoint(step)) {
    return absl::OkStatus();
  }
  if (absl::Status s =
          WriteCheckpoint(config.checkpoint_dir, schedule, config.seed, step);
      !s.ok()) {
    return s;
  }
  observer->OnCheckpoint(step);
  return absl::OkStatus();
}

absl::StatusOr<model::TrainResult> ReplayTrainerLauncher::Train(
    const model::TrainConfig& config, model::TrainObserver* observer) {
  absl::StatusOr<const ReplayTrial*> found = FindRecording(fixtures_, config);
  if (!found.ok()) return found.status();
  const ReplayTrial& recorded = **found;
  const std::string schedule = config.schedule.ToString();

  model::TrainResult result = recorded.metrics;
  result.steps = 0;
  result.diverged = false;
  result.diverged_step = 0;
  absl::StatusOr<int64_t> resumed = ResumeStep(config, schedule, &result);
  if (!resumed.ok()) return resumed.status();
  const int64_t start = *resumed;
  result.resumed_from_step = start;
  observer->OnStart(config, start);

  const int64_t end =
      config.stop_at_step > 0 ? config.stop_at_step : config.steps;
  // The recorded run diverged before `end`: this one does too, there.
  const bool diverges =
      recorded.metrics.diverged && recorded.metrics.diverged_step <= end;
  const int64_t last = diverges ? recorded.metrics.steps : end;
  bool seen_val = false;
  int64_t done = start;
  const absl::Time began = absl::Now();
  for (const model::CurvePoint& point : recorded.curve) {
    if (point.step > last) break;
    if (steps_per_second_ > 0 && point.step > start) {
      // Paced: a point is emitted when the steps up to it would be trained.
      absl::SleepFor(began +
                     absl::Seconds((point.step - start) / steps_per_second_) -
                     absl::Now());
    }
    AddWholeTrialLoss(point, &seen_val, &result);
    const bool emit = start == 0 ? true : point.step > start;
    if (!emit) continue;
    result.curve.push_back(point);
    observer->OnPoint(point);
    if (point.step > done) {
      done = point.step;
      observer->OnStep(done, point.loss, point.tokens_per_second);
    }
    if (observer->ShouldStop()) {
      result.steps = done;
      result.stopped = true;
      if (done > start) {
        if (absl::Status s =
                CheckpointIfAllowed(config, schedule, done, observer);
            !s.ok()) {
          return s;
        }
      }
      return result;
    }
  }
  result.steps = std::max(done, last);
  if (diverges) {
    result.diverged = true;
    result.diverged_step = recorded.metrics.diverged_step;
  } else if (config.stop_at_step > 0) {
    // A rung: the next attempt resumes here.
    if (absl::Status s = CheckpointIfAllowed(config, schedule, end, observer);
        !s.ok()) {
      return s;
    }
  }
  return result;
}

}  // namespace

std::map<std::string, std::string> ReplayConfigOf(
    const model::TrainConfig& config) {
  return {
      {"d_model", absl::StrCat(config.shape.d_model)},
      {"layers", absl::StrCat(config.shape.layers)},
      {"base_heads", absl::StrCat(config.shape.base_heads)},
      {"context", absl::StrCat(config.context > 0 ? config.context
                                                  : config.shape.context)},
      {"vocab_size", absl::StrCat(config.shape.vocab_size)},
      {"steps", absl::StrCat(config.steps)},
      {"batch_size", absl::StrCat(config.batch_size)},
      {"grad_accum", absl::StrCat(config.grad_accum)},
      {"eval_every", absl::StrCat(config.eval_every)},
      {"eval_batches", absl::StrCat(config.eval_batches)},
      {"log_every", absl::StrCat(config.log_every)},
      {"learning_rate", absl::StrCat(config.learning_rate)},
      {"warmup_steps", absl::StrCat(config.warmup_steps)},
      {"min_lr_ratio", absl::StrCat(config.min_lr_ratio)},
      {"weight_decay", absl::StrCat(config.weight_decay)},
      {"data", config.train_paths.empty()
                   ? "demo"
                   : absl::StrJoin(config.train_paths, ",")},
  };
}

std::string FormatReplayHeader(const model::TrainConfig& config) {
  std::string out = absl::StrCat(kMagic, " ", kVersion, "\nconfig");
  for (const auto& [key, value] : ReplayConfigOf(config)) {
    absl::StrAppend(&out, " ", key, "=", value);
  }
  absl::StrAppend(&out, "\n");
  return out;
}

std::string FormatReplayTrial(const model::TrainConfig& config,
                              const model::TrainResult& result) {
  std::string out = TrialLine(config, result);
  for (const model::CurvePoint& p : result.curve) {
    // Six significant digits of a float loss: what a stored curve shows.
    char line[160];
    std::snprintf(line, sizeof(line), "%s %lld %.7g %.4g %.5g %.4f\n",
                  p.split == model::CurveSplit::kVal ? "v" : "t",
                  static_cast<long long>(p.step), p.loss, p.learning_rate,
                  p.tokens_per_second, p.elapsed_seconds);
    out += line;
  }
  return out;
}

absl::StatusOr<ReplayFixture> ParseReplayFixture(const std::string& text) {
  ReplayFixture fixture;
  ReplayTrial* current = nullptr;
  int number = 0;
  bool seen_magic = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> f =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (!seen_magic) {
      int version = 0;
      if (f.size() != 2 || f[0] != kMagic ||
          !absl::SimpleAtoi(f[1], &version) || version != kVersion) {
        return LineError(
            number, absl::StrCat("expected `", kMagic, " ", kVersion, "`"));
      }
      seen_magic = true;
      continue;
    }
    if (f[0] == "config") {
      for (size_t i = 1; i < f.size(); ++i) {
        std::pair<std::string, std::string> kv =
            absl::StrSplit(f[i], absl::MaxSplits('=', 1));
        fixture.config[kv.first] = kv.second;
      }
    } else if (f[0] == "trial") {
      uint64_t seed = 0;
      if (f.size() < 3 || !absl::SimpleAtoi(f[2], &seed)) {
        return LineError(number,
                         "a trial is `trial SCHEDULE SEED key=value...`");
      }
      absl::StatusOr<Schedule> schedule = ParseSchedule(f[1]);
      if (!schedule.ok()) return LineError(number, schedule.status().message());
      current = &fixture.trials[{schedule->ToString(), seed}];
      *current = ReplayTrial{};
      for (size_t i = 3; i < f.size(); ++i) {
        std::pair<absl::string_view, absl::string_view> kv =
            absl::StrSplit(f[i], absl::MaxSplits('=', 1));
        if (absl::Status s = SetMetric(kv.first, kv.second, &current->metrics);
            !s.ok()) {
          return LineError(number, absl::StrCat("bad value for ", kv.first));
        }
      }
    } else if (f[0] == "t" || f[0] == "v") {
      if (current == nullptr)
        return LineError(number, "a point before any trial");
      absl::StatusOr<model::CurvePoint> point = ParsePoint(f);
      if (!point.ok()) return LineError(number, point.status().message());
      current->curve.push_back(*point);
    } else {
      return LineError(number, absl::StrCat("unknown record '", f[0], "'"));
    }
  }
  if (!seen_magic) return LineError(1, "empty fixture");
  return fixture;
}

absl::StatusOr<ReplayFixture> LoadReplayFixture(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read replay fixture ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<ReplayFixture> fixture = ParseReplayFixture(text.str());
  if (!fixture.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", fixture.status().message()));
  }
  return fixture;
}

std::unique_ptr<TrainerLauncher> NewReplayTrainerLauncher(
    ReplayFixture fixture, double steps_per_second) {
  std::vector<ReplayFixture> fixtures;
  fixtures.push_back(std::move(fixture));
  return NewReplayTrainerLauncher(std::move(fixtures), steps_per_second);
}

std::unique_ptr<TrainerLauncher> NewReplayTrainerLauncher(
    std::vector<ReplayFixture> fixtures, double steps_per_second) {
  return std::make_unique<ReplayTrainerLauncher>(std::move(fixtures),
                                                 steps_per_second);
}

}  // namespace prism::worker
