// Reads through the services: Rank, GetTrial and Compare, trial pages,
// the Watch stream and the ScheduleService.
// A real coordinator (SQLite file, gRPC on loopback, fake clock)
// driven through the generated stubs (service_fixture.h).
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/service_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(ServiceTest, RankCountsDivergedSeedsOutsideTheVerdict) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1, 2}));
  const std::string worker = Register(worker_token_);
  for (int i = 0; i < 4; ++i) {
    v1::TrialTask task = Lease(worker_token_, worker);
    ASSERT_NE(task.trial().id(), 0) << "lease " << i;
    const bool diverge =
        !task.trial().is_baseline() && task.trial().seed() == 2;
    v1::CompleteResponse done;
    if (diverge) {
      v1::CompleteRequest req;
      req.set_worker_id(worker);
      req.set_trial_id(task.trial().id());
      req.set_attempt(task.trial().attempt());
      req.mutable_metrics()->set_diverged(true);
      auto ctx = Ctx(worker_token_);
      ASSERT_TRUE(workers_->Complete(ctx.get(), req, &done).ok());
      EXPECT_EQ(done.trial().state(), v1::TRIAL_DIVERGED);
    } else {
      ASSERT_TRUE(Complete(worker_token_, worker, task.trial(),
                           task.trial().is_baseline() ? 3.0 : 2.9, &done)
                      .ok());
    }
  }
  v1::RankRequest req;
  req.set_experiment_id(id);
  v1::RankResponse rank;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx.get(), req, &rank).ok());
  ASSERT_EQ(rank.schedules_size(), 2);
  // One paired seed left: no interval, no test, needs seeds, ranked last.
  const v1::RankedSchedule& s = rank.schedules(1);
  EXPECT_EQ(s.schedule(), "2x2,4x4");
  EXPECT_EQ(s.verdict(), v1::VERDICT_NEEDS_SEEDS);
  EXPECT_EQ(s.seeds_completed(), 1);
  EXPECT_EQ(s.seeds_diverged(), 1);
  EXPECT_EQ(s.seeds_failed(), 0);
  EXPECT_EQ(s.paired_seeds(), 1);
  EXPECT_TRUE(s.diverged());
  EXPECT_NEAR(s.delta_vs_baseline().mean(), -0.1, 1e-6);
  EXPECT_EQ(s.delta_vs_baseline().n(), 1);
  EXPECT_FALSE(s.delta_vs_baseline().has_low());
  EXPECT_FALSE(s.delta_vs_baseline().has_high());
  EXPECT_FALSE(s.final_val_loss().has_low());
  EXPECT_FALSE(s.has_p_value());
  EXPECT_FALSE(s.has_adjusted_p_value());
  EXPECT_EQ(rank.compared_schedules(), 0);
  EXPECT_EQ(rank.schedules(0).schedule(), "4x6");
  EXPECT_TRUE(rank.schedules(0).final_val_loss().has_low());
}

