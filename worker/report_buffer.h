// ReportBuffer: the loss points of the running trial that the coordinator has
// not acknowledged yet, oldest first.
//
// The training thread Adds points; the reporting thread sends the Oldest ones
// and Acknowledges them once a Report succeeded, so a point leaves the buffer
// only after the coordinator stored it and an outage loses nothing. The buffer
// is bounded: when it is full, Add waits (the trainer pauses) instead of
// dropping a point. Before a checkpoint the training thread calls
// WaitDrained, which asks the reporter to send at once and waits until every
// earlier point is stored; a run resumed from that checkpoint then never
// leaves a hole in the curve.
//
//   ReportBuffer buffer(/*capacity=*/100000);
//   buffer.Add(point);                                    // trainer
//   buffer.WaitForBatch(256, absl::Seconds(1));           // reporter
//   std::vector<v1::LossPoint> batch = buffer.Oldest(256);
//   if (client->Report(...).ok()) buffer.Acknowledge(batch.size());
//
// Thread-safety: every method is thread-safe.
#ifndef PRISM_WORKER_REPORT_BUFFER_H_
#define PRISM_WORKER_REPORT_BUFFER_H_

#include <cstddef>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prism/v1/prism.pb.h"

namespace prism::worker {

class ReportBuffer {
 public:
  explicit ReportBuffer(size_t capacity);

  // Add appends a point, waiting while the buffer is full. Returns true once
  // added; false (point dropped) when the buffer was closed.
  bool Add(v1::LossPoint point);

  // Oldest returns copies of up to `max` of the oldest points.
  std::vector<v1::LossPoint> Oldest(size_t max) const;

  // Acknowledge removes the `n` oldest points (those a Report stored).
  void Acknowledge(size_t n);

  size_t size() const;
  size_t capacity() const { return capacity_; }

  // WaitForBatch waits until at least `n` points are buffered, a flush was
  // requested (with a point buffered), the buffer was closed, or `timeout`
  // passed. Returns the number of buffered points.
  size_t WaitForBatch(size_t n, absl::Duration timeout) const;

  // FlushRequested is true while a WaitDrained caller waits.
  bool FlushRequested() const;

  // WaitDrained asks for an immediate flush and waits until the buffer is
  // empty. Returns true once empty; false when `timeout` passed, or the
  // buffer was closed, with points still buffered.
  bool WaitDrained(absl::Duration timeout);

  // Close wakes every waiter for good: Add drops its point from now on and
  // the waits return at once. Buffered points stay readable.
  void Close();
  bool closed() const;

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<v1::LossPoint> points_ ABSL_GUARDED_BY(mu_);
  int drain_waiters_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace prism::worker

#endif  // PRISM_WORKER_REPORT_BUFFER_H_
