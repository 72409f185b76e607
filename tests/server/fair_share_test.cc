#include "server/core/queue/fair_share.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::server {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;

constexpr int64_t kHour = 3600 * 1000;

std::vector<int64_t> Ids(const std::vector<QueueSlot>& order) {
  std::vector<int64_t> ids;
  for (const QueueSlot& s : order) ids.push_back(s.candidate.experiment_id);
  return ids;
}

TEST(DecayedUsageTest, AFreshSpanCountsInFullAndHalvesPerHalfLife) {
  const int64_t now = 100 * kHour;
  // One hour just ended, one hour ended a half-life (10 h) ago, a live
  // attempt 30 minutes old.
  const std::vector<storage::UsageSpan> spans = {
      {"alice", now - kHour, now},
      {"bob", now - 11 * kHour, now - 10 * kHour},
      {"carol", now - kHour / 2, 0}};
  const auto usage = DecayedUsageSeconds(spans, now, 10 * kHour);
  // The integral of 2^-(age/10h) over the last hour: 10h/ln2 (1 - 2^-0.1).
  const double last_hour = 36000 / std::log(2.0) * (1 - std::exp2(-0.1));
  EXPECT_NEAR(usage.at("alice"), last_hour, 1e-6);
  EXPECT_NEAR(usage.at("bob"), last_hour / 2, 1e-6);
  // A live attempt counts up to now.
  EXPECT_NEAR(usage.at("carol"), 36000 / std::log(2.0) * (1 - std::exp2(-0.05)),
              1e-6);
}

TEST(DecayedUsageTest, HorizonDropsWhatNoLongerWeighs) {
  EXPECT_EQ(UsageHorizonMs(100 * kHour, kHour), 70 * kHour);
  EXPECT_EQ(UsageHorizonMs(10 * kHour, kHour), 0);
}

TEST(OrderQueueTest, PriorityThenUsagePerShareThenLiveThenAgeThenId) {
  const std::vector<storage::LeaseCandidate> c = {
      {1, "alice", 0, 100}, {2, "bob", 0, 200},  {3, "carol", 1, 300},
      {4, "alice", 0, 50},  {5, "dave", 0, 200}, {6, "erin", 0, 10}};
  const std::map<std::string, UserStanding> users = {
      // alice used 100 s on share 1; bob 150 s on share 2 (75 per share).
      {"alice", {100, 1, 0, 0}},
      {"bob", {150, 2, 0, 0}},
      // dave and erin used nothing; erin has a trial running.
      {"erin", {0, 1, 1, 0}}};
  EXPECT_THAT(Ids(OrderQueue(c, users)), ElementsAre(3, 5, 6, 2, 4, 1));
}

TEST(OrderQueueTest, OwnersAtTheirRunningQuotaAreMarked) {
  const std::vector<storage::LeaseCandidate> c = {{1, "alice", 9, 100},
                                                  {2, "bob", 0, 200}};
  const std::vector<QueueSlot> order =
      OrderQueue(c, {{"alice", {0, 1, 3, 3}}, {"bob", {0, 1, 3, 4}}});
  ASSERT_EQ(order.size(), 2u);
  EXPECT_TRUE(order[0].at_quota);
  EXPECT_FALSE(order[1].at_quota);
}

TEST(ExplainQueueTest, SaysWhyEachExperimentWaits) {
  const std::vector<storage::LeaseCandidate> c = {
      {1, "alice", 5, 100},  // priority
      {2, "bob", 0, 100},    // least usage
      {3, "alice", 0, 50},   // same owner as 1, more usage than bob
      {4, "carol", 0, 10},   // at quota
      {5, "bob", 0, 300}};   // behind bob's own
  const std::map<std::string, UserStanding> users = {{"alice", {7200, 1, 1, 0}},
                                                     {"bob", {60, 1, 0, 0}},
                                                     {"carol", {0, 1, 2, 2}}};
  const std::vector<QueueSlot> order = OrderQueue(c, users);
  ASSERT_THAT(Ids(order), ElementsAre(1, 4, 2, 5, 3));
  const auto why = ExplainQueue(order, {/*alive=*/2, /*idle=*/0});
  EXPECT_EQ(why.at(1).position, 1);
  EXPECT_THAT(why.at(1).reason, StartsWith("resources:"));
  EXPECT_EQ(why.at(4).position, 2);
  EXPECT_THAT(why.at(4).reason, StartsWith("quota: user 'carol' has 2"));
  EXPECT_THAT(why.at(2).reason, StartsWith("priority: experiment 1"));
  EXPECT_THAT(why.at(5).reason, StartsWith("priority: experiment 1"));
  EXPECT_EQ(why.at(3).position, 5);

  // Without the priority experiment: fair share, then the owner's own.
  const std::vector<QueueSlot> level = OrderQueue({c[1], c[2], c[4]}, users);
  const auto why2 = ExplainQueue(level, {/*alive=*/1, /*idle=*/1});
  EXPECT_THAT(why2.at(2).reason, StartsWith("next:"));
  EXPECT_THAT(why2.at(5).reason, StartsWith("behind the owner's experiment 2"));
  EXPECT_EQ(why2.at(3).reason,
            "fair share: user 'alice' used 2.0h of worker time per share, "
            "'bob' 60s");
  const auto none = ExplainQueue(level, {/*alive=*/0, /*idle=*/0});
  EXPECT_THAT(none.at(2).reason, StartsWith("no workers:"));
}

TEST(ExplainQueueTest, EqualUsageFallsBackToLiveTrialsThenAge) {
  const std::vector<storage::LeaseCandidate> c = {
      {1, "alice", 0, 100}, {2, "bob", 0, 200}, {3, "carol", 0, 300}};
  const auto why = ExplainQueue(OrderQueue(c, {{"alice", {0, 1, 1, 0}}}),
                                {/*alive=*/1, /*idle=*/0});
  EXPECT_EQ(why.at(2).position, 1);
  EXPECT_THAT(why.at(3).reason, StartsWith("age: experiment 2"));
  EXPECT_THAT(why.at(1).reason,
              StartsWith("fair share: user 'alice' has 1 trials running"));
}

}  // namespace
}  // namespace prism::server
