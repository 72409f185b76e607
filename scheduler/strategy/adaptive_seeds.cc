#include "scheduler/strategy/adaptive_seeds.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace prism {
namespace {

// Seeds is what DecideSeeds knows of one schedule's trials.
struct Seeds {
  std::set<int64_t> all;
  bool pending = false;
};

}  // namespace

std::vector<int64_t> SeedSequence(const std::vector<int64_t>& listed, int max) {
  std::vector<int64_t> out;
  const std::set<int64_t> seen(listed.begin(), listed.end());
  for (int64_t s : listed) {
    if (static_cast<int>(out.size()) == max) return out;
    out.push_back(s);
  }
  int64_t next = listed.empty() ? 1 : *seen.rbegin() + 1;
  while (static_cast<int>(out.size()) < max) out.push_back(next++);
  return out;
}

const char* SeedReasonName(SeedReason reason) {
  switch (reason) {
    case SeedReason::kNeedsSeeds:
      return "needs seeds";
    case SeedReason::kInconclusive:
      return "inconclusive";
    case SeedReason::kNone:
      break;
  }
  return "";
}

SeedDecision DecideSeeds(const std::vector<int64_t>& sequence,
                         const std::string& baseline,
                         const std::vector<SeedTrial>& trials,
                         const Ranking& ranking) {
  std::map<std::string, Seeds> schedules;  // non-baseline, by name
  Seeds base;
  std::set<int64_t> base_pending;
  for (const SeedTrial& t : trials) {
    if (t.schedule == baseline) {
      base.all.insert(t.seed);
      if (t.pending) base_pending.insert(t.seed);
      continue;
    }
    Seeds& s = schedules[t.schedule];
    s.all.insert(t.seed);
    s.pending |= t.pending;
  }

  std::map<std::string, const RankedRow*> rows;
  for (const RankedRow& r : ranking.rows) {
    if (r.is_baseline || r.schedule == baseline) continue;
    rows[r.schedule] = &r;
  }

  SeedDecision d;
  std::set<int64_t> baseline_new;
  for (const auto& [name, s] : schedules) {
    bool settled = !s.pending;
    for (int64_t seed : s.all) settled &= !(base_pending.count(seed) > 0);
    if (!settled) {
      ++d.waiting;
      continue;
    }
    auto it = rows.find(name);
    const RankedRow* row = it == rows.end() ? nullptr : it->second;
    SeedReason reason = SeedReason::kNone;
    if (row == nullptr || row->verdict == Verdict::kNeedsSeeds) {
      reason = SeedReason::kNeedsSeeds;
    } else if (row->verdict == Verdict::kInconclusive) {
      reason = SeedReason::kInconclusive;
    }
    if (reason == SeedReason::kNone) {
      ++d.resolved;
      continue;
    }
    // A named reference, not the structured binding: C++17 cannot capture a
    // binding in a lambda (clang 14 refuses; GCC accepts it as an extension).
    const std::set<int64_t>& have = s.all;
    auto next =
        std::find_if(sequence.begin(), sequence.end(),
                     [&have](int64_t seed) { return have.count(seed) == 0; });
    if (static_cast<int>(s.all.size()) >= static_cast<int>(sequence.size()) ||
        next == sequence.end()) {
      ++d.at_max;
      continue;
    }
    d.additions.push_back(SeedAddition{name, *next, false, reason});
    if (base.all.count(*next) == 0) baseline_new.insert(*next);
  }
  for (int64_t seed : baseline_new) {
    d.additions.push_back(
        SeedAddition{baseline, seed, true, SeedReason::kNone});
  }
  return d;
}

std::string DescribeSeedDecision(const SeedDecision& d) {
  std::map<SeedReason, int> by_reason;
  std::set<int64_t> seeds;
  int grown = 0;
  int baseline = 0;
  for (const SeedAddition& a : d.additions) {
    seeds.insert(a.seed);
    if (a.is_baseline) {
      ++baseline;
      continue;
    }
    ++grown;
    ++by_reason[a.reason];
  }
  std::string out;
  if (grown == 0) {
    out = "added no seed";
  } else {
    std::vector<std::string> why;
    for (const auto& [reason, n] : by_reason) {
      why.push_back(absl::StrCat(n, " ", SeedReasonName(reason)));
    }
    absl::StrAppend(&out, "added seed", seeds.size() == 1 ? " " : "s ",
                    absl::StrJoin(seeds, ", "), " to ", grown,
                    grown == 1 ? " schedule (" : " schedules (",
                    absl::StrJoin(why, ", "), ")");
    if (baseline > 0) absl::StrAppend(&out, " and the baseline");
  }
  absl::StrAppend(&out, "; ", d.resolved, " resolved, ", d.at_max, " at max, ",
                  d.waiting, " waiting");
  return out;
}

}  // namespace prism
