#include "server/core/infra/events.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/impl/codegen/proto_utils.h"

namespace prism::server {

EventBus::EventBus(absl::Duration interval, int max_live_points)
    : interval_(interval),
      max_live_points_(max_live_points),
      dispatcher_([this] { Run(); }) {}

EventBus::~EventBus() { Shutdown(); }

int64_t EventBus::Subscribe(int64_t experiment_id, Callback callback) {
  absl::MutexLock lock(&mu_);
  const int64_t id = next_id_++;
  if (shut_down_) {
    callback(SharedRound{});
    return id;
  }
  auto sub = std::make_shared<Subscription>();
  sub->experiment_id = experiment_id;
  sub->callback = std::move(callback);
  subscriptions_.emplace(id, std::move(sub));
  ++per_experiment_[experiment_id];
  return id;
}

void EventBus::Unsubscribe(int64_t subscription_id) {
  std::shared_ptr<Subscription> sub;
  {
    absl::MutexLock lock(&mu_);
    auto it = subscriptions_.find(subscription_id);
    if (it == subscriptions_.end()) return;
    sub = std::move(it->second);
    auto count = per_experiment_.find(sub->experiment_id);
    if (--count->second == 0) per_experiment_.erase(count);
    subscriptions_.erase(it);
  }
  // The dispatcher may be inside this subscription's callback: wait for it,
  // and make sure it is the last.
  absl::MutexLock lock(&sub->mu);
  sub->alive = false;
}

bool EventBus::HasSubscribers(int64_t experiment_id) const {
  absl::MutexLock lock(&mu_);
  return per_experiment_.contains(experiment_id);
}

void EventBus::Publish(int64_t experiment_id, v1::ExperimentEvent event) {
  const int64_t key =
      event.has_trial_updated() ? event.trial_updated().id() : 0;
  absl::MutexLock lock(&pending_mu_);
  if (stopping_) return;
  Pending& pending = pending_[experiment_id];
  auto [it, fresh] = pending.entries.try_emplace(key);
  Pending::Entry& entry = it->second;
  if (fresh) {
    entry.event = std::move(event);
  } else {
    pending.keys_by_order.erase(entry.order);
    MergeLiveEvent(std::move(event), max_live_points_, &entry.event);
  }
  entry.order = next_order_++;
  pending.keys_by_order.emplace(entry.order, key);
}

bool EventBus::HasRoundOrStopping() const {
  return !pending_.empty() || stopping_;
}

void EventBus::Run() {
  absl::Time last_round = absl::InfinitePast();
  while (true) {
    Round round;
    {
      absl::MutexLock lock(&pending_mu_);
      pending_mu_.Await(absl::Condition(this, &EventBus::HasRoundOrStopping));
      // At most one round per interval: what arrives meanwhile is merged.
      const absl::Time next_round = last_round + interval_;
      pending_mu_.AwaitWithDeadline(absl::Condition(&stopping_), next_round);
      round.swap(pending_);
      if (round.empty() && stopping_) return;
    }
    last_round = absl::Now();
    Deliver(std::move(round));
  }
}

void EventBus::Deliver(Round round) {
  for (auto& [experiment_id, pending] : round) {
    std::vector<std::shared_ptr<Subscription>> subs;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [id, sub] : subscriptions_) {
        if (sub->experiment_id == experiment_id) subs.push_back(sub);
      }
    }
    v1::WatchResponse events;
    for (const auto& [order, key] : pending.keys_by_order) {
      *events.add_events() = std::move(pending.entries[key].event);
    }
    const SharedRound shared = SharedRound::Of(std::move(events));
    for (const std::shared_ptr<Subscription>& sub : subs) {
      absl::MutexLock lock(&sub->mu);
      if (sub->alive) sub->callback(shared);
    }
  }
}

