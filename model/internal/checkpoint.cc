#include "model/internal/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/failpoint.h"
#include "base/private_files.h"
#include "base/status_macros.h"
#include "model/internal/files.h"

namespace prism::model::internal {
namespace {

namespace fs = std::filesystem;

// Version 2 added the recipe and the training seconds, tokens, final train
// loss and loss window. Version 1 still loads (for evaluation); it records no
// recipe, so training never resumes from it.
// Version 3 added the attention kernel, version 4 the CPU seconds of the
// steps.
constexpr int64_t kFormatVersion = 4;
constexpr int64_t kFirstRecipeVersion = 2;
constexpr int64_t kFirstKernelVersion = 3;
constexpr int64_t kFirstCpuSecondsVersion = 4;
constexpr int kCurveColumns = 6;

torch::Tensor CurveToTensor(const std::vector<CurvePoint>& curve) {
  // Doubles hold every field exactly (floats, and steps below 2^53).
  torch::Tensor t = torch::zeros(
      {static_cast<int64_t>(curve.size()), kCurveColumns}, torch::kFloat64);
  auto a = t.accessor<double, 2>();
  for (size_t i = 0; i < curve.size(); ++i) {
    const CurvePoint& p = curve[i];
    a[i][0] = p.split == CurveSplit::kVal ? 1.0 : 0.0;
    a[i][1] = static_cast<double>(p.step);
    a[i][2] = p.loss;
    a[i][3] = p.learning_rate;
    a[i][4] = p.tokens_per_second;
    a[i][5] = p.elapsed_seconds;
  }
  return t;
}

std::vector<CurvePoint> CurveFromTensor(const torch::Tensor& t) {
  std::vector<CurvePoint> curve(t.size(0));
  auto a = t.accessor<double, 2>();
  for (int64_t i = 0; i < t.size(0); ++i) {
    CurvePoint& p = curve[i];
    p.split = a[i][0] != 0.0 ? CurveSplit::kVal : CurveSplit::kTrain;
    p.step = static_cast<int64_t>(a[i][1]);
    p.loss = static_cast<float>(a[i][2]);
    p.learning_rate = static_cast<float>(a[i][3]);
    p.tokens_per_second = a[i][4];
    p.elapsed_seconds = a[i][5];
  }
  return curve;
}

torch::Tensor MilestonesToTensor(const std::vector<Milestone>& milestones) {
  torch::Tensor t = torch::zeros({static_cast<int64_t>(milestones.size()), 2},
                                 torch::kFloat64);
  auto a = t.accessor<double, 2>();
  for (size_t i = 0; i < milestones.size(); ++i) {
    a[i][0] = milestones[i].target;
    a[i][1] = static_cast<double>(milestones[i].step);
  }
  return t;
}

std::vector<Milestone> MilestonesFromTensor(const torch::Tensor& t) {
  std::vector<Milestone> milestones(t.size(0));
  auto a = t.accessor<double, 2>();
  for (int64_t i = 0; i < t.size(0); ++i) {
    milestones[i].target = a[i][0];
    milestones[i].step = static_cast<int64_t>(a[i][1]);
  }
  return milestones;
}

// FileError is the status for a failed file operation: ResourceExhausted
// when the disk (or the quota) is full, so the worker can tell "this
// machine's disk" from "this trial", Internal otherwise.
absl::Status FileError(absl::string_view what, int error) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  if (error == ENOSPC || error == EDQUOT) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

// FileSink is where torch's archive writer puts its bytes. It never reports
// a failed write back to torch: LibTorch's zip writer then throws from its
// destructor, which ends the process. It keeps the first error instead, and
// drops the rest of the archive.
class FileSink {
 public:
  // The file is private (base/private_files.h): it holds the run's weights.
  explicit FileSink(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                   kPrivateFileMode)),
        error_(fd_ < 0 ? errno : 0) {
    if (fd_ >= 0 && ::fchmod(fd_, kPrivateFileMode) != 0) error_ = errno;
  }
  ~FileSink() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  size_t Write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    size_t left = n;
    while (error_ == 0 && left > 0) {
      const ssize_t wrote = ::write(fd_, p, left);
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) {
        error_ = wrote < 0 ? errno : EIO;
        break;
      }
      p += wrote;
      left -= static_cast<size_t>(wrote);
    }
    return n;
  }
  // Finish syncs and closes the file; returns the first error (0: none).
  int Finish() {
    if (error_ == 0 && ::fsync(fd_) != 0) error_ = errno;
    if (::close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
    return error_;
  }

 private:
  int fd_;
  int error_;
};

