// End to end with real processes on loopback: `prism submit` a tiny grid, two
// `prism worker`s train it, and the ranking comes back over RPC and through
// `prism results`, `prism status`, `prism trial` and `prism workers`.
#include <csignal>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

constexpr int kSteps = 20;

// Every experiment here: the tiny preset, kSteps steps, a train point per
// step, a val point every 10.
const char kTinyBudget[] = R"pb(
  model { preset: "tiny" }
  budget {
    steps: 20
    batch_size: 4
    eval_every: 10
    eval_batches: 2
    log_every: 1
    checkpoint_every: 10
  }
)pb";

// The tiny preset's principled grid: 4 Prism schedules plus the baseline.
const char kTinyGrid[] = R"pb(
  name: "e2e tiny grid"
  principles: [ PRINCIPLE_SMOOTH, PRINCIPLE_BASELINE, PRINCIPLE_POW2 ]
  seeds: 1
)pb";

TEST(EndToEndTest, SubmitTrainAndRankWithTwoWorkers) {
  LocalCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  ASSERT_TRUE(cluster.StartWorker().ok());
  ASSERT_TRUE(cluster.StartWorker().ok());

  absl::StatusOr<int64_t> id =
      cluster.SubmitSpec(std::string(kTinyBudget) + kTinyGrid);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(done->counts().total(), 5);
  EXPECT_EQ(done->counts().completed(), 5) << cluster.Logs();

  // Every trial's curve: train steps 1..N and val steps 0, 10, 20, once each;
  // both workers took part.
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  std::set<std::string> workers;
  for (const v1::Trial& t : *trials) {
    absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(t.id());
    ASSERT_TRUE(trial.ok()) << trial.status();
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_TRAIN), Range(1, kSteps))
        << t.schedule();
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_VAL), Range(0, kSteps, 10))
        << t.schedule();
    EXPECT_GT(trial->trial().metrics().final_val_loss(), 0.0);
    EXPECT_EQ(trial->trial().metrics().steps(), kSteps);
    workers.insert(trial->trial().worker_id());
  }
  EXPECT_EQ(workers.size(), 2u) << "both workers should have trained";

  // The ranking over RPC.
  v1::RankRequest rank;
  rank.set_experiment_id(*id);
  v1::RankResponse ranked;
  ASSERT_TRUE(cluster.client()
                  .Call(&v1::ResultsService::Stub::Rank,
                        cluster.client().results(), rank, &ranked)
                  .ok());
  std::vector<std::string> schedules;
  for (const v1::RankedSchedule& r : ranked.schedules()) {
    schedules.push_back(r.schedule());
    EXPECT_EQ(r.seeds_completed(), 1);
  }
  EXPECT_THAT(schedules, UnorderedElementsAre("4x6", "1x2,4x4", "2x2,4x4",
                                              "1x3,4x3", "2x3,4x3"));
  EXPECT_EQ(ranked.baseline().schedule(), "4x6");

  // The same ranking through `prism results --format json` is the protobuf
  // JSON mapping of the response.
  CommandResult json = cluster.Run(
      {"results", "--experiment", std::to_string(*id), "--format", "json"});
  ASSERT_EQ(json.status, 0) << json.err;
  v1::RankResponse parsed;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(json.out, &parsed).ok())
      << json.out;
  ASSERT_EQ(parsed.schedules_size(), 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(parsed.schedules(i).schedule(), ranked.schedules(i).schedule());
    EXPECT_EQ(parsed.schedules(i).rank(), i + 1);
  }

  CommandResult table =
      cluster.Run({"results", "--experiment", std::to_string(*id)});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("1x2,4x4"));
  EXPECT_THAT(table.out, HasSubstr("principle"));

  CommandResult csv =
      cluster.Run({"results", "--experiment", std::to_string(*id), "--format",
                   "csv", "--require", "smooth", "--limit", "2"});
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3) << csv.out;

  CommandResult status =
      cluster.Run({"status", std::to_string(*id), "--format", "csv"});
  ASSERT_EQ(status.status, 0) << status.err;
  EXPECT_EQ(std::count(status.out.begin(), status.out.end(), '\n'), 6)
      << status.out;
  EXPECT_THAT(status.out, HasSubstr("completed"));

  // `prism compare`: one seed in common, so no interval and no verdict yet.
  CommandResult compare = cluster.Run(
      {"compare", "--experiment", std::to_string(*id), "4x6", "1x2,4x4"});
  ASSERT_EQ(compare.status, 0) << compare.err;
  EXPECT_THAT(compare.out, HasSubstr("needs_seeds"));
  EXPECT_THAT(compare.out, HasSubstr("not adjusted (one planned comparison)"));
  CommandResult compare_json =
      cluster.Run({"compare", "--experiment", std::to_string(*id), "4x6",
                   "1x2,4x4", "--format", "json"});
  ASSERT_EQ(compare_json.status, 0) << compare_json.err;
  v1::CompareResponse compared;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(compare_json.out, &compared)
          .ok())
      << compare_json.out;
  EXPECT_EQ(compared.verdict(), v1::VERDICT_NEEDS_SEEDS);
  EXPECT_EQ(compared.delta().n(), 1);
  CommandResult bad_compare = cluster.Run(
      {"compare", "--experiment", std::to_string(*id), "4x6", "4x"});
  EXPECT_EQ(bad_compare.status, 2);
  EXPECT_EQ(std::count(bad_compare.err.begin(), bad_compare.err.end(), '\n'), 1)
      << bad_compare.err;

  CommandResult list = cluster.Run({"status"});
  ASSERT_EQ(list.status, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("e2e tiny grid"));

  CommandResult trial = cluster.Run(
      {"trial", std::to_string(trials->front().id()), "--format", "csv"});
  ASSERT_EQ(trial.status, 0) << trial.err;
  EXPECT_THAT(trial.out, HasSubstr("split,step,loss"));

  CommandResult fleet = cluster.Run({"workers", "--format", "json"});
  ASSERT_EQ(fleet.status, 0) << fleet.err;
  v1::ListWorkersResponse registered;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(fleet.out, &registered).ok());
  EXPECT_EQ(registered.workers_size(), 2);

  CommandResult watch = cluster.Run({"watch", std::to_string(*id)});
  ASSERT_EQ(watch.status, 0) << watch.err;
  EXPECT_THAT(watch.out, HasSubstr("done"));

  // Workers that exit cleanly say goodbye: stopped, not lost.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(cluster.worker(i).Signal(SIGTERM).ok());
    absl::StatusOr<int> exit = cluster.worker(i).Wait(absl::Seconds(30));
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_EQ(*exit, 0) << cluster.Logs();
  }
  CommandResult stopped = cluster.Run({"workers"});
  ASSERT_EQ(stopped.status, 0) << stopped.err;
  EXPECT_THAT(stopped.out, HasSubstr(" stopped "));
  EXPECT_THAT(stopped.out, Not(HasSubstr(" idle ")));
}

