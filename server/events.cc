#include "server/events.h"

#include <utility>

namespace prism::server {

int64_t EventBus::Subscribe(int64_t experiment_id, Callback callback) {
  absl::MutexLock lock(&mu_);
  const int64_t id = next_id_++;
  if (shut_down_) {
    callback(nullptr);
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

void EventBus::Publish(int64_t experiment_id,
                       const v1::ExperimentEvent& event) {
  absl::MutexLock lock(&mu_);
  if (!per_experiment_.contains(experiment_id)) return;
  for (auto& [id, sub] : subscriptions_) {
    if (sub.experiment_id == experiment_id) sub.callback(&event);
  }
}

void EventBus::Shutdown() {
  absl::MutexLock lock(&mu_);
  shut_down_ = true;
  for (auto& [id, sub] : subscriptions_) sub.callback(nullptr);
  subscriptions_.clear();
  per_experiment_.clear();
}

}  // namespace prism::server
