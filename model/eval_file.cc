// The eval file format of eval.h: reading, parsing and writing. Torch-free,
// so fuzz/eval_file_fuzzer.cc builds it without LibTorch.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model/eval.h"
#include "model/internal/files.h"

namespace prism::model {
namespace {

constexpr int kHeaderInts = 256;
constexpr int64_t kHeaderBytes = kHeaderInts * 4;
// The smallest example: start, size, index, label, completion count, context
// length and one completion's length (a label must index a completion).
constexpr int64_t kMinExampleBytes = 7 * 2;

// Reader walks the uint16 stream of an eval file, naming byte offsets in
// its errors.
class Reader {
 public:
  Reader(absl::string_view name, absl::string_view bytes)
      : name_(name), bytes_(bytes), offset_(kHeaderBytes) {}

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
        absl::StrCat("eval file ", name_, " at byte ", at, ": ", what));
  }

 private:
  const absl::string_view name_;
  const absl::string_view bytes_;
  int64_t offset_;
};

int32_t HeaderField(absl::string_view bytes, int index) {
  int32_t value;
  std::memcpy(&value, bytes.data() + 4 * index, sizeof value);
  return value;
}

}  // namespace

absl::StatusOr<std::string> EncodeEvalFile(
    const std::vector<EvalExample>& examples) {
  std::vector<uint16_t> stream;
  int32_t longest = 0;
  for (size_t e = 0; e < examples.size(); ++e) {
    const EvalExample& example = examples[e];
    if (example.index < 0 || example.index >= kEvalExampleStart) {
      return absl::InvalidArgumentError(
          absl::StrCat("example ", e, ": index ", example.index,
                       " is outside [0, ", kEvalExampleStart, ")"));
    }
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
  std::string bytes(reinterpret_cast<const char*>(header), sizeof header);
  bytes.append(reinterpret_cast<const char*>(stream.data()),
               stream.size() * sizeof(uint16_t));
  return bytes;
}

absl::Status WriteEvalFile(const std::string& path,
                           const std::vector<EvalExample>& examples) {
  absl::StatusOr<std::string> bytes = EncodeEvalFile(examples);
  if (!bytes.ok()) return bytes.status();
  return internal::WriteFileAtomically(path, {{bytes->data(), bytes->size()}});
}

absl::StatusOr<std::vector<EvalExample>> ReadEvalFile(const std::string& path,
                                                      int vocab_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("eval file ", path, " not found"));
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  return ParseEvalFile(path, bytes, vocab_size);
}

absl::StatusOr<std::vector<EvalExample>> ParseEvalFile(absl::string_view name,
                                                       absl::string_view bytes,
                                                       int vocab_size) {
  Reader reader(name, bytes);
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
  // A count the body cannot hold is refused before anything is allocated
  // for it (a corrupt header once asked for 1.9 billion examples).
  const int64_t body = static_cast<int64_t>(bytes.size()) - kHeaderBytes;
  if (count > body / kMinExampleBytes) {
    return reader.Error(
        8,
        absl::StrCat("the header says ", count, " examples but the ", body,
                     " bytes after it hold at most ", body / kMinExampleBytes));
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
    // WriteEvalFile never writes the start marker inside an example, so a
    // file read here can be written back.
    if (index == kEvalExampleStart) {
      return reader.Error(start + 4,
                          absl::StrCat("the example index ", index,
                                       " is the example start marker"));
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

}  // namespace prism::model
