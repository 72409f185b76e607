// Known truth: synthetic experiments whose answer is known, to measure the
// verdicts (error rate on nulls, power on planted effects, best-set
// coverage) and the search strategies (exact-best rate, regret, cost) on
// problems they were not tuned on.
//
// Every valid schedule of `space` (principles ignored unless the space
// requires them), the uniform baseline among them, trains on seeds 1..seeds.
// A trial's val loss at step t is
//
//   base(t) + offset[seed] + delta[schedule] * (t / steps)^effect_growth
//           + trap[schedule] * fade(t) + noise_sd[schedule] * e(t)
//
// where base(t) = 3.3 + 2.2 (1 + t / (0.08 steps))^-0.7 is a power-law
// learning curve, offset[seed] ~ N(0, seed_offset_sd) is shared by every
// schedule on that seed (what pairing by seed removes), delta is the true
// final effect against the baseline (negative is better) reached along
// (t / steps)^effect_growth (1: linearly; above 1: late, so an early rung
// sees less of it), fade(t) =
// max(0, 1 - t / (trap_fade * steps))^2 is an early bump that has gone by
// trap_fade of the budget, and e(t) = (u + w_t) / sqrt(2) mixes a per-trial
// N(0, 1) level u with per-eval N(0, 1) jitter w_t, so the final val loss has
// noise sd noise_sd[schedule] around base + offset + delta.
//
// Structures (delta's shape):
//   kNull          every delta 0.
//   kPlanted       planted_fraction of the schedules at -effect, worse_fraction
//                  at +effect, the rest 0; one planted schedule best_gap more.
//   kSmooth        delta linear in the schedule's features (wider first
//                  layers better, each transition costs), scaled to span
//                  [-effect, ...]; the best best_gap ahead of the next.
//   kIsolatedBest  kSmooth, but the best is an unremarkable schedule (the
//                  median of the smooth effect) with a bonus best_gap beyond
//                  the smooth minimum: a surrogate cannot predict it.
//   kFadingTrap    kSmooth plus the trap: a third of the schedules look
//                  trap_strength better early and the best looks
//                  trap_strength worse; both gone by trap_fade of the budget.
//   kNearTies      kSmooth, with the ten best set within noise_sd / 2 of the
//                  best (best_gap / 10 ahead): the exact best is a coin toss,
//                  regret is what counts.
// variance_spread > 0 gives each schedule its own noise sd (log-normal around
// noise_sd); diverged_trials non-baseline trials diverge mid-run.
//
//   KnownTruthSpec spec;                       // 120 schedules, 3 seeds
//   spec.structure = TruthStructure::kPlanted;
//   absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(spec);
//   Ranking r = RankSchedules(spec.space, truth->baseline,
//                             TruthOutcomes(*truth, 3));
//
// Same spec, same truth: the generator draws from one std::mt19937_64 seeded
// with spec.seed, in a fixed order.
//
// A second size (issue #30), to measure transfer (transfer.h):
// GenerateSecondSize maps each schedule of a first truth onto another shape
// (profile.h, the baseline first; schedules that are unmappable or whose
// image an earlier one took are left out) and gives the transferred
// non-baseline schedules true deltas that rearrange their first-size deltas
// so that the Spearman correlation between the two is the chosen one: a
// rearrangement by a Gaussian copula at that correlation, then random swaps
// that bring it within kTransferTolerance (1 and -1 are exact; 0 is the
// rearrangement that carries no ranking over). Its trials are drawn as
// above, from the second spec's seeds, noise and curves.
//
//   TransferTruthSpec second;
//   second.second.space = {128, 8, 16, {}, 2, 4};  // twice as wide
//   second.correlation = 0.0;
//   absl::StatusOr<KnownTruth> large = GenerateSecondSize(*truth, second);
//   large->transferred_from.at("4x4,16x4");  // "2x4,8x4"

//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_SIMULATE_KNOWN_TRUTH_H_
#define PRISM_SCHEDULER_SIMULATE_KNOWN_TRUTH_H_

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/space/space.h"

