#include "scheduler/analysis/ranking.h"

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
#include "scheduler/space/schedule.h"

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

// SequenceOrder returns a schedule's seeds in the order of the seed
// sequence (seeds not in it after, ascending), so a look's first n seeds are
// the sequence's.
std::vector<std::pair<int64_t, const TrialOutcome*>> SequenceOrder(
    const std::map<int64_t, const TrialOutcome*>& by_seed,
    const std::unordered_map<int64_t, size_t>& position) {
  std::vector<std::pair<int64_t, const TrialOutcome*>> out(by_seed.begin(),
                                                           by_seed.end());
  if (position.empty()) return out;
  auto key = [&position](int64_t seed) {
    auto it = position.find(seed);
    return it == position.end() ? std::numeric_limits<size_t>::max()
                                : it->second;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&key](const auto& a, const auto& b) {
                     return key(a.first) < key(b.first);
                   });
  return out;
}

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

// BaselineText is the uniform schedule's text: the one given, else the
// schedule of the first trial marked is_baseline.
std::string BaselineText(const std::string& baseline_schedule,
                         const std::vector<TrialOutcome>& trials) {
  if (!baseline_schedule.empty()) return baseline_schedule;
  for (const TrialOutcome& t : trials) {
    if (t.is_baseline) return t.schedule;
  }
  return "";
}

// GroupBySchedule groups trials by schedule, in first-seen order (RankOrder
// fixes the final order).
std::vector<std::vector<const TrialOutcome*>> GroupBySchedule(
    const std::vector<TrialOutcome>& trials) {
  std::unordered_map<std::string, size_t> group_of;
  std::vector<std::vector<const TrialOutcome*>> groups;
  for (const TrialOutcome& t : trials) {
    auto [it, inserted] = group_of.try_emplace(t.schedule, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&t);
  }
  return groups;
}

// BaselineBars returns, per seed, the baseline's completed trial with a
// finite final val loss that sets the bar, and its own steps to that loss.
std::unordered_map<int64_t, SeedBaseline> BaselineBars(
    const std::vector<TrialOutcome>& trials, const std::string& baseline_text) {
  std::unordered_map<int64_t, const TrialOutcome*> baseline_trial;
  for (const TrialOutcome& t : trials) {
    if (t.schedule == baseline_text && t.state == OutcomeState::kCompleted &&
        std::isfinite(t.final_val_loss)) {
      // Several baseline trials with one seed: the lowest trial id is the bar.
      auto [b, fresh] = baseline_trial.try_emplace(t.seed, &t);
      if (!fresh && t.trial_id < b->second->trial_id) b->second = &t;
    }
  }
  std::unordered_map<int64_t, SeedBaseline> bar;
  for (const auto& [seed, t] : baseline_trial) {
    bar[seed] = {t, StepsToReach(*t, t->final_val_loss)};
  }
  return bar;
}

// GroupTotals is what a schedule's completed trials add up to.
struct GroupTotals {
  std::vector<double> finals;  // final val losses
  double tokens_per_second = 0.0;
  size_t attention_trials = 0;
  // seed -> the schedule's completed trial standing for it (lowest id).
  std::map<int64_t, const TrialOutcome*> by_seed;
};

// CountTrials counts a schedule's trials by how they ended into `row` and
// sums its completed ones.
GroupTotals CountTrials(const std::vector<const TrialOutcome*>& group,
                        RankedRow& row) {
  GroupTotals totals;
  row.min_val_loss = std::numeric_limits<double>::infinity();
  for (const TrialOutcome* t : group) {
    if (t->state == OutcomeState::kCompleted &&
        !std::isfinite(t->final_val_loss)) {
      // Never silently used: counted as diverged, and said so.
      ++row.seeds_excluded;
      ++row.seeds_diverged;
      row.diverged = true;
      continue;
    }
    if (t->state != OutcomeState::kCompleted) {
      row.diverged |= t->state == OutcomeState::kDiverged;
      ++(t->state == OutcomeState::kDiverged ? row.seeds_diverged
                                             : row.seeds_failed);
      continue;
    }
    ++row.seeds_completed;
    row.trial_ids.push_back(t->trial_id);
    totals.finals.push_back(t->final_val_loss);
    row.min_val_loss = std::min(row.min_val_loss, t->min_val_loss);
    totals.tokens_per_second += t->tokens_per_second;
    if (!t->attention_distance.empty() &&
        (row.attention_distance.empty() ||
         row.attention_distance.size() == t->attention_distance.size())) {
      row.attention_distance.resize(t->attention_distance.size(), 0.0);
      for (size_t l = 0; l < t->attention_distance.size(); ++l) {
        row.attention_distance[l] += t->attention_distance[l];
      }
      ++totals.attention_trials;
    }
    auto [seen, fresh] = totals.by_seed.try_emplace(t->seed, t);
    if (!fresh && t->trial_id < seen->second->trial_id) seen->second = t;
  }
  return totals;
}