// ExactNumber is the shortest text that reads back to `value` (a float or
// a double): 0.001, not 0.0010000000000000000.
template <typename T>
std::string ExactNumber(T value) {
  for (int precision = 1; precision < 17; ++precision) {
    const std::string text =
        absl::StrFormat("%.*g", precision, static_cast<double>(value));
    T back = 0;
    bool parsed = false;
    if constexpr (std::is_same_v<T, float>) {
      parsed = absl::SimpleAtof(text, &back);
    } else {
      parsed = absl::SimpleAtod(text, &back);
    }
    if (parsed && back == value) return text;
  }
  return absl::StrFormat("%.17g", static_cast<double>(value));
}

// Escaped keeps RecipeKey's separators out of a value.
std::string Escaped(absl::string_view value) {
  return absl::StrReplaceAll(value, {{"%", "%25"}, {";", "%3B"}, {",", "%2C"}});
}

std::string PathList(const std::vector<std::string>& paths) {
  std::vector<std::string> escaped;
  for (const std::string& path : paths) escaped.push_back(Escaped(path));
  return absl::StrJoin(escaped, ",");
}

using RecipeFields = std::vector<std::pair<std::string, std::string>>;

RecipeFields SplitRecipe(const std::string& recipe) {
  RecipeFields fields;
  for (absl::string_view field :
       absl::StrSplit(recipe, ';', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv =
        absl::StrSplit(field, absl::MaxSplits('=', 1));
    fields.push_back(std::move(kv));
  }
  return fields;
}

// RecipeDifferences lists "key got vs expected" for every field that
// differs, in `expected`'s order, then fields only `got` has.
std::string RecipeDifferences(const std::string& got,
                              const std::string& expected) {
  const RecipeFields got_fields = SplitRecipe(got);
  const RecipeFields expected_fields = SplitRecipe(expected);
  auto find = [](const RecipeFields& fields,
                 const std::string& key) -> const std::string* {
    for (const auto& [k, v] : fields) {
      if (k == key) return &v;
    }
    return nullptr;
  };
  auto shown = [](const std::string* value) {
    if (value == nullptr) return std::string("(absent)");
    return value->empty() ? std::string("(none)") : *value;
  };
  std::vector<std::string> differences;
  for (const auto& [key, value] : expected_fields) {
    const std::string* other = find(got_fields, key);
    if (other == nullptr || *other != value) {
      differences.push_back(
          absl::StrCat(key, " ", shown(other), " vs ", shown(&value)));
    }
  }
  for (const auto& [key, value] : got_fields) {
    if (find(expected_fields, key) == nullptr) {
      differences.push_back(
          absl::StrCat(key, " ", shown(&value), " vs ", shown(nullptr)));
    }
  }
  return absl::StrJoin(differences, ", ");
}

// Read returns the archive's value at `key` (c10::Error when it is missing).
c10::IValue Read(torch::serialize::InputArchive& archive, const char* key) {
  c10::IValue value;
  archive.read(key, value);
  return value;
}

}  // namespace

