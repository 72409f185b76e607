// `prism plan`: the bill before the spend (server/core/experiments/plan.h). The
// paper's 124M example is 39 trials and 195,000 steps and, on the byte-level
// demo corpus, warns about its vocabulary; and a plan made after a finished
// replay experiment matches what that experiment trained and the worker time it
// took, within 25%, from the throughput the coordinator measured.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"
#include "tests/cli/replay_fixture.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

void ExpectFitsHundredColumns(const std::string& text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    EXPECT_LE(line.size(), 100u) << line;
  }
}

// examples/tiny_grid.textproto's header says what the file queues: the
// five schedules of tiny's principled grid (the baseline included) on one
// seed, 200 steps each.
TEST(PlanCommandTest, TinyGridsHeaderSaysWhatItQueues) {
  LocalCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  const std::string example =
      std::string(PRISM_SOURCE_DIR) + "/examples/tiny_grid.textproto";
  const std::string text = ReadFile(example);
  EXPECT_THAT(text, HasSubstr("the five\n# schedules (the baseline "
                              "included) that hold all three design "
                              "principles"));
  EXPECT_THAT(text, HasSubstr("on one seed for 200 steps"));
  CommandResult plan = cluster.Run({"plan", example});
  ASSERT_EQ(plan.status, 0) << plan.err;
  EXPECT_THAT(plan.out, StartsWith("plan: 5 trials"));
  EXPECT_THAT(plan.out, HasSubstr("200 steps each"));
  EXPECT_THAT(plan.out, HasSubstr("5 trials queued now, 1 seed each"));
}

TEST(PlanCommandTest, Paper124mNamesItsTrialsStepsAndTheVocabularyWarning) {
  // The example's shards are relative to the working directory, which must
  // lie under a data root; they are not there, which the plan says.
  CoordinatorFlags flags;
  flags.args = {"--data-root", std::filesystem::current_path().string()};
  LocalCluster cluster(flags);
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  const std::string example =
      std::string(PRISM_SOURCE_DIR) + "/examples/paper_124m.textproto";
  CommandResult plan = cluster.Run({"plan", example});
  ASSERT_EQ(plan.status, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("plan: 39 trials"));
  EXPECT_THAT(plan.out, HasSubstr("195,000 expected"));
  EXPECT_THAT(plan.out, HasSubstr("524,288 a step"));
  EXPECT_THAT(plan.out, HasSubstr("124.5M parameters"));
  EXPECT_THAT(plan.out, HasSubstr("worker-hours expected"));
  EXPECT_THAT(plan.out, HasSubstr("train shards not read here"));
  EXPECT_THAT(plan.out, HasSubstr("nothing submitted"));
  ExpectFitsHundredColumns(plan.out);

  // The same spec on the built-in demo corpus (its data block removed), as
  // the issue submitted it: the vocabulary warning.
  std::string text = ReadFile(example);
  const size_t data = text.find("\ndata {");
  ASSERT_NE(data, std::string::npos);
  text.erase(data, text.find("\n}\n", data) + 2 - data);
  const std::string demo = cluster.dir() + "/paper_124m_demo.textproto";
  WriteFile(demo, text);
  CommandResult on_demo = cluster.Run({"plan", demo});
  ASSERT_EQ(on_demo.status, 0) << on_demo.err;
  EXPECT_THAT(on_demo.out, HasSubstr("plan: 39 trials"));
  EXPECT_THAT(on_demo.out, HasSubstr("195,000 expected"));
  EXPECT_THAT(on_demo.out,
              HasSubstr("warning: the corpus is byte-level (token ids < 256) "
                        "but the model's vocabulary is 50,304"));
  EXPECT_THAT(on_demo.out, HasSubstr("99.5% of"));
  ExpectFitsHundredColumns(on_demo.out);

  // JSON carries the same bill.
  CommandResult json = cluster.Run({"plan", demo, "--format", "json"});
  ASSERT_EQ(json.status, 0) << json.err;
  v1::SubmitResponse response;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(json.out, &response).ok())
      << json.out;
  EXPECT_EQ(response.plan().trials(), 39);
  EXPECT_DOUBLE_EQ(response.plan().steps(), 195000);
  EXPECT_EQ(response.plan().parameters(), 124475904);
  EXPECT_EQ(response.plan().warnings_size(), response.plan().corpus_tokens() > 0
                                                 ? 2  // and its epochs
                                                 : 1);
  // A plan stores nothing.
  CommandResult status = cluster.Run({"status"});
  EXPECT_THAT(status.out, HasSubstr("no experiments yet"));
}

