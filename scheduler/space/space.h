// ScheduleSpace: the valid head schedules of one model shape, counted exactly,
// enumerated lazily, paged, and sampled uniformly.
//
// A schedule h_1..h_L is valid when every h_l divides d_model (divisibility),
// h_1 <= ... <= h_L (monotonicity) and h_L = base_heads (boundary
// convergence). A SpaceSpec may further require any subset of the principles
// (principles.h). Counting uses dynamic programming over (layers left, larger
// head counts left), O(layers x divisors), and never enumerates; counts are
// exact up to 2^64-1 and flagged beyond. Enumeration follows one deterministic
// order (lexicographic by per-layer heads, first layer first) so an index
// identifies a schedule, page tokens are indices, and uniform sampling is
// "draw an index, unrank it".
//
//   SpaceSpec spec{.d_model = 768, .layers = 12, .base_heads = 12};
//   absl::StatusOr<SpaceCount> n = CountSchedules(spec);   // 12376
//   absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(spec);
//   while (e->Next()) Use(e->heads());
//
// Thread-safety: pure functions; a ScheduleEnumerator is not thread-safe but
// distinct enumerators are independent.
#ifndef PRISM_SCHEDULER_SPACE_SPACE_H_
#define PRISM_SCHEDULER_SPACE_SPACE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/space/principles.h"
#include "scheduler/space/schedule.h"

namespace prism {

inline constexpr int kDefaultMinRun = 2;
inline constexpr int kDefaultMaxRun = 4;

struct SpaceSpec {
  int d_model = 0;
  int layers = 0;
  int base_heads = 0;
  PrincipleSet principles;
  int min_run = kDefaultMinRun;
  int max_run = kDefaultMaxRun;
};

// ValidateSpace returns OK, or InvalidArgument with one line naming the
// problem: a non-positive size, base heads not dividing d_model, min_run < 1,
// min_run > max_run, or more than kMaxLayers layers.
absl::Status ValidateSpace(const SpaceSpec& spec);

// CheckHardConstraints returns OK when `s` satisfies divisibility,
// monotonicity and the boundary for `spec`'s shape (principles are ignored),
// else InvalidArgument naming the constraint and the 1-based layer, e.g.
// "layer 4: 5 heads do not divide d_model 768 (divisibility)". A layer count
// different from spec.layers is also InvalidArgument.
absl::Status CheckHardConstraints(const SpaceSpec& spec, const Schedule& s);

// InSpace is true when `s` meets the hard constraints and every principle
// that `spec` enables.
bool InSpace(const SpaceSpec& spec, const Schedule& s);

// SchedulePrinciples is what ReportPrinciples says of one schedule.
struct SchedulePrinciples {
  bool smooth = false;
  bool baseline = false;
  bool pow2 = false;
  int transitions = 0;              // l with h_l != h_{l+1}
  double max_adjacent_ratio = 1.0;  // max h_{l+1} / h_l
  double baseline_fraction = 0.0;   // layers at base heads / L
  std::vector<int> head_dims;       // d_model / h_l
  bool Satisfies(Principle p) const;
};

// ReportPrinciples evaluates every principle for `s` under `spec`'s shape and
// run bounds (spec.principles is ignored). `s` should satisfy the hard
// constraints; head dims are integer-divided otherwise.
SchedulePrinciples ReportPrinciples(const SpaceSpec& spec, const Schedule& s);

// SpaceCount is an exact count, saturated at 2^64-1.
struct SpaceCount {
  uint64_t value = 0;
  bool exceeds_uint64 = false;   // true count > 2^64-1; value is then 2^64-1
  std::string ToString() const;  // "12376" or "more than 18446744073709551615"
};

// CountSchedules returns the exact number of schedules in the space.
// InvalidArgument when ValidateSpace fails.
absl::StatusOr<SpaceCount> CountSchedules(const SpaceSpec& spec);

// ScheduleEnumerator streams a space's schedules in the canonical order,
// without materialising the space; Next() is amortised O(1) per schedule
// (O(min_run) with smoothness, whose runs are forced), whatever the depth.
class ScheduleEnumerator {
 public:
  // Create starts at `start_index` (0-based position in the canonical order).
  // InvalidArgument for an invalid spec; OutOfRange when start_index exceeds
  // the count.
  static absl::StatusOr<ScheduleEnumerator> Create(const SpaceSpec& spec,
                                                   uint64_t start_index = 0);
  ScheduleEnumerator(ScheduleEnumerator&&) noexcept;
  ScheduleEnumerator& operator=(ScheduleEnumerator&&) noexcept;
  ~ScheduleEnumerator();

  // Next advances to the next schedule; false when the space is exhausted.
  bool Next();
  // heads is the current schedule (valid after Next() returned true).
  const std::vector<int>& heads() const;
  // index is the current schedule's 0-based position.
  uint64_t index() const;

 private:
  struct State;
  explicit ScheduleEnumerator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// UnrankSchedule returns the schedule at `index` in the canonical order.
// OutOfRange when index >= count.
absl::StatusOr<Schedule> UnrankSchedule(const SpaceSpec& spec, uint64_t index);

// RankSchedule returns the position of `s` in the canonical order; NotFound
// when `s` is not in the space; OutOfRange when its position is beyond
// 2^64-1 (only in spaces larger than that).
absl::StatusOr<uint64_t> RankSchedule(const SpaceSpec& spec, const Schedule& s);

struct SchedulePage {
  std::vector<Schedule> schedules;
  std::string next_page_token;  // "" on the last page
};

inline constexpr int kMaxPageSize = 1'000'000;

// ListSchedules returns up to page_size schedules starting at page_token ("" =
// the start). Tokens are opaque, bound to the space they came from: a token
// from another space, a malformed token or page_size outside
// [1, kMaxPageSize] is InvalidArgument.
absl::StatusOr<SchedulePage> ListSchedules(const SpaceSpec& spec, int page_size,
                                           absl::string_view page_token);

inline constexpr int kMaxSampleSize = 10'000'000;

// SampleSchedules draws min(n, count) distinct schedules uniformly at random
// (deterministic for a seed, on every platform), returned in canonical order.
// It draws indices and unranks them, so the space may be far too large to
// enumerate. InvalidArgument for an invalid spec, n outside
// [0, kMaxSampleSize], or a space of more than 2^64-1 schedules (indices are
// 64-bit).
absl::StatusOr<std::vector<Schedule>> SampleSchedules(const SpaceSpec& spec,
                                                      int n, uint64_t seed);

// ShuffleSchedules returns `schedules` in a uniformly random order,
// deterministic for a seed on every platform. The coordinator queues a
// search's trials in this order (seeded by the spec's sample_seed) so that
// which schedules train first never follows the enumeration order, which
// correlates with quality (issue #27).
std::vector<Schedule> ShuffleSchedules(std::vector<Schedule> schedules,
                                       uint64_t seed);

}  // namespace prism

#endif  // PRISM_SCHEDULER_SPACE_SPACE_H_
