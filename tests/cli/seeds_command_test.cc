// `prism seeds add` and the ranking's "next:" lines against a real
// coordinator and a replay worker (cli/experiment_commands.cc,
// cli/views/summary.cc): the next line of a one-seed grid is one command, which
// the test parses and runs as printed; it queues only the new seeds' trials and
// every finished one is reused; bad input exits 2 naming the problem with
// nothing added; a dry run stores nothing; `prism results`, `compare` and
// `suggest` take the experiment id positionally as with --experiment.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"
#include "tests/cli/replay_fixture.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The tiny preset's principled grid (4 schedules and the baseline 4x6),
// 40 steps, val every 10, train every 5.
const char kSpec[] = R"pb(
  name: "seeds"
  model { preset: "tiny" }
  budget { steps: 40 eval_every: 10 log_every: 5 }
  principles: [ PRINCIPLE_SMOOTH, PRINCIPLE_BASELINE, PRINCIPLE_POW2 ]
  seeds: [ 1 ]
)pb";
const std::vector<std::string>& kSchedules = kTinyPrincipledSchedules;
// The fixture holds seeds up to kFixtureSeeds: a trial past it would fail.
constexpr int64_t kFixtureSeeds = 8;

// ValLoss is the recorded val loss of (schedule index, seed) at `step`: the
// schedules 0.004 apart at the end, with per-seed noise of about that size,
// so that on 3 seeds two are better and two inconclusive.
float ValLoss(int index, int64_t seed, int64_t step) {
  const double noise = 0.004 * static_cast<double>((seed * 7 + index * 3) % 5);
  return static_cast<float>(5.0 - (0.05 + 0.0001 * index) * step + noise);
}

// NextCommand returns the command printed on the line after "next: ...",
// split into arguments without the leading "prism"; nullopt when the next
// line names none.
std::optional<std::vector<std::string>> NextCommand(const std::string& out) {
  const std::vector<std::string> lines = absl::StrSplit(out, '\n');
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (!absl::StartsWith(lines[i], "next: ")) continue;
    // The explanation may be wrapped; the command is the first line that
    // starts with "  prism ".
    for (size_t j = i + 1; j < lines.size(); ++j) {
      absl::string_view line = lines[j];
      if (!absl::ConsumePrefix(&line, "  prism ")) continue;
      return std::vector<std::string>(
          absl::StrSplit(line, ' ', absl::SkipEmpty()));
    }
  }
  return std::nullopt;
}

class SeedsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<int64_t> seeds;
    for (int64_t s = 1; s <= kFixtureSeeds; ++s) seeds.push_back(s);
    const std::string fixture = cluster_.dir() + "/grid.replay";
    WriteFile(fixture, TinyReplayFixture(kSchedules, seeds, ValLoss));
    ASSERT_TRUE(cluster_.StartCoordinator().ok()) << cluster_.Logs();
    ASSERT_TRUE(cluster_.StartWorker({"--replay", fixture}).ok());
    absl::StatusOr<int64_t> id = cluster_.SubmitSpec(kSpec);
    ASSERT_TRUE(id.ok()) << id.status();
    id_ = *id;
    WaitDone();
  }

  void WaitDone() {
    absl::StatusOr<v1::Experiment> done =
        cluster_.WaitForExperiment(id_, absl::Seconds(60));
    ASSERT_TRUE(done.ok()) << done.status() << cluster_.Logs();
    ASSERT_EQ(done->state(), v1::EXPERIMENT_DONE) << cluster_.Logs();
    ASSERT_EQ(done->counts().failed(), 0) << cluster_.Logs();
  }

  // Attempts returns every trial's attempts, by (schedule, seed).
  std::map<std::pair<std::string, int64_t>, int> Attempts() {
    std::map<std::pair<std::string, int64_t>, int> out;
    absl::StatusOr<std::vector<v1::Trial>> trials = cluster_.ListTrials(id_);
    EXPECT_TRUE(trials.ok()) << trials.status();
    if (!trials.ok()) return out;
    for (const v1::Trial& t : *trials) {
      out[{t.schedule(), t.seed()}] = t.attempt();
    }
    return out;
  }

  LocalCluster cluster_;
  int64_t id_ = 0;
};

