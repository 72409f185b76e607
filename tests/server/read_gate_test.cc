// The read gate: a bounded number of expensive reads run, the rest wait in
// line first come first served, a full line or a passed deadline refuses.
#include "server/read_gate.h"

#include <atomic>
#include <mutex>
#include <optional>
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

TEST(ReadGateTest, AtMostMaxConcurrentRunAndASlotIsGivenBackWhenDestroyed) {
  ReadGate gate(/*max_concurrent=*/2, /*max_waiting=*/8);
  std::vector<ReadGate::Slot> slots;
  slots.push_back(*gate.Enter(Soon()));
  slots.push_back(*gate.Enter(Soon()));
  EXPECT_EQ(gate.running(), 2);
  // A third waits until one is given back.
  std::atomic<bool> entered{false};
  std::thread third([&] {
    absl::StatusOr<ReadGate::Slot> s = gate.Enter(Soon());
    ASSERT_TRUE(s.ok()) << s.status();
    entered = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return gate.waiting() == 1; }));
  EXPECT_FALSE(entered);
  slots.pop_back();
  third.join();
  EXPECT_TRUE(entered);
  EXPECT_EQ(gate.waiting(), 0);
  slots.clear();
  EXPECT_EQ(gate.running(), 0);
}

TEST(ReadGateTest, WaitersAreServedInTheOrderTheyCame) {
  ReadGate gate(1, 8);
  std::optional<ReadGate::Slot> held(*gate.Enter(Soon()));
  std::vector<int> order;
  std::mutex order_mu;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<ReadGate::Slot> s = gate.Enter(Soon());
      ASSERT_TRUE(s.ok());
      std::lock_guard<std::mutex> lock(order_mu);
      order.push_back(i);
    });
    // Each in line before the next arrives.
    ASSERT_TRUE(WaitUntil([&] { return gate.waiting() == i + 1; }));
  }
  held.reset();
  for (std::thread& t : threads) t.join();
  EXPECT_THAT(order, ::testing::ElementsAre(0, 1, 2, 3));
}

TEST(ReadGateTest, AFullLineIsRefusedAndAPassedDeadlineLeavesTheLine) {
  ReadGate gate(1, /*max_waiting=*/1);
  ReadGate::Slot held = *gate.Enter(Soon());
  absl::Notification leave;
  std::thread waiter([&] {
    absl::StatusOr<ReadGate::Slot> s =
        gate.Enter(absl::Now() + absl::Milliseconds(300));
    EXPECT_EQ(s.status().code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_THAT(s.status().message(), HasSubstr("--max-concurrent-reads=1"));
    leave.Notify();
  });
  ASSERT_TRUE(WaitUntil([&] { return gate.waiting() == 1; }));
  absl::StatusOr<ReadGate::Slot> refused = gate.Enter(Soon());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("1 expensive reads wait; limit --max-waiting-reads=1"));
  leave.WaitForNotification();
  waiter.join();
  EXPECT_EQ(gate.waiting(), 0);
  EXPECT_EQ(gate.running(), 1);
}

}  // namespace
}  // namespace prism::server
