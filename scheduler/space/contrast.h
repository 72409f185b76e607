// Contrast set: a small space that makes every design principle's effect
// estimable. It holds the schedules that satisfy all three principles plus,
// for each principle, a few schedules that violate that principle and no
// other, so the principle analysis (principle_analysis.h) can separate the
// principles with few trials. `prism run` trains it on its demo shape.
//
// Which violators: among the schedules of the shape (hard constraints only)
// that break exactly principle p, the `per_principle` nearest to a principled
// schedule (L1 distance over per-layer head counts; the uniform baseline when
// nothing is principled), ties in the space's canonical order. Nearest
// because a contrast should differ from what it is compared with in as little
// as possible besides the principle.
//
//   SpaceSpec shape{.d_model = 96, .layers = 6, .base_heads = 6};
//   absl::StatusOr<ContrastSet> c = BuildContrastSet(shape, 2);
//   for (const Schedule& s : c->All()) spec.add_schedules(s.ToString());
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_SPACE_CONTRAST_H_
#define PRISM_SCHEDULER_SPACE_CONTRAST_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/space/principles.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"

namespace prism {

// kMaxContrastSpace bounds the spaces BuildContrastSet enumerates in full.
inline constexpr uint64_t kMaxContrastSpace = 1'000'000;

struct ContrastSet {
  // principled: the schedules other than the baseline that satisfy every
  // principle, in canonical order.
  std::vector<Schedule> principled;
  // violators[i]: schedules breaking only kAllPrinciples[i], nearest first;
  // empty when the shape has none (e.g. pow2 when d_model is a power of two,
  // since every divisor then is).
  std::vector<std::vector<Schedule>> violators;

  // All returns principled, then each principle's violators.
  std::vector<Schedule> All() const;
};

// BuildContrastSet returns the contrast set of `shape` (its principles field
// is ignored; its run bounds define smoothness). InvalidArgument for an
// invalid shape, per_principle < 1, or a space of more than
// kMaxContrastSpace schedules.
absl::StatusOr<ContrastSet> BuildContrastSet(const SpaceSpec& shape,
                                             int per_principle);

}  // namespace prism

#endif  // PRISM_SCHEDULER_SPACE_CONTRAST_H_
