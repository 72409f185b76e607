#include "scheduler/space/presets.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace prism {
namespace {

// kGpt2PaddedVocab is GPT-2's 50257 tokens padded to a multiple of 64, as
// nanoGPT does, so the output projection tiles evenly.
constexpr int kGpt2PaddedVocab = 50304;
constexpr int kByteVocab = 256;

ModelShape MakeShape(std::string name, int d_model, int layers, int base_heads,
                     int context, int vocab_size, int batch_size, int64_t steps,
                     double learning_rate, int warmup_steps,
                     std::string description) {
  ModelShape s;
  s.name = std::move(name);
  s.d_model = d_model;
  s.layers = layers;
  s.base_heads = base_heads;
  s.context = context;
  s.vocab_size = vocab_size;
  s.batch_size = batch_size;
  s.steps = steps;
  s.learning_rate = learning_rate;
  s.warmup_steps = warmup_steps;
  s.description = std::move(description);
  return s;
}

std::vector<ModelShape> BuildPresets() {
  // One row per preset: name, d_model, layers, base heads, context, vocab,
  // then the training defaults (batch, steps, lr, warmup). The CPU presets'
  // budgets are sized for a 2-core machine: tiny trains a trial in well under
  // a minute on one core and still learns (val loss far below ln 256).
  return {
      MakeShape("tiny", 128, 6, 4, 128, kByteVocab, 16, 200, 2e-3, 20,
                "CPU demo: a trial in under a minute on one core"),
      MakeShape("small", 256, 8, 8, 256, kByteVocab, 16, 600, 1e-3, 50,
                "CPU: a trial in minutes"),
      MakeShape("124m", 768, 12, 12, 1024, kGpt2PaddedVocab, 32, 5000, 6e-4,
                250, "the paper's 124M scale (GPU)"),
      MakeShape("354m", 1024, 24, 16, 1024, kGpt2PaddedVocab, 16, 5000, 3e-4,
                250, "the paper's 354M scale (GPU)"),
      MakeShape("757m", 1536, 24, 24, 1024, kGpt2PaddedVocab, 8, 5000, 2.5e-4,
                250, "the paper's 757M scale (GPU)"),
  };
}

}  // namespace

const std::vector<ModelShape>& Presets() {
  static const std::vector<ModelShape>* presets =
      new std::vector<ModelShape>(BuildPresets());
  return *presets;
}

absl::StatusOr<ModelShape> FindPreset(absl::string_view name) {
  std::vector<std::string> names;
  for (const ModelShape& shape : Presets()) {
    if (absl::EqualsIgnoreCase(shape.name, name)) return shape;
    names.push_back(shape.name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown preset '", name, "' (known: ", absl::StrJoin(names, ", "), ")"));
}

absl::Status ValidateShape(const ModelShape& shape) {
  const struct {
    const char* field;
    int value;
  } sizes[] = {{"d_model", shape.d_model},
               {"layers", shape.layers},
               {"base_heads", shape.base_heads},
               {"context", shape.context},
               {"vocab_size", shape.vocab_size}};
  for (const auto& size : sizes) {
    if (size.value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(size.field, " must be positive, got ", size.value));
    }
  }
  if (shape.d_model % shape.base_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("base_heads ", shape.base_heads,
                     " does not divide d_model ", shape.d_model));
  }
  if (!(shape.dropout >= 0.0f && shape.dropout < 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dropout must be in [0, 1), got ", shape.dropout));
  }
  return absl::OkStatus();
}

ParameterCounts CountParameters(const ModelShape& shape) {
  const int64_t d = shape.d_model;
  // One block: two LayerNorms (2d each), the fused QKV projection (3d^2+3d),
  // the output projection (d^2+d) and the 4x MLP (4d^2+4d, 4d^2+d).
  const int64_t per_block = 12 * d * d + 13 * d;
  const int64_t token_embedding = static_cast<int64_t>(shape.vocab_size) * d;
  const int64_t final_norm = 2 * d;
  const int64_t positions =
      shape.positions == Positions::kLearned ? shape.context * d : 0;
  ParameterCounts counts;
  counts.nanogpt = token_embedding + shape.layers * per_block + final_norm;
  counts.total = counts.nanogpt + positions;
  return counts;
}

int64_t ForwardFlopsPerToken(const ModelShape& shape) {
  const int64_t n = CountParameters(shape).nanogpt;
  const int64_t attention = static_cast<int64_t>(shape.layers) * 2 * 2 *
                            shape.context * shape.d_model;
  return 2 * n + attention;
}

}  // namespace prism
