// Fuzzes the eval-file reader (model/eval.h ParseEvalFile, what ReadEvalFile
// and `prism eval` run on a file's bytes). An accepted file must hold valid
// examples that encode and parse back to the same examples; a refusal must
// be DataLoss.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "model/eval.h"

namespace {

// GPT-2's vocabulary, which llm.c's HellaSwag files use.
constexpr int kVocabSize = 50257;

bool SameExamples(const std::vector<prism::model::EvalExample>& a,
                  const std::vector<prism::model::EvalExample>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].index != b[i].index || a[i].label != b[i].label ||
        a[i].context != b[i].context || a[i].completions != b[i].completions) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace model = prism::model;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<std::vector<model::EvalExample>> examples =
      model::ParseEvalFile("fuzz.bin", bytes, kVocabSize);
  if (!examples.ok()) {
    PRISM_FUZZ_CHECK(absl::IsDataLoss(examples.status()));
    return 0;
  }
  for (const model::EvalExample& example : *examples) {
    PRISM_FUZZ_CHECK(example.label >= 0);
    PRISM_FUZZ_CHECK(example.label <
                     static_cast<int>(example.completions.size()));
  }
  const absl::StatusOr<std::string> encoded = model::EncodeEvalFile(*examples);
  PRISM_FUZZ_CHECK(encoded.ok());
  const absl::StatusOr<std::vector<model::EvalExample>> again =
      model::ParseEvalFile("fuzz.bin", *encoded, kVocabSize);
  PRISM_FUZZ_CHECK(again.ok());
  PRISM_FUZZ_CHECK(SameExamples(*examples, *again));
  return 0;
}