std::string RecipeKey(const TrainConfig& config, int context,
                      const std::vector<std::string>& train,
                      const std::vector<std::string>& val) {
  std::vector<std::string> targets;
  for (double target : config.loss_targets) {
    targets.push_back(ExactNumber(target));
  }
  const RecipeFields fields = {
      {"steps", absl::StrCat(config.steps)},
      {"batch_size", absl::StrCat(config.batch_size)},
      {"grad_accum", absl::StrCat(config.grad_accum)},
      {"context", absl::StrCat(context)},
      {"eval_every", absl::StrCat(config.eval_every)},
      {"eval_batches", absl::StrCat(config.eval_batches)},
      {"log_every", absl::StrCat(config.log_every)},
      {"learning_rate", ExactNumber(config.learning_rate)},
      {"min_lr_ratio", ExactNumber(config.min_lr_ratio)},
      {"warmup_steps", absl::StrCat(config.warmup_steps)},
      {"weight_decay", ExactNumber(config.weight_decay)},
      {"grad_clip", ExactNumber(config.grad_clip)},
      {"loss_targets", absl::StrJoin(targets, ",")},
      {"dropout", ExactNumber(config.shape.dropout)},
      {"train", PathList(train)},
      {"val", PathList(val)},
  };
  return absl::StrJoin(fields, ";", absl::PairFormatter("="));
}

std::string ShapeKey(const ModelShape& shape) {
  return absl::StrCat(
      "d_model=", shape.d_model, " layers=", shape.layers,
      " base_heads=", shape.base_heads, " context=", shape.context,
      " vocab=", shape.vocab_size, " positions=",
      shape.positions == Positions::kRotary ? "rotary" : "learned");
}

std::string CheckpointPath(const std::string& dir) {
  return (fs::path(dir) / "checkpoint.pt").string();
}

