// Ranking: turns finished trials into a leaderboard of schedules against the
// uniform baseline, the analysis the paper reports.
//
// For each schedule (aggregated over its completed seeds): final val loss
// mean with a 95% CI; the paired delta vs the baseline trained with the same
// seed (negative is better) and a verdict on it; counts of completed,
// diverged and failed seeds; minimum val loss; the convergence speed-up and
// the tokens/s ratio, both paired by seed with a CI; per layer attention
// distance and its shift vs the baseline; principle flags. Plus, per
// principle, the effect of violating it with its 95% interval or the reason
// it is not estimable (scheduler/principle_analysis.h), over the non-baseline
// schedules with a paired delta.
//
// Convergence speed-up: the target of a seed is the final val loss of the
// baseline trained with it. Steps to the target are interpolated linearly
// between the last eval above it and the first at or below it (the first
// eval's step when the curve starts there). Per seed the ratio is
// baseline_steps / steps, baseline_steps being the baseline's own steps to
// its final val loss, interpolated the same way. Of the n paired seeds, m
// reach the target; a seed that never does has no ratio (it is censored: its
// ratio is below baseline_steps / the steps it ran, but unknown), so the mean
// and its 95% Student-t CI are over the m that did, and m of n is reported
// beside them so the censoring shows. The mean is optimistic when m < n.
//
// Tokens/s ratio: per paired seed, the schedule's tokens/s over the
// baseline's. A pair is matched on "worker" when both trials were finished by
// the same worker with the same device string, on "device" when only the
// device strings match (the trainer's, e.g. "cpu (4 threads)" or "cuda:0":
// the same kind and thread count, not a proven CPU or GPU model), and is
// unpaired otherwise. Two CPU trials whose shares of their cores
// (cpu_share) are both known and differ by more than kCpuShareTolerance are
// unpaired too, labelled with both shares: one trained beside another
// process and the other alone, so their ratio measures the sharing, not the
// schedule. The mean and CI are over the matched pairs (the level is the
// weakest among them); with none matched, over all pairs, labelled unpaired
// with both sides' hardware.
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

// The largest difference of cpu_share (a fraction of the cores) at which two
// CPU trials' tokens/s still pair (see the top).
inline constexpr double kCpuShareTolerance = 0.15;

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
  // Where it ran: the worker that finished it and the trainer's device string
  // ("" when unknown).
  std::string worker_id;
  std::string device;
  // The share of its cores a CPU trial got while stepping (TrialMetrics);
  // 0 when unknown.
  double cpu_share = 0.0;
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

// ThroughputPairing is how a schedule's tokens/s pairs were matched on
// hardware (see the top).
enum class ThroughputPairing {
  kNone,  // no pair with tokens/s on both sides
  kWorker,
  kDevice,
  kUnpaired,
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
  // Convergence (see the top). speedup: per seed baseline_steps / steps, over
  // the m seeds that reached the target (speedup.n = m; the baseline's own
  // row is 1 per seed). speedup_seeds: n, the paired seeds whose baseline
  // curve reaches its own final val loss.
  Interval speedup;
  int speedup_seeds = 0;
  // Mean interpolated steps to the target over the m seeds; 0 when m = 0.
  double steps_to_baseline = 0.0;
  double convergence_speedup = 0.0;  // = speedup.mean
  double tokens_per_second = 0.0;    // mean over completed trials
  // Unpaired: mean tokens/s over the baseline's; 0 without a baseline. Kept
  // for callers that read it; throughput_ratio is the comparison to report.
  double tokens_per_second_ratio = 0.0;
  // Tokens/s paired by seed (see the top): the mean ratio and CI over the
  // pairs of throughput_pairing (n of them), out of throughput_pairs pairs
  // with tokens/s on both sides. throughput_hardware: for worker and device,
  // the device strings of the pairs used; unpaired, "schedule's vs
  // baseline's" for each distinct combination; joined by ", ".
  Interval throughput_ratio;
  int throughput_pairs = 0;
  ThroughputPairing throughput_pairing = ThroughputPairing::kNone;
  std::string throughput_hardware;
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
