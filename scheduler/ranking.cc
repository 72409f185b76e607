#include "scheduler/ranking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/schedule.h"

namespace prism {
namespace {

constexpr double kConfidence = 0.95;

// StepsToReach returns the step at which the val curve gets to `threshold`:
// interpolated linearly between the last eval above it and the first at or
// below it, or that first eval's step when it is the curve's first point (or
// follows a NaN); nullopt when the curve never gets there. Curves are stored
// as float and final losses as double, so the threshold is compared at float
// precision: rounded up, a trial's last point would miss its own final loss
// half the time, and the baseline's with it every speed-up of the experiment.
std::optional<double> StepsToReach(const TrialOutcome& trial,
                                   double threshold) {
  const double bar = static_cast<float>(threshold);
  const size_t n = std::min(trial.val_steps.size(), trial.val_losses.size());
  for (size_t i = 0; i < n; ++i) {
    const double below = trial.val_losses[i];
    if (!(below <= bar)) continue;
    const double step = static_cast<double>(trial.val_steps[i]);
    if (i == 0) return step;
    const double above = trial.val_losses[i - 1];
    if (!(above > bar)) return step;  // NaN before it
    const double before = static_cast<double>(trial.val_steps[i - 1]);
    return before + (above - bar) / (above - below) * (step - before);
  }
  return std::nullopt;
}

// SeedBaseline is what the baseline trained with one seed sets as the bar.
struct SeedBaseline {
  const TrialOutcome* trial = nullptr;
  std::optional<double> steps;  // its own steps to its final val loss
};

// ThroughputPair is one seed's tokens/s ratio and where both sides ran.
struct ThroughputPair {
  double ratio = 0.0;
  ThroughputPairing level = ThroughputPairing::kUnpaired;
  std::string hardware;  // the level's label, see RankedRow
};

std::string DeviceLabel(const std::string& device) {
  return device.empty() ? "unknown device" : device;
}

// SharedCoresDiffer says whether two trials both measured their share of
// the cores and got clearly different shares (see kCpuShareTolerance).
bool SharedCoresDiffer(const TrialOutcome& t, const TrialOutcome& b) {
  return t.cpu_share > 0.0 && b.cpu_share > 0.0 &&
         std::abs(t.cpu_share - b.cpu_share) > kCpuShareTolerance;
}

std::string ShareLabel(const TrialOutcome& t) {
  return absl::StrCat(DeviceLabel(t.device), " at ",
                      static_cast<int>(std::lround(t.cpu_share * 100)),
                      "% of its cores");
}

ThroughputPair PairThroughput(const TrialOutcome& t, const TrialOutcome& b) {
  ThroughputPair pair;
  pair.ratio = t.tokens_per_second / b.tokens_per_second;
  if (&t != &b && SharedCoresDiffer(t, b)) {
    pair.hardware = absl::StrCat(ShareLabel(t), " vs ", ShareLabel(b));
    return pair;
  }
  // The baseline's own row pairs each trial with itself.
  if (&t == &b || (t.device == b.device && !t.worker_id.empty() &&
                   t.worker_id == b.worker_id)) {
    pair.level = ThroughputPairing::kWorker;
    pair.hardware = DeviceLabel(t.device);
  } else if (t.device == b.device && !t.device.empty()) {
    pair.level = ThroughputPairing::kDevice;
    pair.hardware = t.device;
  } else {
    pair.hardware =
        absl::StrCat(DeviceLabel(t.device), " vs ", DeviceLabel(b.device));
  }
  return pair;
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / values.size();
}

// IntervalCache computes Student-t intervals, with one quantile per sample
// size: most schedules share the number of seeds.
class IntervalCache {
 public:
  Interval Of(const std::vector<double>& values) {
    const int dof = static_cast<int>(values.size()) - 1;
    double t = 0.0;
    if (dof >= 1) {
      auto [it, inserted] = critical_.try_emplace(dof, 0.0);
      if (inserted) it->second = StudentTQuantile(dof, kConfidence);
      t = it->second;
    }
    return MeanIntervalWithCritical(values, t);
  }