absl::Status SaveCheckpoint(const std::string& dir,
                            const Checkpoint& checkpoint) {
  PRISM_RETURN_IF_ERROR(CreatePrivateDirectories(dir));
  std::error_code ec;
  const std::string path = CheckpointPath(dir);
  const std::string temp = UniqueTempPath(path);
  FileSink sink(temp);
  try {
    torch::serialize::OutputArchive archive;
    archive.write("format_version", c10::IValue(kFormatVersion));
    archive.write("shape", c10::IValue(checkpoint.identity.shape));
    archive.write("schedule", c10::IValue(checkpoint.identity.schedule));
    archive.write("seed",
                  c10::IValue(static_cast<int64_t>(checkpoint.identity.seed)));
    archive.write("recipe", c10::IValue(checkpoint.identity.recipe));
    archive.write("step", c10::IValue(checkpoint.step));
    archive.write("adam_steps", c10::IValue(checkpoint.adam_steps));
    archive.write("parameters", checkpoint.parameters.to(torch::kCPU));
    archive.write("exp_avg", checkpoint.exp_avg.to(torch::kCPU));
    archive.write("exp_avg_sq", checkpoint.exp_avg_sq.to(torch::kCPU));
    archive.write("curve", CurveToTensor(checkpoint.curve));
    archive.write("milestones", MilestonesToTensor(checkpoint.milestones));
    archive.write("elapsed_seconds", c10::IValue(checkpoint.elapsed_seconds));
    archive.write("min_val_loss", c10::IValue(checkpoint.min_val_loss));
    archive.write("final_val_loss", c10::IValue(checkpoint.final_val_loss));
    archive.write("final_train_loss", c10::IValue(checkpoint.final_train_loss));
    archive.write("train_seconds", c10::IValue(checkpoint.train_seconds));
    archive.write("train_tokens", c10::IValue(checkpoint.train_tokens));
    archive.write("train_cpu_seconds",
                  c10::IValue(checkpoint.train_cpu_seconds));
    archive.write("window_loss", c10::IValue(checkpoint.window_loss));
    archive.write("window_seconds", c10::IValue(checkpoint.window_seconds));
    archive.write("window_steps", c10::IValue(checkpoint.window_steps));
    archive.write("attention_kernel", c10::IValue(checkpoint.attention_kernel));
    archive.save_to(
        [&sink](const void* data, size_t n) { return sink.Write(data, n); });
  } catch (const std::exception& e) {
    sink.Finish();
    fs::remove(temp, ec);
    return absl::InternalError(
        absl::StrCat("cannot write checkpoint ", temp, ": ", e.what()));
  }
  if (const int error = sink.Finish(); error != 0) {
    fs::remove(temp, ec);
    return FileError(absl::StrCat("cannot write checkpoint ", temp), error);
  }
  Failpoint("checkpoint.temp_written");
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    fs::remove(temp, ec);
    return FileError(absl::StrCat("cannot rename ", temp, " to ", path), error);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Checkpoint>> LoadCheckpoint(
    const std::string& dir, const CheckpointIdentity& expected) {
  const std::string path = CheckpointPath(dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<Checkpoint>();
  Checkpoint checkpoint;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    const int64_t version = Read(archive, "format_version").toInt();
    if (version < 1 || version > kFormatVersion) {
      return absl::DataLossError(
          absl::StrCat("checkpoint ", path, " has format version ", version,
                       ", expected 1 to ", kFormatVersion));
    }
    checkpoint.identity.shape = Read(archive, "shape").toStringRef();
    checkpoint.identity.schedule = Read(archive, "schedule").toStringRef();
    checkpoint.identity.seed =
        static_cast<uint64_t>(Read(archive, "seed").toInt());
    if (version >= kFirstRecipeVersion) {
      checkpoint.identity.recipe = Read(archive, "recipe").toStringRef();
    }
    checkpoint.step = Read(archive, "step").toInt();
    checkpoint.adam_steps = Read(archive, "adam_steps").toInt();
    archive.read("parameters", checkpoint.parameters);
    archive.read("exp_avg", checkpoint.exp_avg);
    archive.read("exp_avg_sq", checkpoint.exp_avg_sq);
    torch::Tensor curve, milestones;
    archive.read("curve", curve);
    archive.read("milestones", milestones);
    checkpoint.curve = CurveFromTensor(curve);
    checkpoint.milestones = MilestonesFromTensor(milestones);
    checkpoint.elapsed_seconds = Read(archive, "elapsed_seconds").toDouble();
    checkpoint.min_val_loss = Read(archive, "min_val_loss").toDouble();
    checkpoint.final_val_loss = Read(archive, "final_val_loss").toDouble();
    if (version >= kFirstRecipeVersion) {
      checkpoint.final_train_loss =
          Read(archive, "final_train_loss").toDouble();
      checkpoint.train_seconds = Read(archive, "train_seconds").toDouble();
      checkpoint.train_tokens = Read(archive, "train_tokens").toInt();
      checkpoint.window_loss = Read(archive, "window_loss").toDouble();
      checkpoint.window_seconds = Read(archive, "window_seconds").toDouble();
      checkpoint.window_steps = Read(archive, "window_steps").toInt();
    }
    if (version >= kFirstKernelVersion) {
      checkpoint.attention_kernel =
          Read(archive, "attention_kernel").toStringRef();
    }
    if (version >= kFirstCpuSecondsVersion) {
      checkpoint.train_cpu_seconds =
          Read(archive, "train_cpu_seconds").toDouble();
    }
  } catch (const c10::Error& e) {
    return absl::DataLossError(absl::StrCat(
        "checkpoint ", path, " is unreadable: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::DataLossError(
        absl::StrCat("checkpoint ", path, " is unreadable: ", e.what()));
  }
  const CheckpointIdentity& got = checkpoint.identity;
  if (got.shape != expected.shape) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", path, " is for shape '", got.shape, "', this run is '",
        expected.shape, "'; use another --checkpoint-dir"));
  }
  if (got.schedule != expected.schedule) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", path, " is for schedule ", got.schedule,
        ", this run is ", expected.schedule, "; use another --checkpoint-dir"));
  }
  if (expected.check_seed && got.seed != expected.seed) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", path, " is for seed ", got.seed, ", this run is ",
        expected.seed, "; use another --checkpoint-dir"));
  }
  if (expected.check_recipe && got.recipe != expected.recipe) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", path, " was written by a different recipe (",
        got.recipe.empty()
            ? "it records none: an older version wrote it"
            : absl::StrCat("checkpoint vs this run: ",
                           RecipeDifferences(got.recipe, expected.recipe)),
        "); use another --checkpoint-dir"));
  }
  return std::optional<Checkpoint>(std::move(checkpoint));
}

}  // namespace prism::model::internal