// RunShortExperiment starts the cluster's coordinator and one worker,
// submits kTinyBudget with `fields` and waits until the experiment ends.
absl::StatusOr<v1::Experiment> RunShortExperiment(LocalCluster& cluster,
                                                  const std::string& fields) {
  PRISM_RETURN_IF_ERROR(cluster.StartCoordinator());
  PRISM_RETURN_IF_ERROR(cluster.StartWorker().status());
  PRISM_ASSIGN_OR_RETURN(int64_t id,
                         cluster.SubmitSpec(std::string(kTinyBudget) + fields));
  return cluster.WaitForExperiment(id, absl::Minutes(4));
}

// Over mutual TLS: the worker verifies the coordinator with the CA and
// presents its client certificate; the CLI does both through PRISM_TLS_*.
TEST(EndToEndTest, AnExperimentCompletesOverMutualTls) {
  CoordinatorFlags flags;
  flags.mutual_tls = true;
  LocalCluster cluster(flags);
  absl::StatusOr<v1::Experiment> done = RunShortExperiment(
      cluster, R"pb(
        name: "e2e tls" schedules: "2x2,4x4" seeds: 1
      )pb");
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE) << cluster.Logs();
  EXPECT_EQ(done->counts().total(), 2);
  EXPECT_EQ(done->counts().completed(), 2);
  EXPECT_THAT(ReadFile(cluster.dir() + "/coordinator.log"),
              HasSubstr("tls=mutual"));
  EXPECT_THAT(ReadFile(cluster.dir() + "/worker-0.log"), HasSubstr("tls=on"));
  CommandResult results =
      cluster.Run({"results", "--experiment", std::to_string(done->id())});
  ASSERT_EQ(results.status, 0) << results.err;
  EXPECT_THAT(results.out, HasSubstr("2x2,4x4"));
}

