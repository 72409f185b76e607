#include "server/core/auth/auth_throttle.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server {
namespace {

using testing::FakeClock;
using ::testing::HasSubstr;

AuthThrottleOptions Options(int max_failures, int64_t window_ms,
                            int max_peers) {
  AuthThrottleOptions o;
  o.max_failures = max_failures;
  o.window_ms = window_ms;
  o.max_peers = max_peers;
  return o;
}

TEST(PeerHostTest, GrpcPeersLoseTheirPortAndHttpAddressesStay) {
  EXPECT_EQ(PeerHost("ipv4:10.0.0.7:51234"), "10.0.0.7");
  EXPECT_EQ(PeerHost("ipv6:[::1]:51234"), "::1");
  EXPECT_EQ(PeerHost("ipv6:[fe80::1%eth0]:5"), "fe80::1%eth0");
  EXPECT_EQ(PeerHost("10.0.0.7"), "10.0.0.7");
  EXPECT_EQ(PeerHost("::1"), "::1");
  EXPECT_EQ(PeerHost("unix:/run/prism.sock"), "unix:/run/prism.sock");
  EXPECT_EQ(PeerHost(""), "");
}

TEST(AuthThrottleTest, APeerIsRefusedAfterMaxFailuresUntilTheWindowEnds) {
  FakeClock clock;
  AuthThrottle throttle(&clock, Options(3, 60'000, 100));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(throttle.Check("10.0.0.7").ok()) << i;
    throttle.RecordFailure("10.0.0.7");
    clock.Advance(1000);
  }
  absl::Status refused = throttle.Check("10.0.0.7");
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("10.0.0.7"));
  EXPECT_THAT(refused.message(), HasSubstr("try again in 57 s"));
  // Other peers are not affected.
  EXPECT_TRUE(throttle.Check("10.0.0.8").ok());
  // The window opened at the first failure: 1 ms before its end the peer is
  // still refused, at its end it may try again with a clean count.
  clock.Advance(60'000 - 3000 - 1);
  EXPECT_TRUE(absl::IsResourceExhausted(throttle.Check("10.0.0.7")));
  clock.Advance(1);
  EXPECT_TRUE(throttle.Check("10.0.0.7").ok());
  throttle.RecordFailure("10.0.0.7");
  EXPECT_TRUE(throttle.Check("10.0.0.7").ok());
}

TEST(AuthThrottleTest, EmptyPeerAndZeroMaxFailuresAreNeverRefused) {
  FakeClock clock;
  AuthThrottle throttle(&clock, Options(1, 60'000, 100));
  throttle.RecordFailure("");
  throttle.RecordFailure("");
  EXPECT_TRUE(throttle.Check("").ok());
  EXPECT_EQ(throttle.tracked_peers(), 0);

  AuthThrottle unlimited(&clock, Options(0, 60'000, 100));
  for (int i = 0; i < 100; ++i) unlimited.RecordFailure("10.0.0.7");
  EXPECT_TRUE(unlimited.Check("10.0.0.7").ok());
  EXPECT_EQ(unlimited.tracked_peers(), 0);
}

TEST(AuthThrottleTest, TrackedPeersStayWithinTheCapOldestWindowGoesFirst) {
  FakeClock clock;
  AuthThrottle throttle(&clock, Options(1, 60'000, 3));
  for (int i = 0; i < 10; ++i) {
    throttle.RecordFailure(absl::StrCat("10.0.0.", i));
    clock.Advance(10);
    EXPECT_LE(throttle.tracked_peers(), 3);
  }
  EXPECT_EQ(throttle.tracked_peers(), 3);
  // The three newest are remembered (and refused), the older forgotten.
  for (int i = 7; i < 10; ++i) {
    EXPECT_TRUE(
        absl::IsResourceExhausted(throttle.Check(absl::StrCat("10.0.0.", i))))
        << i;
  }
  EXPECT_TRUE(throttle.Check("10.0.0.0").ok());
  EXPECT_TRUE(throttle.Check("10.0.0.6").ok());
}

TEST(AuthThrottleTest, AFullMapDropsEveryEndedWindowAndKeepsLiveOnes) {
  FakeClock clock;
  AuthThrottle throttle(&clock, Options(2, 60'000, 3));
  throttle.RecordFailure("old1");  // windows end at +60 s
  throttle.RecordFailure("old2");
  clock.Advance(30'000);
  throttle.RecordFailure("blocked");
  throttle.RecordFailure("blocked");  // refused until +90 s
  clock.Advance(30'000);              // the old windows ended
  throttle.RecordFailure("new");
  // Both ended windows went at once, not just the oldest one.
  EXPECT_EQ(throttle.tracked_peers(), 2);
  EXPECT_TRUE(absl::IsResourceExhausted(throttle.Check("blocked")));
  throttle.RecordFailure("new");
  EXPECT_TRUE(absl::IsResourceExhausted(throttle.Check("new")));
}

}  // namespace
}  // namespace prism::server
