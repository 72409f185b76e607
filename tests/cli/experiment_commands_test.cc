// `prism delete` against a real coordinator (cli/experiment_commands.cc):
// without a terminal it deletes only with --yes, on a terminal it asks and
// deletes only on "y", an active experiment is refused with one line, and
// `prism db check` is clean after a delete. The terminal is a pty that
// util-linux's script(1) opens.
#include <stdio.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class DeleteCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const absl::Status started = cluster_.StartCoordinator();
    ASSERT_TRUE(started.ok()) << started << cluster_.Logs();
  }

  int64_t SubmitCancelled() {
    absl::StatusOr<int64_t> id = cluster_.SubmitSpec(
        "name: \"doomed\"\nmodel { preset: \"tiny\" }\nseeds: 1\n"
        "schedules: \"2x2,4x4\"\n");
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return 0;
    EXPECT_EQ(cluster_.Run({"cancel", absl::StrCat(*id)}).status, 0);
    return *id;
  }

  bool Exists(int64_t id) {
    return cluster_.Run({"status", absl::StrCat(id)}).status == 0;
  }

  // OnTerminal runs `prism delete id` in a pty with `input` typed, and
  // returns what the terminal showed.
  std::string OnTerminal(int64_t id, const std::string& input) {
    const std::string command = absl::StrCat(
        "printf '", input, "' | /usr/bin/script -qec '", PrismBinary(),
        " delete ", id, " --coordinator ", cluster_.grpc_address(), " --token ",
        cluster_.admin_token(), "' /dev/null 2>&1");
    FILE* pipe = popen(command.c_str(), "r");
    EXPECT_NE(pipe, nullptr);
    if (pipe == nullptr) return "";
    std::string out;
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) {
      out.append(buffer, n);
    }
    pclose(pipe);
    return out;
  }

  LocalCluster cluster_;
};

TEST_F(DeleteCommandTest, WithoutATerminalOnlyYesDeletes) {
  const int64_t id = SubmitCancelled();
  ASSERT_NE(id, 0);
  CommandResult refused = cluster_.Run({"delete", absl::StrCat(id)});
  EXPECT_EQ(refused.status, 2);
  EXPECT_EQ(Lines(refused.err), 1) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("--yes"));
  EXPECT_TRUE(Exists(id));

  CommandResult deleted = cluster_.Run({"delete", absl::StrCat(id), "--yes"});
  EXPECT_EQ(deleted.status, 0) << deleted.err;
  EXPECT_EQ(deleted.out, absl::StrCat("experiment ", id,
                                      " deleted: 2 trials, 0 attempts, 0 "
                                      "points\n"));
  EXPECT_FALSE(Exists(id));
  CommandResult check = cluster_.CheckDb();
  EXPECT_EQ(check.status, 0) << check.out << check.err;

  CommandResult again = cluster_.Run({"delete", absl::StrCat(id), "--yes"});
  EXPECT_EQ(again.status, 2);
  EXPECT_EQ(Lines(again.err), 1) << again.err;
}

TEST_F(DeleteCommandTest, AnActiveExperimentIsRefusedInOneLine) {
  absl::StatusOr<int64_t> id = cluster_.SubmitSpec(
      "model { preset: \"tiny\" }\nseeds: 1\nschedules: \"2x2,4x4\"\n");
  ASSERT_TRUE(id.ok()) << id.status();
  CommandResult r = cluster_.Run({"delete", absl::StrCat(*id), "--yes"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cancel it first"));
  EXPECT_TRUE(Exists(*id));
}

TEST_F(DeleteCommandTest, OnATerminalItAsksAndDeletesOnlyOnYes) {
  if (!std::filesystem::exists("/usr/bin/script")) {
    GTEST_SKIP() << "no /usr/bin/script (util-linux) to open a pty";
  }
  const int64_t id = SubmitCancelled();
  ASSERT_NE(id, 0);
  const std::string declined = OnTerminal(id, "n\\n");
  EXPECT_THAT(declined,
              HasSubstr(absl::StrCat("delete experiment ", id,
                                     " 'doomed' of admin (cancelled: 2 "
                                     "trials, 0 steps trained")));
  EXPECT_THAT(declined, HasSubstr("[y/N]"));
  EXPECT_THAT(declined, HasSubstr("is kept"));
  EXPECT_TRUE(Exists(id));

  const std::string accepted = OnTerminal(id, "y\\n");
  EXPECT_THAT(accepted,
              HasSubstr(absl::StrCat("experiment ", id, " deleted: 2 trials")));
  EXPECT_THAT(accepted, Not(HasSubstr("is kept")));
  EXPECT_FALSE(Exists(id));
}

TEST_F(DeleteCommandTest, HelpNamesTheConfirmation) {
  CommandResult r = cluster_.Run({"delete", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("--yes"));
  EXPECT_THAT(r.out, HasSubstr("done or cancelled"));
}

}  // namespace
}  // namespace prism::testing
