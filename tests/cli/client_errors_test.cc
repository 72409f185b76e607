// The CLI's error paths against a real coordinator: bad specs, unknown ids,
// a wrong token and an unreachable coordinator each end with one line on
// stderr and the documented exit status (2: fix your input; 1: try later).
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class ClientErrorsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LocalCluster();
    const absl::Status started = cluster_->StartCoordinator();
    ASSERT_TRUE(started.ok()) << started << cluster_->Logs();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  CommandResult Submit(const std::string& spec) {
    const std::string path =
        absl::StrCat(cluster_->dir(), "/spec-", ++specs_, ".textproto");
    WriteFile(path, spec);
    return cluster_->Run({"submit", path});
  }

  static LocalCluster* cluster_;
  int specs_ = 0;
};

LocalCluster* ClientErrorsTest::cluster_ = nullptr;

TEST_F(ClientErrorsTest, MalformedSpecNamesLineAndColumn) {
  CommandResult r =
      Submit("model { preset: \"tiny\" }\nseeds: 1\nbudget { steps: ten }\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("prism submit: "));
  EXPECT_THAT(r.err, HasSubstr(".textproto:3:"));  // file:line:column
  EXPECT_TRUE(r.out.empty());
}

TEST_F(ClientErrorsTest, UnknownPresetIsRefused) {
  CommandResult r = Submit("model { preset: \"gigantic\" }\nseeds: 1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("gigantic"));
}

TEST_F(ClientErrorsTest, SpecsOverALimitAreRefusedNamingTheFlag) {
  CommandResult r = Submit(
      "model { preset: \"tiny\" }\nseeds: 1\nmax_attempts: 2000000000\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("max_attempts is 2000000000; limit "
                               "--max-attempts-limit=20"));

  // 300,000 seeds of one schedule were once accepted as 600,000 trials.
  std::string many = "model { preset: \"tiny\" }\nschedules: \"1x3,4x3\"\n";
  for (int seed = 0; seed < 1001; ++seed) {
    absl::StrAppend(&many, "seeds: ", seed, "\n");
  }
  r = Submit(many);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("seeds' count is 1001; limit --max-seeds=1000"));
  EXPECT_TRUE(r.out.empty());
}

// Issue #32: a spec naming data outside the coordinator's --data-root is
// refused with one line naming the path and the roots, exit 2.
TEST_F(ClientErrorsTest, DataPathsOutsideTheDataRootsAreRefused) {
  for (const std::string& path :
       {std::string("/etc/shadow"), cluster_->dir() + "/../../dev/zero"}) {
    CommandResult r =
        Submit(absl::StrCat("model { preset: \"tiny\" }\nseeds: 1\n",
                            "data { train: \"", path, "\" }\n"));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_THAT(r.err, StartsWith("prism submit: "));
    EXPECT_THAT(r.err, HasSubstr("data path " + path));
    EXPECT_THAT(r.err, HasSubstr("is outside the data roots: /"));
    EXPECT_TRUE(r.out.empty());
  }
  // A root that cannot be one is a usage error before anything starts.
  CommandResult r = cluster_->Run(
      {"coordinator", "--db", cluster_->dir() + "/other.db", "--data-root", ""},
      /*with_defaults=*/false);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--data-root: empty path"));
}

TEST_F(ClientErrorsTest, SpecWithoutSeedsIsRefused) {
  CommandResult r = Submit("model { preset: \"tiny\" }\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("seed"));
}

TEST_F(ClientErrorsTest, PrincipleFilterThatLeavesNoScheduleIsRefused) {
  // Head dim 120 / 4 = 30 is no power of two, so pow2 excludes every
  // schedule of this shape, the uniform one included.
  CommandResult r = Submit(
      "model { preset: \"tiny\" d_model: 120 }\n"
      "principles: PRINCIPLE_POW2\nseeds: 1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no schedule"));
}

