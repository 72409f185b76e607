#include "worker/report_buffer.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace prism::worker {
namespace {

v1::LossPoint Point(int64_t step) {
  v1::LossPoint p;
  p.set_split(v1::SPLIT_TRAIN);
  p.set_step(step);
  p.set_loss(1.0f / static_cast<float>(step));
  return p;
}

TEST(ReportBufferTest, OldestReturnsPointsInOrderUntilAcknowledged) {
  ReportBuffer buffer(10);
  for (int64_t s = 1; s <= 5; ++s) ASSERT_TRUE(buffer.Add(Point(s)));

  std::vector<v1::LossPoint> first = buffer.Oldest(3);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].step(), 1);
  EXPECT_EQ(first[2].step(), 3);
  EXPECT_EQ(buffer.size(), 5u);  // peeking removes nothing

  buffer.Acknowledge(3);
  std::vector<v1::LossPoint> rest = buffer.Oldest(10);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].step(), 4);
  EXPECT_EQ(rest[1].step(), 5);
}

TEST(ReportBufferTest, AddWaitsWhileFullAndResumesAfterAcknowledge) {
  ReportBuffer buffer(2);
  ASSERT_TRUE(buffer.Add(Point(1)));
  ASSERT_TRUE(buffer.Add(Point(2)));
  std::atomic<bool> added{false};
  std::thread producer([&] { added = buffer.Add(Point(3)); });
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_FALSE(added.load());
  EXPECT_EQ(buffer.size(), 2u);

  buffer.Acknowledge(1);
  producer.join();
  EXPECT_TRUE(added.load());
  std::vector<v1::LossPoint> points = buffer.Oldest(10);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].step(), 3);
}

TEST(ReportBufferTest, CloseUnblocksAWaitingAddAndDropsItsPoint) {
  ReportBuffer buffer(1);
  ASSERT_TRUE(buffer.Add(Point(1)));
  std::atomic<int> result{-1};
  std::thread producer([&] { result = buffer.Add(Point(2)) ? 1 : 0; });
  buffer.Close();
  producer.join();
  EXPECT_EQ(result.load(), 0);
  EXPECT_EQ(buffer.size(), 1u);  // buffered points stay readable
  EXPECT_FALSE(buffer.Add(Point(3)));
}

TEST(ReportBufferTest, WaitDrainedRequestsFlushAndReturnsOnceEmpty) {
  ReportBuffer buffer(10);
  ASSERT_TRUE(buffer.Add(Point(1)));
  ASSERT_TRUE(buffer.Add(Point(2)));
  std::thread reporter([&] {
    // Wakes on the flush request although the batch (100) is not full.
    const size_t n = buffer.WaitForBatch(100, absl::InfiniteDuration());
    EXPECT_TRUE(buffer.FlushRequested());
    buffer.Acknowledge(n);
  });
  EXPECT_TRUE(buffer.WaitDrained(absl::InfiniteDuration()));
  reporter.join();
  EXPECT_FALSE(buffer.FlushRequested());
}

TEST(ReportBufferTest, WaitDrainedGivesUpOnTimeoutOrClose) {
  ReportBuffer buffer(10);
  ASSERT_TRUE(buffer.Add(Point(1)));
  EXPECT_FALSE(buffer.WaitDrained(absl::Milliseconds(5)));
  std::thread closer([&] { buffer.Close(); });
  EXPECT_FALSE(buffer.WaitDrained(absl::InfiniteDuration()));
  closer.join();
}

TEST(ReportBufferTest, WaitForBatchReturnsWhenBatchIsFull) {
  ReportBuffer buffer(10);
  std::thread producer([&] {
    for (int64_t s = 1; s <= 4; ++s) buffer.Add(Point(s));
  });
  EXPECT_GE(buffer.WaitForBatch(4, absl::InfiniteDuration()), 4u);
  producer.join();
}

}  // namespace
}  // namespace prism::worker
