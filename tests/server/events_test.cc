// The EventBus's pacing: events are merged per trial within a round,
// delivered in the order of their latest update, thinned, and shared.
#include "server/core/infra/events.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::server {
namespace {

// Seen collects what one subscriber received.
struct Seen {
  absl::Mutex mu;
  std::vector<v1::ExperimentEvent> events ABSL_GUARDED_BY(mu);
  std::vector<SharedRound> rounds ABSL_GUARDED_BY(mu);
  bool ended ABSL_GUARDED_BY(mu) = false;

  EventBus::Callback Collect() {
    return [this](const SharedRound& r) {
      absl::MutexLock lock(&mu);
      if (r.round == nullptr) {
        ended = true;
      } else {
        rounds.push_back(r);
        for (const v1::ExperimentEvent& e : r.round->events()) {
          events.push_back(e);
        }
      }
    };
  }
  // WaitFor waits (bounded) until `n` events arrived and returns them.
  std::vector<v1::ExperimentEvent> WaitFor(size_t n) {
    absl::MutexLock lock(&mu);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return events.size() >= n;
    };
    mu.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(30));
    return events;
  }
};

v1::ExperimentEvent Report(int64_t trial, int first_step, int points,
                           v1::Split split = v1::SPLIT_TRAIN) {
  v1::ExperimentEvent e;
  e.set_unix_ms(first_step);
  v1::Trial* t = e.mutable_trial_updated();
  t->set_id(trial);
  t->set_state(v1::TRIAL_RUNNING);
  for (int i = 0; i < points; ++i) {
    v1::LossPoint* p = e.add_points();
    p->set_split(split);
    p->set_step(first_step + i);
    p->set_loss(3.0f);
    t->set_last_step(first_step + i);
  }
  return e;
}

v1::ExperimentEvent TrialEvent(int64_t trial, v1::TrialState state,
                               const std::string& schedule) {
  v1::ExperimentEvent e;
  e.mutable_trial_updated()->set_id(trial);
  e.mutable_trial_updated()->set_state(state);
  e.mutable_trial_updated()->set_schedule(schedule);
  return e;
}

v1::ExperimentEvent ExperimentUpdate(v1::ExperimentState state) {
  v1::ExperimentEvent e;
  e.mutable_experiment_updated()->set_id(7);
  e.mutable_experiment_updated()->set_state(state);
  return e;
}

TEST(EventBusTest, SubscribersShareOnePublishedEvent) {
  EventBus bus;
  Seen a, b;
  const int64_t ida = bus.Subscribe(7, a.Collect());
  const int64_t idb = bus.Subscribe(7, b.Collect());
  EXPECT_TRUE(bus.HasSubscribers(7));
  EXPECT_FALSE(bus.HasSubscribers(8));
  bus.Publish(7, Report(1, 1, 3));
  // A quiet bus delivers at once, not after an interval.
  ASSERT_EQ(a.WaitFor(1).size(), 1u);
  ASSERT_EQ(b.WaitFor(1).size(), 1u);
  {
    absl::MutexLock la(&a.mu);
    absl::MutexLock lb(&b.mu);
    ASSERT_EQ(a.rounds.size(), 1u);
    ASSERT_EQ(b.rounds.size(), 1u);
    // One message, shared: never copied per subscriber.
    EXPECT_EQ(a.rounds[0].round.get(), b.rounds[0].round.get());
    EXPECT_EQ(a.events[0].points_size(), 3);
    EXPECT_EQ(a.rounds[0].bytes,
              static_cast<int64_t>(a.rounds[0].round->ByteSizeLong()));
  }
  bus.Unsubscribe(ida);
  bus.Unsubscribe(idb);
  EXPECT_FALSE(bus.HasSubscribers(7));
}

// Within one round (an interval far longer than the test) a trial's
// updates merge: the latest state, every point while under the bound, in
// the order of each key's latest update; Shutdown delivers the round, then
// ends the streams.
TEST(EventBusTest, UpdatesWithinARoundMergeInTheOrderOfTheirLatestUpdate) {
  EventBus bus(absl::Hours(1), /*max_live_points=*/64);
  Seen seen;
  bus.Subscribe(7, seen.Collect());
  bus.Publish(7, ExperimentUpdate(v1::EXPERIMENT_PAUSED));  // round 1, alone
  ASSERT_EQ(seen.WaitFor(1).size(), 1u);
  bus.Publish(7, ExperimentUpdate(v1::EXPERIMENT_ACTIVE));
  bus.Publish(7, TrialEvent(1, v1::TRIAL_LEASED, "2x3,4x3"));
  bus.Publish(7, TrialEvent(2, v1::TRIAL_LEASED, "4x6"));
  bus.Publish(7, Report(1, 1, 10));
  bus.Publish(7, Report(1, 11, 10));
  bus.Publish(7, ExperimentUpdate(v1::EXPERIMENT_DONE));
  bus.Shutdown();
  absl::MutexLock lock(&seen.mu);
  ASSERT_TRUE(seen.ended);
  ASSERT_EQ(seen.events.size(), 4u);
  // Trial 2's latest update is its lease; trial 1's is its second report;
  // the experiment's is its completion, last.
  // Round 1 alone, then the whole burst as one message.
  ASSERT_EQ(seen.rounds.size(), 2u);
  EXPECT_EQ(seen.rounds[1].round->events_size(), 3);
  const v1::ExperimentEvent& two = seen.events[1];
  const v1::ExperimentEvent& one = seen.events[2];
  const v1::ExperimentEvent& done = seen.events[3];
  EXPECT_EQ(two.trial_updated().id(), 2);
  EXPECT_EQ(one.trial_updated().id(), 1);
  // The reports' partial trial updated the lease's whole one.
  EXPECT_EQ(one.trial_updated().state(), v1::TRIAL_RUNNING);
  EXPECT_EQ(one.trial_updated().schedule(), "2x3,4x3");
  EXPECT_EQ(one.trial_updated().last_step(), 20);
  ASSERT_EQ(one.points_size(), 20);
  EXPECT_EQ(one.points(0).step(), 1);
  EXPECT_EQ(one.points(19).step(), 20);
  EXPECT_EQ(one.points_dropped(), 0);
  EXPECT_EQ(done.experiment_updated().state(), v1::EXPERIMENT_DONE);
}

