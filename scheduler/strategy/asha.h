// ASHA (STRATEGY_ASHA): successive halving over head schedules. Every
// non-baseline schedule first trains to the first rung on each of its seeds;
// at each rung some of them have all their trials promoted to the next rung
// (the whole budget after the last). The baseline always trains the whole
// budget and is never ranked here: it is what the schedules are paired
// against. Which ones go on depends on the mode:
//
// - kSynchronous: a rung's *members* are every schedule (the first rung) or
//   the ones promoted from the rung below. Once the rung below is complete
//   and every member has reached the rung, the max(1, floor(N / eta)) best
//   of its N members go on. Nothing is decided on partial data, so the
//   choice does not depend on the order in which trials arrive.
// - kGuarded: as kSynchronous, but while the rung is incomplete up to
//   floor(Q / 2) of its quota Q = max(1, floor(N / eta)) may go on early
//   (a schedule among the floor(n / eta) best of the n that reached it), so
//   idle workers get work; the rest of the quota is given when the rung is
//   complete, to the best not yet promoted. An early promotion that turns
//   out not to be in the top Q costs a slot, never the best's place unless
//   Q - floor(Q / 2) better schedules went early.
// - kAsynchronous: the published ASHA rule (Li et al. 2018): whenever a
//   schedule is among the floor(n / eta) best of the n that have reached the
//   rung, it goes on. Correct only when schedules arrive in random order:
//   when arrival order correlates with quality it promotes far more than
//   1 / eta (issue #27). Kept for experiments submitted before the modes.
//
// Promotions from a rung with N members: at most max(1, floor(N / eta)) <=
// ceil(N / eta) under kSynchronous and kGuarded (slack 0), whatever the
// arrival order; unbounded (up to N) under kAsynchronous.
//
// Staged seeds: a search may screen on fewer seeds than it finishes on.
// With `first_rung_seeds` (a subset of the experiment's seeds; empty: all),
// a schedule trains only those seeds to the first rung and is scored there
// on them; the experiment's other seeds start (as new trials, planned by the
// caller: AshaDecision::new_seeds) when it goes on from the first rung.
// Under a fixed compute budget a rung's ranking carries more signal from
// one seed trained longer than from several trained shorter: the effect
// grows with training while the noise of a mean falls only as one over the
// root of the seeds (issue #27: bench/RESULTS.md, "Screening on one seed").
//
// A schedule *reaches* rung r when every one of its trials (at the first
// rung: of its first-rung seeds) has a val loss at step r. Its score there is
// the mean over its seeds of the paired delta (its val loss minus the
// baseline's at step r for the same seed) when the baseline has reached r on
// every seed of the rung's schedules, else the mean raw val loss (a rung never
// mixes the two). Ties go to the schedule text, so the same state always gives
// the same decision. A schedule is *promotable* at r when every one of its
// trials waits there (at_rung with target r); one that has reached r but is
// still finishing it is promoted by a later decision.
//
// This is the pure rule: the coordinator reads the trials from storage,
// decides, and applies the promotions in one transaction
// (server/core/experiments/seeds.h), so a decision re-run on the same state
// promotes nothing twice.
//
//   AshaDecision d = DecideAsha(rungs, eta, AshaMode::kSynchronous, trials);
//   for (const AshaPromotion& p : d.promotions) Requeue(p);
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STRATEGY_ASHA_H_
#define PRISM_SCHEDULER_STRATEGY_ASHA_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/records.h"

