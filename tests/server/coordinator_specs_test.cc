// Bad specs: each is INVALID_ARGUMENT naming the problem, and stores nothing.
// A real coordinator (SQLite file, gRPC on loopback, fake clock)
// driven through the generated stubs (service_fixture.h).
#include <cstdint>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/service_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::HasSubstr;

// --- bad specs -----------------------------------------------------------

struct BadSpecCase {
  const char* name;
  const char* spec_text;
  const char* message;
};

class BadSpecTest : public ServiceTest,
                    public ::testing::WithParamInterface<BadSpecCase> {};

TEST_P(BadSpecTest, IsInvalidArgumentNamingTheProblemAndStoresNothing) {
  v1::SubmitRequest req;
  req.set_spec_text(GetParam().spec_text);
  v1::SubmitResponse resp;
  auto ctx = Ctx(alice_);
  grpc::Status s = experiments_->Submit(ctx.get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr(GetParam().message));
  EXPECT_EQ(CountExperiments(), 0);
  absl::StatusOr<std::map<v1::TrialState, int64_t>> trials =
      coordinator_->store()->CountTrialsByState();
  ASSERT_TRUE(trials.ok());
  EXPECT_TRUE(trials->empty());
}

INSTANTIATE_TEST_SUITE_P(
    Specs, BadSpecTest,
    ::testing::Values(
        BadSpecCase{"UnknownPreset", "model { preset: 'huge' } seeds: 1",
                    "unknown preset 'huge'"},
        // d_model 96 / 4 heads = 24: even the baseline's head dim is not a
        // power of two.
        BadSpecCase{"PrinciplesLeaveNoSchedule",
                    "model { preset: 'tiny' d_model: 96 } seeds: 1 "
                    "principles: PRINCIPLE_POW2",
                    "leave no schedule"},
        BadSpecCase{"ZeroSeeds", "model { preset: 'tiny' }",
                    "at least one seed"},
        BadSpecCase{"DuplicateSeeds", "model { preset: 'tiny' } seeds: [1, 1]",
                    "seed 1 is listed twice"},
        BadSpecCase{"MalformedTextproto", "model { preset: 'tiny' \n seeds: 1",
                    "spec_text:2:"},
        BadSpecCase{"WrongDepth",
                    "model { preset: 'tiny' } seeds: 1 schedules: '2x2,4x8'",
                    "has 10 layers but the model has 6"},
        BadSpecCase{"BrokenHardConstraint",
                    "model { preset: 'tiny' } seeds: 1 schedules: '3x2,4x4'",
                    "divisibility"},
        BadSpecCase{"InconsistentOverride",
                    "model { preset: 'tiny' base_heads: 3 } seeds: 1",
                    "model:"},
        BadSpecCase{"NegativeSteps",
                    "model { preset: 'tiny' } seeds: 1 budget { steps: -5 }",
                    "budget.steps"},
        BadSpecCase{"RandomWithoutSamples",
                    "model { preset: 'tiny' } seeds: 1 strategy: "
                    "STRATEGY_RANDOM",
                    "samples must be positive"},
        BadSpecCase{"GridOverTheCap",
                    "model { preset: '124m' } seeds: [1, 2, 3, 4, 5, 6, 7, 8, "
                    "9]",
                    "STRATEGY_RANDOM"}),
    [](const ::testing::TestParamInfo<BadSpecCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace prism::server::testing