// Pairing is a schedule's seeds paired with the baseline's.
struct Pairing {
  VerdictInput verdict_input;
  std::vector<double> steps;     // to the baseline's loss, where reached
  std::vector<double> speedups;  // baseline steps / steps, where reached
  std::vector<ThroughputPair> throughput;
};

// PairWithBaseline pairs each of the schedule's seeds, in sequence order,
// with the baseline's bar for it: deltas, speed-ups and tokens/s ratios.
Pairing PairWithBaseline(
    const GroupTotals& totals,
    const std::unordered_map<int64_t, size_t>& sequence_position,
    const std::unordered_map<int64_t, SeedBaseline>& bar, RankedRow& row) {
  Pairing pairing;
  VerdictInput& data = pairing.verdict_input;
  data.is_baseline = row.is_baseline;
  for (const auto& [seed, t] :
       SequenceOrder(totals.by_seed, sequence_position)) {
    data.losses.emplace_back(seed, t->final_val_loss);
    auto found = bar.find(seed);
    if (found == bar.end()) continue;
    const SeedBaseline& b = found->second;
    data.deltas.push_back(t->final_val_loss - b.trial->final_val_loss);
    data.paired_seeds.push_back(seed);
    data.paired_losses.push_back(t->final_val_loss);
    if (t->tokens_per_second > 0.0 && b.trial->tokens_per_second > 0.0) {
      pairing.throughput.push_back(PairThroughput(*t, *b.trial));
    }
    // Without a baseline step count the seed has no speed-up to miss.
    if (!b.steps.has_value()) continue;
    ++row.speedup_seeds;
    const std::optional<double> reached =
        StepsToReach(*t, b.trial->final_val_loss);
    // Reached at step 0 (an eval before training) has no finite ratio.
    if (!reached.has_value() || *reached <= 0.0) continue;
    pairing.steps.push_back(*reached);
    pairing.speedups.push_back(*b.steps / *reached);
  }
  return pairing;
}

// SummarizeRow sets the row's means and intervals from its totals and
// pairing.
void SummarizeRow(const GroupTotals& totals, const Pairing& pairing,
                  IntervalCache& intervals, RankedRow& row) {
  std::sort(row.trial_ids.begin(), row.trial_ids.end());
  if (row.seeds_completed == 0) row.min_val_loss = 0.0;
  for (double& d : row.attention_distance) d /= totals.attention_trials;
  row.final_val_loss = intervals.Of(totals.finals);
  row.delta_vs_baseline = intervals.Of(pairing.verdict_input.deltas);
  row.paired_seeds = row.delta_vs_baseline.n;
  row.steps_to_baseline = Mean(pairing.steps);
  row.speedup = intervals.Of(pairing.speedups);
  row.convergence_speedup = row.speedup.mean;
  SummarizeThroughput(pairing.throughput, intervals, row);
  if (row.seeds_completed > 0) {
    row.tokens_per_second = totals.tokens_per_second / row.seeds_completed;
  }
}

// ApplyVerdicts copies each row's verdict (same order as ranking.rows) into
// it, and the summary into the ranking.
void ApplyVerdicts(Verdicts verdicts, Ranking& ranking) {
  for (size_t i = 0; i < ranking.rows.size(); ++i) {
    RankedRow& row = ranking.rows[i];
    const RowVerdict& v = verdicts.rows[i];
    row.verdict = v.verdict;
    row.p_value = v.p_value;
    row.adjusted_p_value = v.adjusted_p_value;
    row.adjusted_delta = v.adjusted_delta;
    row.adjusted_confidence = v.adjusted_confidence;
    row.delta_sd = v.delta_sd;
    row.dof = v.dof;
    row.seeds_needed = v.seeds_needed;
    row.decided_at_seeds = v.decided_at_seeds;
    row.in_best_set = v.in_best_set;
    if (v.delta_vs_baseline.has_value()) {
      row.delta_vs_baseline = *v.delta_vs_baseline;
    }
  }
  ranking.verdicts = std::move(verdicts.summary);
  ranking.compared_schedules = verdicts.compared;
}

