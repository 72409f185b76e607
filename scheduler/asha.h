// ASHA (STRATEGY_ASHA): asynchronous successive halving over head schedules.
// Every non-baseline schedule first trains to the first rung on each of its
// seeds; at each rung, whenever a schedule is among the floor(n / eta) best
// of the n schedules that have reached it and has not gone on yet, all its
// trials are promoted to the next rung (the whole budget after the last).
// The baseline always trains the whole budget and is never ranked here: it
// is what the schedules are paired against.
//
// A schedule *reaches* rung r when every one of its trials has a val loss at
// step r. Its score there is the mean over its seeds of the paired delta
// (its val loss minus the baseline's at step r for the same seed) when the
// baseline has reached r on every seed of the rung's schedules, else the
// mean raw val loss (a rung never mixes the two). Ties go to the schedule
// text, so the same state always gives the same decision. A schedule is
// *promotable* at r when every one of its trials waits there (at_rung with
// target r); one that has reached r but is still finishing it is promoted
// by a later decision.
//
// This is the pure rule: the coordinator reads the trials from storage,
// decides, and applies the promotions in one transaction (server/seeds.h),
// so a decision re-run on the same state promotes nothing twice.
//
//   AshaDecision d = DecideAsha(rungs, eta, trials);
//   for (const AshaPromotion& p : d.promotions) Requeue(p);
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_ASHA_H_
#define PRISM_SCHEDULER_ASHA_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace prism {

inline constexpr int kDefaultAshaEta = 3;
// The most rungs DefaultAshaRungs gives.
inline constexpr int kMaxDefaultAshaRungs = 4;

// DefaultAshaRungs returns steps / eta^k for k = 1, 2, ... rounded down to a
// multiple of eval_every, while at least eval_every, at most
// kMaxDefaultAshaRungs of them, increasing (empty when steps / eta is below
// eval_every).
std::vector<int64_t> DefaultAshaRungs(int64_t steps, int eta, int eval_every);

// CheckAshaPlan returns OK for rungs that are positive, strictly increasing,
// multiples of eval_every and below steps, with eta at least 2 (and at
// least one rung); else InvalidArgument naming the first problem and the
// field (asha.eta, asha.rungs[i]).
absl::Status CheckAshaPlan(const std::vector<int64_t>& rungs, int eta,
                           int64_t steps, int eval_every);

// AshaTrial is one trial of the experiment as the rule sees it.
struct AshaTrial {
  std::string schedule;  // canonical form
  int64_t seed = 0;
  bool is_baseline = false;
  // Waiting at its target step (TRIAL_STOPPED_AT_RUNG): promotable.
  bool at_rung = false;
  int64_t target_steps = 0;  // 0: the whole budget
  // Its stored val loss at each rung step it has reached.
  std::map<int64_t, double> val_loss;
};

// AshaPromotion moves a schedule's trials waiting at from_step on.
struct AshaPromotion {
  std::string schedule;
  int64_t from_step = 0;
  int64_t to_step = 0;  // the next rung; 0: the whole budget
};

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
  int quota = 0;                       // floor(reached / eta)
  std::vector<AshaRungEntry> entries;  // by score, lowest first
};

struct AshaDecision {
  std::vector<AshaPromotion> promotions;  // lowest rung first, then by score
  std::vector<AshaRungView> rungs;        // every rung, lowest first
};

// DecideAsha decides the promotions due now (see the top). `rungs` and
// `eta` are the resolved policy's (CheckAshaPlan holds); `trials` is every
// trial of the experiment.
AshaDecision DecideAsha(const std::vector<int64_t>& rungs, int eta,
                        const std::vector<AshaTrial>& trials);

// DescribeAshaDecision is a one-line summary for users, e.g. "asha: promoted
// 2x2,8x6 at 30 to 90; rung 30: 3 of 9 promoted (paired); rung 90: 0 of 3
// promoted (raw)".
std::string DescribeAshaDecision(const AshaDecision& d);

}  // namespace prism

#endif  // PRISM_SCHEDULER_ASHA_H_