TEST_F(ClientErrorsTest, ScheduleOfTheWrongDepthIsRefused) {
  CommandResult r =
      Submit("model { preset: \"tiny\" }\nschedules: \"2x2,4x2\"\nseeds: 1\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("4 layers"));
}

TEST_F(ClientErrorsTest, RefusedSpecStoresNothing) {
  Submit("model { preset: \"gigantic\" }\nseeds: 1\n");
  CommandResult r = cluster_->Run({"status", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("gigantic")));
}

TEST_F(ClientErrorsTest, MissingSpecFileIsUsageError) {
  CommandResult r = cluster_->Run({"submit", "/nonexistent/spec.textproto"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/spec.textproto"));
}

TEST_F(ClientErrorsTest, UnknownExperimentIsNotFound) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"results", "--experiment", "9999"},
           {"results", "9999"},
           {"seeds", "add", "9999", "--count", "1"},
           {"status", "9999"},
           {"cancel", "9999"},
           {"trial", "9999"}}) {
    CommandResult r = cluster_->Run(args);
    EXPECT_EQ(r.status, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
  }
}

TEST_F(ClientErrorsTest, WrongTokenIsRefused) {
  CommandResult r =
      cluster_->Run({"status", "--coordinator", cluster_->grpc_address(),
                     "--token", "prism_not-a-real-token"},
                    /*with_defaults=*/false);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("prism status: "));
}

TEST_F(ClientErrorsTest, WorkerWithWrongTokenExitsWithUsageError) {
  CommandResult r =
      cluster_->Run({"worker", "--coordinator", cluster_->grpc_address(),
                     "--token", "prism_not-a-real-token", "--device", "cpu"},
                    /*with_defaults=*/false);
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("prism worker: "));
}

TEST_F(ClientErrorsTest, UnreachableCoordinatorIsTransientFailure) {
  // Port 1 on loopback: nothing listens there.
  CommandResult r =
      cluster_->Run({"status", "--coordinator", "127.0.0.1:1", "--token", "x"},
                    /*with_defaults=*/false);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cannot reach coordinator at 127.0.0.1:1"));
}

TEST_F(ClientErrorsTest, BadFlagValuesAreUsageErrors) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"token", "create", "--user", "ann", "--role", "emperor"},
           {"results", "--experiment", "1", "--sort", "vibes"},
           {"results", "--experiment", "1", "--require", "symmetry"},
           {"status", "--format", "yaml"},
           {"status", "not-a-number"}}) {
    CommandResult r = cluster_->Run(args);
    EXPECT_EQ(r.status, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
  }
}

TEST_F(ClientErrorsTest, TokensAndRolesRoundTrip) {
  CommandResult created =
      cluster_->Run({"token", "create", "--user", "ann", "--role", "viewer"});
  ASSERT_EQ(created.status, 0) << created.err;
  const std::string token(absl::StripAsciiWhitespace(created.out));
  ASSERT_THAT(token, StartsWith("prism_"));

  CommandResult who = cluster_->Run(
      {"whoami", "--coordinator", cluster_->grpc_address(), "--token", token},
      /*with_defaults=*/false);
  ASSERT_EQ(who.status, 0) << who.err;
  EXPECT_THAT(who.out, HasSubstr("ann (role viewer)"));

  // A viewer may read but not submit.
  const std::string path = cluster_->dir() + "/viewer.textproto";
  WriteFile(path, "model { preset: \"tiny\" }\nseeds: 1\n");
  CommandResult denied =
      cluster_->Run({"submit", path, "--coordinator", cluster_->grpc_address(),
                     "--token", token},
                    /*with_defaults=*/false);
  EXPECT_EQ(denied.status, 2);
  EXPECT_EQ(Lines(denied.err), 1) << denied.err;
}

TEST_F(ClientErrorsTest, EveryCommandHasHelp) {
  for (const char* command :
       {"submit", "status", "cancel", "pause", "resume", "priority", "workers",
        "results", "trial", "watch", "whoami", "worker", "run"}) {
    CommandResult r = cluster_->Run({command, "--help"});
    EXPECT_EQ(r.status, 0) << command;
    EXPECT_THAT(r.out, HasSubstr("Usage")) << command;
  }
  CommandResult r = cluster_->Run({"token", "create", "--help"});
  EXPECT_EQ(r.status, 0);
  r = cluster_->Run({"seeds", "add", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("--count"));
  EXPECT_THAT(r.out, HasSubstr("--to"));
}

}  // namespace
}  // namespace prism::testing
