// Presets: every model shape Prism Search knows, in one table, so a
// correction is one line. It lives in scheduler/ because a shape is domain
// data the coordinator needs to resolve a spec's space; model/ builds the
// LibTorch decoder from it. No torch here.
//
// The paper (see ../shared/DESIGN.md) gives sizes, not shapes. Counted as
// nanoGPT counts (without the position table) 768/12/12 is 123.7M,
// 1024/24/16 353.8M and 1536/24/24 757.2M, matching its 124M, 354M and 757M.
//
//   absl::StatusOr<ModelShape> s = FindPreset("tiny");
//   ParameterCounts n = CountParameters(*s);
//
// Thread-safety: immutable data and pure functions.
#ifndef PRISM_SCHEDULER_SPACE_PRESETS_H_
#define PRISM_SCHEDULER_SPACE_PRESETS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism {

enum class Positions { kLearned, kRotary };

struct ModelShape {
  std::string name;  // preset name, or "custom"
  int d_model = 0;
  int layers = 0;
  int base_heads = 0;
  int context = 0;     // maximum sequence length T
  int vocab_size = 0;  // embedding rows (padded, e.g. 50304 for GPT-2)
  Positions positions = Positions::kLearned;
  float dropout = 0.0f;
  // Training defaults for this scale (a Budget's zero fields take these).
  int batch_size = 0;
  int64_t steps = 0;
  double learning_rate = 0.0;
  int warmup_steps = 0;
  std::string description;
};

// Presets returns the table, smallest first: tiny, small, 124m, 354m, 757m.
const std::vector<ModelShape>& Presets();

// FindPreset returns the named preset (case-insensitive); InvalidArgument
// listing the known names otherwise.
absl::StatusOr<ModelShape> FindPreset(absl::string_view name);

// ValidateShape returns InvalidArgument naming the first bad field (non-
// positive sizes, base heads not dividing d_model, dropout outside [0, 1)).
absl::Status ValidateShape(const ModelShape& shape);

struct ParameterCounts {
  int64_t total = 0;    // every trainable parameter (tied embedding once)
  int64_t nanogpt = 0;  // total minus the learned position table
};

// CountParameters returns the analytic parameter counts. They do not depend
// on the head schedule: W_Q, W_K, W_V, W_O are d_model x d_model.
ParameterCounts CountParameters(const ModelShape& shape);

// ForwardFlopsPerToken returns the analytic forward FLOPs per token at full
// context, counted as nanoGPT and PaLM count them: 2 * the nanoGPT parameter
// count (the tied embedding counts once, as the output projection) plus
// 2 * 2 * T * d per layer for QK^T and AV over the whole context (the causal
// mask's savings are not subtracted). Training costs 3x this (forward plus
// backward). Independent of the schedule.
int64_t ForwardFlopsPerToken(const ModelShape& shape);

}  // namespace prism

#endif  // PRISM_SCHEDULER_SPACE_PRESETS_H_