namespace prism {

inline constexpr int kDefaultAshaEta = 3;

// AshaMode is the promotion rule (see the top).
enum class AshaMode { kAsynchronous, kSynchronous, kGuarded };

// AshaModeName returns "asynchronous", "synchronous" or "guarded".
const char* AshaModeName(AshaMode mode);
// The default first rung, as a share of the budget, and how many rungs the
// default places when every seed trains from the first rung (an experiment
// of fewer than kStagedMinSeeds seeds, or a spec that sets eta or
// screen_seeds but no rungs). A schedule's effect grows with training while its
// noise does not, and the first rung is where every schedule trains (most of
// the cost: N x first rung), so the default spends it late enough for the
// ranking there to carry over, and cuts by eta at each of its three rungs
// (issue #27: bench/RESULTS.md, "After rungs at 30% of the budget"). The
// steps trained are about r1 + (r2 - r1) / eta + (r3 - r2) / eta^2 +
// (steps - r3) / eta^3 of the grid's steps (x steps): 38.8% for 120
// schedules over 200 steps at eta 3. A structure whose ranking turns after
// 30% of the budget (a trap that fades later) is cut at the first rung, as
// it is by any successive halving whose first rung comes before the fade
// (bench/RESULTS.md, "Out of sample").
inline constexpr double kDefaultFirstRungFraction = 0.3;
inline constexpr int kDefaultAshaRungCount = 3;

// The default staged plan, for an experiment of kStagedMinSeeds seeds or
// more whose spec sets none of rungs, eta and screen seeds: every schedule
// trains one seed to kStagedRungFraction of the budget, the best
// 1 / kStagedEta go on to the whole budget on every seed. 38.7% of the
// grid's steps on 3 seeds (1/3 x 0.7 + 1/5 x (1 - 0.7/3)); on 2 seeds it
// would cost 48%, so fewer seeds keep DefaultAshaRungs at eta 3. On the
// known-truth benchmark at the same cost it finds the exact best in 84 and
// 86 of 100 searches where the three-rung plan found 75 and 81, and its late
// rung survives traps that fade up to 70% of the budget (bench/RESULTS.md,
// "Screening on one seed").
inline constexpr double kStagedRungFraction = 0.7;
inline constexpr int kStagedEta = 5;
inline constexpr int kStagedMinSeeds = 3;

// AshaPlan is a STRATEGY_ASHA plan's rungs, eta and screen seeds.
struct AshaPlan {
  std::vector<int64_t> rungs;
  int eta = kDefaultAshaEta;
  int screen_seeds = 0;  // seeds each schedule trains to the first rung
};

// DefaultAshaPlan is the plan of a spec that sets none of rungs, eta and
// screen seeds: with `seeds` >= kStagedMinSeeds, one rung at
// kStagedRungFraction of `steps` (rounded to the nearest multiple of
// eval_every, at least eval_every) at kStagedEta on one screen seed, when
// that rung is below `steps`; else DefaultAshaRungs at kDefaultAshaEta on
// every seed.
AshaPlan DefaultAshaPlan(int64_t steps, int eval_every, int seeds);

// ResolveAshaPlan fills what a spec leaves unset in `asked` (empty rungs, eta
// 0, screen_seeds 0): DefaultAshaPlan when all three are; else eta
// kDefaultAshaEta, DefaultAshaRungs at that eta and every seed. Checks
// nothing (CheckAshaPlan does).
AshaPlan ResolveAshaPlan(const AshaPlan& asked, int64_t steps, int eval_every,
                         int seeds);

// DefaultAshaRungs returns the first rung at kDefaultFirstRungFraction of
// `steps`, then the ones spaced geometrically from it to `steps`:
// r_k = r_1 (steps / r_1)^((k - 1) / count) for k = 1 .. count, each rounded
// to the nearest multiple of eval_every (at least eval_every), duplicates
// dropped, below `steps`, increasing (empty when no multiple of eval_every
// is below steps, or eta < 2, eval_every < 1 or count < 1). E.g. 200 steps,
// evals every 10: 60, 90, 130 (count 3); 60, 110 (count 2, guided
// screening's DefaultScreeningRungs).
std::vector<int64_t> DefaultAshaRungs(int64_t steps, int eta, int eval_every,
                                      int count = kDefaultAshaRungCount);

// CheckAshaPlan returns OK for rungs that are positive, strictly increasing,
// multiples of eval_every and below steps, with eta at least 2 (and at
// least one rung); else InvalidArgument naming the first problem and the
// field (asha.eta, asha.rungs[i]).
absl::Status CheckAshaPlan(const std::vector<int64_t>& rungs, int eta,
                           int64_t steps, int eval_every);

struct AshaRungEntry {
  std::string schedule;
  double score = 0.0;
  int seeds = 0;
  bool promoted = false;  // gone on past the rung, this decision included
};

// AshaRungView is one rung as the decision saw it.
struct AshaRungView {
  int64_t step = 0;
  bool paired = false;
  // How many go on from this rung: kAsynchronous floor(reached / eta) now;
  // kSynchronous and kGuarded max(1, floor(members / eta)), 0 while the
  // rung has no members.
  int quota = 0;
  // Schedules that train to this rung: every schedule at the first rung,
  // the ones promoted from the rung below at the others.
  int members = 0;
  // Members that can never reach the rung: a trial of theirs ended before
  // it (AshaTrial::ended).
  int out = 0;
  // Every member reached the rung or is out, and the rung below is
  // complete.
  bool complete = false;
  std::vector<AshaRungEntry> entries;  // reached; by score, lowest first
  // Promoted returns how many entries went on past the rung.
  int Promoted() const;
};

// AshaNewSeed is a trial to add: a schedule that went on from the first
// rung, on a seed it did not screen on, trained to `to_step`.
struct AshaNewSeed {
  std::string schedule;
  int64_t seed = 0;
  int64_t to_step = 0;  // the second rung; 0: the whole budget
};

struct AshaDecision {
  std::vector<AshaPromotion> promotions;  // lowest rung first, then by score
  std::vector<AshaNewSeed> new_seeds;     // with promotions from rung 1
  std::vector<AshaRungView> rungs;        // every rung, lowest first
};

// DecideAsha decides the promotions due now under `mode` (see the top).
// `rungs` and `eta` are the resolved policy's (CheckAshaPlan holds);
// `trials` is every trial of the experiment. `first_rung_seeds` are the
// seeds schedules screen on at the first rung and `all_seeds` every seed of
// the experiment (both empty: every trial counts at every rung); each
// schedule promoted from the first rung gets a new_seeds entry for each of
// `all_seeds` it has no trial on.
AshaDecision DecideAsha(const std::vector<int64_t>& rungs, int eta,
                        AshaMode mode, const std::vector<AshaTrial>& trials,
                        const std::vector<int64_t>& first_rung_seeds = {},
                        const std::vector<int64_t>& all_seeds = {});

// DescribeAshaDecision is a one-line summary for users, e.g. "asha: promoted
// 2x2,8x6 at 30 to 90; rung 30: 3 of 9 promoted, quota 3 (paired); rung 90:
// 0 of 3 promoted, quota 1 (raw)".
std::string DescribeAshaDecision(const AshaDecision& d);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STRATEGY_ASHA_H_