TEST_F(SeedsCommandTest, TheNextLineIsACommandThatTrainsOnlyTheNewSeeds) {
  const std::string id = absl::StrCat(id_);
  // Positionally, as with --experiment.
  CommandResult results = cluster_.Run({"results", id});
  ASSERT_EQ(results.status, 0) << results.err;
  EXPECT_EQ(cluster_.Run({"results", "--experiment", id}).out, results.out);
  std::optional<std::vector<std::string>> next = NextCommand(results.out);
  ASSERT_TRUE(next.has_value()) << results.out;
  EXPECT_EQ(absl::StrJoin(*next, " "),
            absl::StrCat("seeds add ", id, " --to 3"));

  // The command runs as printed.
  const CommandResult added = cluster_.Run(*next);
  ASSERT_EQ(added.status, 0) << added.err;
  EXPECT_THAT(added.out, HasSubstr("queued 10 trials (seeds 2, 3 on 5 "
                                   "schedules); reused 5 finished trials"));
  WaitDone();
  // Only the new pairs trained: seed 1's trials kept their one attempt.
  const auto attempts = Attempts();
  ASSERT_EQ(attempts.size(), 15u);
  for (const auto& [key, attempt] : attempts) {
    EXPECT_EQ(attempt, 1) << key.first << " seed " << key.second;
  }
  results = cluster_.Run({"results", id});
  ASSERT_EQ(results.status, 0) << results.err;
  EXPECT_THAT(results.out, HasSubstr("3/3"));
  // Two of the best-set are still inconclusive: the next line names the
  // seeds that settle them, within the limits, and the coordinator takes
  // the command as printed (checked as a dry run: the fixture records only
  // kFixtureSeeds seeds).
  next = NextCommand(results.out);
  ASSERT_TRUE(next.has_value()) << results.out;
  EXPECT_THAT(absl::StrJoin(*next, " "),
              HasSubstr(absl::StrCat("seeds add ", id, " --to ")));
  next->push_back("--dry-run");
  const CommandResult checked = cluster_.Run(*next);
  EXPECT_EQ(checked.status, 0) << checked.err << results.out;
  EXPECT_THAT(checked.out, HasSubstr("nothing stored"));

  // compare and suggest take the id positionally too.
  const CommandResult compare = cluster_.Run({"compare", id, "4x6", "2x3,4x3"});
  ASSERT_EQ(compare.status, 0) << compare.err;
  EXPECT_EQ(cluster_.Run({"compare", "--experiment", id, "4x6", "2x3,4x3"}).out,
            compare.out);
  const CommandResult suggest = cluster_.Run({"suggest", id, "--n", "2"});
  const CommandResult suggest_flag =
      cluster_.Run({"suggest", "--experiment", id, "--n", "2"});
  EXPECT_EQ(suggest.status, suggest_flag.status) << suggest.err;
  EXPECT_EQ(suggest.out, suggest_flag.out);
  EXPECT_THAT(suggest.err, Not(HasSubstr("give the experiment")));
  const CommandResult differ =
      cluster_.Run({"results", id, "--experiment", "99"});
  EXPECT_EQ(differ.status, 2);
  EXPECT_THAT(differ.err, HasSubstr("differ: give the id once"));
}

