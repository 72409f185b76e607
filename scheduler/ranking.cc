#include "scheduler/ranking.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "scheduler/schedule.h"

namespace prism {
namespace {

constexpr double kConfidence = 0.95;

// FirstStepAtOrBelow returns the first val step whose loss <= threshold, or
// -1 when the curve never gets there. Curves are stored as float and final
// losses as double, so the threshold is compared at float precision: rounded
// up, a trial's last point would miss its own final loss half the time, and
// the baseline's with it every speed-up of the experiment.
int64_t FirstStepAtOrBelow(const TrialOutcome& trial, double threshold) {
  const double bar = static_cast<float>(threshold);
  const size_t n = std::min(trial.val_steps.size(), trial.val_losses.size());
  for (size_t i = 0; i < n; ++i) {
    if (trial.val_losses[i] <= bar) return trial.val_steps[i];
  }
  return -1;
}

// SeedBaseline is what the baseline trained with one seed sets as the bar.
struct SeedBaseline {
  double final_val_loss = 0.0;
  int64_t steps = -1;  // its own first step at its final val loss
};

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
    bar[seed] = {t->final_val_loss, FirstStepAtOrBelow(*t, t->final_val_loss)};
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
      auto b = bar.find(seed);
      if (b == bar.end()) continue;
      deltas.push_back(t->final_val_loss - b->second.final_val_loss);
      const int64_t reached = FirstStepAtOrBelow(*t, b->second.final_val_loss);
      if (reached < 0) continue;
      steps.push_back(static_cast<double>(reached));
      if (b->second.steps >= 0 && reached > 0) {
        speedups.push_back(static_cast<double>(b->second.steps) / reached);
      }
    }
    std::sort(row.trial_ids.begin(), row.trial_ids.end());
    if (row.seeds_completed == 0) row.min_val_loss = 0.0;
    for (double& d : row.attention_distance) d /= attention_trials;
    row.final_val_loss = intervals.Of(finals);
    row.delta_vs_baseline = intervals.Of(deltas);
    row.paired_seeds = row.delta_vs_baseline.n;
    row.steps_to_baseline = Mean(steps);
    row.convergence_speedup = Mean(speedups);
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

  // The baseline's delta is 0 by construction, so it says nothing about a
  // principle and is left out of the effects.
  for (Principle p : kAllPrinciples) {
    PrincipleEffect effect;
    effect.principle = p;
    double satisfied = 0.0;
    double violated = 0.0;
    for (const RankedRow& row : ranking.rows) {
      if (row.is_baseline || row.delta_vs_baseline.n == 0) continue;
      if (row.principles.Satisfies(p)) {
        ++effect.satisfied;
        satisfied += row.delta_vs_baseline.mean;
      } else {
        ++effect.violated;
        violated += row.delta_vs_baseline.mean;
      }
    }
    if (effect.satisfied > 0) {
      effect.mean_delta_satisfied = satisfied / effect.satisfied;
    }
    if (effect.violated > 0) {
      effect.mean_delta_violated = violated / effect.violated;
    }
    ranking.principle_effects.push_back(effect);
  }
  return ranking;
}

}  // namespace prism
