// ReadGate: a bulkhead for the coordinator's expensive reads (pages of
// schedules and trials, rankings, comparisons, suggestions, trial curves).
// However many callers ask at once, at most `max_concurrent` of these run,
// each on one of the gate's own threads (its lanes); the rest wait their
// turn (first come, first served), at most `max_waiting` of them. So a
// flood of maximal List pages costs the coordinator at most max_concurrent
// cores, not all of them.
//
// The lanes run at a lower CPU priority (`lower_by` nice steps below the
// thread that made the gate, at most nice 19): when the cores are busy, the
// threads that store reported points, lease and heartbeat go first, and a
// read takes what they leave. Without it a read lane competes with the
// ingest thread as an equal, and readers who never pause push the workers'
// report p99 past 50 ms (bench/RESULTS.md, "Hostile clients: the bench's own
// threads, and reads at a lower priority").
//
//   ReadGate gate(/*max_concurrent=*/1, /*max_waiting=*/256, /*lower_by=*/10);
//   absl::Status s = gate.Run(deadline, [&] { return ReadThePage(&page); });
//
// Thread-safety: all methods are thread-safe.
#ifndef PRISM_SERVER_CORE_INFRA_READ_GATE_H_
#define PRISM_SERVER_CORE_INFRA_READ_GATE_H_

#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace prism::server {

class ReadGate {
 public:
  // lower_by: how many nice steps (0-19) the lanes run below the thread
  // that makes the gate; 0 keeps them equal.
  ReadGate(int max_concurrent, int max_waiting, int lower_by = 0);
  // Destroy it once nothing calls Run any more (the servers that call it
  // have stopped): it joins the lanes.
  ~ReadGate();

  ReadGate(const ReadGate&) = delete;
  ReadGate& operator=(const ReadGate&) = delete;

  // Run runs `fn` on a lane once one is free, waiting in line until
  // `deadline` at most, and returns what fn returned. The caller's thread
  // waits meanwhile, so fn may use anything the caller holds.
  // ResourceExhausted naming --max-waiting-reads when that many reads
  // already wait; DeadlineExceeded when the deadline passes first (fn did
  // not run).
  absl::Status Run(absl::Time deadline, absl::FunctionRef<absl::Status()> fn);

  int running() const;
  int waiting() const;

  // DefaultConcurrency is half the machine's cores, at least 1: the other
  // half stays for ingest, leases and the gRPC threads.
  static int DefaultConcurrency();

 private:
  struct Job {
    explicit Job(absl::FunctionRef<absl::Status()> f) : fn(f) {}
    absl::FunctionRef<absl::Status()> fn;
    bool started = false;
    bool done = false;
    absl::Status result;
  };

  void Lane(int index);

  const int max_concurrent_;
  const int max_waiting_;
  const int lower_by_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Job*> line_ ABSL_GUARDED_BY(mu_);  // waiting, oldest first
  std::vector<std::thread> lanes_;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_INFRA_READ_GATE_H_