// OrderRows sorts the rows (RankOrder), numbers them, lists the best-set by
// rank and counts the excluded trials; returns the baseline's row or null.
const RankedRow* OrderRows(Ranking& ranking) {
  std::sort(ranking.rows.begin(), ranking.rows.end(), RankOrder);
  const RankedRow* baseline = nullptr;
  for (size_t i = 0; i < ranking.rows.size(); ++i) {
    RankedRow& row = ranking.rows[i];
    row.rank = static_cast<int>(i) + 1;
    if (row.is_baseline) baseline = &row;
    if (row.in_best_set) ranking.verdicts.best_set.push_back(row.schedule);
    ranking.verdicts.excluded_trials += row.seeds_excluded;
  }
  return baseline;
}

// CompareWithBaseline sets every row's unpaired tokens/s ratio and attention
// distance shift against `baseline`'s row.
void CompareWithBaseline(const RankedRow& baseline, Ranking& ranking) {
  for (RankedRow& row : ranking.rows) {
    if (baseline.tokens_per_second > 0.0) {
      row.tokens_per_second_ratio =
          row.tokens_per_second / baseline.tokens_per_second;
    }
    if (!baseline.attention_distance.empty() &&
        row.attention_distance.size() == baseline.attention_distance.size()) {
      row.attention_distance_shift.resize(row.attention_distance.size());
      for (size_t l = 0; l < row.attention_distance.size(); ++l) {
        row.attention_distance_shift[l] =
            row.attention_distance[l] - baseline.attention_distance[l];
      }
    }
  }
  ranking.baseline = baseline;
}

// PrincipleEffects estimates each principle's effect over the non-baseline
// rows with a paired delta (AnalyzePrinciples).
std::vector<PrincipleEffect> PrincipleEffects(
    const std::vector<RankedRow>& rows) {
  // The baseline's delta is 0 by construction, so it is not an observation.
  std::vector<ScheduleDelta> observations;
  for (const RankedRow& row : rows) {
    if (row.is_baseline || row.delta_vs_baseline.n == 0) continue;
    ScheduleDelta& o = observations.emplace_back();
    o.mean_delta = row.delta_vs_baseline.mean;
    o.paired_seeds = row.delta_vs_baseline.n;
    for (Principle p : kAllPrinciples) {
      o.violated.Set(p, !row.principles.Satisfies(p));
    }
  }
  return AnalyzePrinciples(observations).effects;
}

}  // namespace

Ranking RankSchedules(const SpaceSpec& shape,
                      const std::string& baseline_schedule,
                      const std::vector<TrialOutcome>& trials,
                      const VerdictOptions& options) {
  const std::string baseline_text = BaselineText(baseline_schedule, trials);
  const std::vector<std::vector<const TrialOutcome*>> groups =
      GroupBySchedule(trials);
  const std::unordered_map<int64_t, SeedBaseline> bar =
      BaselineBars(trials, baseline_text);
  std::unordered_map<int64_t, size_t> sequence_position;
  for (size_t i = 0; i < options.seed_sequence.size(); ++i) {
    sequence_position.try_emplace(options.seed_sequence[i], i);
  }

  IntervalCache intervals;
  Ranking ranking;
  ranking.rows.reserve(groups.size());
  // Per row (in ranking.rows order), what the verdicts test.
  std::vector<VerdictInput> verdict_inputs;
  verdict_inputs.reserve(groups.size());
  for (const auto& group : groups) {
    RankedRow row;
    row.schedule = group.front()->schedule;
    row.is_baseline = row.schedule == baseline_text;
    if (absl::StatusOr<Schedule> s = ParseSchedule(row.schedule); s.ok()) {
      row.principles = ReportPrinciples(shape, *s);
    }
    const GroupTotals totals = CountTrials(group, row);
    Pairing pairing = PairWithBaseline(totals, sequence_position, bar, row);
    SummarizeRow(totals, pairing, intervals, row);
    ranking.rows.push_back(std::move(row));
    verdict_inputs.push_back(std::move(pairing.verdict_input));
  }

  ApplyVerdicts(DecideVerdicts(verdict_inputs, options), ranking);
  const RankedRow* baseline = OrderRows(ranking);
  if (baseline != nullptr) CompareWithBaseline(*baseline, ranking);
  ranking.principle_effects = PrincipleEffects(ranking.rows);
  return ranking;
}

}  // namespace prism
