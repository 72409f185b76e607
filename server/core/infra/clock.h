// Clock: where the coordinator gets the time, injected so tests can move it
// (lease expiry without sleeping).
//
//   const Clock* clock = SystemClock();
//   int64_t now = clock->NowMs();      // wall time: records, token expiry
//   int64_t lease = clock->LeaseMs();  // never steps: lease deadlines
//
// Two readings, because an operator's clock can be stepped (by hand, or by
// NTP at boot): lease deadlines, heartbeats, expiry, worker liveness and
// fair-share usage (server/core/queue/queue.h) use LeaseMs, which on the system
// clock is the wall time at process start advanced by the monotonic clock, so a
// step of an hour neither expires every lease at once nor keeps a dead
// worker's lease for an hour. Everything else, token expiry and throttling
// included, is wall time (NowMs): a token's expiry is a date. LeaseMs and
// NowMs differ only after the wall clock was stepped while this process
// ran (the difference is the step); lease timestamps stored then (a lease's
// or attempt's start) are off by it until the next start.
//
// Thread-safety: NowMs may be called from any thread.
#ifndef PRISM_SERVER_CORE_INFRA_CLOCK_H_
#define PRISM_SERVER_CORE_INFRA_CLOCK_H_

#include <cstdint>
#include <functional>
#include <memory>

namespace prism::server {

class Clock {
 public:
  virtual ~Clock() = default;
  // NowMs returns the current Unix time in milliseconds.
  virtual int64_t NowMs() const = 0;
  // LeaseMs returns milliseconds on a clock that never steps, close to Unix
  // time (NowMs unless a clock overrides it).
  virtual int64_t LeaseMs() const { return NowMs(); }
};

// SystemClock returns the process-wide clock: NowMs from the wall clock,
// LeaseMs anchored to it at the first call and advanced by the monotonic
// clock.
const Clock* SystemClock();

// MakeAnchoredClock returns a clock reading `wall_ms` for NowMs and, for
// LeaseMs, wall_ms() at construction plus how far `steady_ms` advanced
// since (SystemClock's rule, with the sources injected for tests).
std::unique_ptr<Clock> MakeAnchoredClock(std::function<int64_t()> wall_ms,
                                         std::function<int64_t()> steady_ms);

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_INFRA_CLOCK_H_
