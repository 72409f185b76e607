// Abseil's debug-mode deadlock detector, off in production binaries.
//
// Debian builds its Abseil without NDEBUG, so by default every absl::Mutex
// acquisition, ours and gRPC's (gRPC 1.51 locks through absl::Mutex), runs
// the detector: a process-wide spinlock, a per-thread record of held locks,
// and a lock-order graph with stack traces. That is a debugging aid, not
// something a coordinator should pay for on every lock.
//
//   int main(...) { prism::ApplyMutexDeadlockDetectionSetting(); ... }
//
// Tests do not call it, so they keep the detector (it aborts on a lock-order
// cycle).
//
// Thread-safety: call at the start of main, before other threads start.
#ifndef PRISM_BASE_MUTEX_MODE_H_
#define PRISM_BASE_MUTEX_MODE_H_

namespace prism {

// ApplyMutexDeadlockDetectionSetting turns the detector off, unless the
// environment has PRISM_MUTEX_DEADLOCK_DETECTION=1: then it is Abseil's
// default, abort on a cycle. Returns whether it is on.
bool ApplyMutexDeadlockDetectionSetting();

}  // namespace prism

#endif  // PRISM_BASE_MUTEX_MODE_H_
