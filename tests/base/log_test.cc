#include "base/log.h"

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

using ::testing::ContainsRegex;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

class LogTest : public ::testing::Test {
 protected:
  void TearDown() override {
    SetLogLevel(LogLevel::kInfo);
    SetLogComponent("");
  }
};

TEST_F(LogTest, LineHasTimestampLevelMessageAndKeyValuesInOrder) {
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kInfo, "trial leased")
      .Kv("trial", int64_t{12})
      .Kv("worker", "w-3f")
      .Kv("loss", 2.5)
      .Kv("retryable", true)
      .Kv("count", size_t{7});
  const std::string line = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(line, StartsWith("ts="));
  EXPECT_THAT(line, ContainsRegex("^ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:"
                                  "[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "));
  EXPECT_THAT(line, EndsWith(" level=info msg=\"trial leased\" trial=12 "
                             "worker=w-3f loss=2.5 retryable=true count=7\n"));
}

TEST_F(LogTest, ValuesThatNeedItAreQuotedAndEscaped) {
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kWarning, "x")
      .Kv("empty", "")
      .Kv("eq", "a=b")
      .Kv("quote", "say \"hi\"")
      .Kv("newline", "one\ntwo")
      .Kv("slash", "a\\b");
  const std::string line = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(line, HasSubstr(" level=warning msg=x empty=\"\" eq=\"a=b\" "
                              "quote=\"say \\\"hi\\\"\" "
                              "newline=\"one\\ntwo\" slash=\"a\\\\b\"\n"));
}

TEST_F(LogTest, LinesBelowTheLevelAreSkipped) {
  SetLogLevel(LogLevel::kWarning);
  EXPECT_FALSE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kInfo, "hidden").Kv("k", 1);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), IsEmpty());
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kError, "shown");
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("level=error msg=shown\n"));
}

TEST_F(LogTest, ComponentFollowsTheLevelOnEveryLine) {
  SetLogComponent("worker");
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kInfo, "lease").Kv("trial", 3);
  Log(LogLevel::kInfo, "exit");
  const std::string lines = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(lines, HasSubstr(" level=info component=worker msg=lease "
                               "trial=3\n"));
  EXPECT_THAT(lines, HasSubstr(" level=info component=worker msg=exit\n"));
}

TEST_F(LogTest, ParseLogLevelAcceptsTheFourNamesInAnyCase) {
  LogLevel level = LogLevel::kInfo;
  EXPECT_TRUE(ParseLogLevel("DEBUG", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_TRUE(ParseLogLevel("warning", &level));
  EXPECT_EQ(level, LogLevel::kWarning);
  EXPECT_FALSE(ParseLogLevel("warn", &level));
  EXPECT_EQ(level, LogLevel::kWarning);
  EXPECT_FALSE(ParseLogLevel("", &level));
}

}  // namespace
}  // namespace prism
