// Verdicts: each schedule's standing against the uniform baseline from its
// final val losses paired by seed, with the method and family named in the
// summary (VerdictOptions, VerdictSummary). RankSchedules
// (scheduler/analysis/ranking.h) gathers each schedule's paired data and
// copies the verdicts into its rows; this is the statistics alone. The
// method:
//
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
//
//   std::vector<VerdictInput> rows = ...;  // the baseline's row included
//   Verdicts v = DecideVerdicts(rows, options);
//   if (v.rows[i].verdict == Verdict::kBetter) ...
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STATS_VERDICTS_H_
#define PRISM_SCHEDULER_STATS_VERDICTS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/stats/statistics.h"

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
  // seeds. best_set_critical is d. best_set and excluded_trials are the
  // ranking's to fill (RankSchedules): DecideVerdicts marks the set's rows
  // (RowVerdict::in_best_set) and sees no excluded trial.
  std::vector<std::string> best_set;
  double best_set_critical = 0.0;
  int excluded_trials = 0;  // completed with a non-finite final val loss
};

// VerdictInput is one schedule's data for the verdicts (the baseline's row
// too), seeds in the order of VerdictOptions::seed_sequence (seeds not in it
// after, ascending), one completed trial standing for each seed.
struct VerdictInput {
  bool is_baseline = false;
  // Per seed shared with the baseline: the paired delta (this row's final
  // val loss minus the baseline's), the seed, and this row's own loss.
  std::vector<double> deltas;
  std::vector<int64_t> paired_seeds;
  std::vector<double> paired_losses;
  // (seed, final val loss) of every completed seed, paired or not: they fit
  // the seed effects of the moderated t.
  std::vector<std::pair<int64_t, double>> losses;
};

// RowVerdict is a row's verdict and the numbers that go with it (the fields
// of RankedRow of the same names, documented there).
struct RowVerdict {
  Verdict verdict = Verdict::kNone;
  std::optional<double> p_value;
  std::optional<double> adjusted_p_value;
  Interval adjusted_delta;
  double adjusted_confidence = 0.0;
  double delta_sd = 0.0;
  double dof = 0.0;
  int seeds_needed = 0;
  int decided_at_seeds = 0;
  bool in_best_set = false;
  // A tested row's paired delta interval over all its seeds, at 95% with the
  // method's variance and dof; absent for the baseline and for a row with
  // fewer than 2 paired seeds (the caller's plain interval stands).
  std::optional<Interval> delta_vs_baseline;
};

// Verdicts is DecideVerdicts' answer.
struct Verdicts {
  std::vector<RowVerdict> rows;  // one per input row, in its order
  VerdictSummary summary;
  // Rows in the family: non-baseline, at least 2 paired seeds.
  int compared = 0;
};

// DecideVerdicts tests every non-baseline row with >= 2 paired seeds at every
// look (see the top), adjusts each look's family, and marks the best-set
// among them and the baseline. Pure function of its inputs.
Verdicts DecideVerdicts(const std::vector<VerdictInput>& rows,
                        const VerdictOptions& options);

// VerdictName is the verdict's word: "better", "worse", "inconclusive",
// "needs seeds" ("" for kNone).
const char* VerdictName(Verdict v);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STATS_VERDICTS_H_
