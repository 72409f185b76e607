#include "scheduler/strategy/racing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace prism {
namespace {

// Seeds is what the race knows of one schedule's trials, by seed.
struct Seeds {
  std::set<int64_t> stored;     // any state
  std::set<int64_t> pending;    // queued, leased or running
  std::set<int64_t> completed;  // finished with a finite final val loss
  std::set<int64_t> lost;       // finished otherwise (failed, diverged)
};

// RankLook ranks the trials on the first `n` seeds of the sequence at level
// `alpha` (one look: the race spends alpha itself), without curves: the
// race needs the means and the best-set only.
Ranking RankLook(const RacingPlan& plan, const std::vector<TrialOutcome>& all,
                 const std::map<int64_t, int>& position, int n, double alpha) {
  std::vector<TrialOutcome> look;
  for (const TrialOutcome& o : all) {
    auto it = position.find(o.seed);
    if (it == position.end() || it->second >= n) continue;
    TrialOutcome copy = o;
    copy.val_steps.clear();
    copy.val_losses.clear();
    copy.attention_distance.clear();
    look.push_back(std::move(copy));
  }
  VerdictOptions options = plan.verdicts;
  options.looks.clear();
  options.seed_sequence.clear();
  options.alpha = alpha;
  return RankSchedules(plan.space, plan.baseline, look, options);
}

}  // namespace

int DefaultRacingMaxSeeds(int seeds) {
  return std::clamp(seeds * kDefaultRacingSeedsMultiple, seeds,
                    kMaxPolicySeeds);
}

const char* RaceStateName(RaceState s) {
  switch (s) {
    case RaceState::kWaiting:
      return "waiting";
    case RaceState::kRacing:
      return "racing";
    case RaceState::kSettled:
      return "settled";
    case RaceState::kAtMax:
      return "at max";
    case RaceState::kBudget:
      return "budget spent";
    case RaceState::kNoContenders:
      return "no contenders";
    case RaceState::kBaselineLost:
      return "baseline failed";
  }
  return "?";
}

RaceDecision DecideRace(const RacingPlan& plan,
                        const std::vector<SeedTrial>& trials,
                        const std::vector<TrialOutcome>& outcomes) {
  RaceDecision d;
  const int max = static_cast<int>(plan.sequence.size());
  const int first = std::clamp(plan.first, 2, std::max(2, max));
  d.look_seeds = first;
  std::map<int64_t, int> position;
  for (int i = 0; i < max; ++i) position.emplace(plan.sequence[i], i);
  auto in_search = [&](int64_t seed) {
    auto it = position.find(seed);
    return it != position.end() && it->second < first;
  };

  std::map<std::string, Seeds> seeds;
  bool search_pending = false;
  for (const SeedTrial& t : trials) {
    Seeds& s = seeds[t.schedule];
    s.stored.insert(t.seed);
    if (t.pending) s.pending.insert(t.seed);
    if (t.pending && in_search(t.seed)) search_pending = true;
    if (!in_search(t.seed)) ++d.seeds_added;
  }
  d.steps_added =
      static_cast<double>(d.seeds_added) * static_cast<double>(plan.steps);
  for (const TrialOutcome& o : outcomes) {
    Seeds& s = seeds[o.schedule];
    if (o.state == OutcomeState::kCompleted &&
        std::isfinite(o.final_val_loss)) {
      s.completed.insert(o.seed);
    } else {
      s.lost.insert(o.seed);
    }
  }
  if (search_pending || max < 2) {
    d.note = "racing waits for the search";
    return d;
  }

  const std::vector<int> looks = LooksForSeeds(first, max);
  const double alpha = plan.verdicts.alpha;
  const int racers = std::max(1, plan.racers);
  Ranking ranking =
      RankLook(plan, outcomes, position, first, SpentAlpha(alpha, looks, 0));
  std::vector<std::string> contenders = ranking.verdicts.best_set;
  d.started = static_cast<int>(contenders.size());
  int n = first;
  size_t k = 0;
  d.state = RaceState::kNoContenders;
  std::vector<std::string> left;  // contenders whose trial was lost
  while (!contenders.empty()) {
    // The look's order: by mean paired delta on its seeds.
    std::map<std::string, double> look_mean;
    for (const RankedRow& row : ranking.rows) {
      look_mean[row.schedule] =
          row.is_baseline ? 0.0 : row.delta_vs_baseline.mean;
    }
    std::stable_sort(contenders.begin(), contenders.end(),
                     [&](const std::string& a, const std::string& b) {
                       return look_mean[a] < look_mean[b];
                     });
    if (contenders.size() == 1) {
      d.state = RaceState::kSettled;
      break;
    }
    if (n >= max) {
      d.state = RaceState::kAtMax;
      break;
    }
    // This round: the `racers` leading schedules and the baseline train
    // every seed of the first n + 1 they lack.
    const Seeds& base = seeds[plan.baseline];
    int64_t base_lost = 0;
    for (int i = 0; i <= n && base_lost == 0; ++i) {
      if (base.lost.count(plan.sequence[i]) > 0) base_lost = plan.sequence[i];
    }
    if (base_lost != 0) {
      d.state = RaceState::kBaselineLost;
      d.note = absl::StrCat("racing stopped: the baseline's trial on seed ",
                            base_lost, " failed (nothing pairs on it)");
      break;
    }
    std::vector<std::string> staying;
    std::vector<SeedAddition> additions;
    bool done = true;
    int raced = 0;
    for (const std::string& c : contenders) {
      if (c == plan.baseline || raced >= racers) {
        staying.push_back(c);
        continue;
      }
      const Seeds& s = seeds[c];
      bool lost = false;
      std::vector<int64_t> missing;
      for (int i = 0; i <= n; ++i) {
        const int64_t seed = plan.sequence[i];
        if (s.lost.count(seed) > 0 && i >= first) lost = true;
        if (s.completed.count(seed) == 0) missing.push_back(seed);
      }
      if (lost) {
        left.push_back(c);
        ++d.dropped;
        continue;
      }
      staying.push_back(c);
      ++raced;
      for (int64_t seed : missing) {
        if (s.lost.count(seed) > 0) continue;  // a search seed it lost
        done = false;
        if (s.stored.count(seed) > 0) continue;  // pending
        additions.push_back(SeedAddition{c, seed, false, SeedReason::kNone});
      }
    }
    contenders = std::move(staying);
    for (int i = 0; i <= n; ++i) {
      const int64_t seed = plan.sequence[i];
      if (base.completed.count(seed) > 0) continue;
      done = false;
      if (base.stored.count(seed) == 0) {
        additions.push_back(
            SeedAddition{plan.baseline, seed, true, SeedReason::kNone});
      }
    }
    if (contenders.size() <= 1) continue;  // settled by a lost trial
    if (done) {
      ++n;
      ++k;
      ranking =
          RankLook(plan, outcomes, position, n, SpentAlpha(alpha, looks, k));
      const std::set<std::string> in(ranking.verdicts.best_set.begin(),
                                     ranking.verdicts.best_set.end());
      std::vector<std::string> kept;
      for (const std::string& c : contenders) {
        if (in.count(c) > 0) kept.push_back(c);
      }
      // A look whose set misses every contender (it holds only schedules
      // out of the race) keeps them: the race never empties itself.
      if (!kept.empty()) contenders = std::move(kept);
      continue;
    }
    if (additions.empty()) {
      d.state = RaceState::kWaiting;
      break;
    }
    const double cost =
        static_cast<double>(additions.size()) * static_cast<double>(plan.steps);
    if (d.steps_added + cost > plan.step_budget + 1e-9) {
      d.state = RaceState::kBudget;
      break;
    }
    d.state = RaceState::kRacing;
    d.additions = std::move(additions);
    break;
  }
  d.look_seeds = n;

  // Order the contenders by their mean paired delta over every seed they
  // have (the baseline as 0); the best is the first.
  const Ranking all = RankLook(plan, outcomes, position, max, alpha);
  std::map<std::string, std::pair<double, int>> mean;  // (delta, paired)
  for (const RankedRow& row : all.rows) {
    mean[row.schedule] = {row.is_baseline ? 0.0 : row.delta_vs_baseline.mean,
                          row.is_baseline ? 0 : row.paired_seeds};
  }
  std::stable_sort(contenders.begin(), contenders.end(),
                   [&](const std::string& a, const std::string& b) {
                     return mean[a].first < mean[b].first;
                   });
  d.contenders = contenders;
  // The best: the lowest mean among the contenders raced the most (one
  // raced on fewer seeds has the noisier mean), the baseline when its 0 is
  // lower.
  int most = 0;
  for (const std::string& c : contenders) {
    if (c != plan.baseline) most = std::max(most, mean[c].second);
  }
  for (const std::string& c : contenders) {
    if (c == plan.baseline || mean[c].second == most) {
      d.best = c;
      break;
    }
  }
  if (!d.best.empty()) {
    d.best_is_baseline = d.best == plan.baseline;
    d.best_seeds = d.best_is_baseline
                       ? static_cast<int>(seeds[plan.baseline].completed.size())
                       : mean[d.best].second;
  }
  if (d.note.empty()) d.note = DescribeRace(d);
  if (!left.empty()) {
    absl::StrAppend(&d.note, "; ", left.size(),
                    left.size() == 1 ? " contender" : " contenders",
                    " left the race (a trial failed or diverged)");
  }
  return d;
}

