// Zero-shot multiple-choice evaluation (HellaSwag-style) on files in llm.c's
// eval format. PIQA, ARC-Easy and WinoGrande can be written in the same
// format. No torch here.
//
// A file is a header of 256 little-endian int32 ([0] = 20240522 magic, [1] =
// 1 version, [2] = number of examples, [3] = longest example in bytes), then
// per example a stream of uint16: 65535 (start), the example's size in bytes
// (this whole stream), its index, the label (index of the right completion),
// the number of completions, the context length and tokens, then each
// completion's length and tokens.
//
// Scoring: each completion is appended to the context and scored by the
// model's cross entropy on the completion tokens; acc picks the lowest
// summed loss, acc_norm the lowest mean loss (llm.c's definitions).
//
//   absl::StatusOr<EvalResult> r = EvaluateMultipleChoice(config);
//   r->acc, r->acc_norm
//
// Thread-safety: pure functions of their arguments and files.
#ifndef PRISM_MODEL_EVAL_H_
#define PRISM_MODEL_EVAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"

namespace prism::model {

inline constexpr int32_t kEvalMagic = 20240522;
inline constexpr int32_t kEvalVersion = 1;
inline constexpr uint16_t kEvalExampleStart = 65535;

struct EvalExample {
  int index = 0;
  int label = 0;
  std::vector<uint16_t> context;
  std::vector<std::vector<uint16_t>> completions;
};

// WriteEvalFile writes examples in the format above (temp file + rename).
// InvalidArgument for an index outside [0, 65535), a label outside the
// completions, a token 65535, or an example over 65535 bytes; Internal for
// I/O errors.
absl::Status WriteEvalFile(const std::string& path,
                           const std::vector<EvalExample>& examples);

// EncodeEvalFile returns the bytes WriteEvalFile writes, with its
// InvalidArgument errors.
absl::StatusOr<std::string> EncodeEvalFile(
    const std::vector<EvalExample>& examples);

// ReadEvalFile parses and validates a file. NotFound when missing; DataLoss
// naming the file and byte offset for a bad magic or version, an example
// count the file is too short to hold, a missing start marker, an example
// index of 65535 (the start marker), a truncated file, a size field that
// disagrees with the example, a label outside the completions, trailing
// bytes, or a token id >= vocab_size.
absl::StatusOr<std::vector<EvalExample>> ReadEvalFile(const std::string& path,
                                                      int vocab_size);

// ParseEvalFile is ReadEvalFile on the bytes of a file; `name` labels the
// errors. Returns ReadEvalFile's DataLoss errors.
absl::StatusOr<std::vector<EvalExample>> ParseEvalFile(absl::string_view name,
                                                       absl::string_view bytes,
                                                       int vocab_size);

struct EvalConfig {
  ModelShape shape;
  Schedule schedule;
  std::string checkpoint_dir;  // holds checkpoint.pt from `prism train`
  std::string eval_file;
  std::string device = "auto";
  int threads = 0;    // 0: all cores
  int64_t limit = 0;  // evaluate only the first `limit` examples; 0: all
};

struct EvalResult {
  int64_t examples = 0;
  int64_t correct = 0;       // by summed completion loss
  int64_t correct_norm = 0;  // by mean completion loss
  double acc = 0.0;
  double acc_norm = 0.0;
  int64_t checkpoint_step = 0;
  std::string device;
};

// EvaluateMultipleChoice loads the checkpoint for (shape, schedule) and
// scores every example. Sequences longer than the context keep their last
// context + 1 tokens. Returns ReadEvalFile's errors, NotFound when the
// directory has no checkpoint, FailedPrecondition when it belongs to another
// shape or schedule (any seed's or training recipe's will do),
// InvalidArgument for a bad schedule or device, Internal for LibTorch errors.
absl::StatusOr<EvalResult> EvaluateMultipleChoice(const EvalConfig& config);

}  // namespace prism::model

#endif  // PRISM_MODEL_EVAL_H_