namespace prism {

enum class TruthStructure {
  kNull,
  kPlanted,
  kSmooth,
  kIsolatedBest,
  kFadingTrap,
  kNearTies,
};

// TruthStructureName is the structure's word: "null", "planted", "smooth",
// "isolated-best", "fading-trap", "near-ties".
const char* TruthStructureName(TruthStructure s);

// ParseTruthStructure is its inverse; InvalidArgument naming the word and the
// choices otherwise.
absl::StatusOr<TruthStructure> ParseTruthStructure(const std::string& word);

struct KnownTruthSpec {
  SpaceSpec space = {64, 8, 8, {}, kDefaultMinRun, kDefaultMaxRun};
  TruthStructure structure = TruthStructure::kPlanted;
  int seeds = 3;
  // Trials on seeds + 1 .. seeds + extra_seeds too (racing's further
  // seeds), drawn from a stream of their own: the first `seeds` are the
  // same whatever this is. They never diverge.
  int extra_seeds = 0;
  int64_t steps = 200;
  int64_t eval_every = 10;
  // false: each curve is its final point only (fast, for the verdicts).
  bool curves = true;
  double noise_sd = 0.006;
  double seed_offset_sd = 0.02;
  // Standard deviation of log(per-schedule noise sd / noise_sd); 0: equal.
  double variance_spread = 0.0;
  double effect = 0.03;  // magnitude of a planted or smooth effect
  double planted_fraction = 0.5;
  double worse_fraction = 0.0;
  double best_gap = 0.01;
  double trap_strength = 0.08;
  double trap_fade = 0.3;      // of the budget
  double effect_growth = 1.0;  // exponent of t / steps; > 0
  int diverged_trials = 0;
  uint64_t seed = 1;
};

// KnownTruthTrial is one (schedule, seed) run.
struct KnownTruthTrial {
  std::string schedule;
  int64_t seed = 0;
  bool is_baseline = false;
  bool diverged = false;
  int64_t diverged_step = 0;
  // Val evals at 0, eval_every, ..., steps (the final point alone when
  // !curves); a diverged run ends at its divergence with a loss of 20.
  std::vector<int64_t> val_steps;
  std::vector<double> val_losses;
};

struct KnownTruth {
  KnownTruthSpec spec;
  std::string baseline;  // the uniform schedule
  // Enumeration order, baseline included (a second size: the baseline
  // first, then the first size's order).
  std::vector<std::string> schedules;
  std::map<std::string, double> true_delta;  // vs the baseline, final
  std::map<std::string, double> noise_sd;    // per schedule
  std::string best;  // lowest true delta; the baseline if nothing beats it
  // Schedule-major, seeds ascending; then the extra seeds' trials.
  std::vector<KnownTruthTrial> trials;
  // A second size only: each schedule's first-size schedule, and the
  // realized rank correlations of the true deltas of the transferred
  // non-baseline schedules with their first-size ones (NaN otherwise).
  std::map<std::string, std::string> transferred_from;
  double true_spearman = std::numeric_limits<double>::quiet_NaN();
  double true_kendall = std::numeric_limits<double>::quiet_NaN();
};

// How near GenerateSecondSize brings the true deltas' Spearman correlation
// to the one asked for.
inline constexpr double kTransferTolerance = 0.005;

struct TransferTruthSpec {
  // The second size: its space (shape and run bounds), seeds, steps, curves,
  // noise and generator seed. Its structure and effect fields are unused:
  // the deltas come from the first size.
  KnownTruthSpec second;
  double correlation = 1.0;  // Spearman, in [-1, 1]
};

// GenerateKnownTruth draws an experiment (see the top). InvalidArgument for an
// invalid space, seeds < 1, steps < 1, eval_every < 1, a negative sd, effect
// or count, fractions outside [0, 1] or summing past 1, or a structure whose
// space has fewer than 2 non-baseline schedules.
absl::StatusOr<KnownTruth> GenerateKnownTruth(const KnownTruthSpec& spec);

// GenerateSecondSize draws the second size of `first` (see the top).
// InvalidArgument for an invalid second spec, a correlation outside
// [-1, 1], or fewer than 3 non-baseline schedules transferred.
absl::StatusOr<KnownTruth> GenerateSecondSize(const KnownTruth& first,
                                              const TransferTruthSpec& spec);

// TruthOutcomes returns the trials on seeds 1..seeds (all when seeds <= 0)
// as RankSchedules takes them, trial ids in order.
std::vector<TrialOutcome> TruthOutcomes(const KnownTruth& truth, int seeds = 0);

// TruthOutcome returns one trial as a TrialOutcome with `trial_id`.
TrialOutcome TruthOutcome(const KnownTruthTrial& trial, int64_t trial_id);

// ValLossAt returns the trial's val loss at `step` (its last eval at or
// before it); NaN before its first eval.
double ValLossAt(const KnownTruthTrial& trial, int64_t step);

}  // namespace prism

#endif  // PRISM_SCHEDULER_SIMULATE_KNOWN_TRUTH_H_
