#include "server/read_gate.h"

#include <algorithm>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace prism::server {

ReadGate::Slot::~Slot() {
  if (gate_ != nullptr) gate_->Leave();
}

ReadGate::ReadGate(int max_concurrent, int max_waiting)
    : max_concurrent_(std::max(1, max_concurrent)),
      max_waiting_(std::max(0, max_waiting)) {}

int ReadGate::DefaultConcurrency() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
}

absl::StatusOr<ReadGate::Slot> ReadGate::Enter(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (line_.empty() && running_ < max_concurrent_) {
    ++running_;
    return Slot(this);
  }
  if (static_cast<int>(line_.size()) >= max_waiting_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the coordinator is busy: ", line_.size(),
        " expensive reads wait; limit --max-waiting-reads=", max_waiting_,
        " (retry later)"));
  }
  // Tickets keep the line first come, first served: absl::Mutex wakes
  // waiters in no particular order.
  const int64_t ticket = next_ticket_++;
  line_.push_back(ticket);
  auto my_turn = [this, ticket]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return line_.front() == ticket && running_ < max_concurrent_;
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&my_turn), deadline)) {
    line_.erase(std::find(line_.begin(), line_.end(), ticket));
    return absl::DeadlineExceededError(absl::StrCat(
        "waited too long for one of --max-concurrent-reads=", max_concurrent_,
        " (", running_, " running, ", line_.size(), " waiting)"));
  }
  line_.pop_front();
  ++running_;
  return Slot(this);
}

void ReadGate::Leave() {
  absl::MutexLock lock(&mu_);
  --running_;
}

int ReadGate::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

int ReadGate::waiting() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(line_.size());
}

}  // namespace prism::server
