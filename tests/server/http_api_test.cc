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

}  // namespace
}  // namespace prism::server