TEST(EndToEndTest, AnAdaptiveExperimentAddsSeedsAndEnds) {
  LocalCluster cluster;
  absl::StatusOr<v1::Experiment> done = RunShortExperiment(cluster, R"pb(
    name: "e2e adaptive"
    schedules: "2x2,4x4"
    seeds_policy { min: 2 max: 3 }
  )pb");
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE) << cluster.Logs();
  // 2 seeds for the schedule and the baseline, and a third for both unless
  // the schedule was resolved on two.
  EXPECT_EQ(done->counts().completed(), done->counts().total());
  EXPECT_EQ(done->counts().total(), 4 + done->seeds_added());
  EXPECT_TRUE(done->seeds_added() == 0 || done->seeds_added() == 2)
      << done->seeds_added();
  EXPECT_THAT(done->seeds_note(), HasSubstr("0 waiting"));

  CommandResult status = cluster.Run({"status", std::to_string(done->id())});
  ASSERT_EQ(status.status, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("adaptive seeds 2..3 per schedule: "));
  EXPECT_THAT(status.out, HasSubstr("last decision: added no seed"));
}

TEST(EndToEndTest, AnAshaSearchPromotesAndResumesFromTheRung) {
  LocalCluster cluster;
  absl::StatusOr<v1::Experiment> done = RunShortExperiment(cluster, R"pb(
    name: "e2e asha"
    principles: [ PRINCIPLE_SMOOTH, PRINCIPLE_BASELINE, PRINCIPLE_POW2 ]
    seeds: 1
    strategy: STRATEGY_ASHA
    asha { rungs: 10 }
  )pb");
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE) << cluster.Logs();
  // The baseline and 4 schedules: under the default synchronous rule,
  // max(1, floor(4 / 3)) = 1 goes on once all four have reached the rung.
  EXPECT_EQ(done->counts().total(), 5);
  absl::StatusOr<std::vector<v1::Trial>> trials =
      cluster.ListTrials(done->id());
  ASSERT_TRUE(trials.ok()) << trials.status();
  int promoted = 0;
  for (const v1::Trial& t : *trials) {
    if (t.state() == v1::TRIAL_STOPPED_AT_RUNG) {
      CommandResult shown = cluster.Run({"trial", std::to_string(t.id())});
      ASSERT_EQ(shown.status, 0) << shown.err;
      EXPECT_THAT(shown.out, HasSubstr("stopped at the ASHA rung at step 10"));
    }
    if (t.is_baseline() || t.state() != v1::TRIAL_COMPLETED) continue;
    ++promoted;
    absl::StatusOr<v1::GetTrialResponse> full = cluster.GetTrial(t.id());
    ASSERT_TRUE(full.ok()) << full.status();
    ASSERT_EQ(full->trial().attempts_size(), 2) << cluster.Logs();
    EXPECT_EQ(full->trial().attempts(0).outcome(), v1::TRIAL_STOPPED_AT_RUNG);
    EXPECT_EQ(full->trial().attempts(0).resumed_from_step(), 0);
    EXPECT_EQ(full->trial().attempts(1).resumed_from_step(), 10)
        << cluster.Logs();
    EXPECT_EQ(full->trial().metrics().steps(), kSteps);
  }
  EXPECT_EQ(promoted, 1);
  EXPECT_EQ(done->counts().completed(), 1 + promoted);
  EXPECT_EQ(done->counts().stopped_at_rung(), 4 - promoted);

  CommandResult status = cluster.Run({"status", std::to_string(done->id())});
  ASSERT_EQ(status.status, 0) << status.err;
  EXPECT_THAT(status.out,
              HasSubstr(absl::StrCat(
                  "asha: rungs at steps 10 (eta 3, ASHA_MODE_SYNCHRONOUS); ",
                  4 - promoted, " trials stopped at a rung")));
  EXPECT_THAT(status.out,
              HasSubstr(absl::StrCat("rung 10: promoted ", promoted,
                                     " / quota 1 / reached 4 of 4 members")));
  EXPECT_THAT(status.out, HasSubstr("steps trained: "));
  CommandResult results =
      cluster.Run({"results", "--experiment", std::to_string(done->id())});
  ASSERT_EQ(results.status, 0) << results.err;
  EXPECT_THAT(results.out, HasSubstr("ASHA rungs"));
  EXPECT_THAT(results.out, HasSubstr("paired delta"));
  CommandResult check = cluster.CheckDb();
  EXPECT_EQ(check.status, 0) << check.out << check.err;
}

