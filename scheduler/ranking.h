// Ranking: turns finished trials into a leaderboard of schedules against the
// uniform baseline, the analysis the paper reports.
//
// For each schedule (aggregated over seeds): final val loss mean with a 95%
// CI; the paired delta vs the baseline trained with the same seed (negative
// is better); minimum val loss; steps to reach the baseline's final val loss
// and the convergence speed-up; tokens/s and its ratio to the baseline; per
// layer attention distance and its shift vs the baseline; principle flags.
// Plus, per principle, the mean delta of schedules that satisfy it vs those
// that violate it.
//
// Thread-safety: pure function of its inputs.
#ifndef PRISM_SCHEDULER_RANKING_H_
#define PRISM_SCHEDULER_RANKING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/principles.h"
#include "scheduler/space.h"
#include "scheduler/statistics.h"

namespace prism {

// TrialOutcome is one finished trial as storage returns it.
struct TrialOutcome {
  int64_t trial_id = 0;
  std::string schedule;  // canonical form
  int64_t seed = 0;
  bool is_baseline = false;
  double final_val_loss = 0.0;
  double min_val_loss = 0.0;
  double tokens_per_second = 0.0;
  // The val curve, steps ascending.
  std::vector<int64_t> val_steps;
  std::vector<double> val_losses;
  std::vector<double> attention_distance;  // per layer
};

struct RankedRow {
  int rank = 0;  // 1-based, by mean final val loss, ties by schedule text
  std::string schedule;
  bool is_baseline = false;
  SchedulePrinciples principles;
  Interval final_val_loss;
  Interval delta_vs_baseline;  // paired per seed; n = seeds with a baseline
  double min_val_loss = 0.0;   // lowest over the schedule's trials
  // Mean, over the seeds that reached it, of the first val step whose loss
  // <= the same seed's baseline final val loss; 0 when no seed reached it.
  double steps_to_baseline = 0.0;
  // Mean over those seeds of baseline_steps / steps_to_baseline, where
  // baseline_steps is the baseline's own first step at its final val loss
  // (so the baseline's row shows 1); 0 when no seed reached it.
  double convergence_speedup = 0.0;
  double tokens_per_second = 0.0;
  double tokens_per_second_ratio = 0.0;          // 0 without a baseline
  std::vector<double> attention_distance;        // mean over seeds
  std::vector<double> attention_distance_shift;  // minus the baseline's
  std::vector<int64_t> trial_ids;                // ascending
};

struct PrincipleEffect {
  Principle principle = Principle::kSmooth;
  // Schedules other than the baseline (whose delta is 0 by construction)
  // with at least one paired delta, each weighted once by its mean delta.
  int satisfied = 0;
  int violated = 0;
  double mean_delta_satisfied = 0.0;
  double mean_delta_violated = 0.0;
};

struct Ranking {
  std::vector<RankedRow> rows;  // every schedule, baseline included, by rank
  std::optional<RankedRow> baseline;
  std::vector<PrincipleEffect> principle_effects;  // one per principle
};

// RankSchedules ranks `trials` (finished trials of one experiment; others
// should not be passed). `shape` supplies d_model, base heads and run bounds
// for the principle flags; `baseline_schedule` is the uniform schedule's
// canonical text ("" = the schedule of the first trial marked is_baseline).
// When several baseline trials share a seed, the lowest trial id sets that
// seed's bar. A schedule text that does not parse gets all-false principle
// flags. Runs in O(total val points + schedules log schedules).
Ranking RankSchedules(const SpaceSpec& shape,
                      const std::string& baseline_schedule,
                      const std::vector<TrialOutcome>& trials);

}  // namespace prism

#endif  // PRISM_SCHEDULER_RANKING_H_
