// ReadGate: a bulkhead for the coordinator's expensive reads (pages of
// schedules and trials, rankings, comparisons, suggestions, trial curves).
// However many callers ask at once, at most `max_concurrent` of these run;
// the rest wait their turn (first come, first served), at most
// `max_waiting` of them, so reporting workers and leases always keep CPU:
// a flood of maximal List pages costs the coordinator at most
// max_concurrent cores, not all of them.
//
//   ReadGate gate(/*max_concurrent=*/1, /*max_waiting=*/256);
//   PRISM_ASSIGN_OR_RETURN(ReadGate::Slot slot, gate.Enter(deadline));
//   ... the read ...                      // the slot is given back here
//
// Thread-safety: all methods are thread-safe.
#ifndef PRISM_SERVER_READ_GATE_H_
#define PRISM_SERVER_READ_GATE_H_

#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace prism::server {

class ReadGate {
 public:
  // Slot is one running read; it gives its place back when destroyed.
  class Slot {
   public:
    Slot(Slot&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    friend class ReadGate;
    explicit Slot(ReadGate* gate) : gate_(gate) {}
    ReadGate* gate_;
  };

  ReadGate(int max_concurrent, int max_waiting);

  // Enter waits for a slot until `deadline`. ResourceExhausted naming
  // --max-waiting-reads when that many reads already wait, or
  // DeadlineExceeded when the deadline passes first.
  absl::StatusOr<Slot> Enter(absl::Time deadline);

  int running() const;
  int waiting() const;

  // DefaultConcurrency is half the machine's cores, at least 1: the other
  // half stays for ingest, leases and the gRPC threads.
  static int DefaultConcurrency();

 private:
  void Leave();

  const int max_concurrent_;
  const int max_waiting_;
  mutable absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<int64_t> line_ ABSL_GUARDED_BY(mu_);  // waiting tickets
};

}  // namespace prism::server

#endif  // PRISM_SERVER_READ_GATE_H_
