// prism db check / prism db backup as a user runs them: exit codes, the one
// line a bad input gets, and a backup that checks clean.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/cli/cluster.h"
#include "tests/testing/temp_dir.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;

class DbCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = storage::SqliteStore::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status();
    storage::NewExperiment e;
    e.name = "one";
    e.owner = "alice";
    e.spec.mutable_budget()->set_steps(10);
    e.total_steps = 10;
    e.max_attempts = 1;
    e.config_fingerprint = "fp";
    e.trials.push_back({"4x6", 1, true});
    ASSERT_TRUE((*store)->CreateExperiment(e).ok());
  }

  CommandResult Prism(const std::vector<std::string>& args) {
    return RunPrism(args, {}, dir_.File(absl::StrCat("cmd-", ++runs_)));
  }

  TempDir dir_{"prism_db_cmd"};
  const std::string db_ = dir_.File("prism.db");
  int runs_ = 0;
};

TEST_F(DbCommandsTest, CheckSaysEveryInvariantHolds) {
  CommandResult r = Prism({"db", "check", "--db", db_});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 experiment(s), 1 trial(s), 0 point(s): "
                               "every invariant holds"));
  CommandResult json = Prism({"db", "check", "--db", db_, "--format", "json"});
  EXPECT_EQ(json.status, 0) << json.err;
  google::protobuf::Struct parsed;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(json.out, &parsed).ok())
      << json.out;
  EXPECT_TRUE(parsed.fields().at("ok").bool_value());
  EXPECT_EQ(parsed.fields().at("trials").number_value(), 1);
}

TEST_F(DbCommandsTest, BadInputIsOneLineAndExitTwo) {
  CommandResult missing = Prism({"db", "check", "--db", dir_.File("no.db")});
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err,
            "prism db check: no database file " + dir_.File("no.db") + "\n");
  CommandResult format = Prism({"db", "check", "--db", db_, "--format", "x"});
  EXPECT_EQ(format.status, 2);
  EXPECT_THAT(format.err, HasSubstr("unknown format 'x'"));
  CommandResult help = Prism({"db", "backup", "--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, HasSubstr("--to"));
}

TEST_F(DbCommandsTest, BackupIsACheckedCopyAndNeverOverwrites) {
  const std::string copy = dir_.File("copy.db");
  CommandResult r = Prism({"db", "backup", "--db", db_, "--to", copy});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("backed up"));
  CommandResult check = Prism({"db", "check", "--db", copy});
  EXPECT_EQ(check.status, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("1 trial(s)"));
  CommandResult again = Prism({"db", "backup", "--db", db_, "--to", copy});
  EXPECT_EQ(again.status, 2);
  EXPECT_EQ(std::vector<std::string>(
                absl::StrSplit(again.err, '\n', absl::SkipEmpty()))
                .size(),
            1u)
      << again.err;
}

}  // namespace
}  // namespace prism::testing