// The tiny preset's principled grid, 40 steps, val every 10, one seed.
const char kSpec[] = R"pb(
  name: "billed"
  model { preset: "tiny" }
  budget { steps: 40 eval_every: 10 log_every: 5 }
  principles: [ PRINCIPLE_SMOOTH, PRINCIPLE_BASELINE, PRINCIPLE_POW2 ]
  seeds: [ 1 ]
)pb";
const std::vector<std::string>& kSchedules = kTinyPrincipledSchedules;

// A replay worker paced at kStepsPerSecond trains kTokensPerStep (tiny: 16
// sequences of 128 tokens) each step, so it reports what it took.
constexpr int kStepsPerSecond = 20;
constexpr double kTokensPerStep = 16 * 128;

TEST(PlanCommandTest, EstimateMatchesAFinishedReplayExperimentWithin25Percent) {
  LocalCluster cluster;
  const std::string fixture = cluster.dir() + "/grid.replay";
  WriteFile(fixture, TinyReplayFixture(
                         kSchedules, {1},
                         [](int index, int64_t, int64_t step) {
                           return static_cast<float>(5.0 - 0.01 * index * step);
                         },
                         kStepsPerSecond * kTokensPerStep));
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(cluster
                    .StartWorker({"--replay", fixture, "--replay-speed",
                                  absl::StrCat(kStepsPerSecond)})
                    .ok());
  }
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(kSpec);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Seconds(60));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  ASSERT_EQ(done->counts().completed(), 5) << cluster.Logs();

  // What it trained, and the worker time its attempts held.
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  double steps = 0.0;
  double worker_seconds = 0.0;
  for (const v1::Trial& t : *trials) {
    absl::StatusOr<v1::GetTrialResponse> full = cluster.GetTrial(t.id());
    ASSERT_TRUE(full.ok()) << full.status();
    steps += static_cast<double>(full->trial().metrics().steps());
    for (const v1::TrialAttempt& a : full->trial().attempts()) {
      ASSERT_GT(a.ended_unix_ms(), 0);
      worker_seconds += (a.ended_unix_ms() - a.started_unix_ms()) / 1000.0;
    }
  }

  // The same spec planned again.
  const std::string path = cluster.dir() + "/again.textproto";
  WriteFile(path, kSpec);
  CommandResult json = cluster.Run({"plan", path, "--format", "json"});
  ASSERT_EQ(json.status, 0) << json.err;
  v1::SubmitResponse response;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(json.out, &response).ok())
      << json.out;
  const v1::PlanEstimate& plan = response.plan();
  EXPECT_THAT(plan.throughput_source(),
              StartsWith("measured: median of 5 finished trials"));
  EXPECT_NEAR(plan.steps(), steps, 0.25 * steps);
  EXPECT_NEAR(plan.tokens(), steps * kTokensPerStep,
              0.25 * steps * kTokensPerStep);
  EXPECT_NEAR(plan.worker_hours() * 3600.0, worker_seconds,
              0.25 * worker_seconds)
      << "planned " << plan.worker_hours() * 3600.0 << " s, held "
      << worker_seconds << " s";
  RecordProperty("planned_worker_seconds",
                 absl::StrCat(plan.worker_hours() * 3600.0));
  RecordProperty("held_worker_seconds", absl::StrCat(worker_seconds));

  // The text form says where the throughput comes from.
  CommandResult text = cluster.Run({"plan", path});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("(measured:"));
  EXPECT_THAT(text.out, HasSubstr("median of 5 finished trials"));
  ExpectFitsHundredColumns(text.out);
  // A real submit prints the bill in one line.
  CommandResult submitted = cluster.Run({"submit", path});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_THAT(submitted.out,
              HasSubstr("bill: 200 steps (100.0% of the grid's)"));
  EXPECT_THAT(submitted.out,
              ::testing::ContainsRegex("worker-(hours|minutes|seconds) "
                                       "\\(measured\\)"));
}

}  // namespace
}  // namespace prism::testing