TEST_F(ServiceTest, RankFiltersSortsAndPages) {
  const int64_t id =
      Submit(alice_, Spec({"2x2,4x4", "1x2,4x4", "1x1,4x5"}, {1}));
  const std::string worker = Register(worker_token_);
  const std::map<std::string, double> loss = {
      {"4x6", 3.0}, {"2x2,4x4", 2.9}, {"1x2,4x4", 3.1}, {"1x1,4x5", 2.95}};
  for (int i = 0; i < 4; ++i) {
    v1::TrialTask task = Lease(worker_token_, worker);
    v1::CompleteResponse done;
    ASSERT_TRUE(Complete(worker_token_, worker, task.trial(),
                         loss.at(task.trial().schedule()), &done)
                    .ok());
  }
  v1::RankRequest req;
  req.set_experiment_id(id);
  req.set_page_size(2);
  req.set_sort(v1::RANK_SORT_VAL_LOSS);
  req.set_descending(true);
  v1::RankResponse page1;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx.get(), req, &page1).ok());
  ASSERT_EQ(page1.schedules_size(), 2);
  EXPECT_EQ(page1.schedules(0).schedule(), "1x2,4x4");
  EXPECT_EQ(page1.total(), 4);
  ASSERT_FALSE(page1.next_page_token().empty());
  req.set_page_token(page1.next_page_token());
  v1::RankResponse page2;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx2.get(), req, &page2).ok());
  ASSERT_EQ(page2.schedules_size(), 2);
  EXPECT_EQ(page2.schedules(1).schedule(), "2x2,4x4");
  EXPECT_TRUE(page2.next_page_token().empty());

  // "1x1,4x5" has a single-layer run: not smooth.
  v1::RankRequest smooth;
  smooth.set_experiment_id(id);
  smooth.add_require(v1::PRINCIPLE_SMOOTH);
  v1::RankResponse filtered;
  auto ctx3 = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx3.get(), smooth, &filtered).ok());
  EXPECT_EQ(filtered.total(), 3);
  for (const v1::RankedSchedule& r : filtered.schedules()) {
    EXPECT_NE(r.schedule(), "1x1,4x5");
  }

  v1::RankRequest bad = req;
  bad.set_page_token("garbage");
  v1::RankResponse ignored;
  auto ctx4 = Ctx(viewer_);
  EXPECT_EQ(results_->Rank(ctx4.get(), bad, &ignored).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServiceTest, GetTrialIncludesSameSeedBaselineAndCompareIsPaired) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {7}));
  const std::string worker = Register(worker_token_);
  int64_t prism_trial = 0;
  for (int i = 0; i < 2; ++i) {
    v1::TrialTask task = Lease(worker_token_, worker);
    const bool is_baseline = task.trial().is_baseline();
    if (!is_baseline) prism_trial = task.trial().id();
    v1::CompleteResponse done;
    ASSERT_TRUE(Complete(worker_token_, worker, task.trial(),
                         is_baseline ? 3.0 : 2.8, &done)
                    .ok());
  }
  v1::GetTrialRequest req;
  req.set_trial_id(prism_trial);
  req.set_with_baseline(true);
  v1::GetTrialResponse resp;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->GetTrial(ctx.get(), req, &resp).ok());
  EXPECT_EQ(resp.trial().schedule(), "2x2,4x4");
  EXPECT_EQ(resp.points_size(), 2);
  EXPECT_TRUE(resp.baseline().is_baseline());
  EXPECT_EQ(resp.baseline().seed(), 7);
  EXPECT_EQ(resp.baseline_points_size(), 2);
  ASSERT_EQ(resp.trial().attempts_size(), 1);
  EXPECT_TRUE(resp.trial().principles().smooth());

  v1::CompareRequest cmp;
  cmp.set_experiment_id(id);
  cmp.set_schedule_a("4x6");
  cmp.set_schedule_b("2x2,4x4");
  v1::CompareResponse compared;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(results_->Compare(ctx2.get(), cmp, &compared).ok());
  EXPECT_NEAR(compared.delta().mean(), -0.2, 1e-6);
  EXPECT_EQ(compared.delta().n(), 1);
  EXPECT_FALSE(compared.delta().has_low());
  EXPECT_EQ(compared.verdict(), v1::VERDICT_NEEDS_SEEDS);
  EXPECT_FALSE(compared.has_p_value());
  cmp.set_schedule_b("1x2,4x4");
  auto ctx3 = Ctx(viewer_);
  EXPECT_EQ(results_->Compare(ctx3.get(), cmp, &compared).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, ListTrialsPagesWithTotals) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4", "1x2,4x4"}, {1, 2}));
  v1::ListTrialsRequest req;
  req.set_experiment_id(id);
  req.set_page_size(4);
  v1::ListTrialsResponse page;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(experiments_->ListTrials(ctx.get(), req, &page).ok());
  EXPECT_EQ(page.trials_size(), 4);
  EXPECT_EQ(page.total(), 6);
  EXPECT_TRUE(page.trials(0).is_baseline());
  req.set_page_token(page.next_page_token());
  v1::ListTrialsResponse rest;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(experiments_->ListTrials(ctx2.get(), req, &rest).ok());
  EXPECT_EQ(rest.trials_size(), 2);
  EXPECT_TRUE(rest.next_page_token().empty());
}

