// Runs the built `prism` binary and checks stdout, stderr and the exit status
// of `prism schedules count|list|check|map`.
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace {

using ::prism::testing::CommandResult;
using ::prism::testing::Lines;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// RunPrism runs prism with `args`, its output in a directory of its own.
CommandResult RunPrism(const std::vector<std::string>& args) {
  const prism::testing::TempDir dir("prism_cli_test");
  return prism::testing::RunPrism(args, {}, dir.File("cmd"));
}

// ExpectUsageError checks the bad-input contract: exit 2, one line on
// stderr mentioning `message`, nothing on stdout.
void ExpectUsageError(const std::vector<std::string>& args,
                      const std::string& message) {
  const CommandResult r = RunPrism(args);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(message));
}

const std::vector<std::string> kSpace = {
    "--d-model", "768", "--layers", "12", "--base-heads", "12"};

std::vector<std::string> With(std::vector<std::string> head,
                              const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

TEST(SchedulesCountTest, PrintsThePaperSpaceSizeAlone) {
  const CommandResult r = RunPrism(With({"schedules", "count"}, kSpace));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "12376\n");
  EXPECT_EQ(r.err, "");
}

TEST(SchedulesCountTest, AppliesPrinciplesAndRunBounds) {
  const CommandResult all = RunPrism(
      With({"schedules", "count"}, With(kSpace, {"--principles", "all"})));
  EXPECT_EQ(all.status, 0) << all.err;
  EXPECT_EQ(all.out, "13\n");
  const CommandResult smooth =
      RunPrism(With({"schedules", "count"},
                    With(kSpace, {"--principles", "smooth", "--min-run", "1",
                                  "--max-run", "12"})));
  EXPECT_EQ(smooth.out, "12376\n");  // bounds 1..12 exclude nothing
}

TEST(SchedulesCountTest, HugeSpacesAreExactOrSayMoreThan) {
  const CommandResult huge =
      RunPrism({"schedules", "count", "--d-model", "12288", "--layers", "96",
                "--base-heads", "96"});
  EXPECT_EQ(huge.out, "2478781950222760\n");
  const CommandResult beyond =
      RunPrism({"schedules", "count", "--d-model", "128", "--layers", "4096",
                "--base-heads", "128"});
  EXPECT_EQ(beyond.status, 0);
  EXPECT_EQ(beyond.out, "more than 18446744073709551615\n");
  const CommandResult json =
      RunPrism({"schedules", "count", "--d-model", "128", "--layers", "4096",
                "--base-heads", "128", "--format", "json"});
  EXPECT_EQ(json.out,
            "{\"count\": 18446744073709551615, \"exceeds_uint64\": true}\n");
}

TEST(SchedulesListTest, PrintsATableAndTheNextPageTokenOnStderr) {
  const CommandResult r =
      RunPrism(With({"schedules", "list"}, With(kSpace, {"--limit", "3"})));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Lines(r.out), 4);  // header + 3 rows
  EXPECT_THAT(r.out, StartsWith("index  schedule"));
  EXPECT_THAT(r.out, HasSubstr("1x11,12x1"));
  EXPECT_THAT(r.err, StartsWith("next page: --page-token "));
  EXPECT_EQ(Lines(r.err), 1);
}

TEST(SchedulesListTest, PagesThroughTheWholeFilteredSpace) {
  // 13 schedules with every principle: pages of 5, 5 and 3.
  std::string token;
  std::vector<std::string> seen;
  for (int page = 0; page < 3; ++page) {
    std::vector<std::string> args = With(
        {"schedules", "list"}, With(kSpace, {"--principles", "all", "--limit",
                                             "5", "--format", "csv"}));
    if (!token.empty()) args = With(args, {"--page-token", token});
    const CommandResult r = RunPrism(args);
    ASSERT_EQ(r.status, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line;
    std::getline(lines, line);
    EXPECT_EQ(line,
              "index,schedule,smooth,baseline,pow2,transitions,max ratio,"
              "baseline fraction,head dims");
    while (std::getline(lines, line)) seen.push_back(line);
    const std::string prefix = "next page: --page-token ";
    if (page < 2) {
      ASSERT_THAT(r.err, StartsWith(prefix));
      token = r.err.substr(prefix.size());
      token.pop_back();  // newline
    } else {
      EXPECT_EQ(r.err, "");
    }
  }
  ASSERT_EQ(seen.size(), 13u);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_THAT(seen[i], StartsWith(std::to_string(i) + ",")) << seen[i];
    EXPECT_THAT(seen[i], HasSubstr(",true,true,true,"));
  }
}

TEST(SchedulesListTest, JsonIsOneObjectWithSchedulesAndToken) {
  const CommandResult r = RunPrism(With(
      {"schedules", "list"}, With(kSpace, {"--principles", "all", "--limit",
                                           "2", "--format", "json"})));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("{\"schedules\": ["));
  EXPECT_THAT(r.out,
              HasSubstr("{\"index\": 0, \"schedule\": \"3x4,6x2,12x6\""));
  EXPECT_THAT(r.out, HasSubstr("\"head_dims\": [256,256,256,256,128,128,64"));
  EXPECT_THAT(r.out, HasSubstr("\"next_page_token\": \"A"));
  EXPECT_EQ(r.err, "");
}

