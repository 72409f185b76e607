// The finish signal: every listener hears each published experiment id, in
// the order the listeners subscribed, from any number of publishing threads.
#include "server/core/infra/finish_signal.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::server {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(FinishSignalTest, ListenersRunInSubscriptionOrder) {
  FinishSignal signal;
  std::vector<std::string> heard;
  for (const char* name : {"results", "seeds", "ladder"}) {
    signal.Subscribe(name, [&heard, name](int64_t experiment_id) {
      heard.push_back(absl::StrCat(name, ":", experiment_id));
    });
  }
  signal.Publish(7);
  signal.Publish(9);
  EXPECT_THAT(heard, ElementsAre("results:7", "seeds:7", "ladder:7",
                                 "results:9", "seeds:9", "ladder:9"));
  EXPECT_THAT(signal.Names(), ElementsAre("results", "seeds", "ladder"));
}

TEST(FinishSignalTest, PublishingWithoutListenersDoesNothing) {
  FinishSignal signal;
  signal.Publish(3);
  EXPECT_THAT(signal.Names(), IsEmpty());
}

TEST(FinishSignalTest, ConcurrentPublishersAreEachHeardOnce) {
  FinishSignal signal;
  std::atomic<int64_t> sum{0};
  std::atomic<int> calls{0};
  signal.Subscribe("sum", [&](int64_t experiment_id) {
    sum += experiment_id;
    ++calls;
  });
  std::vector<std::thread> publishers;
  for (int t = 0; t < 4; ++t) {
    publishers.emplace_back([&signal, t] {
      for (int i = 1; i <= 1000; ++i) signal.Publish(t * 1000 + i);
    });
  }
  for (std::thread& p : publishers) p.join();
  EXPECT_EQ(calls.load(), 4000);
  // The sum of 1..4000.
  EXPECT_EQ(sum.load(), int64_t{4000} * 4001 / 2);
}

}  // namespace
}  // namespace prism::server