void EventBus::Shutdown() {
  {
    absl::MutexLock lock(&pending_mu_);
    stopping_ = true;
  }
  // The dispatcher delivers what is pending, then returns.
  if (dispatcher_.joinable()) dispatcher_.join();
  // Each subscription stays registered until its owner unsubscribes, so an
  // Unsubscribe racing with (or started from) the closing callback below
  // finds it and waits on sub->mu for that callback to return. (Taking them
  // out here let a Watch stream's OnDone, run by gRPC on another thread as
  // soon as the callback finished the stream, delete the reactor while the
  // callback was still inside it: found by TSan.)
  std::vector<std::shared_ptr<Subscription>> subs;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
    for (const auto& [id, sub] : subscriptions_) subs.push_back(sub);
  }
  for (const std::shared_ptr<Subscription>& sub : subs) {
    absl::MutexLock lock(&sub->mu);
    if (sub->alive) sub->callback(SharedRound{});
  }
}

namespace {

// ThinSplit keeps at most `max_points` of the points of `split`, evenly
// spread from the oldest to the newest (both kept), and returns how many it
// dropped.
int64_t ThinSplit(v1::Split split, int max_points,
                  google::protobuf::RepeatedPtrField<v1::LossPoint>* points) {
  int64_t count = 0;
  for (const v1::LossPoint& p : *points) count += p.split() == split;
  if (count <= max_points) return 0;
  std::vector<bool> keep(count, false);
  if (max_points == 1) {
    keep[count - 1] = true;
  } else {
    for (int64_t j = 0; j < max_points; ++j) {
      keep[(j * (count - 1) + (max_points - 1) / 2) / (max_points - 1)] = true;
    }
  }
  google::protobuf::RepeatedPtrField<v1::LossPoint> kept;
  int64_t index = 0;
  for (v1::LossPoint& p : *points) {
    if (p.split() != split || keep[index++]) *kept.Add() = std::move(p);
  }
  const int64_t dropped = points->size() - kept.size();
  points->Swap(&kept);
  return dropped;
}

}  // namespace

void MergeLiveEvent(v1::ExperimentEvent newer, int max_live_points,
                    v1::ExperimentEvent* pending) {
  pending->set_unix_ms(newer.unix_ms());
  if (newer.has_experiment_updated()) {
    *pending->mutable_experiment_updated() =
        std::move(*newer.mutable_experiment_updated());
    return;
  }
  // A report's event carries a partial trial (with its points); every other
  // trial event carries the whole trial.
  if (newer.points_size() > 0) {
    pending->mutable_trial_updated()->MergeFrom(newer.trial_updated());
  } else {
    *pending->mutable_trial_updated() =
        std::move(*newer.mutable_trial_updated());
  }
  pending->set_points_dropped(pending->points_dropped() +
                              newer.points_dropped());
  auto* points = pending->mutable_points();
  for (v1::LossPoint& p : *newer.mutable_points())
    *points->Add() = std::move(p);
  absl::flat_hash_set<int> splits;
  for (const v1::LossPoint& p : *points) splits.insert(p.split());
  int64_t dropped = 0;
  for (int split : splits) {
    dropped +=
        ThinSplit(static_cast<v1::Split>(split), max_live_points, points);
  }
  pending->set_points_dropped(pending->points_dropped() + dropped);
}

SharedRound SharedRound::Of(v1::WatchResponse events) {
  SharedRound r;
  r.bytes = static_cast<int64_t>(events.ByteSizeLong());
  auto wire = std::make_shared<grpc::ByteBuffer>();
  bool own_buffer = false;
  // Serializing a message the bus built cannot fail but past 2 GiB, which
  // the stream's byte bound refuses long before.
  (void)grpc::SerializationTraits<v1::WatchResponse>::Serialize(
      events, wire.get(), &own_buffer);
  r.wire = std::move(wire);
  r.round = std::make_shared<const v1::WatchResponse>(std::move(events));
  return r;
}

bool EventBuffer::Push(const SharedRound& r) {
  if (!rounds_.empty() &&
      (rounds_.size() >= kMaxRounds || bytes_ + r.bytes > max_bytes_)) {
    rounds_.clear();
    bytes_ = 0;
    return false;
  }
  bytes_ += r.bytes;
  rounds_.push_back(r);
  return true;
}

SharedRound EventBuffer::Pop() {
  if (rounds_.empty()) return SharedRound{};
  SharedRound r = std::move(rounds_.front());
  rounds_.pop_front();
  bytes_ -= r.bytes;
  return r;
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