TEST(SchedulesCheckTest, ReportsThePrinciplesOfAValidSchedule) {
  const CommandResult r =
      RunPrism({"schedules", "check", "--d-model", "768", "--base-heads", "12",
                "--schedule", "3x3,6x3,12x6"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("smooth             true"));
  EXPECT_THAT(r.out, HasSubstr("transitions        2"));
  EXPECT_THAT(r.out, HasSubstr("head dims          256x3,128x3,64x6"));
  EXPECT_EQ(r.err, "");

  const CommandResult json = RunPrism(
      {"schedules", "check", "--d-model", "768", "--base-heads", "12",
       "--schedule", "1x1,4x1,12x10", "--layers", "12", "--format", "json"});
  EXPECT_EQ(json.status, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"smooth\": false"));
  EXPECT_THAT(json.out, HasSubstr("\"baseline\": true"));
  EXPECT_THAT(json.out, HasSubstr("\"pow2\": false"));
  EXPECT_THAT(json.out, HasSubstr("\"max_adjacent_ratio\": 4"));
}

TEST(SchedulesCheckTest, InvalidSchedulesNameTheConstraintAndLayer) {
  const std::vector<std::string> check = {
      "schedules",    "check", "--d-model", "768",
      "--base-heads", "12",    "--schedule"};
  ExpectUsageError(With(check, {"3x3,5x3,12x6"}),
                   "layer 4: 5 heads do not divide d_model 768 (divisibility)");
  ExpectUsageError(With(check, {"6x3,3x3,12x6"}),
                   "layer 4: 3 heads after 6 in layer 3 (monotonicity");
  ExpectUsageError(With(check, {"3x3,6x9"}),
                   "layer 12: 6 heads, but the last layer must have the base "
                   "12 heads (boundary convergence)");
}

TEST(SchedulesBadInputTest, EveryBadInputExitsTwoWithOneLine) {
  ExpectUsageError({"schedules", "count", "--d-model", "0", "--layers", "12",
                    "--base-heads", "12"},
                   "d_model must be positive");
  ExpectUsageError({"schedules", "count", "--d-model=-768", "--layers", "12",
                    "--base-heads", "12"},
                   "d_model must be positive");
  ExpectUsageError({"schedules", "list", "--d-model", "768", "--layers", "0",
                    "--base-heads", "12"},
                   "layers must be positive");
  ExpectUsageError({"schedules", "count", "--d-model", "768", "--layers", "-3",
                    "--base-heads", "12"},
                   "layers must be positive, got -3");
  ExpectUsageError({"schedules", "count", "--d-model", "768", "--layers", "12",
                    "--base-heads", "0"},
                   "base heads must be positive");
  ExpectUsageError({"schedules", "count", "--d-model", "768", "--layers", "12",
                    "--base-heads", "7"},
                   "base heads 7 do not divide d_model 768");
  ExpectUsageError(
      With({"schedules", "count"}, With(kSpace, {"--min-run", "5"})),
      "min_run 5 is greater than max_run 4");
  ExpectUsageError(With({"schedules", "list"},
                        With(kSpace, {"--min-run", "3", "--max-run", "2"})),
                   "min_run 3 is greater than max_run 2");
  ExpectUsageError(
      With({"schedules", "count"}, With(kSpace, {"--principles", "smoth"})),
      "unknown principle 'smoth'");
  ExpectUsageError(With({"schedules", "list"},
                        With(kSpace, {"--principles", "smooth,fast"})),
                   "unknown principle 'fast'");
  ExpectUsageError({"schedules", "check", "--d-model", "768", "--base-heads",
                    "12", "--schedule", "garbage"},
                   "schedule 'garbage': block 1 'garbage' needs HEADSxLAYERS");
  ExpectUsageError({"schedules", "check", "--d-model", "768", "--base-heads",
                    "12", "--schedule", "3x,12x6"},
                   "block 1 '3x' needs HEADSxLAYERS");
  ExpectUsageError({"schedules", "check", "--d-model", "768", "--base-heads",
                    "12", "--schedule", "3x3,6x3,12x6", "--layers", "10"},
                   "schedule has 12 layers but the space has 10");
  ExpectUsageError({"schedules", "check", "--d-model", "768", "--base-heads",
                    "7", "--schedule", "7x12"},
                   "base heads 7 do not divide d_model 768");
  ExpectUsageError(With({"schedules", "count"}, {"--d-model", "abc", "--layers",
                                                 "12", "--base-heads", "12"}),
                   "--d-model");
  ExpectUsageError({"schedules", "count", "--d-model", "768", "--layers", "12"},
                   "--base-heads is required");
  ExpectUsageError(
      With({"schedules", "list"}, With(kSpace, {"--page-token", "junk"})),
      "page token 'junk' is malformed");
  ExpectUsageError(With({"schedules", "list"}, With(kSpace, {"--limit", "0"})),
                   "--limit must be between 1 and");
  ExpectUsageError(
      With({"schedules", "list"}, With(kSpace, {"--format", "xml"})),
      "unknown format 'xml'");
  ExpectUsageError({"schedules"}, "subcommand");
}

