#include "scheduler/space/principles.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace prism {

const char* PrincipleName(Principle p) {
  switch (p) {
    case Principle::kSmooth:
      return "smooth";
    case Principle::kBaseline:
      return "baseline";
    case Principle::kPow2:
      return "pow2";
  }
  return "unknown";
}

bool PrincipleSet::Has(Principle p) const {
  switch (p) {
    case Principle::kSmooth:
      return smooth;
    case Principle::kBaseline:
      return baseline;
    case Principle::kPow2:
      return pow2;
  }
  return false;
}

void PrincipleSet::Set(Principle p, bool on) {
  switch (p) {
    case Principle::kSmooth:
      smooth = on;
      return;
    case Principle::kBaseline:
      baseline = on;
      return;
    case Principle::kPow2:
      pow2 = on;
      return;
  }
}

std::string PrincipleSet::ToString() const {
  if (empty()) return "none";
  if (*this == All()) return "all";
  std::vector<std::string> names;
  for (Principle p : kAllPrinciples) {
    if (Has(p)) names.push_back(PrincipleName(p));
  }
  return absl::StrJoin(names, ",");
}

absl::StatusOr<PrincipleSet> ParsePrinciples(absl::string_view text) {
  const std::string lower =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (lower.empty()) {
    return absl::InvalidArgumentError(
        "no principles given (use none, all, or a comma-separated list of "
        "smooth, baseline, pow2)");
  }
  if (lower == "none") return PrincipleSet::None();
  if (lower == "all") return PrincipleSet::All();
  PrincipleSet set;
  for (absl::string_view raw : absl::StrSplit(lower, ',')) {
    const absl::string_view name = absl::StripAsciiWhitespace(raw);
    bool known = false;
    for (Principle p : kAllPrinciples) {
      if (name == PrincipleName(p)) {
        set.Set(p, true);
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown principle '", name,
          "' (use none, all, or a comma-separated list of smooth, baseline, "
          "pow2)"));
    }
  }
  return set;
}

}  // namespace prism
