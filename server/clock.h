// Clock: where the coordinator gets the time, injected so tests can move it
// (lease expiry without sleeping).
//
//   const Clock* clock = SystemClock();
//   int64_t now = clock->NowMs();
//
// Thread-safety: NowMs may be called from any thread.
#ifndef PRISM_SERVER_CLOCK_H_
#define PRISM_SERVER_CLOCK_H_

#include <cstdint>

namespace prism::server {

class Clock {
 public:
  virtual ~Clock() = default;
  // NowMs returns the current Unix time in milliseconds.
  virtual int64_t NowMs() const = 0;
};

// SystemClock returns the process-wide wall clock.
const Clock* SystemClock();

}  // namespace prism::server

#endif  // PRISM_SERVER_CLOCK_H_
