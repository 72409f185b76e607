#include "server/events.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace prism::server {

int64_t EventBus::Subscribe(int64_t experiment_id, Callback callback) {
  absl::MutexLock lock(&mu_);
  const int64_t id = next_id_++;
  if (shut_down_) {
    callback(SharedEvent{});
    return id;
  }
  subscriptions_.emplace(id, Subscription{experiment_id, std::move(callback)});
  ++per_experiment_[experiment_id];
  return id;
}

void EventBus::Unsubscribe(int64_t subscription_id) {
  absl::MutexLock lock(&mu_);
  auto it = subscriptions_.find(subscription_id);
  if (it == subscriptions_.end()) return;
  auto count = per_experiment_.find(it->second.experiment_id);
  if (--count->second == 0) per_experiment_.erase(count);
  subscriptions_.erase(it);
}

bool EventBus::HasSubscribers(int64_t experiment_id) const {
  absl::MutexLock lock(&mu_);
  return per_experiment_.contains(experiment_id);
}

void EventBus::Publish(int64_t experiment_id, v1::ExperimentEvent event) {
  SharedEvent shared;
  shared.bytes = static_cast<int64_t>(event.ByteSizeLong());
  shared.event = std::make_shared<const v1::ExperimentEvent>(std::move(event));
  absl::MutexLock lock(&mu_);
  if (!per_experiment_.contains(experiment_id)) return;
  for (auto& [id, sub] : subscriptions_) {
    if (sub.experiment_id == experiment_id) sub.callback(shared);
  }
}

void EventBus::Shutdown() {
  absl::MutexLock lock(&mu_);
  shut_down_ = true;
  for (auto& [id, sub] : subscriptions_) sub.callback(SharedEvent{});
  subscriptions_.clear();
  per_experiment_.clear();
}

bool EventBuffer::Push(const SharedEvent& e) {
  if (!events_.empty() &&
      (events_.size() >= kMaxEvents || bytes_ + e.bytes > max_bytes_)) {
    events_.clear();
    bytes_ = 0;
    return false;
  }
  bytes_ += e.bytes;
  events_.push_back(e);
  return true;
}

SharedEvent EventBuffer::Pop() {
  if (events_.empty()) return SharedEvent{};
  SharedEvent e = std::move(events_.front());
  events_.pop_front();
  bytes_ -= e.bytes;
  return e;
}

StreamSlots::StreamSlots(int max_total, std::string total_flag,
                         int max_per_user, std::string per_user_flag)
    : max_total_(max_total),
      total_flag_(std::move(total_flag)),
      max_per_user_(max_per_user),
      per_user_flag_(std::move(per_user_flag)) {}

absl::Status StreamSlots::Acquire(const std::string& user) {
  absl::MutexLock lock(&mu_);
  if (open_ >= max_total_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("open streams are ", open_, "; limit --", total_flag_, "=",
                     max_total_, " (close one or retry later)"));
  }
  int& mine = per_user_[user];
  if (mine >= max_per_user_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("user '", user, "' has ", mine, " open streams; limit --",
                     per_user_flag_, "=", max_per_user_, " (close one first)"));
  }
  ++mine;
  ++open_;
  return absl::OkStatus();
}

void StreamSlots::Release(const std::string& user) {
  absl::MutexLock lock(&mu_);
  auto it = per_user_.find(user);
  if (it == per_user_.end()) return;
  if (--it->second == 0) per_user_.erase(it);
  --open_;
}

int StreamSlots::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

}  // namespace prism::server
