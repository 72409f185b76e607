#include "worker/backoff.h"

#include <algorithm>
#include <cmath>

namespace prism::worker {

Backoff::Backoff(BackoffPolicy policy, uint64_t seed)
    : policy_(policy), random_(seed) {}

absl::Duration Backoff::Next() {
  const double max_seconds = absl::ToDoubleSeconds(policy_.max);
  // Cap the exponent so a long outage cannot overflow the power.
  const double base = std::min(
      max_seconds, absl::ToDoubleSeconds(policy_.initial) *
                       std::pow(policy_.multiplier, std::min(retries_, 64)));
  ++retries_;
  std::uniform_real_distribution<double> factor(1.0 - policy_.jitter,
                                                1.0 + policy_.jitter);
  return absl::Seconds(std::min(max_seconds, base * factor(random_)));
}

}  // namespace prism::worker
