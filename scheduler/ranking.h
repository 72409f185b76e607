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
// Verdicts (VerdictOptions), the method named in every ranking:
//   - Each schedule's paired deltas (one per seed it shares with the
//     baseline) have a mean; the seed's offset, shared by every schedule on
//     it, cancels in each delta.
//   - Moderated t (the default; limma's empirical Bayes: Smyth, "Linear
//     models and empirical Bayes methods for assessing differential
//     expression in microarray experiments", Stat. Appl. Genet. Mol. Biol.
//     3(1), 2004; with two changes so that schedules differing in noise keep
//     the error rate, issue 39): a loss = schedule + seed model over all
//     completed trials gives the seed effects; each schedule's own trial
//     variance s^2 (its losses less them, on d = n - 1 dof), the baseline's
//     too, is moderated by a scaled inverse-chi-square prior (s0^2, d0) fitted
//     to all of them by maximum likelihood (FitVariancePriorMaximumLikelihood:
//     s^2 / s0^2 is F on (d, d0); limma fits the log variances' moments, which
//     with 2 dof each are noisy). The moderated variance is the posterior mean
//     of the variance, (d0 s0^2 + d s^2) / (d0 + d - 2), on d0 + d - 1 dof,
//     capped at the pooled dof as limma caps df.total; limma's is the same over
//     d0 + d, on d0 + d dof. The two agree when the prior pools the variances
//     (d0 infinite: the usual fit when they are equal) and part as d0 falls
//     (2x the variance at d0 = 2): limma's t is exact only when the true
//     variances follow the prior's shape, and at a family's extreme levels
//     (Holm's alpha / 119) that shape's tail decides. On known truth with a
//     log-sd spread of 0.5 across schedules limma's version gave a false
//     verdict in 10-11% of null experiments (bench/RESULTS.md, "Verdicts on
//     known truth", with what else was tried). A paired delta's variance is
//     the schedule's plus the baseline's, on Welch-Satterthwaite's dof.
//     (Moderating the paired deltas' variances instead would estimate the
//     baseline's share from its own few seeds inside every schedule's
//     variance, and one lucky baseline seed would move every verdict.) With
//     fewer than kMinPriorSchedules schedules it falls back, and says so, to
//     the per-schedule paired t (the deltas' own variance on n - 1 dof),
//     which is also what kPairedT asks for.
//   - A two-sided t-test of the mean against 0. The p-values of a look's
//     family (the schedules with >= 2 paired seeds) are adjusted together
//     with Holm (familywise error) or Benjamini-Hochberg (false discovery
//     rate); adjusted p < alpha: better (mean < 0) or worse. Otherwise
//     inconclusive, with the seeds that would detect the observed mean at
//     80% power at the family's current level; fewer than 2 paired seeds:
//     needs seeds. "Inconclusive" never claims the two are equal.
//   - Looks (adaptive seeds): with a seed sequence and planned looks (paired
//     seed counts), look k tests every schedule having >= n_k paired seeds
//     on its first n_k seeds of the sequence, at alpha_k = alpha (F(t_k) -
//     F(t_k-1)), F(t) = ln(1 + (e - 1) t) (Lan-DeMets' Pocock-type spending)
//     and t_k = n_k / n_K. A schedule's verdict is from the first look that
//     rejects it. The alpha_k add up to alpha, so by the union bound over
//     looks adding seeds after a look keeps the familywise error (Holm) or
//     the false discovery rate (BH, each look's false discoveries counted
//     against its own discoveries) at alpha. Without looks: one look at all
//     the data, at alpha.
//   - The adjusted interval agrees with the verdict: at the deciding (else
//     the last) look, a t interval at confidence 1 - a, where a is the level
//     at which that look's family rejects: Holm alpha_k / (m - R + 1) (alpha_k
//     / m when R = 0), BH alpha_k max(R, 1) / m (Benjamini-Yekutieli's
//     false-coverage interval), m the family and R its rejections. A better
//     row's adjusted interval lies below 0, a worse row's above, an
//     inconclusive one's covers 0. adjusted_p_value is the family's adjusted
//     p scaled by alpha / alpha_k, so that it is below alpha exactly when the
//     row was rejected.
//   - Best-set: Hsu's multiple comparisons with the best. Among the baseline
//     and the schedules with >= 2 paired seeds, i is in the set unless some j
//     beats it clearly: mean_i - mean_j > d SE_ij. SE_ij from the moderated
//     trial variances: sqrt(v_i / n_i + v_j / n_j) between two schedules (the
//     baseline cancels), sqrt((v_i + v_b) / n_i) against the baseline (with
//     paired t, a paired delta's variance split evenly). d is Dunnett's
//     one-sided many-to-one critical value for k = candidates - 1 (after a
//     search that screened, at least the screened schedules: the finalists
//     were chosen for looking good on these trials, so the comparisons are
//     those of every screened schedule) at 1 -
//     alpha when the prior pooled the variances into one (Dunnett assumes
//     a common variance), else the Bonferroni one-sided t at alpha / k, on the
//     smallest dof: with unequal moderated variances Dunnett's constant
//     undercovered on known truth (0.87 at log-sd spread 0.5, with limma's
//     variances), the union bound holds. The set contains the truly best
//     schedule with probability >= 1 - alpha (bench/RESULTS.md, "Verdicts on
//     known truth", measures it).
//   - Completed trials with a non-finite final val loss are counted as
//     diverged and excluded, like diverged trials (excluded_trials).
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

