// The system clock's two readings: NowMs follows the wall clock, steps and
// all; LeaseMs, anchored at construction, follows only the monotonic clock.
#include "server/core/infra/clock.h"

#include <atomic>
#include <memory>

#include "gtest/gtest.h"

namespace prism::server {
namespace {

TEST(AnchoredClockTest, WallStepsMoveNowButNotLeaseTime) {
  std::atomic<int64_t> wall{1'700'000'000'000};
  std::atomic<int64_t> steady{42};
  std::unique_ptr<Clock> clock = MakeAnchoredClock(
      [&] { return wall.load(); }, [&] { return steady.load(); });
  EXPECT_EQ(clock->NowMs(), 1'700'000'000'000);
  EXPECT_EQ(clock->LeaseMs(), 1'700'000'000'000);

  wall += 3'600'000;  // stepped forward an hour
  EXPECT_EQ(clock->NowMs(), 1'700'003'600'000);
  EXPECT_EQ(clock->LeaseMs(), 1'700'000'000'000);

  wall -= 7'200'000;  // and back two
  wall += 5'000;      // while 5 s pass
  steady += 5'000;
  EXPECT_EQ(clock->NowMs(), 1'699'996'405'000);
  EXPECT_EQ(clock->LeaseMs(), 1'700'000'005'000);
}

TEST(AnchoredClockTest, SystemClockStartsCloseToWallTime) {
  const Clock* clock = SystemClock();
  EXPECT_NEAR(static_cast<double>(clock->LeaseMs()),
              static_cast<double>(clock->NowMs()), 1000.0);
  const int64_t before = clock->LeaseMs();
  EXPECT_GE(clock->LeaseMs(), before);
}

}  // namespace
}  // namespace prism::server
