#include "model/eval.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "model/internal/checkpoint.h"
#include "model/internal/decoder.h"
#include "model/internal/files.h"
#include "model/internal/runtime.h"
#include "scheduler/space.h"

namespace prism::model {
namespace {

constexpr int kHeaderInts = 256;
constexpr int64_t kHeaderBytes = kHeaderInts * 4;

// Reader walks the uint16 stream of an eval file, naming byte offsets in
// its errors.
class Reader {
 public:
  Reader(const std::string& path, const std::string& bytes)
      : path_(path), bytes_(bytes), offset_(kHeaderBytes) {}

  int64_t offset() const { return offset_; }
  bool at_end() const { return offset_ == static_cast<int64_t>(bytes_.size()); }

  absl::Status Next(const char* what, uint16_t* value) {
    if (offset_ + 2 > static_cast<int64_t>(bytes_.size())) {
      return Error(offset_,
                   absl::StrCat("truncated: the file ends before ", what));
    }
    std::memcpy(value, bytes_.data() + offset_, 2);
    offset_ += 2;
    return absl::OkStatus();
  }

  absl::Status Tokens(const char* what, int vocab_size,
                      std::vector<uint16_t>* out) {
    uint16_t length = 0;
    if (absl::Status s = Next(what, &length); !s.ok()) return s;
    out->resize(length);
    for (uint16_t& token : *out) {
      const int64_t at = offset_;
      if (absl::Status s = Next(what, &token); !s.ok()) return s;
      if (token >= vocab_size) {
        return Error(at, absl::StrCat("token id ", token, " in the ", what,
                                      " is outside the vocabulary (size ",
                                      vocab_size, ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Error(int64_t at, absl::string_view what) const {
    return absl::DataLossError(
        absl::StrCat("eval file ", path_, " at byte ", at, ": ", what));
  }

 private:
  const std::string& path_;
  const std::string& bytes_;
  int64_t offset_;
};

int32_t HeaderField(const std::string& bytes, int index) {
  int32_t value;
  std::memcpy(&value, bytes.data() + 4 * index, sizeof value);
  return value;
}

absl::StatusOr<EvalResult> Evaluate(const EvalConfig& config) {
  if (absl::Status s = ValidateShape(config.shape); !s.ok()) return s;
  SpaceSpec spec;
  spec.d_model = config.shape.d_model;
  spec.layers = config.shape.layers;
  spec.base_heads = config.shape.base_heads;
  if (absl::Status s = CheckHardConstraints(spec, config.schedule); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "schedule '", config.schedule.ToString(), "': ", s.message()));
  }
  absl::StatusOr<std::vector<EvalExample>> examples =
      ReadEvalFile(config.eval_file, config.shape.vocab_size);
  if (!examples.ok()) return examples.status();
  absl::StatusOr<torch::Device> device = internal::ResolveDevice(config.device);
  if (!device.ok()) return device.status();

  internal::CheckpointIdentity identity;
  identity.shape = internal::ShapeKey(config.shape);
  identity.schedule = config.schedule.ToString();
  identity.check_seed = false;
  identity.check_recipe = false;
  absl::StatusOr<std::optional<internal::Checkpoint>> checkpoint =
      internal::LoadCheckpoint(config.checkpoint_dir, identity);
  if (!checkpoint.ok()) return checkpoint.status();
  if (!checkpoint->has_value()) {
    return absl::NotFoundError(absl::StrCat("no checkpoint in ",
                                            config.checkpoint_dir,
                                            " (train with --checkpoint-dir)"));
  }

  const int threads =
      config.threads > 0 ? config.threads : internal::HardwareThreads();
  at::set_num_threads(threads);
  internal::PrismDecoder model(config.shape, config.schedule);
  {
    // The trainer's flat layout: decayed parameters first, then the rest.
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> params = model->DecayedParameters();
    for (const torch::Tensor& p : model->OtherParameters()) params.push_back(p);
    const torch::Tensor& flat = (*checkpoint)->parameters;
    int64_t offset = 0;
    for (torch::Tensor& p : params) offset += p.numel();
    if (offset != flat.numel()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint has ", flat.numel(), " parameters, the model ", offset));
    }
    offset = 0;
    for (torch::Tensor& p : params) {
      p.copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
  }
  model->to(*device);
  model->eval();

  EvalResult result;
  result.checkpoint_step = (*checkpoint)->step;
  result.device = device->str();
  const int64_t window = int64_t{config.shape.context} + 1;
  const int64_t count =
      config.limit > 0
          ? std::min<int64_t>(config.limit,
                              static_cast<int64_t>(examples->size()))
          : static_cast<int64_t>(examples->size());
  for (int64_t e = 0; e < count; ++e) {
    const EvalExample& example = (*examples)[e];
    const int64_t rows = static_cast<int64_t>(example.completions.size());
    // Each row is context + completion, left-truncated to the window; the
    // scored targets are the completion's last tokens.
    std::vector<std::vector<uint16_t>> sequences;
    int64_t longest = 2;
    for (const std::vector<uint16_t>& completion : example.completions) {
      std::vector<uint16_t> seq = example.context;
      seq.insert(seq.end(), completion.begin(), completion.end());
      if (static_cast<int64_t>(seq.size()) > window) {
        seq.erase(seq.begin(), seq.end() - window);
      }
      longest = std::max<int64_t>(longest, seq.size());
      sequences.push_back(std::move(seq));
    }
    const int64_t t = longest - 1;
    torch::Tensor inputs = torch::zeros({rows, t}, torch::kInt64);
    torch::Tensor targets = torch::zeros({rows, t}, torch::kInt64);
    torch::Tensor mask = torch::zeros({rows, t}, torch::kFloat32);
    auto in = inputs.accessor<int64_t, 2>();
    auto out = targets.accessor<int64_t, 2>();
    auto scored_mask = mask.accessor<float, 2>();
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<uint16_t>& seq = sequences[r];
      const int64_t n = static_cast<int64_t>(seq.size());
      const int64_t scored = std::min<int64_t>(
          static_cast<int64_t>(example.completions[r].size()), n - 1);
      for (int64_t i = 0; i + 1 < n; ++i) {
        in[r][i] = seq[i];
        out[r][i] = seq[i + 1];
        if (i >= n - 1 - scored) scored_mask[r][i] = 1.0f;
      }
    }
    const torch::Tensor losses =
        model->TokenLosses(inputs.to(*device), targets.to(*device))
            .to(torch::kCPU) *
        mask;
    const torch::Tensor sums = losses.sum(1);
    const torch::Tensor means = sums / mask.sum(1).clamp_min(1.0f);
    if (sums.argmin().item<int64_t>() == example.label) ++result.correct;
    if (means.argmin().item<int64_t>() == example.label) {
      ++result.correct_norm;
    }
    ++result.examples;
  }
  if (result.examples > 0) {
    result.acc = static_cast<double>(result.correct) / result.examples;
    result.acc_norm =
        static_cast<double>(result.correct_norm) / result.examples;
  }
  return result;
}

}  // namespace

absl::Status WriteEvalFile(const std::string& path,
                           const std::vector<EvalExample>& examples) {
  std::vector<uint16_t> stream;
  int32_t longest = 0;
  for (size_t e = 0; e < examples.size(); ++e) {
    const EvalExample& example = examples[e];
    if (example.label < 0 ||
        example.label >= static_cast<int>(example.completions.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", e, ": label ", example.label, " but ",
                       example.completions.size(), " completions"));
    }
    std::vector<uint16_t> s = {
        kEvalExampleStart, 0, static_cast<uint16_t>(example.index),
        static_cast<uint16_t>(example.label),
        static_cast<uint16_t>(example.completions.size())};
    auto append = [&](const std::vector<uint16_t>& tokens) {
      s.push_back(static_cast<uint16_t>(tokens.size()));
      s.insert(s.end(), tokens.begin(), tokens.end());
    };
    append(example.context);
    for (const std::vector<uint16_t>& completion : example.completions) {
      append(completion);
    }
    const size_t bytes = s.size() * 2;
    if (bytes >= 65536 ||
        std::count(s.begin() + 1, s.end(), kEvalExampleStart) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "example ", e, " is over 65535 bytes or holds token 65535"));
    }
    s[1] = static_cast<uint16_t>(bytes);
    longest = std::max<int32_t>(longest, static_cast<int32_t>(bytes));
    stream.insert(stream.end(), s.begin(), s.end());
  }
  int32_t header[kHeaderInts] = {};
  header[0] = kEvalMagic;
  header[1] = kEvalVersion;
  header[2] = static_cast<int32_t>(examples.size());
  header[3] = longest;
  return internal::WriteFileAtomically(
      path, {{header, sizeof header},
             {stream.data(), stream.size() * sizeof(uint16_t)}});
}

absl::StatusOr<std::vector<EvalExample>> ReadEvalFile(const std::string& path,
                                                      int vocab_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("eval file ", path, " not found"));
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  Reader reader(path, bytes);
  if (static_cast<int64_t>(bytes.size()) < kHeaderBytes) {
    return reader.Error(static_cast<int64_t>(bytes.size()), "truncated header");
  }
  if (HeaderField(bytes, 0) != kEvalMagic) {
    return reader.Error(0, absl::StrCat("bad magic ", HeaderField(bytes, 0),
                                        " (expected ", kEvalMagic, ")"));
  }
  if (HeaderField(bytes, 1) != kEvalVersion) {
    return reader.Error(
        4, absl::StrCat("unsupported version ", HeaderField(bytes, 1)));
  }
  const int32_t count = HeaderField(bytes, 2);
  if (count < 0) {
    return reader.Error(8, absl::StrCat("negative example count ", count));
  }
  std::vector<EvalExample> examples(count);
  for (EvalExample& example : examples) {
    const int64_t start = reader.offset();
    uint16_t marker = 0, size = 0, index = 0, label = 0, completions = 0;
    if (absl::Status s = reader.Next("the example start", &marker); !s.ok()) {
      return s;
    }
    if (marker != kEvalExampleStart) {
      return reader.Error(
          start, absl::StrCat("expected the example start ", kEvalExampleStart,
                              ", got ", marker));
    }
    for (auto [what, field] : {std::pair{"the example size", &size},
                               {"the example index", &index},
                               {"the label", &label},
                               {"the completion count", &completions}}) {
      if (absl::Status s = reader.Next(what, field); !s.ok()) return s;
    }
    if (label >= completions) {
      return reader.Error(start + 6, absl::StrCat("label ", label, " but only ",
                                                  completions, " completions"));
    }
    example.index = index;
    example.label = label;
    if (absl::Status s = reader.Tokens("context", vocab_size, &example.context);
        !s.ok()) {
      return s;
    }
    example.completions.resize(completions);
    for (std::vector<uint16_t>& completion : example.completions) {
      if (absl::Status s = reader.Tokens("completion", vocab_size, &completion);
          !s.ok()) {
        return s;
      }
    }
    if (reader.offset() - start != size) {
      return reader.Error(start + 2, absl::StrCat("the example says ", size,
                                                  " bytes but holds ",
                                                  reader.offset() - start));
    }
  }
  if (!reader.at_end()) {
    return reader.Error(reader.offset(), absl::StrCat("trailing bytes after ",
                                                      count, " examples"));
  }
  return examples;
}

absl::StatusOr<EvalResult> EvaluateMultipleChoice(const EvalConfig& config) {
  try {
    return Evaluate(config);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("libtorch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("evaluation failed: ", e.what()));
  }
}

}  // namespace prism::model
