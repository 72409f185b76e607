// ResultsManager's ranking cache in a real coordinator: completions rebuild
// it in the background (a burst costs one rebuild), a restart warms it, and
// Rank never answers from a ranking older than storage.
#include "server/core/experiments/results.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server::testing {
namespace {

class ResultsTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorTest::SetUp();
    alice_ = Token("alice", v1::ROLE_USER);
    worker_token_ = Token("farm", v1::ROLE_WORKER);
    worker_ = Register(worker_token_);
  }

  // CompleteNext leases the next trial and completes it.
  void CompleteNext() {
    const v1::TrialTask task = Lease(worker_token_, worker_);
    ASSERT_GT(task.trial().id(), 0);
    v1::CompleteResponse done;
    ASSERT_TRUE(Complete(worker_token_, worker_, task.trial(),
                         task.trial().is_baseline() ? 3.0 : 2.9, &done)
                    .ok());
  }

  // SeedsRanked is the number of completed trials the ranking covers.
  int SeedsRanked(int64_t experiment_id) {
    v1::RankRequest req;
    req.set_experiment_id(experiment_id);
    absl::StatusOr<v1::RankResponse> rank = coordinator_->results()->Rank(req);
    EXPECT_TRUE(rank.ok()) << rank.status();
    if (!rank.ok()) return -1;
    int seeds = 0;
    for (const v1::RankedSchedule& s : rank->schedules()) {
      seeds += s.seeds_completed();
    }
    return seeds;
  }

  std::string alice_, worker_token_, worker_;
};

TEST_F(ResultsTest, ACompletionRebuildsTheRankingSoTheNextRankIsWarm) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  CompleteNext();
  CompleteNext();
  ResultsManager* results = coordinator_->results();
  results->WaitIdle();
  const int64_t built = results->builds();
  EXPECT_GE(built, 1);

  EXPECT_EQ(SeedsRanked(id), 2);
  EXPECT_EQ(SeedsRanked(id), 2);
  // Both answers came from the cache the background rebuild left.
  EXPECT_EQ(results->builds(), built);
}

TEST_F(ResultsTest, ABurstOfCompletionsCostsOneRebuild) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  CompleteNext();
  ResultsManager* results = coordinator_->results();
  results->WaitIdle();
  ResultsOptions options;
  options.rebuild_delay = absl::Seconds(2);
  ResultsManager fresh(coordinator_->store(), coordinator_->store(), options);
  for (int i = 0; i < 50; ++i) fresh.TrialCompleted(id);
  fresh.WaitIdle();
  EXPECT_EQ(fresh.builds(), 1);
}

TEST_F(ResultsTest, RankNeverAnswersFromARankingOlderThanStorage) {
  const int64_t id =
      Submit(alice_, Spec({"2x2,4x4", "1x2,4x4", "1x3,4x3"}, {1, 2}));
  // Rank right after each completion, racing the background rebuild it
  // scheduled: the answer always covers every completed trial.
  for (int completed = 1; completed <= 8; ++completed) {
    CompleteNext();
    EXPECT_EQ(SeedsRanked(id), completed);
  }
}

TEST_F(ResultsTest, ARestartWarmsTheRankingsOfRecentExperiments) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  CompleteNext();
  CompleteNext();
  Restart();
  ResultsManager* results = coordinator_->results();
  results->WaitIdle();
  EXPECT_EQ(results->builds(), 1);
  EXPECT_EQ(SeedsRanked(id), 2);
  EXPECT_EQ(results->builds(), 1);
}

}  // namespace
}  // namespace prism::server::testing
