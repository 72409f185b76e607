// Backoff: exponential retry delays with jitter, so a fleet of workers that
// lost the coordinator at the same moment does not reconnect in lockstep.
//
//   Backoff backoff(BackoffPolicy{}, /*seed=*/worker_seed);
//   while (!TrySend().ok()) Sleep(backoff.Next());
//   backoff.Reset();   // after a success
//
// The n-th delay (from 0) is min(max, initial * multiplier^n) scaled by a
// uniform factor in [1 - jitter, 1 + jitter], and never above max.
//
// Thread-safety: not thread-safe; one per retrying loop.
#ifndef PRISM_WORKER_BACKOFF_H_
#define PRISM_WORKER_BACKOFF_H_

#include <cstdint>
#include <random>

#include "absl/time/time.h"
#include "proto/worker_protocol.h"

namespace prism::worker {

struct BackoffPolicy {
  absl::Duration initial = absl::Milliseconds(200);
  // At most the channel's reconnect bound: a worker retrying a lease or a
  // report finds a restarted coordinator within about a second, well inside
  // the grace its lease gets (proto/worker_protocol.h). A failed call on a
  // disconnected channel costs no network traffic, so this is cheap.
  absl::Duration max = absl::Milliseconds(v1::kMaxReconnectBackoffMs);
  double multiplier = 2.0;
  double jitter = 0.2;  // fraction, 0..1
};

class Backoff {
 public:
  Backoff(BackoffPolicy policy, uint64_t seed);

  // Next returns the delay before the next retry and advances the sequence.
  absl::Duration Next();
  // Reset starts the sequence again from the initial delay.
  void Reset() { retries_ = 0; }
  int retries() const { return retries_; }

 private:
  BackoffPolicy policy_;
  std::mt19937_64 random_;
  int retries_ = 0;
};

}  // namespace prism::worker

#endif  // PRISM_WORKER_BACKOFF_H_
