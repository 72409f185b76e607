#include "scheduler/space/schedule.h"

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace prism {
namespace {

// Error messages quote the input; a pasted megabyte must not become one.
std::string Quoted(absl::string_view text) {
  constexpr size_t kMaxQuoted = 64;
  if (text.size() <= kMaxQuoted) return absl::StrCat("'", text, "'");
  return absl::StrCat("'", text.substr(0, kMaxQuoted), "...'");
}

absl::Status BlockError(absl::string_view text, int block,
                        absl::string_view block_text,
                        absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("schedule ", Quoted(text), ": block ", block, " ",
                   Quoted(block_text), " ", problem));
}

}  // namespace

Schedule Schedule::Uniform(int heads, int layers) {
  return Schedule(std::vector<int>(layers > 0 ? layers : 0, heads));
}

bool Schedule::IsUniform() const {
  for (int h : heads_) {
    if (h != heads_.front()) return false;
  }
  return true;
}

std::string Schedule::ToString() const {
  std::string out;
  size_t i = 0;
  while (i < heads_.size()) {
    size_t j = i;
    while (j < heads_.size() && heads_[j] == heads_[i]) ++j;
    absl::StrAppend(&out, out.empty() ? "" : ",", heads_[i], "x", j - i);
    i = j;
  }
  return out;
}

absl::StatusOr<Schedule> ParseSchedule(absl::string_view text) {
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(
        "schedule is empty: expected HEADSxLAYERS blocks such as "
        "3x3,6x3,12x6");
  }
  std::vector<int> heads;
  int64_t total = 0;
  int block = 0;
  for (absl::string_view raw : absl::StrSplit(text, ',')) {
    ++block;
    const absl::string_view b = absl::StripAsciiWhitespace(raw);
    if (b.empty()) return BlockError(text, block, b, "is empty");
    const size_t x = b.find_first_of("xX");
    if (x == absl::string_view::npos || x == 0 || x + 1 == b.size()) {
      return BlockError(text, block, b, "needs HEADSxLAYERS");
    }
    int h = 0;
    int n = 0;
    if (!absl::SimpleAtoi(b.substr(0, x), &h) ||
        !absl::SimpleAtoi(b.substr(x + 1), &n)) {
      return BlockError(text, block, b,
                        "needs HEADSxLAYERS with integer HEADS and LAYERS");
    }
    if (h <= 0) {
      return BlockError(
          text, block, b,
          absl::StrCat("has ", h, " heads; heads must be positive"));
    }
    if (n <= 0) {
      return BlockError(
          text, block, b,
          absl::StrCat("has ", n, " layers; layers must be positive"));
    }
    total += n;
    if (total > kMaxLayers) {
      return absl::InvalidArgumentError(absl::StrCat(
          "schedule ", Quoted(text), ": more than ", kMaxLayers, " layers"));
    }
    heads.insert(heads.end(), n, h);
  }
  return Schedule(std::move(heads));
}

}  // namespace prism
