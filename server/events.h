// EventBus: fan-out of experiment events (trial updates with their new
// points, experiment updates) to live watchers — the Watch RPC and the
// dashboard's server-sent events.
//
//   int64_t id = bus.Subscribe(7, [](const SharedEvent& e) { ... });
//   bus.Publish(7, std::move(event));   // runs every experiment-7 callback
//   bus.Unsubscribe(id);                // no callback runs after this returns
//
// An event is built and sized once, outside the bus's lock, and shared by
// every subscriber: a callback keeps the shared_ptr, it never copies the
// message (a report's event carries all its points). Callbacks run on the
// publisher's thread under the bus's lock: they must be quick and must not
// call back into the bus. A null event means the bus is shutting down: the
// subscriber should end its stream. Publishers call HasSubscribers first so
// an unwatched experiment costs no event building.
//
// Thread-safety: all methods are thread-safe.
#ifndef PRISM_SERVER_EVENTS_H_
#define PRISM_SERVER_EVENTS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "prism/v1/prism.pb.h"

namespace prism::server {

// SharedEvent is one published event as every subscriber receives it.
struct SharedEvent {
  std::shared_ptr<const v1::ExperimentEvent> event;  // null: shutting down
  int64_t bytes = 0;  // its encoded size, for subscribers' buffer bounds
};

class EventBus {
 public:
  using Callback = std::function<void(const SharedEvent&)>;

  // Subscribe registers `callback` for one experiment's events and returns
  // its id. After Shutdown it calls back with null at once.
  int64_t Subscribe(int64_t experiment_id, Callback callback);
  void Unsubscribe(int64_t subscription_id);
  bool HasSubscribers(int64_t experiment_id) const;
  // Publish sizes `event` and hands it to every subscriber of the
  // experiment.
  void Publish(int64_t experiment_id, v1::ExperimentEvent event);
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

// EventBuffer is one stream's unsent events, bounded in count and in bytes
// so a watcher that does not read cannot make the coordinator hold more.
// An event always fits an empty buffer (a stream can send anything once).
// Not thread-safe: its stream's lock guards it.
class EventBuffer {
 public:
  static constexpr size_t kMaxEvents = 10000;
  explicit EventBuffer(int64_t max_bytes) : max_bytes_(max_bytes) {}
  // Push appends `e` and returns true, or returns false, emptying the
  // buffer, when it would hold more than kMaxEvents or max_bytes: the
  // stream must then be cut off.
  bool Push(const SharedEvent& e);
  // Pop removes and returns the oldest event (null event when empty).
  SharedEvent Pop();
  bool empty() const { return events_.empty(); }
  size_t size() const { return events_.size(); }
  int64_t bytes() const { return bytes_; }
  int64_t max_bytes() const { return max_bytes_; }

 private:
  const int64_t max_bytes_;
  std::deque<SharedEvent> events_;
  int64_t bytes_ = 0;
};

// StreamSlots counts a kind of open stream (Watch, SSE) in total and per
// user, against a limit on each.
//
//   StreamSlots slots(256, "max-watch-streams", 16,
//                     "max-watch-streams-per-user");
//   PRISM_RETURN_IF_ERROR(slots.Acquire("alice"));
//   ...
//   slots.Release("alice");
class StreamSlots {
 public:
  StreamSlots(int max_total, std::string total_flag, int max_per_user,
              std::string per_user_flag);
  // Acquire takes one slot for `user`. ResourceExhausted naming the flag and
  // the count when all slots, or all of the user's, are taken.
  absl::Status Acquire(const std::string& user);
  // Release gives back a slot Acquire took.
  void Release(const std::string& user);
  int open() const;

 private:
  const int max_total_;
  const std::string total_flag_;
  const int max_per_user_;
  const std::string per_user_flag_;
  mutable absl::Mutex mu_;
  int open_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int> per_user_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_EVENTS_H_
