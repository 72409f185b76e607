// EventBus: fan-out of experiment events (trial updates with their new
// points, experiment updates) to live watchers — the Watch RPC and the
// dashboard's server-sent events.
//
//   int64_t id = bus.Subscribe(7, [](const v1::ExperimentEvent* e) { ... });
//   bus.Publish(7, event);   // runs every experiment-7 callback
//   bus.Unsubscribe(id);     // no callback runs after this returns
//
// Callbacks run on the publisher's thread under the bus's lock: they must be
// quick and must not call back into the bus. A null event means the bus is
// shutting down: the subscriber should end its stream. Publishers call
// HasSubscribers first so an unwatched experiment costs no event building.
//
// Thread-safety: all methods are thread-safe.
#ifndef PRISM_SERVER_EVENTS_H_
#define PRISM_SERVER_EVENTS_H_

#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "prism/v1/prism.pb.h"

namespace prism::server {

class EventBus {
 public:
  using Callback = std::function<void(const v1::ExperimentEvent*)>;

  // Subscribe registers `callback` for one experiment's events and returns
  // its id. After Shutdown it calls back with null at once.
  int64_t Subscribe(int64_t experiment_id, Callback callback);
  void Unsubscribe(int64_t subscription_id);
  bool HasSubscribers(int64_t experiment_id) const;
  void Publish(int64_t experiment_id, const v1::ExperimentEvent& event);
  // Shutdown tells every subscriber (null event) to finish.
  void Shutdown();

 private:
  struct Subscription {
    int64_t experiment_id;
    Callback callback;
  };
  mutable absl::Mutex mu_;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int64_t, Subscription> subscriptions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, int> per_experiment_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_EVENTS_H_
