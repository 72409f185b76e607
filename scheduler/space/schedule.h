// Schedule: the per-layer attention head counts of a decoder, and its
// canonical text form.
//
// The canonical form is comma-joined `HEADSxLAYERS` blocks, first layer first:
// "3x3,6x3,12x6" is 3 layers of 3 heads, 3 layers of 6, 6 layers of 12. Every
// interface (CLI, RPC, storage, web) uses it, and it is the schedule's identity
// key: two schedules are equal exactly when their canonical texts are.
//
//   absl::StatusOr<prism::Schedule> s = prism::ParseSchedule("3x3,6x3,12x6");
//   if (!s.ok()) return s.status();   // "schedule '3x': block 1 ..."
//   s->layers();                      // 12
//   s->ToString();                    // "3x3,6x3,12x6"
//
// Thread-safety: Schedule is an immutable value type.
#ifndef PRISM_SCHEDULER_SPACE_SCHEDULE_H_
#define PRISM_SCHEDULER_SPACE_SCHEDULE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism {

class Schedule {
 public:
  Schedule() = default;
  explicit Schedule(std::vector<int> heads) : heads_(std::move(heads)) {}

  // Uniform returns `layers` layers of `heads` heads each.
  static Schedule Uniform(int heads, int layers);

  const std::vector<int>& heads() const { return heads_; }
  int layers() const { return static_cast<int>(heads_.size()); }
  int heads(int layer) const { return heads_[layer]; }
  // IsUniform is true when every layer has the same head count.
  bool IsUniform() const;

  // ToString returns the canonical `HEADSxLAYERS` form; "" when empty.
  std::string ToString() const;

  friend bool operator==(const Schedule& a, const Schedule& b) {
    return a.heads_ == b.heads_;
  }
  friend bool operator!=(const Schedule& a, const Schedule& b) {
    return !(a == b);
  }
  friend bool operator<(const Schedule& a, const Schedule& b) {
    return a.heads_ < b.heads_;
  }

 private:
  std::vector<int> heads_;
};

// ParseSchedule parses the canonical form. Whitespace around blocks is
// ignored and adjacent blocks with equal heads are merged ("2x1,2x1" parses as
// "2x2"). Returns InvalidArgument naming the bad block for empty text,
// malformed blocks, zero or negative numbers, or more than kMaxLayers layers.
absl::StatusOr<Schedule> ParseSchedule(absl::string_view text);

inline constexpr int kMaxLayers = 4096;

}  // namespace prism

#endif  // PRISM_SCHEDULER_SPACE_SCHEDULE_H_
