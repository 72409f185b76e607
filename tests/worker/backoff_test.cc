#include "worker/backoff.h"

#include <vector>

#include "gtest/gtest.h"

namespace prism::worker {
namespace {

TEST(BackoffTest, DelaysDoubleUpToTheMaximumWithoutJitter) {
  BackoffPolicy policy;
  policy.initial = absl::Milliseconds(100);
  policy.max = absl::Milliseconds(1000);
  policy.jitter = 0.0;
  Backoff backoff(policy, /*seed=*/1);

  std::vector<absl::Duration> delays;
  for (int i = 0; i < 6; ++i) delays.push_back(backoff.Next());

  EXPECT_EQ(delays, (std::vector<absl::Duration>{
                        absl::Milliseconds(100), absl::Milliseconds(200),
                        absl::Milliseconds(400), absl::Milliseconds(800),
                        absl::Milliseconds(1000), absl::Milliseconds(1000)}));
  EXPECT_EQ(backoff.retries(), 6);
}

TEST(BackoffTest, JitterStaysWithinItsBandAndUnderTheMaximum) {
  BackoffPolicy policy;
  policy.initial = absl::Milliseconds(100);
  policy.max = absl::Seconds(2);
  policy.jitter = 0.25;
  Backoff backoff(policy, /*seed=*/7);
  double base = 0.1;
  for (int i = 0; i < 40; ++i) {
    const double d = absl::ToDoubleSeconds(backoff.Next());
    EXPECT_GE(d, std::min(2.0, base) * 0.75 - 1e-9) << "retry " << i;
    EXPECT_LE(d, 2.0 + 1e-9) << "retry " << i;
    EXPECT_LE(d, base * 1.25 + 1e-9) << "retry " << i;
    base *= 2;
  }
}

TEST(BackoffTest, JitterSpreadsWorkersWithDifferentSeeds) {
  BackoffPolicy policy;
  Backoff a(policy, /*seed=*/1);
  Backoff b(policy, /*seed=*/2);
  Backoff a_again(policy, /*seed=*/1);
  const absl::Duration first_a = a.Next();
  EXPECT_NE(first_a, b.Next());
  EXPECT_EQ(first_a, a_again.Next());
}

TEST(BackoffTest, ResetStartsFromTheInitialDelay) {
  BackoffPolicy policy;
  policy.initial = absl::Milliseconds(50);
  policy.jitter = 0.0;
  Backoff backoff(policy, /*seed=*/3);
  backoff.Next();
  backoff.Next();
  backoff.Reset();
  EXPECT_EQ(backoff.retries(), 0);
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(50));
}

TEST(BackoffTest, LongOutageDoesNotOverflow) {
  BackoffPolicy policy;
  policy.jitter = 0.0;
  Backoff backoff(policy, /*seed=*/4);
  absl::Duration last;
  for (int i = 0; i < 10000; ++i) last = backoff.Next();
  EXPECT_EQ(last, policy.max);
}

}  // namespace
}  // namespace prism::worker