TEST_F(ServiceTest, WatchStreamsTheExperimentThenItsEvents) {
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", std::string("Bearer ") + viewer_);
  v1::WatchRequest req;
  req.set_experiment_id(id);
  auto reader = results_->Watch(&ctx, req);
  v1::WatchResponse round;
  ASSERT_TRUE(reader->Read(&round));
  ASSERT_EQ(round.events_size(), 1);
  EXPECT_EQ(round.events(0).experiment_updated().id(), id);
  // Events arrive in rounds (one message each); read until `want` is seen.
  auto next = [&](auto want) -> std::optional<v1::ExperimentEvent> {
    while (reader->Read(&round)) {
      for (const v1::ExperimentEvent& e : round.events()) {
        if (want(e)) return e;
      }
    }
    return std::nullopt;
  };
  const std::string w = Register(worker_token_);
  const v1::TrialTask task = Lease(worker_token_, w);
  std::optional<v1::ExperimentEvent> leased =
      next([&](const v1::ExperimentEvent& e) {
        return e.trial_updated().id() == task.trial().id();
      });
  ASSERT_TRUE(leased.has_value());
  EXPECT_EQ(leased->trial_updated().state(), v1::TRIAL_LEASED);
  v1::ReportResponse r;
  ASSERT_TRUE(Report(worker_token_, w, task.trial(),
                     {Point(v1::SPLIT_TRAIN, 3, 2.0f)}, &r)
                  .ok());
  std::optional<v1::ExperimentEvent> reported =
      next([](const v1::ExperimentEvent& e) { return e.points_size() > 0; });
  ASSERT_TRUE(reported.has_value());
  ASSERT_EQ(reported->points_size(), 1);
  EXPECT_EQ(reported->points(0).step(), 3);
  EXPECT_EQ(reported->trial_updated().state(), v1::TRIAL_RUNNING);
  ctx.TryCancel();
  while (reader->Read(&round)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(ServiceTest, ScheduleServiceCountsListsAndChecks) {
  v1::CountSchedulesRequest count;
  count.mutable_space()->set_d_model(768);
  count.mutable_space()->set_layers(12);
  count.mutable_space()->set_base_heads(12);
  v1::CountSchedulesResponse counted;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(schedules_->Count(ctx.get(), count, &counted).ok());
  EXPECT_EQ(counted.count(), 12376u);

  v1::ListSchedulesRequest list;
  *list.mutable_space() = count.space();
  list.set_page_size(5);
  v1::ListSchedulesResponse listed;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(schedules_->List(ctx2.get(), list, &listed).ok());
  EXPECT_EQ(listed.schedules_size(), 5);
  EXPECT_FALSE(listed.next_page_token().empty());

  v1::CheckScheduleRequest check;
  check.set_d_model(768);
  check.set_base_heads(12);
  check.set_schedule("3x3,6x3,12x6");
  v1::CheckScheduleResponse checked;
  auto ctx3 = Ctx(viewer_);
  ASSERT_TRUE(schedules_->Check(ctx3.get(), check, &checked).ok());
  EXPECT_TRUE(checked.report().smooth());
  EXPECT_THAT(checked.report().head_dims(), ::testing::Contains(256));
  check.set_schedule("5x3,12x9");
  auto ctx4 = Ctx(viewer_);
  grpc::Status bad = schedules_->Check(ctx4.get(), check, &checked);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("divisibility"));
}

}  // namespace
}  // namespace prism::server::testing
