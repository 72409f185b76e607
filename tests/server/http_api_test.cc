#include "server/http/http_api.h"

#include <string>
#include <variant>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::server {
namespace {

using ::testing::HasSubstr;

TEST(HttpApiTest, RoutesCarryTheirIdsAndQueryParameters) {
  absl::StatusOr<ApiRequest> r =
      ParseApiRequest("/api/v1/experiments/7/rank", {{"require", "smooth,pow2"},
                                                     {"sort", "val_loss"},
                                                     {"descending", "TRUE"},
                                                     {"page_size", "5"},
                                                     {"page_token", "abc"}});
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& rank = std::get<v1::RankRequest>(*r);
  EXPECT_EQ(rank.experiment_id(), 7);
  EXPECT_EQ(rank.require_size(), 2);
  EXPECT_EQ(rank.sort(), v1::RANK_SORT_VAL_LOSS);
  EXPECT_TRUE(rank.descending());
  EXPECT_EQ(rank.page_size(), 5);
  EXPECT_EQ(rank.page_token(), "abc");

  r = ParseApiRequest("/api/v1/experiments/7/trials", {{"state", "queued"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<v1::ListTrialsRequest>(*r).state(), v1::TRIAL_QUEUED);
  r = ParseApiRequest("/api/v1/trials/3", {{"with_baseline", "1"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<v1::GetTrialRequest>(*r).trial_id(), 3);
  EXPECT_TRUE(std::get<v1::GetTrialRequest>(*r).with_baseline());
  r = ParseApiRequest("/api/v1/experiments", {{"owner", "alice"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<v1::ListExperimentsRequest>(*r).owner(), "alice");
  r = ParseApiRequest("/api/v1/events", {{"experiment", "12"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<EventStreamRequest>(*r).experiment_id, 12);
  EXPECT_TRUE(std::holds_alternative<v1::WhoAmIRequest>(
      *ParseApiRequest("/api/v1/whoami", {})));
  EXPECT_TRUE(std::holds_alternative<v1::ListWorkersRequest>(
      *ParseApiRequest("/api/v1/workers", {})));
}

TEST(HttpApiTest, UnknownPathsAreNotFoundAndBadValuesInvalid) {
  for (const char* path :
       {"/", "/api/v1/", "/api/v1/nothing", "/api/v1/experiments/",
        "/api/v1/experiments/7/logs", "/api/v1/experiments/7/rank/x",
        "/api/v1/trials", "/api/v1//7", "/api/v2/whoami"}) {
    absl::Status s = ParseApiRequest(path, {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << path;
    EXPECT_THAT(s.message(), HasSubstr(std::string("no such path: ") + path));
  }
  absl::Status s = ParseApiRequest("/api/v1/experiments/abc", {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("experiment id 'abc'"));
  EXPECT_THAT(ParseApiRequest("/api/v1/trials/0", {}).status().message(),
              HasSubstr("trial id '0' is not a positive integer"));
  EXPECT_THAT(ParseApiRequest("/api/v1/experiments", {{"page_size", "x"}})
                  .status()
                  .message(),
              HasSubstr("page_size='x' is not an integer"));
  EXPECT_EQ(ParseApiRequest("/api/v1/experiments/1/rank", {{"sort", "up"}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseApiRequest("/api/v1/events", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HttpApiTest, SuggestTakesNOrDefaultsToTen) {
  absl::StatusOr<ApiRequest> r =
      ParseApiRequest("/api/v1/experiments/4/suggest", {{"n", "3"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<v1::SuggestRequest>(*r).experiment_id(), 4);
  EXPECT_EQ(std::get<v1::SuggestRequest>(*r).n(), 3);
  r = ParseApiRequest("/api/v1/experiments/4/suggest", {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<v1::SuggestRequest>(*r).n(), kDefaultApiSuggestions);
  // n=0 reaches the coordinator, which names the range.
  r = ParseApiRequest("/api/v1/experiments/4/suggest", {{"n", "0"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<v1::SuggestRequest>(*r).n(), 0);
  EXPECT_THAT(ParseApiRequest("/api/v1/experiments/4/suggest", {{"n", "many"}})
                  .status()
                  .message(),
              HasSubstr("n='many' is not an integer"));
}

TEST(HttpApiTest, ARepeatedParameterCountsByItsFirstValue) {
  absl::StatusOr<ApiRequest> r = ParseApiRequest(
      "/api/v1/experiments", {{"page_size", "3"}, {"page_size", "x"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<v1::ListExperimentsRequest>(*r).page_size(), 3);
}

TEST(HttpApiTest, ActionsCarryTheirIdsAndBodies) {
  absl::StatusOr<ActionRequest> a =
      ParseActionRequest("/api/v1/experiments/7/pause", "");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(std::get<ExperimentAction>(*a).verb,
            ExperimentAction::Verb::kPause);
  EXPECT_EQ(std::get<ExperimentAction>(*a).id, 7);
  a = ParseActionRequest("/api/v1/experiments/8/delete", "");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(std::get<ExperimentAction>(*a).verb,
            ExperimentAction::Verb::kDelete);
  a = ParseActionRequest("/api/v1/experiments/7/priority",
                         R"({"priority": -2})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(std::get<v1::SetPriorityRequest>(*a).id(), 7);
  EXPECT_EQ(std::get<v1::SetPriorityRequest>(*a).priority(), -2);
  a = ParseActionRequest("/api/v1/experiments/7/extend",
                         R"({"addSeeds": 2, "schedules": ["2x2,4x4"]})");
  ASSERT_TRUE(a.ok()) << a.status();
  const auto& extend = std::get<v1::ExtendRequest>(*a);
  EXPECT_EQ(extend.id(), 7);
  EXPECT_EQ(extend.add_seeds(), 2);
  ASSERT_EQ(extend.schedules_size(), 1);
  EXPECT_EQ(extend.schedules(0), "2x2,4x4");
  a = ParseActionRequest("/api/v1/plan", "name: \"x\"");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(std::get<v1::SubmitRequest>(*a).dry_run());
  EXPECT_EQ(std::get<v1::SubmitRequest>(*a).spec_text(), "name: \"x\"");
  a = ParseActionRequest("/api/v1/submit", "name: \"x\"");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(std::get<v1::SubmitRequest>(*a).dry_run());
}

TEST(HttpApiTest, BadActionsAreNotFoundOrInvalidNamingTheProblem) {
  for (const char* path :
       {"/api/v1/experiments/7/explode", "/api/v1/experiments/7",
        "/api/v1/experiments//pause", "/api/v1/experiments/7/pause/x",
        "/api/v1/whoami", "/api/v1/plan/x", "/api/v2/submit"}) {
    absl::Status s = ParseActionRequest(path, "").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << path;
  }
  EXPECT_THAT(
      ParseActionRequest("/api/v1/experiments/x/cancel", "").status().message(),
      HasSubstr("experiment id 'x' is not a positive integer"));
  EXPECT_THAT(ParseActionRequest("/api/v1/experiments/7/cancel", "{}")
                  .status()
                  .message(),
              HasSubstr("cancel takes no body"));
  EXPECT_THAT(ParseActionRequest("/api/v1/experiments/7/priority",
                                 R"({"priority": "high"})")
                  .status()
                  .message(),
              HasSubstr("priority: the body is not a SetPriorityRequest"));
  EXPECT_THAT(ParseActionRequest("/api/v1/experiments/7/extend",
                                 R"({"id": "8", "addSeeds": 1})")
                  .status()
                  .message(),
              HasSubstr("the body's id 8 is not the path's 7"));
  EXPECT_THAT(ParseActionRequest("/api/v1/submit", " \n").status().message(),
              HasSubstr("submit: the body must be the spec as textproto"));
}

TEST(HttpApiTest, CompareNeedsBothSchedules) {
  absl::StatusOr<ApiRequest> r = ParseApiRequest(
      "/api/v1/experiments/3/compare", {{"a", "4x6"}, {"b", "2x2,4x4"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(std::get<v1::CompareRequest>(*r).experiment_id(), 3);
  EXPECT_EQ(std::get<v1::CompareRequest>(*r).schedule_a(), "4x6");
  EXPECT_EQ(std::get<v1::CompareRequest>(*r).schedule_b(), "2x2,4x4");
  EXPECT_THAT(ParseApiRequest("/api/v1/experiments/3/compare", {{"a", "4x6"}})
                  .status()
                  .message(),
              HasSubstr("compare needs a=<schedule> and b=<schedule>"));
}

}  // namespace
}  // namespace prism::server
