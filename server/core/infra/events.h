// EventBus: fan-out of experiment events (trial updates with their new
// points, experiment updates) to live watchers — the Watch RPC and the
// dashboard's server-sent events.
//
//   EventBus bus(absl::Milliseconds(1000), /*max_live_points=*/8);
//   int64_t id = bus.Subscribe(7, [](const SharedEvent& e) { ... });
//   bus.Publish(7, std::move(event));   // merged, delivered by the next round
//   bus.Unsubscribe(id);                // no callback runs after this returns
//
// Publishing never waits for watchers: Publish merges the event into the
// experiment's pending round (O(its points), whatever the number of
// watchers) and returns. A dispatcher thread delivers rounds at most once
// per `interval`, each as one message (v1::WatchResponse): every pending
// trial (and the experiment) as one event with its latest state and the
// points of every update since the last round, thinned to
// `max_live_points` per split (points_dropped counts the rest). So a
// watcher costs one message per round, whatever the ingest rate and the
// number of trials: reporters never pay for watchers. A quiet experiment's
// first update goes out at once; only bursts wait for the next round.
//
// A round is built and sized once and shared by every subscriber: a
// callback keeps the shared_ptr, it never copies the message. Callbacks run
// on the dispatcher thread (one subscription's calls never overlap): they
// must be quick and must not call back into the bus. A null round means the
// bus is shutting down: the subscriber should end its stream. Publishers
// call HasSubscribers first so an unwatched experiment costs nothing.
//
// Thread-safety: all methods are thread-safe.
#ifndef PRISM_SERVER_CORE_INFRA_EVENTS_H_
#define PRISM_SERVER_CORE_INFRA_EVENTS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/support/byte_buffer.h"
#include "prism/v1/prism.pb.h"

namespace prism::server {

// SharedRound is one delivery round of an experiment's events as every
// subscriber receives it: built and sized once, never copied.
struct SharedRound {
  std::shared_ptr<const v1::WatchResponse> round;  // null: shutting down
  // The same, serialized once for every Watch stream (gRPC shares the
  // buffer's slices: a write copies no bytes).
  std::shared_ptr<const grpc::ByteBuffer> wire;
  int64_t bytes = 0;  // its encoded size, for subscribers' buffer bounds

  // Of makes a round of `events`, sized.
  static SharedRound Of(v1::WatchResponse events);
};

class EventBus {
 public:
  using Callback = std::function<void(const SharedRound&)>;

  static constexpr absl::Duration kDefaultInterval = absl::Milliseconds(1000);
  static constexpr int kDefaultMaxLivePoints = 8;

  explicit EventBus(absl::Duration interval = kDefaultInterval,
                    int max_live_points = kDefaultMaxLivePoints);
  ~EventBus();  // Shutdown()

  // Subscribe registers `callback` for one experiment's events and returns
  // its id. After Shutdown it calls back with null at once.
  int64_t Subscribe(int64_t experiment_id, Callback callback);
  // Unsubscribe waits for a callback of this subscription that is running.
  void Unsubscribe(int64_t subscription_id);
  bool HasSubscribers(int64_t experiment_id) const;
  // Publish merges `event` into the experiment's next round.
  void Publish(int64_t experiment_id, v1::ExperimentEvent event);
  // Shutdown delivers the pending round, tells every subscriber (null
  // event) to finish and stops the dispatcher. Idempotent.
  void Shutdown();

 private:
  struct Subscription {
    int64_t experiment_id = 0;
    Callback callback;
    absl::Mutex mu;  // held while `callback` runs
    bool alive ABSL_GUARDED_BY(mu) = true;
  };
  // Pending is one experiment's round: one merged event per trial (key:
  // trial id) and for the experiment itself (key 0), ordered by their
  // latest update.
  struct Pending {
    struct Entry {
      int64_t order = 0;
      v1::ExperimentEvent event;
    };
    absl::flat_hash_map<int64_t, Entry> entries;
    std::map<int64_t, int64_t> keys_by_order;
  };
  using Round = absl::flat_hash_map<int64_t, Pending>;

  void Run();
  void Deliver(Round round);
  bool HasRoundOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pending_mu_);

  const absl::Duration interval_;
  const int max_live_points_;

  mutable absl::Mutex mu_;  // subscriptions; never held while calling back
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int64_t, std::shared_ptr<Subscription>> subscriptions_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, int> per_experiment_ ABSL_GUARDED_BY(mu_);

  absl::Mutex pending_mu_;  // the next round
  Round pending_ ABSL_GUARDED_BY(pending_mu_);
  int64_t next_order_ ABSL_GUARDED_BY(pending_mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(pending_mu_) = false;

  std::thread dispatcher_;
};

// MergeLiveEvent folds `newer` into `pending` (the same trial's, or the
// experiment's, unsent event): the latest state wins (a report's partial
// trial — one with points — updates the fields it sets), points are
// appended and each split thinned to `max_live_points` spread evenly from
// the oldest to the newest (both kept); points_dropped adds up.
void MergeLiveEvent(v1::ExperimentEvent newer, int max_live_points,
                    v1::ExperimentEvent* pending);

// EventBuffer is one stream's unsent rounds, bounded in count and in bytes
// so a watcher that does not read cannot make the coordinator hold more.
// A round always fits an empty buffer (a stream can send anything once).
// Not thread-safe: its stream's lock guards it.
class EventBuffer {
 public:
  static constexpr size_t kMaxRounds = 10000;
  explicit EventBuffer(int64_t max_bytes) : max_bytes_(max_bytes) {}
  // Push appends `r` and returns true, or returns false, emptying the
  // buffer, when it would hold more than kMaxRounds or max_bytes: the
  // stream must then be cut off.
  bool Push(const SharedRound& r);
  // Pop removes and returns the oldest round (null round when empty).
  SharedRound Pop();
  bool empty() const { return rounds_.empty(); }
  size_t size() const { return rounds_.size(); }
  int64_t bytes() const { return bytes_; }
  int64_t max_bytes() const { return max_bytes_; }

 private:
  const int64_t max_bytes_;
  std::deque<SharedRound> rounds_;
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

#endif  // PRISM_SERVER_CORE_INFRA_EVENTS_H_
