#include "server/core/infra/finish_signal.h"

#include <utility>

namespace prism::server {

void FinishSignal::Subscribe(std::string name, Listener listener) {
  absl::MutexLock lock(&mu_);
  listeners_.push_back(Entry{std::move(name), std::move(listener)});
}

void FinishSignal::Publish(int64_t experiment_id) const {
  absl::ReaderMutexLock lock(&mu_);
  for (const Entry& entry : listeners_) entry.listener(experiment_id);
}

std::vector<std::string> FinishSignal::Names() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const Entry& entry : listeners_) names.push_back(entry.name);
  return names;
}

}  // namespace prism::server
