#include "scheduler/simulate/calibration.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "scheduler/strategy/adaptive_seeds.h"

namespace prism {
namespace {

double Ratio(double a, double b) { return b > 0.0 ? a / b : 0.0; }

// Score adds one experiment's ranking to `result`.
void Score(const KnownTruth& truth, const Ranking& ranking,
           CalibrationResult& result) {
  int false_here = 0;
  int verdicts_here = 0;
  bool best_in_set = false;
  for (const RankedRow& row : ranking.rows) {
    if (row.schedule == truth.best && row.in_best_set) best_in_set = true;
    if (row.is_baseline) continue;
    const double delta = truth.true_delta.at(row.schedule);
    if (delta < 0.0) {
      ++result.true_effects;
      if (row.verdict == Verdict::kBetter) ++result.detected;
    }
    if (row.verdict != Verdict::kBetter && row.verdict != Verdict::kWorse) {
      continue;
    }
    ++verdicts_here;
    const bool right = (row.verdict == Verdict::kBetter && delta < 0.0) ||
                       (row.verdict == Verdict::kWorse && delta > 0.0);
    if (!right) ++false_here;
  }
  ++result.experiments;
  result.verdicts += verdicts_here;
  result.false_verdicts += false_here;
  if (false_here > 0) ++result.experiments_with_false_verdict;
  if (verdicts_here > 0) {
    result.false_discovery_proportion_sum +=
        static_cast<double>(false_here) / verdicts_here;
  }
  if (best_in_set) ++result.best_in_set;
  result.best_set_size_sum +=
      static_cast<int64_t>(ranking.verdicts.best_set.size());
  if (ranking.verdicts.fell_back) ++result.fell_back;
}

// RunAdaptive trains min_seeds everywhere, then adds seeds as DecideSeeds
// says until it adds none; returns the final ranking and counts trials.
Ranking RunAdaptive(const CalibrationSpec& spec, const KnownTruth& truth,
                    const VerdictOptions& options, int64_t& trials) {
  std::set<std::pair<std::string, int64_t>> trained;
  for (const KnownTruthTrial& t : truth.trials) {
    if (t.seed <= spec.min_seeds) trained.insert({t.schedule, t.seed});
  }
  const std::vector<int64_t>& sequence = options.seed_sequence;
  while (true) {
    std::vector<TrialOutcome> outcomes;
    std::vector<SeedTrial> seed_trials;
    int64_t id = 1;
    for (const KnownTruthTrial& t : truth.trials) {
      if (trained.count({t.schedule, t.seed}) == 0) continue;
      outcomes.push_back(TruthOutcome(t, id++));
      seed_trials.push_back(
          SeedTrial{t.schedule, t.seed, t.is_baseline, /*pending=*/false});
    }
    Ranking ranking =
        RankSchedules(spec.truth.space, truth.baseline, outcomes, options);
    const SeedDecision d =
        DecideSeeds(sequence, truth.baseline, seed_trials, ranking);
    if (d.additions.empty()) {
      trials = static_cast<int64_t>(outcomes.size());
      return ranking;
    }
    for (const SeedAddition& a : d.additions) {
      trained.insert({a.schedule, a.seed});
    }
  }
}

}  // namespace

double CalibrationResult::FamilywiseErrorRate() const {
  return Ratio(experiments_with_false_verdict, experiments);
}
double CalibrationResult::FalseDiscoveryRate() const {
  return Ratio(false_discovery_proportion_sum, experiments);
}
double CalibrationResult::Power() const {
  return Ratio(detected, true_effects);
}
double CalibrationResult::BestSetCoverage() const {
  return Ratio(best_in_set, experiments);
}
double CalibrationResult::MeanBestSetSize() const {
  return Ratio(static_cast<double>(best_set_size_sum), experiments);
}
double CalibrationResult::MeanSeedsPerSchedule() const {
  return Ratio(static_cast<double>(trials_sum),
               static_cast<double>(schedules_sum));
}

CalibrationResult RunCalibration(const CalibrationSpec& spec) {
  CalibrationResult result;
  KnownTruthSpec truth_spec = spec.truth;
  truth_spec.curves = false;
  VerdictOptions options = spec.verdicts;
  if (spec.adaptive) {
    truth_spec.seeds = spec.max_seeds;
    options.looks = LooksForSeeds(spec.min_seeds, spec.max_seeds);
    options.seed_sequence = SeedSequence({}, spec.max_seeds);
  }
  for (int e = 0; e < spec.experiments; ++e) {
    truth_spec.seed = spec.truth.seed + e;
    absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(truth_spec);
    if (!truth.ok()) return CalibrationResult{};
    int64_t trials = 0;
    Ranking ranking;
    if (spec.adaptive) {
      ranking = RunAdaptive(spec, *truth, options, trials);
    } else {
      const std::vector<TrialOutcome> outcomes = TruthOutcomes(*truth);
      trials = static_cast<int64_t>(outcomes.size());
      ranking =
          RankSchedules(truth_spec.space, truth->baseline, outcomes, options);
    }
    Score(*truth, ranking, result);
    result.trials_sum += trials;
    result.schedules_sum += static_cast<int64_t>(truth->schedules.size());
  }
  return result;
}

}  // namespace prism