TEST(SchedulesBadInputTest, TokenFromAnotherSpaceIsRejected) {
  const CommandResult first =
      RunPrism(With({"schedules", "list"}, With(kSpace, {"--limit", "2"})));
  ASSERT_EQ(first.status, 0);
  const std::string prefix = "next page: --page-token ";
  ASSERT_THAT(first.err, StartsWith(prefix));
  std::string token = first.err.substr(prefix.size());
  token.pop_back();
  ExpectUsageError(
      With({"schedules", "list"},
           With(kSpace, {"--principles", "pow2", "--page-token", token})),
      "different space");
}

TEST(SchedulesHelpTest, EverySubcommandHasHelp) {
  for (const char* sub : {"count", "list", "check"}) {
    const CommandResult r = RunPrism({"schedules", sub, "--help"});
    EXPECT_EQ(r.status, 0) << sub;
    EXPECT_THAT(r.out, HasSubstr("--d-model")) << sub;
  }
  const CommandResult r = RunPrism({"schedules", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("count"));
  EXPECT_THAT(r.out, HasSubstr("map"));
  const CommandResult map = RunPrism({"schedules", "map", "--help"});
  EXPECT_EQ(map.status, 0);
  EXPECT_THAT(map.out, HasSubstr("--max-ratio-error"));
}

TEST(SchedulesMapTest, PrintsTheMappedScheduleRatiosDistortionAndPrinciples) {
  const CommandResult r = RunPrism(
      {"schedules", "map", "3x2,6x2,12x8", "--from", "124m", "--to", "tiny"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
  ASSERT_GE(lines.size(), 10u) << r.out;
  // Keeping smoothness costs the second layer a doubling: the nearest fit,
  // 1x1,2x1,4x4, has runs of one layer.
  EXPECT_EQ(lines[0], "3x2,6x2,12x8 (124m) -> 1x2,4x4 (tiny)");
  EXPECT_THAT(lines[1], StartsWith("distortion: max 1 doublings, mean 0.1667"));
  EXPECT_EQ(lines[2], "principles: 124m all; tiny all; kept all");
  EXPECT_THAT(lines[3], StartsWith("layer  depth"));
  EXPECT_THAT(lines[5], HasSubstr("0.167-0.333"));
  EXPECT_THAT(lines[5], HasSubstr("0.5      1   0.25          1           1"));
  EXPECT_EQ(Lines(r.out), 10);  // 3 summary lines, header, 6 layers
}

TEST(SchedulesMapTest, JsonCarriesEveryLayerAndTheDistortion) {
  const CommandResult r =
      RunPrism({"schedules", "map", "4x6,12x6", "--from", "124m", "--to",
                "354m", "--format", "json"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"mapped\": \"4x12,16x12\""));
  EXPECT_THAT(r.out, HasSubstr("\"distortion\": {\"max_error\": 0.415, "
                               "\"mean_error\": 0.2075}"));
  EXPECT_THAT(r.out, HasSubstr("\"kept\": \"baseline\", \"dropped\": []"));
  EXPECT_THAT(r.out, HasSubstr("{\"layer\": 24, \"depth_begin\": 0.9583, "
                               "\"depth_end\": 1, \"profile_ratio\": 1, "
                               "\"heads\": 16, \"ratio\": 1"));
}

TEST(SchedulesMapTest, ExactMapHasNoDistortion) {
  const CommandResult r = RunPrism(
      {"schedules", "map", "1x2,2x1,4x3", "--from", "tiny", "--to", "124m"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("1x2,2x1,4x3 (tiny) -> 3x4,6x2,12x6 (124m)\n"
                                "distortion: max 0 doublings, mean 0 "));
}

TEST(SchedulesMapTest, UnmappableAndBadInputAreOneLineExit2) {
  ExpectUsageError(
      {"schedules", "map", "1x1,12x11", "--from", "124m", "--to", "tiny"},
      "layer 1's ratio 0.08333 (1 of 12 heads) has no head count within 1 "
      "doubling(s) (nearest: 0.25 (1 of 4 heads)");
  ExpectUsageError({"schedules", "map", "3x3,4x3,6x3,8x3,12x3,16x3,24x6",
                    "--from", "757m", "--to", "tiny"},
                   "fewer than the schedule's 7 distinct head counts");
  ExpectUsageError(
      {"schedules", "map", "4x6", "--from", "124m", "--to", "tiny"},
      "is not a schedule of 124m");
  ExpectUsageError(
      {"schedules", "map", "4x", "--from", "tiny", "--to", "small"}, "4x");
  ExpectUsageError(
      {"schedules", "map", "4x6", "--from", "tiny", "--to", "huge"},
      "unknown preset 'huge'");
  ExpectUsageError({"schedules", "map", "4x6", "--from", "tiny", "--to",
                    "small", "--max-ratio-error", "0"},
                   "max ratio error must be a positive");
  ExpectUsageError({"schedules", "map", "4x6", "--to", "small"}, "--from");
}

}  // namespace
