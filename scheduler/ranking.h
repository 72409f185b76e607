// Ranking: turns finished trials into a leaderboard of schedules against the
// uniform baseline, the analysis the paper reports.
//
// For each schedule (aggregated over its completed seeds): final val loss
// mean with a 95% CI; the paired delta vs the baseline trained with the same
// seed (negative is better) and a verdict on it; counts of completed,
// diverged and failed seeds; minimum val loss; steps to reach the baseline's
// final val loss and the convergence speed-up; tokens/s and its ratio to the
// baseline; per layer attention distance and its shift vs the baseline;
// principle flags. Plus, per principle, the effect of violating it with its
// 95% interval or the reason it is not estimable (scheduler/
// principle_analysis.h), over the non-baseline schedules with a paired delta.
//
// Verdict method: per schedule, a two-sided one-sample t-test of its paired
// deltas (one per seed it shares with the baseline) against 0; the p-values of
// all schedules with at least 2 paired seeds form one family, adjusted with
// Holm-Bonferroni. Adjusted p < kVerdictAlpha: better (mean delta < 0) or
// worse; otherwise tied; fewer than 2 paired seeds: needs seeds.
//
// Thread-safety: pure function of its inputs.
#ifndef PRISM_SCHEDULER_RANKING_H_
#define PRISM_SCHEDULER_RANKING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/principle_analysis.h"
#include "scheduler/principles.h"
#include "scheduler/space.h"
#include "scheduler/statistics.h"

namespace prism {

// The familywise error rate the verdicts control.
inline constexpr double kVerdictAlpha = 0.05;

// OutcomeState is how a finished trial ended. Only completed trials enter the
// statistics; diverged and failed ones are counted.
enum class OutcomeState { kCompleted, kDiverged, kFailed };

// TrialOutcome is one finished trial as storage returns it. The metrics are
// meaningful for completed trials only.
struct TrialOutcome {
  int64_t trial_id = 0;
  std::string schedule;  // canonical form
  int64_t seed = 0;
  bool is_baseline = false;
  OutcomeState state = OutcomeState::kCompleted;
  double final_val_loss = 0.0;
  double min_val_loss = 0.0;
  double tokens_per_second = 0.0;
  // The val curve, steps ascending.
  std::vector<int64_t> val_steps;
  std::vector<double> val_losses;
  std::vector<double> attention_distance;  // per layer
};

// Verdict is a schedule's standing against the baseline (see the top).
enum class Verdict {
  kNone,  // the baseline itself
  kBetter,
  kWorse,
  kTied,        // not significant after the Holm adjustment
  kNeedsSeeds,  // fewer than 2 paired seeds
};

struct RankedRow {
  // 1-based. Rows with a verdict of better, worse or tied, and the baseline
  // (as a delta of 0), by mean paired delta ascending; then the others
  // (needs seeds): by mean delta, those without one by mean final val loss.
  // Ties by schedule text.
  int rank = 0;
  std::string schedule;
  bool is_baseline = false;
  SchedulePrinciples principles;
  Interval final_val_loss;  // over completed trials
  // Paired per seed: n = distinct seeds completed by both the schedule and
  // the baseline (the lowest trial id of each stands for the seed).
  Interval delta_vs_baseline;
  Verdict verdict = Verdict::kNone;
  // The paired t-test's two-sided p-value and its Holm-adjusted value; absent
  // for the baseline and for fewer than 2 paired seeds.
  std::optional<double> p_value;
  std::optional<double> adjusted_p_value;
  int seeds_completed = 0;  // completed trials
  int seeds_diverged = 0;
  int seeds_failed = 0;
  int paired_seeds = 0;       // = delta_vs_baseline.n
  bool diverged = false;      // any trial diverged
  double min_val_loss = 0.0;  // lowest over completed trials (0 if none)
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
  std::vector<int64_t> trial_ids;                // completed trials, ascending
};

struct Ranking {
  std::vector<RankedRow> rows;  // every schedule, baseline included, by rank
  std::optional<RankedRow> baseline;
  // One per principle, in kAllPrinciples order: AnalyzePrinciples.
  std::vector<PrincipleEffect> principle_effects;
  // Schedules in the Holm family: non-baseline, at least 2 paired seeds.
  int compared_schedules = 0;
};

// RankSchedules ranks `trials` (finished trials of one experiment: completed,
// diverged or failed; others should not be passed). A schedule with no
// completed trial still gets a row, with its counts. `shape` supplies d_model,
// base heads and run bounds for the principle flags; `baseline_schedule` is the
// uniform schedule's canonical text ("" = the schedule of the first trial
// marked is_baseline). When several baseline trials share a seed, the lowest
// trial id sets that seed's bar. A schedule text that does not parse gets
// all-false principle flags. Runs in O(total val points + trials log trials).
Ranking RankSchedules(const SpaceSpec& shape,
                      const std::string& baseline_schedule,
                      const std::vector<TrialOutcome>& trials);

}  // namespace prism

#endif  // PRISM_SCHEDULER_RANKING_H_
