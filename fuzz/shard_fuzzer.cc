// Fuzzes the llm.c token shard reader (model/data.h ValidateShard, what
// TokenShard::Open runs on a file's mapping). An accepted shard must match
// its header exactly and hold only in-vocabulary tokens; a refusal must be
// DataLoss.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "model/data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace model = prism::model;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The byte vocabulary refuses most token ids; the full uint16 range none.
  for (int vocab_size : {model::kByteVocabSize, 65536}) {
    const absl::StatusOr<int64_t> count =
        model::ValidateShard("fuzz.bin", bytes, vocab_size);
    if (!count.ok()) {
      PRISM_FUZZ_CHECK(absl::IsDataLoss(count.status()));
      continue;
    }
    PRISM_FUZZ_CHECK(model::kShardHeaderBytes + 2 * *count ==
                     static_cast<int64_t>(size));
    for (int64_t i = 0; i < *count; ++i) {
      uint16_t token;
      std::memcpy(&token, data + model::kShardHeaderBytes + 2 * i,
                  sizeof token);
      PRISM_FUZZ_CHECK(token < vocab_size);
    }
  }
  return 0;
}