 private:
  std::unordered_map<int, double> critical_;
};

// RankOrder is the order of rows the header documents.
bool RankOrder(const RankedRow& a, const RankedRow& b) {
  auto group = [](const RankedRow& r) {
    if (r.verdict != Verdict::kNeedsSeeds) return 0;
    return r.delta_vs_baseline.n > 0 ? 1 : 2;
  };
  const int ga = group(a);
  const int gb = group(b);
  if (ga != gb) return ga < gb;
  const double ka = ga == 2 ? a.final_val_loss.mean : a.delta_vs_baseline.mean;
  const double kb = gb == 2 ? b.final_val_loss.mean : b.delta_vs_baseline.mean;
  // A total order even if a NaN got this far (the coordinator refuses
  // them): NaN keys sort last, among themselves by schedule.
  if (std::isnan(ka) != std::isnan(kb)) return std::isnan(kb);
  if (ka < kb || kb < ka) return ka < kb;
  return a.schedule < b.schedule;
}

// AssignVerdicts runs the paired t-tests, adjusts their p-values together
// (Holm) and sets every row's verdict; returns the family size.
int AssignVerdicts(std::vector<RankedRow>& rows,
                   const std::vector<std::vector<double>>& deltas) {
  std::vector<size_t> tested;
  std::vector<double> p_values;
  for (size_t i = 0; i < rows.size(); ++i) {
    RankedRow& row = rows[i];
    if (row.is_baseline) {
      row.verdict = Verdict::kNone;
      continue;
    }
    std::optional<double> p = PairedTTestP(deltas[i]);
    if (!p.has_value()) {
      row.verdict = Verdict::kNeedsSeeds;
      continue;
    }
    row.p_value = p;
    tested.push_back(i);
    p_values.push_back(*p);
  }
  const std::vector<double> adjusted = HolmAdjust(p_values);
  for (size_t k = 0; k < tested.size(); ++k) {
    RankedRow& row = rows[tested[k]];
    row.adjusted_p_value = adjusted[k];
    if (adjusted[k] >= kVerdictAlpha) {
      row.verdict = Verdict::kTied;
    } else {
      row.verdict =
          row.delta_vs_baseline.mean < 0.0 ? Verdict::kBetter : Verdict::kWorse;
    }
  }
  return static_cast<int>(tested.size());
}

// SummarizeThroughput sets the row's throughput fields from its pairs: the
// matched ones (worker or device) when there are any, else all, unpaired.
void SummarizeThroughput(const std::vector<ThroughputPair>& pairs,
                         IntervalCache& intervals, RankedRow& row) {
  row.throughput_pairs = static_cast<int>(pairs.size());
  if (pairs.empty()) return;
  const bool any_matched =
      std::any_of(pairs.begin(), pairs.end(), [](const ThroughputPair& p) {
        return p.level != ThroughputPairing::kUnpaired;
      });
  std::vector<double> ratios;
  std::set<std::string> hardware;
  row.throughput_pairing =
      any_matched ? ThroughputPairing::kWorker : ThroughputPairing::kUnpaired;
  for (const ThroughputPair& p : pairs) {
    if (any_matched && p.level == ThroughputPairing::kUnpaired) continue;
    if (p.level == ThroughputPairing::kDevice) {
      row.throughput_pairing = ThroughputPairing::kDevice;
    }
    ratios.push_back(p.ratio);
    hardware.insert(p.hardware);
  }
  row.throughput_ratio = intervals.Of(ratios);
  row.throughput_hardware = absl::StrJoin(hardware, ", ");
}

}  // namespace

Ranking RankSchedules(const SpaceSpec& shape,
                      const std::string& baseline_schedule,
                      const std::vector<TrialOutcome>& trials) {
  std::string baseline_text = baseline_schedule;
  if (baseline_text.empty()) {
    for (const TrialOutcome& t : trials) {
      if (t.is_baseline) {
        baseline_text = t.schedule;
        break;
      }
    }
  }

  // Group trials by schedule, in first-seen order; the sort below fixes the
  // final order.
  std::unordered_map<std::string, size_t> group_of;
  std::vector<std::vector<const TrialOutcome*>> groups;
  std::unordered_map<int64_t, const TrialOutcome*> baseline_trial;
  for (const TrialOutcome& t : trials) {
    auto [it, inserted] = group_of.try_emplace(t.schedule, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&t);
    if (t.schedule == baseline_text && t.state == OutcomeState::kCompleted) {
      // Several baseline trials with one seed: the lowest trial id is the bar.
      auto [b, fresh] = baseline_trial.try_emplace(t.seed, &t);
      if (!fresh && t.trial_id < b->second->trial_id) b->second = &t;
    }
  }
  std::unordered_map<int64_t, SeedBaseline> bar;
  for (const auto& [seed, t] : baseline_trial) {
    bar[seed] = {t, StepsToReach(*t, t->final_val_loss)};
  }

  IntervalCache intervals;
  Ranking ranking;
  ranking.rows.reserve(groups.size());
  // Per row (in ranking.rows order), its paired deltas, for the t-tests.
  std::vector<std::vector<double>> row_deltas;
  row_deltas.reserve(groups.size());
  std::vector<double> finals;
  std::vector<double> steps;
  std::vector<double> speedups;
  std::vector<ThroughputPair> throughput;
  // seed -> the schedule's completed trial standing for it (lowest id).
  std::map<int64_t, const TrialOutcome*> by_seed;
  for (const auto& group : groups) {
    RankedRow row;
    row.schedule = group.front()->schedule;
    row.is_baseline = row.schedule == baseline_text;
    if (absl::StatusOr<Schedule> s = ParseSchedule(row.schedule); s.ok()) {
      row.principles = ReportPrinciples(shape, *s);
    }
    finals.clear();
    steps.clear();
    speedups.clear();
    throughput.clear();
    by_seed.clear();
    double tokens_per_second = 0.0;
    size_t attention_trials = 0;
    row.min_val_loss = std::numeric_limits<double>::infinity();
    for (const TrialOutcome* t : group) {
      if (t->state != OutcomeState::kCompleted) {
        row.diverged |= t->state == OutcomeState::kDiverged;
        ++(t->state == OutcomeState::kDiverged ? row.seeds_diverged
                                               : row.seeds_failed);
        continue;
      }
      ++row.seeds_completed;
      row.trial_ids.push_back(t->trial_id);
      finals.push_back(t->final_val_loss);
      row.min_val_loss = std::min(row.min_val_loss, t->min_val_loss);
      tokens_per_second += t->tokens_per_second;
      if (!t->attention_distance.empty() &&
          (row.attention_distance.empty() ||
           row.attention_distance.size() == t->attention_distance.size())) {
        row.attention_distance.resize(t->attention_distance.size(), 0.0);
        for (size_t l = 0; l < t->attention_distance.size(); ++l) {
          row.attention_distance[l] += t->attention_distance[l];
        }
        ++attention_trials;
      }
      auto [seen, fresh] = by_seed.try_emplace(t->seed, t);
      if (!fresh && t->trial_id < seen->second->trial_id) seen->second = t;
    }
    std::vector<double> deltas;
    for (const auto& [seed, t] : by_seed) {
      auto found = bar.find(seed);
      if (found == bar.end()) continue;
      const SeedBaseline& b = found->second;
      deltas.push_back(t->final_val_loss - b.trial->final_val_loss);
      if (t->tokens_per_second > 0.0 && b.trial->tokens_per_second > 0.0) {
        throughput.push_back(PairThroughput(*t, *b.trial));
      }
      // Without a baseline step count the seed has no speed-up to miss.
      if (!b.steps.has_value()) continue;
      ++row.speedup_seeds;
      const std::optional<double> reached =
          StepsToReach(*t, b.trial->final_val_loss);
      // Reached at step 0 (an eval before training) has no finite ratio.
      if (!reached.has_value() || *reached <= 0.0) continue;
      steps.push_back(*reached);
      speedups.push_back(*b.steps / *reached);
    }
    std::sort(row.trial_ids.begin(), row.trial_ids.end());
    if (row.seeds_completed == 0) row.min_val_loss = 0.0;
    for (double& d : row.attention_distance) d /= attention_trials;
    row.final_val_loss = intervals.Of(finals);
    row.delta_vs_baseline = intervals.Of(deltas);
    row.paired_seeds = row.delta_vs_baseline.n;
    row.steps_to_baseline = Mean(steps);
    row.speedup = intervals.Of(speedups);
    row.convergence_speedup = row.speedup.mean;
    SummarizeThroughput(throughput, intervals, row);
    if (row.seeds_completed > 0) {
      row.tokens_per_second = tokens_per_second / row.seeds_completed;
    }
    ranking.rows.push_back(std::move(row));
    row_deltas.push_back(std::move(deltas));
  }

  ranking.compared_schedules = AssignVerdicts(ranking.rows, row_deltas);
  std::sort(ranking.rows.begin(), ranking.rows.end(), RankOrder);
  const RankedRow* baseline = nullptr;
  for (size_t i = 0; i < ranking.rows.size(); ++i) {
    ranking.rows[i].rank = static_cast<int>(i) + 1;
    if (ranking.rows[i].is_baseline) baseline = &ranking.rows[i];
  }
  if (baseline != nullptr) {
    for (RankedRow& row : ranking.rows) {
      if (baseline->tokens_per_second > 0.0) {
        row.tokens_per_second_ratio =
            row.tokens_per_second / baseline->tokens_per_second;
      }
      if (!baseline->attention_distance.empty() &&
          row.attention_distance.size() ==
              baseline->attention_distance.size()) {
        row.attention_distance_shift.resize(row.attention_distance.size());
        for (size_t l = 0; l < row.attention_distance.size(); ++l) {
          row.attention_distance_shift[l] =
              row.attention_distance[l] - baseline->attention_distance[l];
        }
      }
    }
    ranking.baseline = *baseline;
  }

  // The baseline's delta is 0 by construction, so it is not an observation.
  std::vector<ScheduleDelta> observations;
  for (const RankedRow& row : ranking.rows) {
    if (row.is_baseline || row.delta_vs_baseline.n == 0) continue;
    ScheduleDelta& o = observations.emplace_back();
    o.mean_delta = row.delta_vs_baseline.mean;
    o.paired_seeds = row.delta_vs_baseline.n;
    for (Principle p : kAllPrinciples) {
      o.violated.Set(p, !row.principles.Satisfies(p));
    }
  }
  ranking.principle_effects = AnalyzePrinciples(observations).effects;
  return ranking;
}

}  // namespace prism