TEST(EventBusTest, ABusyTrialsPointsAreThinnedPerSplitKeepingTheNewest) {
  EventBus bus(absl::Hours(1), /*max_live_points=*/8);
  Seen seen;
  bus.Subscribe(7, seen.Collect());
  bus.Publish(7, ExperimentUpdate(v1::EXPERIMENT_ACTIVE));
  ASSERT_EQ(seen.WaitFor(1).size(), 1u);
  for (int r = 0; r < 10; ++r) bus.Publish(7, Report(1, 1 + 10 * r, 10));
  bus.Publish(7, Report(1, 100, 3, v1::SPLIT_VAL));
  bus.Shutdown();
  absl::MutexLock lock(&seen.mu);
  ASSERT_EQ(seen.events.size(), 2u);
  const v1::ExperimentEvent& e = seen.events[1];
  int train = 0, val = 0, last_train_step = 0, first_train_step = 0;
  for (const v1::LossPoint& p : e.points()) {
    if (p.split() == v1::SPLIT_VAL) {
      ++val;
      continue;
    }
    if (train++ == 0) first_train_step = p.step();
    EXPECT_GT(p.step(), last_train_step);  // oldest first, no repeats
    last_train_step = p.step();
  }
  EXPECT_EQ(train, 8);
  EXPECT_EQ(val, 3);  // under the bound: every val point
  EXPECT_EQ(first_train_step, 1);
  EXPECT_EQ(last_train_step, 100);
  EXPECT_EQ(e.points_dropped(), 100 - 8);
  EXPECT_EQ(e.trial_updated().last_step(), 102);
}

TEST(EventBusTest, ThinningSpreadsTheKeptPointsFromOldestToNewest) {
  v1::ExperimentEvent pending = Report(1, 1, 1);
  MergeLiveEvent(Report(1, 2, 99), /*max_live_points=*/5, &pending);
  ASSERT_EQ(pending.points_size(), 5);
  std::vector<int64_t> steps;
  for (const v1::LossPoint& p : pending.points()) steps.push_back(p.step());
  EXPECT_THAT(steps, ::testing::ElementsAre(1, 26, 51, 75, 100));
  EXPECT_EQ(pending.points_dropped(), 95);
  // A later whole trial (a completion) replaces the state, keeps the points.
  MergeLiveEvent(TrialEvent(1, v1::TRIAL_COMPLETED, "4x6"), 5, &pending);
  EXPECT_EQ(pending.trial_updated().state(), v1::TRIAL_COMPLETED);
  EXPECT_EQ(pending.points_size(), 5);
}

TEST(EventBusTest, NoCallbackRunsAfterUnsubscribeAndLateSubscribersEnd) {
  auto bus = std::make_unique<EventBus>(absl::ZeroDuration(), 64);
  Seen kept;
  bus->Subscribe(7, kept.Collect());
  std::atomic<int> calls{0};
  const int64_t gone =
      bus->Subscribe(7, [&calls](const SharedRound&) { ++calls; });
  bus->Unsubscribe(gone);
  for (int i = 0; i < 100; ++i) bus->Publish(7, Report(i + 1, 1, 1));
  bus->Shutdown();
  EXPECT_EQ(calls.load(), 0);
  {
    absl::MutexLock lock(&kept.mu);
    EXPECT_EQ(kept.events.size(), 100u);  // distinct trials never merge
    int64_t in_rounds = 0;
    for (const SharedRound& r : kept.rounds)
      in_rounds += r.round->events_size();
    EXPECT_EQ(in_rounds, 100);
    EXPECT_TRUE(kept.ended);
  }
  Seen late;
  bus->Subscribe(7, late.Collect());
  absl::MutexLock lock(&late.mu);
  EXPECT_TRUE(late.ended);
}

TEST(EventBusTest, UnsubscribeWaitsForTheClosingCallbackOfShutdown) {
  // A Watch reactor's closing callback finishes its stream; gRPC may then
  // run OnDone (Unsubscribe, then delete) on another thread at once.
  // Unsubscribe must not return while the callback is still running.
  EventBus bus(absl::ZeroDuration(), 8);
  absl::Mutex mu;
  std::vector<std::string> order;
  absl::Notification entered, release;
  const int64_t id = bus.Subscribe(7, [&](const SharedRound& r) {
    if (r.round != nullptr) return;
    entered.Notify();
    release.WaitForNotification();
    absl::MutexLock lock(&mu);
    order.push_back("closing callback returned");
  });
  std::thread shutdown([&bus] { bus.Shutdown(); });
  entered.WaitForNotification();
  std::thread owner([&] {
    bus.Unsubscribe(id);
    absl::MutexLock lock(&mu);
    order.push_back("unsubscribed");
  });
  // Give a wrong Unsubscribe the time to return early; a right one blocks
  // whatever the timing, so this wait cannot make the test fail wrongly.
  absl::SleepFor(absl::Milliseconds(50));
  release.Notify();
  owner.join();
  shutdown.join();
  absl::MutexLock lock(&mu);
  EXPECT_THAT(order, ::testing::ElementsAre("closing callback returned",
                                            "unsubscribed"));
}

}  // namespace
}  // namespace prism::server
