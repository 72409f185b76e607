// Calibration: the verdicts measured on known truth. Runs many simulated
// experiments (scheduler/simulate/known_truth.h) through RankSchedules,
// optionally with the adaptive seeds policy
// (scheduler/strategy/adaptive_seeds.h) adding seeds round by round, and counts
// what a researcher would be told against what is true: the error rate on nulls
// (familywise, and the false discovery proportion), the power on planted
// effects, and how often Hsu's best-set holds the true best.
// tests/scheduler/calibration_test.cc checks the targets;
// bench/verdict_calibration prints the table in bench/RESULTS.md.
//
//   CalibrationSpec spec;
//   spec.truth.structure = TruthStructure::kNull;
//   CalibrationResult r = RunCalibration(spec);
//   r.FamilywiseErrorRate();  // <= 0.05 under Holm
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_SIMULATE_CALIBRATION_H_
#define PRISM_SCHEDULER_SIMULATE_CALIBRATION_H_

#include <cstdint>

#include "scheduler/analysis/ranking.h"
#include "scheduler/simulate/known_truth.h"

namespace prism {

struct CalibrationSpec {
  // truth.seed is the first experiment's; experiment e uses truth.seed + e.
  // truth.seeds is raised to max_seeds when adaptive.
  KnownTruthSpec truth;
  VerdictOptions verdicts;  // looks and sequence are set here when adaptive
  int experiments = 200;
  // Adaptive seeds: every schedule starts with min_seeds; DecideSeeds adds
  // one to the inconclusive ones each round, up to max_seeds.
  bool adaptive = false;
  int min_seeds = 3;
  int max_seeds = 6;
};

struct CalibrationResult {
  int experiments = 0;
  // Experiments with at least one false verdict: better or worse on a
  // schedule whose true delta is 0, or the opposite sign of a true effect.
  int experiments_with_false_verdict = 0;
  double false_discovery_proportion_sum = 0.0;  // over experiments
  int false_verdicts = 0;
  int verdicts = 0;  // better or worse, all experiments
  // Power: schedules whose true delta is < 0, and of them called better.
  int true_effects = 0;
  int detected = 0;
  int best_in_set = 0;  // experiments whose best-set holds the true best
  int64_t best_set_size_sum = 0;
  int64_t trials_sum = 0;  // trials trained, baseline included
  int64_t schedules_sum = 0;
  int fell_back = 0;  // experiments ranked without a variance prior

  double FamilywiseErrorRate() const;
  double FalseDiscoveryRate() const;  // mean false discovery proportion
  double Power() const;
  double BestSetCoverage() const;
  double MeanBestSetSize() const;
  double MeanSeedsPerSchedule() const;  // trials / schedules
};

// RunCalibration runs spec.experiments experiments (see the top). A truth
// spec GenerateKnownTruth refuses gives an empty result (experiments 0).
CalibrationResult RunCalibration(const CalibrationSpec& spec);

}  // namespace prism

#endif  // PRISM_SCHEDULER_SIMULATE_CALIBRATION_H_
