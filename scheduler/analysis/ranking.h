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
// it is not estimable (scheduler/analysis/principle_analysis.h), over the
// non-baseline schedules with a paired delta.
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
// Verdicts (VerdictOptions), the method named in every ranking: the
// moderated or paired t against the baseline, Holm or Benjamini-Hochberg
// over each look's family, the adjusted interval that agrees with the
// verdict, and Hsu's best-set (scheduler/stats/verdicts.h). Completed trials
// with a non-finite final val loss are counted as diverged and excluded, like
// diverged trials (excluded_trials).
//
// Thread-safety: pure function of its inputs.
#ifndef PRISM_SCHEDULER_ANALYSIS_RANKING_H_
#define PRISM_SCHEDULER_ANALYSIS_RANKING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/analysis/principle_analysis.h"
#include "scheduler/records.h"
#include "scheduler/space/principles.h"
#include "scheduler/space/space.h"
#include "scheduler/stats/statistics.h"
#include "scheduler/stats/verdicts.h"

namespace prism {

// The largest difference of cpu_share (a fraction of the cores) at which two
// CPU trials' tokens/s still pair (see the top).
inline constexpr double kCpuShareTolerance = 0.15;

// ThroughputPairing is how a schedule's tokens/s pairs were matched on
// hardware (see the top).
enum class ThroughputPairing {
  kNone,  // no pair with tokens/s on both sides
  kWorker,
  kDevice,
  kUnpaired,
};

struct RankedRow {
  // 1-based. Rows with a verdict of better, worse or inconclusive, and the
  // baseline (as a delta of 0), by mean paired delta ascending; then the
  // others (needs seeds): by mean delta, those without one by mean final val
  // loss. Ties by schedule text.
  int rank = 0;
  std::string schedule;
  bool is_baseline = false;
  SchedulePrinciples principles;
  Interval final_val_loss;  // over completed trials
  // Paired per seed: n = distinct seeds completed by both the schedule and
  // the baseline (the lowest trial id of each stands for the seed).
  Interval delta_vs_baseline;
  Verdict verdict = Verdict::kNone;
  // At the deciding (else last) look: the t-test's two-sided p-value and
  // its adjusted value (stats/verdicts.h); absent for the baseline and for
  // fewer than 2 paired seeds.
  std::optional<double> p_value;
  std::optional<double> adjusted_p_value;
  // delta_vs_baseline's interval is the 95% t interval with the method's
  // variance and dof; adjusted_delta is the family-adjusted interval that
  // agrees with the verdict (stats/verdicts.h); both have no bounds below 2
  // paired seeds.
  Interval adjusted_delta;
  double adjusted_confidence = 0.0;  // of adjusted_delta
  // The method's per-seed sd of the paired delta and its dof; 0 below 2.
  double delta_sd = 0.0;
  double dof = 0.0;
  // Inconclusive: the paired seeds that would detect the observed mean at
  // kSeedsPower (normal approximation, at adjusted_confidence's level),
  // capped at kMaxSeedsNeeded; 0 otherwise.
  int seeds_needed = 0;
  // The look (paired seeds) that decided better or worse; 0 otherwise.
  int decided_at_seeds = 0;
  bool in_best_set = false;
  // Completed trials left out for a non-finite final val loss (counted in
  // seeds_diverged too).
  int seeds_excluded = 0;
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
  // Schedules in the verdicts' family: non-baseline, at least 2 paired
  // seeds.
  int compared_schedules = 0;
  VerdictSummary verdicts;
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
                      const std::vector<TrialOutcome>& trials,
                      const VerdictOptions& options = {});

}  // namespace prism

#endif  // PRISM_SCHEDULER_ANALYSIS_RANKING_H_
