#include "scheduler/space/contrast.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace prism {
namespace {

int Distance(const std::vector<int>& a, const std::vector<int>& b) {
  int d = 0;
  for (size_t l = 0; l < a.size(); ++l) d += std::abs(a[l] - b[l]);
  return d;
}

}  // namespace

std::vector<Schedule> ContrastSet::All() const {
  std::vector<Schedule> all = principled;
  for (const std::vector<Schedule>& v : violators) {
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

absl::StatusOr<ContrastSet> BuildContrastSet(const SpaceSpec& shape,
                                             int per_principle) {
  if (per_principle < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("per_principle must be at least 1, got ", per_principle));
  }
  SpaceSpec space = shape;
  space.principles = PrincipleSet::None();
  absl::StatusOr<SpaceCount> count = CountSchedules(space);
  if (!count.ok()) return count.status();
  if (count->exceeds_uint64 || count->value > kMaxContrastSpace) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a contrast set enumerates the whole space, which has ",
        count->ToString(), " schedules (at most ", kMaxContrastSpace, ")"));
  }
  const Schedule baseline = Schedule::Uniform(shape.base_heads, shape.layers);
  absl::StatusOr<ScheduleEnumerator> e = ScheduleEnumerator::Create(space);
  if (!e.ok()) return e.status();

  ContrastSet set;
  constexpr int kPrinciples = std::size(kAllPrinciples);
  // Candidates per principle, in canonical order: (heads).
  std::vector<std::vector<std::vector<int>>> candidates(kPrinciples);
  while (e->Next()) {
    const Schedule s(e->heads());
    if (s == baseline) continue;
    const SchedulePrinciples report = ReportPrinciples(space, s);
    int broken = 0, which = -1;
    for (int i = 0; i < kPrinciples; ++i) {
      if (!report.Satisfies(kAllPrinciples[i])) {
        ++broken;
        which = i;
      }
    }
    if (broken == 0) set.principled.push_back(s);
    if (broken == 1) candidates[which].push_back(e->heads());
  }

  std::vector<std::vector<int>> anchors;
  for (const Schedule& s : set.principled) anchors.push_back(s.heads());
  if (anchors.empty()) anchors.push_back(baseline.heads());
  set.violators.resize(kPrinciples);
  for (int i = 0; i < kPrinciples; ++i) {
    std::vector<std::pair<int, size_t>> ranked;  // (distance, canonical pos)
    for (size_t c = 0; c < candidates[i].size(); ++c) {
      int nearest = std::numeric_limits<int>::max();
      for (const std::vector<int>& a : anchors) {
        nearest = std::min(nearest, Distance(candidates[i][c], a));
      }
      ranked.emplace_back(nearest, c);
    }
    std::sort(ranked.begin(), ranked.end());
    const size_t keep = std::min<size_t>(ranked.size(), per_principle);
    std::vector<size_t> chosen;
    for (size_t k = 0; k < keep; ++k) chosen.push_back(ranked[k].second);
    std::sort(chosen.begin(), chosen.end());
    for (size_t c : chosen) set.violators[i].emplace_back(candidates[i][c]);
  }
  return set;
}

}  // namespace prism