std::string DescribeRace(const RaceDecision& d) {
  const std::string raced = absl::StrCat(
      d.started, d.started == 1 ? " contender" : " contenders", " raced, ",
      d.seeds_added, d.seeds_added == 1 ? " seed" : " seeds", " added");
  const std::string best =
      d.best_is_baseline ? std::string("the baseline") : d.best;
  switch (d.state) {
    case RaceState::kSettled:
      if (d.best_is_baseline) {
        return absl::StrCat("settled: no schedule beats the baseline on ",
                            d.look_seeds, " seeds (", raced, ")");
      }
      return absl::StrCat("best ", d.best, " settled on ", d.best_seeds,
                          " seeds (", raced, ")");
    case RaceState::kRacing: {
      int schedules = 0;
      for (const SeedAddition& a : d.additions) schedules += !a.is_baseline;
      return absl::StrCat(
          "racing ", d.contenders.size(), " contenders on ", d.look_seeds,
          " seeds: added seed ", d.additions.front().seed, " to ", schedules,
          schedules == 1 ? " schedule" : " schedules",
          d.additions.back().is_baseline ? " and the baseline" : "");
    }
    case RaceState::kAtMax:
      return absl::StrCat("unsettled at the maximum of ", d.look_seeds,
                          " seeds: ", d.contenders.size(),
                          " contenders left, best by mean ", best, " (", raced,
                          ")");
    case RaceState::kBudget:
      return absl::StrCat("unsettled: the racing budget is spent; ",
                          d.contenders.size(), " contenders left on ",
                          d.look_seeds, " seeds, best by mean ", best, " (",
                          raced, ")");
    case RaceState::kWaiting:
      return absl::StrCat("racing ", d.contenders.size(), " contenders on ",
                          d.look_seeds, " seeds: waiting for their trials");
    case RaceState::kNoContenders:
      return "no race: no schedule has 2 paired seeds";
    case RaceState::kBaselineLost:
      return "racing stopped: a baseline trial failed";
  }
  return "";
}

}  // namespace prism
