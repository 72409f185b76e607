#include "scheduler/strategy/guided.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "scheduler/strategy/suggest.h"

namespace prism {
namespace {

// ExplorationIndex draws the k-th exploration's index below `size`.
// mt19937_64's output is fixed by the standard, so the draw is the same on
// every platform; the modulo bias is negligible for any pool size here.
size_t ExplorationIndex(uint64_t seed, int k, size_t size) {
  std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t(k) + 1)));
  return static_cast<size_t>(rng() % size);
}

struct Trials {
  std::set<int64_t> seeds;
  bool pending = false;
};

}  // namespace

int DefaultGuidedInitial(int budget) {
  return std::min(budget, std::max(kMinSurrogateSchedules, budget / 4));
}

absl::StatusOr<std::vector<Schedule>> GuidedInitialDesign(
    const SpaceSpec& space, const std::string& baseline, int initial,
    uint64_t seed) {
  // One more than needed, in case the draw holds the baseline.
  absl::StatusOr<std::vector<Schedule>> drawn =
      SampleSchedules(space, initial + 1, seed);
  if (!drawn.ok()) return drawn.status();
  std::vector<Schedule> out;
  for (Schedule& s : *drawn) {
    if (static_cast<int>(out.size()) == initial) break;
    if (s.ToString() != baseline) out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<GuidedDecision> DecideGuided(
    const GuidedPlan& plan, const std::vector<SeedTrial>& trials,
    const Ranking& ranking) {
  std::map<std::string, Trials> schedules;  // non-baseline
  std::set<int64_t> base_pending;
  std::set<std::string> tried = {plan.baseline};
  for (const SeedTrial& t : trials) {
    tried.insert(t.schedule);
    if (t.schedule == plan.baseline) {
      if (t.pending) base_pending.insert(t.seed);
      continue;
    }
    Trials& s = schedules[t.schedule];
    s.seeds.insert(t.seed);
    s.pending |= t.pending;
  }
  GuidedDecision d;
  d.tried = static_cast<int>(schedules.size());
  for (const auto& [name, s] : schedules) {
    bool settled = !s.pending;
    for (int64_t seed : s.seeds) settled &= base_pending.count(seed) == 0;
    d.settled += settled ? 1 : 0;
  }
  d.in_flight = d.tried - d.settled;
  if (d.settled < std::min(plan.initial, d.tried)) {
    d.waiting_for_initial = true;
    return d;
  }
  const int slots =
      std::min(plan.parallel - d.in_flight, plan.budget - d.tried);
  if (slots <= 0) return d;

  absl::StatusOr<CandidatePool> pool = UntriedCandidates(
      plan.space, tried, plan.seed + static_cast<uint64_t>(d.tried));
  if (!pool.ok()) return pool.status();
  if (pool->schedules.empty()) {
    d.exhausted = true;
    return d;
  }
  const int first_k = std::max(0, d.tried - plan.initial);
  int suggestions_wanted = 0;
  for (int i = 0; i < slots; ++i) suggestions_wanted += (first_k + i) % 2 == 0;
  std::vector<Suggestion> ranked;
  if (suggestions_wanted > 0) {
    // Enough ranked candidates that explorations picked first cannot use
    // them all up.
    absl::StatusOr<SuggestionSet> scored =
        ScoreCandidates(plan.space, ranking, *pool, slots);
    if (scored.ok()) {
      ranked = std::move(scored->suggestions);
    } else if (absl::IsFailedPrecondition(scored.status())) {
      d.fallback = std::string(scored.status().message());
    } else {
      return scored.status();
    }
  }

  std::set<std::string> picked;
  auto untried = [&picked](const std::string& s) {
    return picked.count(s) == 0;
  };
  size_t next_ranked = 0;
  for (int i = 0; i < slots; ++i) {
    const int k = first_k + i;
    GuidedAddition a;
    if (k % 2 == 0 && d.fallback.empty()) {
      while (next_ranked < ranked.size() &&
             !untried(ranked[next_ranked].schedule)) {
        ++next_ranked;
      }
      if (next_ranked == ranked.size()) break;
      const Suggestion& s = ranked[next_ranked++];
      a = GuidedAddition{s.schedule, GuidedPick::kSuggestion, s.predicted_delta,
                         s.uncertainty};
    } else {
      std::vector<const Schedule*> left;
      for (const Schedule& s : pool->schedules) {
        if (untried(s.ToString())) left.push_back(&s);
      }
      if (left.empty()) break;
      a.schedule =
          left[ExplorationIndex(plan.seed, k, left.size())]->ToString();
      a.pick = GuidedPick::kExploration;
    }
    picked.insert(a.schedule);
    d.additions.push_back(std::move(a));
  }
  return d;
}

std::string DescribeGuidedDecision(const GuidedPlan& plan,
                                   const GuidedDecision& d) {
  std::string out = "guided: ";
  if (d.waiting_for_initial) {
    absl::StrAppend(&out, "initial design running (", d.settled, " of ",
                    std::min(plan.initial, d.tried), " schedules settled)");
    return out;
  }
  if (d.additions.empty()) {
    absl::StrAppend(&out, "added nothing (",
                    d.exhausted              ? "no untried schedule left"
                    : d.tried >= plan.budget ? "budget reached"
                                             : "slots full",
                    ")");
  } else {
    std::vector<std::string> parts;
    for (const GuidedAddition& a : d.additions) {
      parts.push_back(
          a.pick == GuidedPick::kSuggestion
              ? absl::StrFormat("suggestion %s (predicted %.4f +- %.4f)",
                                a.schedule, a.predicted_delta, a.uncertainty)
              : absl::StrCat("exploration ", a.schedule));
    }
    absl::StrAppend(&out, "added ", absl::StrJoin(parts, " and "));
    if (!d.fallback.empty()) {
      absl::StrAppend(&out, " (no suggestion: ", d.fallback, ")");
    }
  }
  absl::StrAppend(&out, "; ", d.tried + static_cast<int>(d.additions.size()),
                  " of ", plan.budget, " schedules tried, ",
                  d.in_flight + static_cast<int>(d.additions.size()),
                  " in flight");
  return out;
}

}  // namespace prism
