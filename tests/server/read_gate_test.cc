// The read gate: a bounded number of expensive reads run, each on one of the
// gate's lanes at the lanes' priority, the rest wait in line first come
// first served, a full line or a passed deadline refuses.
#include "server/core/infra/read_gate.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::server {
namespace {

using ::testing::HasSubstr;

absl::Time Soon() { return absl::Now() + absl::Seconds(30); }

// WaitUntil polls `done` (bounded); the states it waits on are the gate's.
template <typename Fn>
bool WaitUntil(Fn done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

pid_t ThisThread() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int ThisThreadsNice() {
  return getpriority(PRIO_PROCESS, static_cast<id_t>(ThisThread()));
}

// Blocker is a read that runs until released.
class Blocker {
 public:
  absl::Status operator()() {
    started_.Notify();
    release_.WaitForNotification();
    return absl::OkStatus();
  }
  void WaitStarted() { started_.WaitForNotification(); }
  void Release() { release_.Notify(); }

 private:
  absl::Notification started_, release_;
};

TEST(ReadGateTest, AtMostMaxConcurrentRunAndTheNextStartsWhenOneEnds) {
  ReadGate gate(/*max_concurrent=*/2, /*max_waiting=*/8);
  Blocker a, b;
  std::thread ta([&] { EXPECT_TRUE(gate.Run(Soon(), std::ref(a)).ok()); });
  std::thread tb([&] { EXPECT_TRUE(gate.Run(Soon(), std::ref(b)).ok()); });
  a.WaitStarted();
  b.WaitStarted();
  EXPECT_EQ(gate.running(), 2);
  // A third waits until one ends.
  std::atomic<bool> ran{false};
  std::thread third([&] {
    EXPECT_TRUE(gate.Run(Soon(),
                         [&] {
                           ran = true;
                           return absl::OkStatus();
                         })
                    .ok());
  });
  ASSERT_TRUE(WaitUntil([&] { return gate.waiting() == 1; }));
  EXPECT_FALSE(ran);
  b.Release();
  third.join();
  EXPECT_TRUE(ran);
  EXPECT_EQ(gate.waiting(), 0);
  a.Release();
  ta.join();
  tb.join();
  EXPECT_EQ(gate.running(), 0);
}

TEST(ReadGateTest, RunReturnsWhatTheReadReturnedAndItsEffects) {
  ReadGate gate(1, 8);
  int page = 0;
  EXPECT_TRUE(gate.Run(Soon(),
                       [&] {
                         page = 42;
                         return absl::OkStatus();
                       })
                  .ok());
  EXPECT_EQ(page, 42);
  const absl::Status s =
      gate.Run(Soon(), [] { return absl::NotFoundError("no trial 7"); });
  EXPECT_TRUE(absl::IsNotFound(s));
  EXPECT_EQ(s.message(), "no trial 7");
}

TEST(ReadGateTest, ReadsRunOnTheLanesTheGivenNiceStepsLower) {
  const int callers_nice = ThisThreadsNice();
  ReadGate gate(/*max_concurrent=*/2, /*max_waiting=*/8, /*lower_by=*/5);
  pid_t lane = 0;
  int lane_nice = -100;
  ASSERT_TRUE(gate.Run(Soon(),
                       [&] {
                         lane = ThisThread();
                         lane_nice = ThisThreadsNice();
                         return absl::OkStatus();
                       })
                  .ok());
  EXPECT_NE(lane, ThisThread());
  EXPECT_EQ(lane_nice, std::min(19, callers_nice + 5));
  EXPECT_EQ(ThisThreadsNice(), callers_nice);  // only the lanes are lowered

  ReadGate equal(1, 8, /*lower_by=*/0);
  ASSERT_TRUE(equal
                  .Run(Soon(),
                       [&] {
                         lane_nice = ThisThreadsNice();
                         return absl::OkStatus();
                       })
                  .ok());
  EXPECT_EQ(lane_nice, callers_nice);
}

TEST(ReadGateTest, WaitersAreServedInTheOrderTheyCame) {
  ReadGate gate(1, 8);
  Blocker held;
  std::thread holder(
      [&] { EXPECT_TRUE(gate.Run(Soon(), std::ref(held)).ok()); });
  held.WaitStarted();
  std::vector<int> order;
  std::mutex order_mu;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      EXPECT_TRUE(gate.Run(Soon(),
                           [&] {
                             std::lock_guard<std::mutex> lock(order_mu);
                             order.push_back(i);
                             return absl::OkStatus();
                           })
                      .ok());
    });
    // Each in line before the next arrives.
    ASSERT_TRUE(WaitUntil([&] { return gate.waiting() == i + 1; }));
  }
  held.Release();
  holder.join();
  for (std::thread& t : threads) t.join();
  EXPECT_THAT(order, ::testing::ElementsAre(0, 1, 2, 3));
}

TEST(ReadGateTest, AFullLineIsRefusedAndAPassedDeadlineLeavesTheLine) {
  ReadGate gate(1, /*max_waiting=*/1);
  Blocker held;
  std::thread holder(
      [&] { EXPECT_TRUE(gate.Run(Soon(), std::ref(held)).ok()); });
  held.WaitStarted();
  absl::Notification left;
  std::atomic<bool> late_ran{false};
  std::thread waiter([&] {
    const absl::Status s = gate.Run(absl::Now() + absl::Milliseconds(300), [&] {
      late_ran = true;
      return absl::OkStatus();
    });
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_THAT(s.message(), HasSubstr("--max-concurrent-reads=1"));
    left.Notify();
  });
  ASSERT_TRUE(WaitUntil([&] { return gate.waiting() == 1; }));
  const absl::Status refused =
      gate.Run(Soon(), [] { return absl::OkStatus(); });
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(),
              HasSubstr("1 expensive reads wait; limit --max-waiting-reads=1"));
  left.WaitForNotification();
  waiter.join();
  EXPECT_EQ(gate.waiting(), 0);
  EXPECT_EQ(gate.running(), 1);
  held.Release();
  holder.join();
  EXPECT_FALSE(late_ran);  // a read that gave up never runs
}

}  // namespace
}  // namespace prism::server
