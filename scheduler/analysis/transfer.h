// Transfer: does a ranking of schedules found at one model size hold at
// another? Given the per-seed paired deltas (schedule minus baseline on the
// same seed, negative is better) of the same schedules at two sizes, matched
// through the mapping (profile.h), it measures:
//
//   - Spearman's rho and Kendall's tau-b between the two sizes' mean deltas,
//     one point per schedule. Ties get average ranks (Spearman) and tau-b's
//     tie correction, as scipy.stats.spearmanr and kendalltau compute them;
//     either is NaN when one side's means are all equal.
//   - A percentile bootstrap interval for each, over seeds: a replicate
//     draws, independently at each size, as many seeds as that size has,
//     with replacement (the same drawn seeds for every schedule of the size,
//     so the seed effects shared across schedules stay shared), recomputes
//     every schedule's mean delta over its drawn seeds, and the two
//     correlations. The interval is the (1 -/+ confidence) / 2 quantiles of
//     the replicates, linearly interpolated (numpy's default). A replicate
//     where a schedule drew none of its seeds, or a correlation is NaN, is
//     left out and counted. Draws come from one std::mt19937_64 seeded with
//     options.seed, reduced to an index by rejection (no implementation-
//     defined distribution), so a seed gives the same interval everywhere.
//     The schedules are held fixed: the interval is for the rank correlation
//     of these schedules' mean deltas given seed noise, not for a population
//     of schedules. Noise attenuates a correlation toward 0, so the estimate
//     understates a strong transfer; at no transfer it is unbiased.
//   - Whether the small size's best-set (ranking.h, Hsu's MCB) contains the
//     large size's best (the schedule with the lowest mean delta there).
//
//   TransferInput in;
//   in.schedules = {"4x6", "2x3,4x3", "1x2,4x4"};  // labels, matched
//   in.small = *CollectPairedDeltas("tiny", "4x6", in.schedules, tiny_trials);
//   in.large = ...;  // the same schedules mapped to the large size, in order
//   in.small_best_set = tiny_ranking.verdicts.best_set;
//   absl::StatusOr<TransferStatistics> t = MeasureTransfer(in);
//   t->spearman.estimate;  t->spearman.low;  t->best_set_contains_large_best;
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_ANALYSIS_TRANSFER_H_
#define PRISM_SCHEDULER_ANALYSIS_TRANSFER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/analysis/ranking.h"

namespace prism {

inline constexpr int kDefaultBootstrapReplicates = 2000;

// SpearmanRho returns Spearman's rank correlation of x and y (equal sizes,
// >= 2), average ranks for ties; NaN when either is constant.
double SpearmanRho(const std::vector<double>& x, const std::vector<double>& y);

// KendallTauB returns Kendall's tau-b of x and y (equal sizes, >= 2);
// NaN when either is constant. O(n^2).
double KendallTauB(const std::vector<double>& x, const std::vector<double>& y);

// LinearQuantile returns the q-quantile (0 <= q <= 1) of `values` (not
// empty), interpolating linearly between order statistics as numpy.quantile
// does by default.
double LinearQuantile(std::vector<double> values, double q);

// SizeDeltas is one size's paired deltas: deltas[i][k] is schedule i's
// delta on the size's k-th seed, NaN where it has none. Every row has one
// column per seed of the size.
struct SizeDeltas {
  std::string size;  // a label, e.g. "tiny"
  std::vector<std::vector<double>> deltas;
};

// CollectPairedDeltas returns the deltas of `schedules` (canonical texts)
// among `trials` of one experiment, paired with `baseline` by seed as
// RankSchedules pairs them: the columns are the seeds on which the baseline
// completed (ascending), the lowest trial id of a (schedule, seed) stands for
// it, and trials not completed or with a non-finite final val loss are left
// out. InvalidArgument when the baseline completed no seed.
absl::StatusOr<SizeDeltas> CollectPairedDeltas(
    const std::string& size, const std::string& baseline,
    const std::vector<std::string>& schedules,
    const std::vector<TrialOutcome>& trials);

struct TransferInput {
  // The matched schedules, one label each (e.g. the small size's text); row
  // i of both sizes' deltas is schedule i.
  std::vector<std::string> schedules;
  SizeDeltas small;
  SizeDeltas large;
  // The small size's best-set, as labels of `schedules`; empty: not known
  // (best_set_contains_large_best is then absent).
  std::vector<std::string> small_best_set;
};

struct TransferOptions {
  int replicates = kDefaultBootstrapReplicates;  // 100..100000
  double confidence = 0.95;                      // in (0, 1)
  uint64_t seed = 1;
};

// RankCorrelation is an estimate with its bootstrap interval (NaN bounds
// when no replicate was usable).
struct RankCorrelation {
  double estimate = 0.0;
  double low = 0.0;
  double high = 0.0;
};

struct TransferStatistics {
  std::string small_size;
  std::string large_size;
  int schedules = 0;
  int small_seeds = 0;
  int large_seeds = 0;
  std::vector<double> small_means;  // per schedule, over its seeds
  std::vector<double> large_means;
  RankCorrelation spearman;
  RankCorrelation kendall;
  double confidence = 0.0;
  int replicates = 0;           // asked for
  int unusable_replicates = 0;  // left out (see the top)
  std::string large_best;       // lowest large mean (first of ties)
  std::optional<bool> best_set_contains_large_best;
  // The method, for people: "Spearman rho and Kendall tau-b of mean paired
  // deltas; 95% percentile bootstrap over seeds within each size (2000
  // replicates, seed 1)".
  std::string method;
};

// MeasureTransfer computes the statistics (see the top). InvalidArgument for
// fewer than 3 schedules, a size whose rows are not one per schedule or
// differ in length, fewer than 2 seeds at a size, a schedule with no finite
// delta at a size, a best-set label that is not a schedule, or options out
// of range.
absl::StatusOr<TransferStatistics> MeasureTransfer(
    const TransferInput& input, const TransferOptions& options = {});

}  // namespace prism

#endif  // PRISM_SCHEDULER_ANALYSIS_TRANSFER_H_
