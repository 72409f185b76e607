// Fair share: the order in which the queue hands out trials, and why a
// queued experiment waits. Pure policy over what storage returns, so tests
// drive it with plain data.
//
// Lease order, among ACTIVE experiments with queued trials:
//   1. higher experiment priority first (priority beats fair share);
//   2. the owner with the least recent usage per share first: usage is
//      worker time held by the owner's trials (each attempt from its lease
//      to its end, a live one up to now), every second weighted
//      2^-(age / half-life), as Slurm's decayed usage; the share is the
//      owner's weight (1 unless an admin set it);
//   3. fewer leased + running trials per share (breaks the tie when
//      nobody has usage yet, e.g. at the first leases);
//   4. the older experiment first, then the lower id.
// An owner at a running quota (the user's max_running, or the
// coordinator's --max-running-per-user, the smaller) is passed over.
//
//   std::vector<QueueSlot> order = OrderQueue(candidates, standings);
//   std::map<int64_t, QueueStanding> why = ExplainQueue(order, workers);
//
// Thread-safety: pure functions.
#ifndef PRISM_SERVER_CORE_QUEUE_FAIR_SHARE_H_
#define PRISM_SERVER_CORE_QUEUE_FAIR_SHARE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "storage/queue_store.h"

namespace prism::server {

// kDefaultFairShareHalfLifeMs is one day, as Slurm's PriorityDecayHalfLife.
inline constexpr int64_t kDefaultFairShareHalfLifeMs =
    int64_t{24} * 3600 * 1000;

// UsageHorizonMs returns the time before which an ended attempt weighs less
// than 2^-30 of a fresh one: older attempts are not read.
int64_t UsageHorizonMs(int64_t now_ms, int64_t half_life_ms);

// DecayedUsageSeconds returns each owner's decayed worker-seconds at now_ms.
std::map<std::string, double> DecayedUsageSeconds(
    const std::vector<storage::UsageSpan>& spans, int64_t now_ms,
    int64_t half_life_ms);

// UserStanding is what the order needs to know about one owner.
struct UserStanding {
  double usage_seconds = 0;  // decayed
  double share = 1;
  int live = 0;         // leased + running trials
  int max_running = 0;  // the effective running quota; 0: none
};

// QueueSlot is one candidate experiment in lease order.
struct QueueSlot {
  storage::LeaseCandidate candidate;
  double usage_per_share = 0;  // decayed worker-seconds / share
  double share = 1;
  int live = 0;
  int max_running = 0;
  bool at_quota = false;  // the owner is at max_running: not leased now
};

// OrderQueue returns every candidate in lease order (above); an owner
// missing from `users` stands at zero usage with share 1.
std::vector<QueueSlot> OrderQueue(
    const std::vector<storage::LeaseCandidate>& candidates,
    const std::map<std::string, UserStanding>& users);

// WorkerCounts are the workers that could take a trial.
struct WorkerCounts {
  int alive = 0;  // idle or busy (not lost, not stopped)
  int idle = 0;
};

// QueueStanding is where a queued experiment stands: its 1-based position
// in lease order and why it is not running (Slurm's Reason column), a
// keyword then the detail: "priority: ...", "fair share: ...",
// "quota: ...", "resources: ...", "no workers: ...", "next: ...".
struct QueueStanding {
  int position = 0;
  std::string reason;
};

// ExplainQueue returns the standing of every slot of `order`, by experiment.
std::map<int64_t, QueueStanding> ExplainQueue(
    const std::vector<QueueSlot>& order, const WorkerCounts& workers);

// FormatWorkerTime renders seconds of worker time: "40s", "12.5m", "3.2h".
std::string FormatWorkerTime(double seconds);

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_QUEUE_FAIR_SHARE_H_
