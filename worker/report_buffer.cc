#include "worker/report_buffer.h"

#include <algorithm>
#include <utility>

namespace prism::worker {

ReportBuffer::ReportBuffer(size_t capacity)
    : capacity_(std::max<size_t>(1, capacity)) {}

bool ReportBuffer::Add(v1::LossPoint point) {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](ReportBuffer* b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b->mu_) {
        return b->closed_ || b->points_.size() < b->capacity_;
      },
      this));
  if (closed_) return false;
  points_.push_back(std::move(point));
  return true;
}

std::vector<v1::LossPoint> ReportBuffer::Oldest(size_t max) const {
  absl::MutexLock lock(&mu_);
  const size_t n = std::min(max, points_.size());
  return std::vector<v1::LossPoint>(points_.begin(), points_.begin() + n);
}

void ReportBuffer::Acknowledge(size_t n) {
  absl::MutexLock lock(&mu_);
  n = std::min(n, points_.size());
  points_.erase(points_.begin(), points_.begin() + n);
}

size_t ReportBuffer::size() const {
  absl::MutexLock lock(&mu_);
  return points_.size();
}

size_t ReportBuffer::WaitForBatch(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  struct Args {
    const ReportBuffer* buffer;
    size_t n;
  } args{this, n};
  mu_.AwaitWithTimeout(
      absl::Condition(
          +[](Args* a) ABSL_EXCLUSIVE_LOCKS_REQUIRED(a->buffer->mu_) {
            // Through a->buffer, not a reference to it: the analysis
            // matches the annotation's expression, not aliases of it.
            return a->buffer->closed_ || a->buffer->points_.size() >= a->n ||
                   (a->buffer->drain_waiters_ > 0 &&
                    !a->buffer->points_.empty());
          },
          &args),
      timeout);
  return points_.size();
}

bool ReportBuffer::FlushRequested() const {
  absl::MutexLock lock(&mu_);
  return drain_waiters_ > 0;
}

bool ReportBuffer::WaitDrained(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  ++drain_waiters_;
  mu_.AwaitWithTimeout(
      absl::Condition(
          +[](ReportBuffer* b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b->mu_) {
            return b->closed_ || b->points_.empty();
          },
          this),
      timeout);
  --drain_waiters_;
  return points_.empty();
}

void ReportBuffer::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

bool ReportBuffer::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

}  // namespace prism::worker