// The default error rate the verdicts control (familywise under Holm, false
// discovery rate under Benjamini-Hochberg), and the best-set's 1 - coverage.
inline constexpr double kVerdictAlpha = 0.05;

// The fewest schedules (the baseline counted) with >= 2 seeds paired with the
// baseline from which the moderated t fits its variance prior; below it,
// per-schedule paired t. Five is the demo grid's size.
inline constexpr int kMinPriorSchedules = 5;

// The power at which an inconclusive row's seeds_needed is computed.
inline constexpr double kSeedsPower = 0.8;

// seeds_needed is capped here (an observed mean near 0 would need millions).
inline constexpr int kMaxSeedsNeeded = 1000;

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
  kInconclusive,  // not significant after the adjustment: not "equal"
  kNeedsSeeds,    // fewer than 2 paired seeds
};

// VerdictMethod is how a schedule's variance is estimated.
enum class VerdictMethod {
  kModeratedT,  // borrowed across schedules (limma)
  kPairedT,     // each schedule's own
};

// VerdictFamily is the multiplicity correction.
enum class VerdictFamily {
  kBenjaminiHochberg,  // false discovery rate: the default, for screening
  kHolm,               // familywise error rate
};

// VerdictMethodName: "moderated t" or "paired t"; VerdictFamilyName:
// "Benjamini-Hochberg FDR" or "Holm FWER".
const char* VerdictMethodName(VerdictMethod m);
const char* VerdictFamilyName(VerdictFamily f);

struct VerdictOptions {
  VerdictMethod method = VerdictMethod::kModeratedT;
  VerdictFamily family = VerdictFamily::kBenjaminiHochberg;
  double alpha = kVerdictAlpha;  // in (0, 0.5)
  // Adaptive seeds: the seed sequence (pairing order: a schedule's first n
  // seeds are the first n of it that it has) and the planned looks, paired
  // seed counts strictly ascending, the last the maximum. Empty looks: one
  // look at all data.
  std::vector<int64_t> seed_sequence;
  std::vector<int> looks;
  // Schedules a search screened (trained to a rung, ASHA or guided
  // screening), the finalists among them. The finalists were chosen for
  // looking good at the rungs, on the same trials their final losses come
  // from, so the first look's family holds every screened schedule: the
  // ones that stopped at a rung join it with p = 1 (m = max(tested,
  // screened)). 0: a grid, nothing screened.
  int screened_schedules = 0;
};

// LooksForSeeds returns the planned looks of a seeds policy: every count
// from min to max (min >= 2).
std::vector<int> LooksForSeeds(int min, int max);

// SpentAlpha returns alpha_k of look k (0-based) of `looks` (see the top).
double SpentAlpha(double alpha, const std::vector<int>& looks, size_t k);

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
  // its adjusted value (see the top); absent for the baseline and for fewer
  // than 2 paired seeds.
  std::optional<double> p_value;
  std::optional<double> adjusted_p_value;
  // delta_vs_baseline's interval is the 95% t interval with the method's
  // variance and dof; adjusted_delta is the family-adjusted interval that
  // agrees with the verdict (see the top); both have no bounds below 2
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

// LookSummary is one look of the verdicts.
struct LookSummary {
  int seeds = 0;       // paired seeds tested
  double alpha = 0.0;  // alpha_k
  int family = 0;      // schedules tested
  int rejected = 0;    // of them better or worse (first time or again)
};

// VerdictSummary names how the verdicts were reached and counts them.
struct VerdictSummary {
  VerdictMethod method = VerdictMethod::kModeratedT;  // asked for
  VerdictFamily family = VerdictFamily::kBenjaminiHochberg;
  double alpha = kVerdictAlpha;
  // The method used, for people: "moderated t (prior sd 0.0061 on 8.3 dof)",
  // "paired t (fallback: 2 schedules with 2+ paired seeds, 3 needed for a
  // prior)", "paired t".
  std::string method_description;
  bool fell_back = false;  // moderated t asked for, paired t used
  VariancePrior prior;     // fitted when the moderated t was used
  std::vector<LookSummary> looks;
  int better = 0;
  int worse = 0;
  int inconclusive = 0;
  int needs_seeds = 0;
  // Hsu's MCB (see the top), by rank; empty when no schedule has 2 paired
  // seeds. best_set_critical is d.
  std::vector<std::string> best_set;
  double best_set_critical = 0.0;
  int excluded_trials = 0;  // completed with a non-finite final val loss
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

// VerdictName is the verdict's word: "better", "worse", "inconclusive",
// "needs seeds" ("" for kNone).
const char* VerdictName(Verdict v);

}  // namespace prism

#endif  // PRISM_SCHEDULER_RANKING_H_