TEST_F(SeedsCommandTest, BadInputExitsTwoNamingTheProblemWithNothingAdded) {
  const std::string id = absl::StrCat(id_);
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"seeds", "add", id}, 2, "--count N, --to N or --seeds 4,5"},
      {{"seeds", "add", id, "--count", "1", "--to", "3"},
       2,
       "give one of them"},
      {{"seeds", "add", id, "--seeds", "1"},
       2,
       "seeds[0]: the experiment already has seed 1"},
      {{"seeds", "add", id, "--seeds", "4,4"}, 2, "seed 4 is listed twice"},
      {{"seeds", "add", id, "--to", "1"}, 2, "to_seeds: 1 is not above"},
      {{"seeds", "add", id, "--count", "1", "--schedules", "2x2,2x2,2x2"},
       2,
       "is not a schedule this experiment trained"},
      {{"seeds", "add", id, "--to", "65"}, 1, "limit 64 seeds per schedule"},
      {{"seeds", "add", "99", "--count", "1"}, 2, "99"},
  };
  for (const Case& c : cases) {
    const CommandResult r = cluster_.Run(c.args);
    const std::string command = absl::StrJoin(c.args, " ");
    EXPECT_EQ(r.status, c.status) << command << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << command;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1)
        << "one line: " << r.err;
  }
  EXPECT_EQ(Attempts().size(), 5u);

  // A dry run says what it would queue and stores nothing.
  const CommandResult dry =
      cluster_.Run({"seeds", "add", id, "--count", "1", "--dry-run"});
  ASSERT_EQ(dry.status, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("would queue 5 trials (seed 2 on 5 "
                                 "schedules); reuses 5 finished trials"));
  EXPECT_THAT(dry.out, HasSubstr("nothing stored"));
  EXPECT_EQ(Attempts().size(), 5u);

  // --format json is the response; --schedules narrows (the baseline always
  // gets the seeds).
  const CommandResult json =
      cluster_.Run({"seeds", "add", id, "--seeds", "5", "--schedules",
                    "2x3,4x3", "--format", "json"});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"trialsCreated\": 2"));
  EXPECT_THAT(json.out, HasSubstr("\"seedsAdded\""));
  EXPECT_THAT(json.out, HasSubstr("\"5\""));
  WaitDone();
  EXPECT_EQ(Attempts().size(), 7u);
}

// Every schedule of the tiny preset's space (d_model 128, 6 layers, 4 base
// heads), the baseline last: a fixture of them all replays whatever
// `prism suggest` proposes.
const std::vector<std::string> kSpace = {
    "1x5,4x1",     "1x4,2x1,4x1", "1x4,4x2",     "1x3,2x2,4x1", "1x3,2x1,4x2",
    "1x3,4x3",     "1x2,2x3,4x1", "1x2,2x2,4x2", "1x2,2x1,4x3", "1x2,4x4",
    "1x1,2x4,4x1", "1x1,2x3,4x2", "1x1,2x2,4x3", "1x1,2x1,4x4", "1x1,4x5",
    "2x5,4x1",     "2x4,4x2",     "2x3,4x3",     "2x2,4x4",     "2x1,4x5",
    "4x6"};

TEST(SuggestTrainTest, TrainsTheSuggestionsInTheSameExperiment) {
  LocalCluster cluster;
  const std::string fixture = cluster.dir() + "/space.replay";
  WriteFile(fixture, TinyReplayFixture(kSpace, {1}, ValLoss));
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.StartWorker({"--replay", fixture}).ok());
  std::string spec = R"pb(
    name: "suggest"
    model { preset: "tiny" }
    budget { steps: 40 eval_every: 10 log_every: 5 }
    seeds: [ 1 ]
  )pb";
  for (int i = 0; i < 8; ++i) {
    absl::StrAppend(&spec, "schedules: \"", kSpace[i], "\"\n");
  }
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(spec);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Seconds(60));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  ASSERT_EQ(done->counts().completed(), 9) << cluster.Logs();

  const CommandResult r =
      cluster.Run({"suggest", absl::StrCat(*id), "--n", "2", "--train"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("queued 2 trials (2 schedules on every seed); "
                               "reused 9 finished trials"));
  done = cluster.WaitForExperiment(*id, absl::Seconds(60));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(done->counts().completed(), 11) << cluster.Logs();
  // The two new schedules are the suggested ones, each trained once.
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 11u);
  for (size_t i = 9; i < trials->size(); ++i) {
    const v1::Trial& t = (*trials)[i];
    EXPECT_THAT(r.out, HasSubstr(t.schedule()));
    EXPECT_EQ(t.attempt(), 1) << t.schedule();
  }
}

}  // namespace
}  // namespace prism::testing
