#include "server/queue.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::server {
namespace {

using ::testing::ElementsAre;

std::vector<int64_t> Ids(const std::vector<storage::LeaseCandidate>& c) {
  std::vector<int64_t> ids;
  for (const auto& x : c) ids.push_back(x.experiment_id);
  return ids;
}

TEST(OrderLeaseCandidatesTest, PriorityThenFewerLiveTrialsThenOlderThenId) {
  std::vector<storage::LeaseCandidate> c = {
      {1, "alice", 0, 100}, {2, "bob", 0, 200},  {3, "carol", 1, 300},
      {4, "alice", 0, 50},  {5, "dave", 0, 200},
  };
  const std::map<std::string, int> live = {{"alice", 2}, {"bob", 1}};
  EXPECT_THAT(Ids(OrderLeaseCandidates(c, live, 0)),
              ElementsAre(3, 5, 2, 4, 1));
}

TEST(OrderLeaseCandidatesTest, UsersAtTheLimitAreSkipped) {
  std::vector<storage::LeaseCandidate> c = {{1, "alice", 9, 100},
                                            {2, "bob", 0, 200}};
  const std::map<std::string, int> live = {{"alice", 3}};
  EXPECT_THAT(Ids(OrderLeaseCandidates(c, live, 3)), ElementsAre(2));
  EXPECT_THAT(Ids(OrderLeaseCandidates(c, live, 4)), ElementsAre(1, 2));
  EXPECT_THAT(Ids(OrderLeaseCandidates(c, live, 0)), ElementsAre(1, 2));
}

}  // namespace
}  // namespace prism::server
