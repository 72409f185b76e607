// Profile: a head schedule stated without its shape, and the mapping of one
// onto another model shape, so that a result at one size can be stated (and
// rerun) at another.
//
// A schedule h_1..h_L of a shape with base heads B has the profile
// P(x) = h_l / B for relative depth x in [(l-1)/L, l/L): a step function from
// [0, 1) to head ratios in (0, 1], ending at 1 (the boundary layer). It
// forgets d_model and L, so a profile can be laid over any depth.
//
// MapSchedule lays the profile over the target's L' layers and returns the
// valid target schedule M (every h'_j divides d_model', monotone, h'_L' = B')
// that minimises the distortion below, subject to keeping every principle
// (principles.h) the source schedule holds, where the target can hold them
// together. Minimising is exact: dynamic programming over (layer, head count,
// run length), on the mean error, then the max error; remaining ties go to a
// fixed choice (the first in the program's order), so a map is reproducible.
//
// Smoothness counts runs in layers, not depth: a deeper target stretches a
// source run (2 of tiny's 6 layers are 8 of 354m's 24, past max_run 4), and
// keeping the principle then costs distortion that the exact image would not.
//
// Distortion, in doublings: e(x) = |log2 M(x) - log2 P(x)|, with M(x) the
// mapped schedule's own profile. max_error is the supremum of e over [0, 1),
// mean_error its integral (the depth-weighted mean). Both are 0 exactly when
// the target reproduces the profile (e.g. tiny 1x2,2x1,4x3 at 124m is
// 3x4,6x2,12x6); both are metrics on profiles, so a round trip A -> B -> A
// is within the sum of the two hops' distortions of the original.
//
// Unmappable (FailedPrecondition, naming the schedule, the target and why):
//   - a source ratio with no target head count within max_ratio_error
//     doublings (e.g. 124m's 1 head, ratio 1/12, at tiny: the narrowest is
//     1 of 4 heads, 1.58 doublings wider);
//   - a target with fewer layers than the source has distinct head counts
//     (its steps cannot all be laid out).
// Bad input (InvalidArgument): an invalid shape, or a schedule that is not
// valid for the source shape (CheckHardConstraints' message).
//
//   absl::StatusOr<ScheduleMapping> m = MapSchedule(
//       *ParseSchedule("1x2,2x1,4x3"), *FindPreset("tiny"),
//       *FindPreset("124m"));
//   m->mapped.ToString();          // "3x4,6x2,12x6"
//   m->distortion.max_error;       // 0
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_SPACE_PROFILE_H_
#define PRISM_SCHEDULER_SPACE_PROFILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/principles.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"

namespace prism {

// The default largest distance, in doublings, between a source layer's ratio
// and the nearest head ratio the target offers.
inline constexpr double kDefaultMaxRatioError = 1.0;

// ScheduleProfile is a schedule's head ratios, one per layer of equal depth.
struct ScheduleProfile {
  std::vector<double> ratios;  // h_l / B, first layer first
  // RatioAt returns P(depth) for depth in [0, 1) (clamped outside).
  double RatioAt(double depth) const;
};

// ProfileOf returns the profile of `s` for `base_heads` (> 0).
ScheduleProfile ProfileOf(const Schedule& s, int base_heads);

// Distortion is e(x) summarised over [0, 1) (see the top).
struct Distortion {
  double max_error = 0.0;   // doublings
  double mean_error = 0.0;  // doublings, depth-weighted
};

// ProfileDistortion returns the distortion of schedule `s` (heads of a shape
// with `base_heads`) against `profile`.
Distortion ProfileDistortion(const ScheduleProfile& profile, const Schedule& s,
                             int base_heads);

struct MapOptions {
  double max_ratio_error = kDefaultMaxRatioError;  // > 0
  // Run bounds of the smooth principle, at both ends.
  int min_run = kDefaultMinRun;
  int max_run = kDefaultMaxRun;
};

// LayerMapping is one target layer.
struct LayerMapping {
  double depth_begin = 0.0;  // [depth_begin, depth_end) of [0, 1)
  double depth_end = 0.0;
  double profile_ratio = 0.0;  // P at the layer's middle
  int heads = 0;
  double ratio = 0.0;       // heads / B'
  double max_error = 0.0;   // sup of e over the layer
  double mean_error = 0.0;  // mean of e over the layer
};

// ScheduleMapping is MapSchedule's answer.
struct ScheduleMapping {
  std::string from;  // shape names
  std::string to;
  Schedule source;
  Schedule mapped;
  std::vector<double> source_ratios;  // per source layer
  std::vector<LayerMapping> layers;   // per target layer
  Distortion distortion;
  PrincipleSet source_principles;  // held by the source
  PrincipleSet mapped_principles;  // held by the mapped schedule
  PrincipleSet kept;               // held at the source and required here
  // One line per principle the source held that the mapping could not keep,
  // saying why; empty when every one was kept.
  std::vector<std::string> dropped;
};

// MapSchedule maps `s`, a schedule of `from`, onto `to` (see the top).
// InvalidArgument for invalid shapes, a schedule invalid for `from`, or bad
// options; FailedPrecondition when `s` is unmappable to `to`.
absl::StatusOr<ScheduleMapping> MapSchedule(const Schedule& s,
                                            const ModelShape& from,
                                            const ModelShape& to,
                                            const MapOptions& options = {});

// ShapeSpace returns the space of `shape`'s schedules (no principles) with
// `options`' run bounds: what principles are evaluated against.
SpaceSpec ShapeSpace(const ModelShape& shape, const MapOptions& options = {});

}  // namespace prism

#endif  // PRISM_SCHEDULER_SPACE_PROFILE_H_
