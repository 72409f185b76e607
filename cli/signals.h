// StopSignals: SIGINT, SIGTERM and SIGHUP as events a long-running command
// can wait for (`prism worker`, `prism run`), whichever thread the kernel
// delivers them to. Blocking signals with a mask is not enough here: threads
// that libraries start before main() keep them unblocked, and the default
// action would kill the process mid-cleanup. A handler that writes to a pipe
// is async-signal-safe and works for every thread.
//
//   StopSignals signals;                 // handlers installed
//   while (signals.Wait(absl::Seconds(1)) == 0) Poll();
//   Cleanup();                           // signals.received() says which
//
// Thread-safety: one StopSignals per process; Wait from one thread at a time.
#ifndef PRISM_CLI_SIGNALS_H_
#define PRISM_CLI_SIGNALS_H_

#include "absl/time/time.h"

namespace prism::cli {

class StopSignals {
 public:
  StopSignals();
  // Restores the default actions.
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Wait waits up to `timeout` for a signal not yet returned by Wait. Returns
  // its number, or 0 when none arrived.
  int Wait(absl::Duration timeout);
  // received returns the first signal Wait returned, or 0.
  int received() const { return first_; }

 private:
  int first_ = 0;
};

}  // namespace prism::cli

#endif  // PRISM_CLI_SIGNALS_H_