TEST(EndToEndTest, AGuidedSearchEndsAtItsBudgetAndSuggestsTheRest) {
  LocalCluster cluster;
  absl::StatusOr<v1::Experiment> done = RunShortExperiment(cluster, R"pb(
    name: "e2e guided"
    strategy: STRATEGY_GUIDED
    samples: 7
    guided { initial: 5 }
    seeds: 1
  )pb");
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE) << cluster.Logs();
  // The baseline, 5 initial schedules, then a suggestion and an exploration.
  EXPECT_EQ(done->counts().total(), 8);
  EXPECT_EQ(done->counts().completed(), 8);
  EXPECT_EQ(done->seeds_added(), 2);
  EXPECT_THAT(done->seeds_note(), HasSubstr("budget reached"));

  const std::string experiment = std::to_string(done->id());
  CommandResult status = cluster.Run({"status", experiment});
  ASSERT_EQ(status.status, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("guided search: 7 schedules, initial "
                                    "design 5, 2 in flight; 2 trials added"));

  CommandResult suggest =
      cluster.Run({"suggest", "--experiment", experiment, "--n", "3"});
  ASSERT_EQ(suggest.status, 0) << suggest.err;
  EXPECT_THAT(suggest.out, HasSubstr("predicted_delta"));
  EXPECT_THAT(suggest.out, HasSubstr("lower confidence bound"));
  EXPECT_THAT(suggest.out, HasSubstr("fitted on 7 schedules"));
  absl::StatusOr<std::vector<v1::Trial>> trials =
      cluster.ListTrials(done->id());
  ASSERT_TRUE(trials.ok()) << trials.status();
  CommandResult json = cluster.Run({"suggest", "--experiment", experiment,
                                    "--n", "1000", "--format", "json"});
  ASSERT_EQ(json.status, 0) << json.err;
  v1::SuggestResponse all;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &all).ok())
      << json.out;
  // The 21 - 8 untried schedules of the tiny space, none of the tried ones.
  EXPECT_EQ(all.suggestions_size(), 13);
  std::set<std::string> tried;
  for (const v1::Trial& t : *trials) tried.insert(t.schedule());
  EXPECT_EQ(tried.size(), 8u);
  for (const v1::Suggestion& x : all.suggestions()) {
    EXPECT_EQ(tried.count(x.schedule()), 0u) << x.schedule();
  }

  CommandResult bad =
      cluster.Run({"suggest", "--experiment", experiment, "--n", "0"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, HasSubstr("n must be between 1 and 1000 (got 0)"));
  CommandResult unknown = cluster.Run({"suggest", "--experiment", "999"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("not found"));
}

}  // namespace
}  // namespace prism::testing
