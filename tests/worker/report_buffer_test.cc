#include "worker/report_buffer.h"

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
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

// BlockedProducer runs `add` (a call that should wait) on its own thread.
// WaitUntilAsleep returns true once that thread sleeps inside it, false if
// it returned instead: the thread does nothing else that can sleep, so this
// tells a waiting call from one that returned at once without guessing how
// long "at once" takes.
class BlockedProducer {
 public:
  template <typename F>
  explicit BlockedProducer(F add)
      : thread_([this, add] {
          tid_.store(static_cast<pid_t>(syscall(SYS_gettid)));
          result_.store(add() ? 1 : 0);
        }) {}
  ~BlockedProducer() { Join(); }

  bool WaitUntilAsleep() {
    while (tid_.load() == 0) std::this_thread::yield();
    const std::string stat_path =
        absl::StrCat("/proc/self/task/", tid_.load(), "/stat");
    while (result_.load() < 0) {
      std::ifstream in(stat_path);
      std::string stat;
      std::getline(in, stat);
      // The state letter follows the ") " that ends the command name.
      const size_t name_end = stat.rfind(')');
      if (name_end != std::string::npos && name_end + 2 < stat.size() &&
          stat[name_end + 2] == 'S') {
        return true;
      }
      std::this_thread::yield();
    }
    return false;
  }
  // result is -1 while the call runs, else what it returned (0 or 1).
  int result() const { return result_.load(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<pid_t> tid_{0};
  std::atomic<int> result_{-1};
  std::thread thread_;
};

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
  BlockedProducer producer([&] { return buffer.Add(Point(3)); });
  ASSERT_TRUE(producer.WaitUntilAsleep()) << "Add returned while full";
  EXPECT_EQ(producer.result(), -1);
  EXPECT_EQ(buffer.size(), 2u);

  buffer.Acknowledge(1);
  producer.Join();
  EXPECT_EQ(producer.result(), 1);
  std::vector<v1::LossPoint> points = buffer.Oldest(10);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].step(), 3);
}

TEST(ReportBufferTest, CloseUnblocksAWaitingAddAndDropsItsPoint) {
  ReportBuffer buffer(1);
  ASSERT_TRUE(buffer.Add(Point(1)));
  BlockedProducer producer([&] { return buffer.Add(Point(2)); });
  ASSERT_TRUE(producer.WaitUntilAsleep()) << "Add returned while full";
  buffer.Close();
  producer.Join();
  EXPECT_EQ(producer.result(), 0);
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
