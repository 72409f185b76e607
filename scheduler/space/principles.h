// Principles: the Prism paper's soft design rules, each a named, switchable
// filter on a schedule space and a reported property of every schedule.
//
//   smooth    staircase smoothness: every maximal run of a non-baseline head
//             count spans min_run..max_run consecutive layers (default 2..4);
//   baseline  baseline preservation: at least ceil(L/2) layers use base heads;
//   pow2      power-of-two head dims: d_model / h_l is a power of two in every
//             layer (Tensor Core friendly tiles).
//
//   absl::StatusOr<PrincipleSet> p = ParsePrinciples("smooth,pow2");
//
// Thread-safety: plain values and pure functions.
#ifndef PRISM_SCHEDULER_SPACE_PRINCIPLES_H_
#define PRISM_SCHEDULER_SPACE_PRINCIPLES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism {

enum class Principle { kSmooth = 0, kBaseline = 1, kPow2 = 2 };
inline constexpr Principle kAllPrinciples[] = {
    Principle::kSmooth, Principle::kBaseline, Principle::kPow2};

// PrincipleName returns "smooth", "baseline" or "pow2".
const char* PrincipleName(Principle p);

// PrincipleSet is a subset of the principles, used as a filter.
struct PrincipleSet {
  bool smooth = false;
  bool baseline = false;
  bool pow2 = false;

  static PrincipleSet None() { return {}; }
  static PrincipleSet All() { return {true, true, true}; }
  bool Has(Principle p) const;
  void Set(Principle p, bool on);
  bool empty() const { return !smooth && !baseline && !pow2; }
  // ToString returns "none", "all", or the comma-joined names.
  std::string ToString() const;
  friend bool operator==(const PrincipleSet& a, const PrincipleSet& b) {
    return a.smooth == b.smooth && a.baseline == b.baseline && a.pow2 == b.pow2;
  }
};

// ParsePrinciples accepts "none", "all", or a comma-separated list of names
// ("smooth,baseline,pow2"; case-insensitive, repeats allowed). Returns
// InvalidArgument naming the unknown principle otherwise, or for empty text.
absl::StatusOr<PrincipleSet> ParsePrinciples(absl::string_view text);

}  // namespace prism

#endif  // PRISM_SCHEDULER_SPACE_PRINCIPLES_H_
