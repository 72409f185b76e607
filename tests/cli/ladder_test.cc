// The ladder strategy end to end (issue #30): a known-truth experiment at
// two sizes (scheduler/simulate/known_truth.h's GenerateSecondSize, with a
// chosen transfer correlation) replayed through a real coordinator and `prism
// worker --replay` workers holding both sizes' fixtures. Rung 1 runs its
// grid, the coordinator carries the best-set and the controls up, rung 2
// trains exactly those, and `prism results --ladder` measures the transfer.
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/known_truth_replay.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "scheduler/simulate/known_truth.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/profile.h"
#include "scheduler/space/schedule.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kTopK = 6;

// Sizes is the two sizes of one known truth.
struct Sizes {
  KnownTruth small;
  KnownTruth large;
};

// MakeSizes draws the smooth structure (120 schedules of d_model 64, 8
// layers) at `noise_sd` and its second size, twice as wide.
Sizes MakeSizes(double correlation, double noise_sd = 0.006) {
  KnownTruthSpec spec;
  spec.noise_sd = noise_sd;
  spec.structure = TruthStructure::kSmooth;
  spec.steps = 40;
  spec.eval_every = 20;
  spec.curves = true;
  spec.seed = 30;
  absl::StatusOr<KnownTruth> small = GenerateKnownTruth(spec);
  EXPECT_TRUE(small.ok()) << small.status();
  TransferTruthSpec second;
  second.second = spec;
  second.second.space = {128, 8, 16, {}, kDefaultMinRun, kDefaultMaxRun};
  second.second.seed = 31;
  second.correlation = correlation;
  absl::StatusOr<KnownTruth> large = GenerateSecondSize(*small, second);
  EXPECT_TRUE(large.ok()) << large.status();
  return {*small, *large};
}

// ShapeOf is the tiny preset at the space's shape, as the specs say.
ModelShape ShapeOf(const SpaceSpec& space) {
  ModelShape shape = *FindPreset("tiny");
  shape.d_model = space.d_model;
  shape.layers = space.layers;
  shape.base_heads = space.base_heads;
  shape.context = 32;
  return shape;
}

std::string ModelText(const KnownTruth& t) {
  return absl::StrCat(
      "model { preset: \"tiny\" d_model: ", t.spec.space.d_model,
      " layers: ", t.spec.space.layers,
      " base_heads: ", t.spec.space.base_heads, " context: 32 }");
}

std::string LadderSpec(const Sizes& sizes, int top_k = kTopK) {
  const KnownTruthSpec& s = sizes.small.spec;
  return absl::StrCat("name: \"ladder\"\nbudget { steps: ", s.steps,
                      " eval_every: ", s.eval_every,
                      " log_every: ", s.eval_every,
                      " }\nseeds: [1, 2, 3]\nladder {\n  rungs { ",
                      ModelText(sizes.small), " }\n  rungs { ",
                      ModelText(sizes.large), " }\n  top_k: ", top_k, "\n}\n");
}

// StartLadderCluster writes both sizes' fixtures, starts the coordinator
// (with `env`) and two workers serving both.
void StartLadderCluster(const Sizes& sizes, LocalCluster& cluster,
                        const std::vector<std::string>& env = {}) {
  std::vector<std::string> args;
  int i = 0;
  for (const KnownTruth* t : {&sizes.small, &sizes.large}) {
    absl::StatusOr<std::string> replay =
        bench::KnownTruthReplay(*t, bench::KnownTruthSpecText(*t));
    ASSERT_TRUE(replay.ok()) << replay.status();
    const std::string path =
        absl::StrCat(cluster.dir(), "/size", ++i, ".replay");
    WriteFile(path, *replay);
    args.push_back("--replay");
    args.push_back(path);
  }
  ASSERT_TRUE(cluster.StartCoordinator(env).ok()) << cluster.Logs();
  for (int w = 0; w < 2; ++w) {
    ASSERT_TRUE(cluster.StartWorker(args).ok()) << cluster.Logs();
  }
}

absl::StatusOr<v1::LadderTransferResponse> Ladder(LocalCluster& cluster,
                                                  int64_t id) {
  v1::LadderTransferRequest request;
  request.set_experiment_id(id);
  v1::LadderTransferResponse response;
  absl::Status s =
      cluster.client().Call(&v1::ResultsService::Stub::LadderTransfer,
                            cluster.client().results(), request, &response);
  if (!s.ok()) return s;
  return response;
}

// CountExperiments is how many experiments the coordinator holds (-1 when
// it cannot list them).
int CountExperiments(LocalCluster& cluster) {
  v1::ListExperimentsResponse all;
  if (!cluster.client()
           .Call(&v1::ExperimentService::Stub::List,
                 cluster.client().experiments(), v1::ListExperimentsRequest(),
                 &all)
           .ok()) {
    return -1;
  }
  return all.experiments_size();
}

// WaitForRung polls until the ladder has its second rung stored; returns
// its experiment id.
absl::StatusOr<int64_t> WaitForRung2(LocalCluster& cluster, int64_t id) {
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (absl::Now() < deadline) {
    absl::StatusOr<v1::LadderTransferResponse> l = Ladder(cluster, id);
    if (l.ok() && l->rungs_size() == 2) return l->rungs(1).id();
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(cluster.Logs());
}

// RunLadder submits the ladder and waits for both rungs; returns the
// `prism results --ladder` JSON, parsed.
v1::LadderTransferResponse RunLadder(const Sizes& sizes, LocalCluster& cluster,
                                     int64_t* rung1, int64_t* rung2,
                                     int top_k = kTopK) {
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(LadderSpec(sizes, top_k));
  EXPECT_TRUE(id.ok()) << id.status();
  *rung1 = *id;
  absl::StatusOr<int64_t> next = WaitForRung2(cluster, *id);
  EXPECT_TRUE(next.ok()) << next.status();
  *rung2 = *next;
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*next, absl::Seconds(120));
  EXPECT_TRUE(done.ok()) << done.status() << cluster.Logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE);
  const CommandResult json = cluster.Run(
      {"results", "--ladder", absl::StrCat(*next), "--format", "json"});
  EXPECT_EQ(json.status, 0) << json.err;
  v1::LadderTransferResponse response;
  EXPECT_TRUE(
      google::protobuf::util::JsonStringToMessage(json.out, &response).ok())
      << json.out;
  return response;
}

// Seed noise attenuates a correlation (docs/ladder.md): at half the default
// noise the carried schedules' ranking is read, not guessed.
TEST(LadderTest, CarriesTheBestSetAndControlsAndMeasuresAFullTransfer) {
  const Sizes sizes = MakeSizes(1.0, /*noise_sd=*/0.003);
  LocalCluster cluster;
  StartLadderCluster(sizes, cluster);
  int64_t rung1 = 0;
  int64_t rung2 = 0;
  const v1::LadderTransferResponse ladder =
      RunLadder(sizes, cluster, &rung1, &rung2);

  // Rung 2 trains exactly the carried schedules' images and the baseline.
  absl::StatusOr<v1::Experiment> second =
      cluster.WaitForExperiment(rung2, absl::Seconds(5));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->ladder_id(), rung1);
  EXPECT_EQ(second->ladder_rung(), 1);
  // Named after the ladder, not after rung 1's experiment.
  EXPECT_TRUE(absl::StartsWith(second->spec().name(), "ladder [rung 2/2: "))
      << second->spec().name();
  v1::RankRequest rank_request;
  rank_request.set_experiment_id(rung1);
  v1::RankResponse rank;
  ASSERT_TRUE(cluster.client()
                  .Call(&v1::ResultsService::Stub::Rank,
                        cluster.client().results(), rank_request, &rank)
                  .ok());
  std::set<std::string> best_set;
  std::vector<std::string> ranked;  // with a verdict, by mean delta
  for (const v1::RankedSchedule& r : rank.schedules()) {
    if (r.is_baseline()) continue;
    if (r.in_best_set()) best_set.insert(r.schedule());
    if (r.verdict() != v1::VERDICT_NEEDS_SEEDS) ranked.push_back(r.schedule());
  }
  ASSERT_FALSE(best_set.empty());
  std::set<std::string> expected_images;
  int best_carried = 0;
  std::set<std::string> roles;
  const ModelShape from = ShapeOf(sizes.small.spec.space);
  const ModelShape to = ShapeOf(sizes.large.spec.space);
  for (const v1::LadderCarried& c : second->spec().ladder_carried()) {
    roles.insert(c.role());
    if (c.role() == "best-set") {
      ++best_carried;
      EXPECT_EQ(best_set.count(c.source()), 1u) << c.source();
    }
    if (c.role() == "worst") EXPECT_EQ(c.source(), ranked.back());
    if (c.role() == "median") {
      EXPECT_EQ(c.source(), ranked[(ranked.size() - 1) / 2]);
    }
    if (c.role() == "baseline") {
      EXPECT_EQ(c.schedule(), sizes.large.baseline);
    } else {
      absl::StatusOr<ScheduleMapping> m =
          MapSchedule(*ParseSchedule(c.source()), from, to);
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_EQ(m->mapped.ToString(), c.schedule());
    }
    expected_images.insert(c.schedule());
  }
  EXPECT_EQ(best_carried,
            std::min<int>(kTopK, static_cast<int>(best_set.size())));
  EXPECT_EQ(roles,
            (std::set<std::string>{"best-set", "worst", "median", "baseline"}));
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(rung2);
  ASSERT_TRUE(trials.ok()) << trials.status();
  std::set<std::string> trained;
  for (const v1::Trial& t : *trials) trained.insert(t.schedule());
  EXPECT_EQ(trained, expected_images);
  EXPECT_EQ(trials->size(), 3 * expected_images.size());

  // The transfer: a correlation of 1 in truth reads near 1.
  ASSERT_EQ(ladder.pairs_size(), 1);
  const v1::LadderPair& pair = ladder.pairs(0);
  EXPECT_EQ(pair.note(), "");
  // The statistics leave the baseline out; the points end with it.
  EXPECT_EQ(pair.schedules(), static_cast<int>(expected_images.size()) - 1);
  EXPECT_GT(pair.spearman().estimate(), 0.8) << ladder.DebugString();
  EXPECT_GT(pair.kendall().estimate(), 0.6) << ladder.DebugString();
  EXPECT_LE(pair.spearman().low(), pair.spearman().estimate());
  EXPECT_GE(pair.spearman().high(), pair.spearman().estimate());
  EXPECT_EQ(pair.points_size(), pair.schedules() + 1);
  for (const v1::LadderPoint& p : pair.points()) {
    if (p.role() == "baseline") {
      EXPECT_EQ(p.small_delta(), 0.0);
      EXPECT_EQ(p.large_delta(), 0.0);
    }
  }

  // The table and the status line.
  const CommandResult table =
      cluster.Run({"results", "--ladder", absl::StrCat(rung1)});
  EXPECT_EQ(table.status, 0) << table.err;
  std::cout << table.out;  // the numbers, for the record
  EXPECT_THAT(table.out, HasSubstr("spearman [95% CI]"));
  EXPECT_THAT(table.out, HasSubstr("1->2"));
  const CommandResult status = cluster.Run({"status", absl::StrCat(rung1)});
  EXPECT_THAT(status.out, HasSubstr(absl::StrCat(
                              "rung 2 submitted as experiment ", rung2)));
}

// The interval is over seeds for the carried schedules, so at no transfer
// it covers 0 when they are many and seed noise is real: noise of 2/3 of the
// effect leaves a large best-set, and top_k 20 carries 20 of it.
TEST(LadderTest, NoTransferGivesAnIntervalCoveringZero) {
  const Sizes sizes = MakeSizes(0.0, /*noise_sd=*/0.02);
  LocalCluster cluster;
  StartLadderCluster(sizes, cluster);
  int64_t rung1 = 0;
  int64_t rung2 = 0;
  const v1::LadderTransferResponse ladder =
      RunLadder(sizes, cluster, &rung1, &rung2, /*top_k=*/20);
  ASSERT_EQ(ladder.pairs_size(), 1);
  const v1::LadderPair& pair = ladder.pairs(0);
  EXPECT_EQ(pair.note(), "");
  EXPECT_LE(pair.spearman().low(), 0.0) << ladder.DebugString();
  EXPECT_GE(pair.spearman().high(), 0.0) << ladder.DebugString();
  EXPECT_GE(pair.schedules(), 20) << ladder.DebugString();
  std::cout << cluster.Run({"results", "--ladder", absl::StrCat(rung1)}).out;
}

// A coordinator killed right after storing rung 2 (before noting it) or
// right before storing it submits rung 2 exactly once after its restart.
void ExpectRestartSubmitsOnce(const std::string& failpoint) {
  const Sizes sizes = MakeSizes(1.0);
  LocalCluster cluster;
  StartLadderCluster(sizes, cluster,
                     {absl::StrCat("PRISM_FAILPOINTS=", failpoint)});
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(LadderSpec(sizes));
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<int> exit = cluster.coordinator().Wait(absl::Seconds(120));
  ASSERT_TRUE(exit.ok()) << exit.status() << cluster.Logs();
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  absl::StatusOr<int64_t> rung2 = WaitForRung2(cluster, *id);
  ASSERT_TRUE(rung2.ok()) << rung2.status();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*rung2, absl::Seconds(120));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE);
  // Exactly two experiments exist: the ladder's two rungs.
  EXPECT_EQ(CountExperiments(cluster), 2);
  absl::StatusOr<v1::Experiment> first =
      cluster.WaitForExperiment(*id, absl::Seconds(5));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->ladder_note(),
            absl::StrCat("rung 2 submitted as experiment ", *rung2));
  const CommandResult check = cluster.CheckDb();
  EXPECT_EQ(check.status, 0) << check.out << check.err;
}

TEST(LadderTest, RestartAfterTheNextRungIsStoredSubmitsItOnce) {
  ExpectRestartSubmitsOnce("ladder.submitted");
}

TEST(LadderTest, RestartBeforeTheNextRungIsStoredSubmitsItOnce) {
  ExpectRestartSubmitsOnce("ladder.rung_done");
}

// One seed leaves every schedule without 2 paired seeds: rung 1's best-set
// is empty, and the ladder stops there, saying why, instead of carrying
// nothing up.
TEST(LadderTest, AnEmptyBestSetStopsTheLadderNamingTheSizeAndWhy) {
  const Sizes sizes = MakeSizes(1.0, 0.003);
  LocalCluster cluster;
  StartLadderCluster(sizes, cluster);
  std::string spec = LadderSpec(sizes);
  const std::string three = "seeds: [1, 2, 3]";
  ASSERT_NE(spec.find(three), std::string::npos);
  spec.replace(spec.find(three), three.size(), "seeds: [1]");
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(spec);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Seconds(120));
  ASSERT_TRUE(done.ok()) << done.status();
  // The advance follows the last finished trial: wait for its note.
  std::string note;
  int rungs = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (note.empty() && absl::Now() < deadline) {
    absl::StatusOr<v1::LadderTransferResponse> l = Ladder(cluster, *id);
    ASSERT_TRUE(l.ok()) << l.status();
    rungs = l->rungs_size();
    note = l->rungs(0).ladder_note();
    if (note.empty()) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(rungs, 1);
  EXPECT_THAT(note, HasSubstr("FAILED_PRECONDITION: the ladder stops at "
                              "rung 1 ("));
  EXPECT_THAT(note, HasSubstr("best-set is empty"));
  EXPECT_THAT(note, HasSubstr("rung 2 ("));
  const CommandResult shown =
      cluster.Run({"results", "--ladder", absl::StrCat(*id)});
  EXPECT_THAT(shown.out + shown.err, HasSubstr("the ladder stops at rung 1"));
  // Nothing was submitted for rung 2.
  EXPECT_EQ(CountExperiments(cluster), 1);
}

TEST(LadderTest, BadLaddersAreRefusedNamingTheField) {
  LocalCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  const std::string tiny = "rungs { model { preset: \"tiny\" } }";
  const std::string small = "rungs { model { preset: \"small\" } }";
  struct Case {
    std::string ladder;
    std::string message;
  };
  const std::vector<Case> cases = {
      {absl::StrCat(small, " ", tiny),
       "ladder.rungs[1].model: sizes must grow"},
      {tiny, "ladder.rungs: a ladder needs at least 2 rungs"},
      {absl::StrCat(tiny, " rungs {}"), "ladder.rungs[1].model: required"},
      {absl::StrCat(tiny, " ", small, " top_k: 0"), "ladder.top_k"},
      {absl::StrCat(tiny, " ", small.substr(0, small.size() - 1),
                    " strategy: STRATEGY_ASHA }"),
       "ladder.rungs[1].strategy"},
  };
  for (const Case& c : cases) {
    const std::string spec = absl::StrCat(
        "name: \"bad\" seeds: [1, 2] budget { steps: 20 } ladder { ", c.ladder,
        " }\n");
    WriteFile(cluster.dir() + "/bad.textproto", spec);
    const CommandResult r =
        cluster.Run({"submit", cluster.dir() + "/bad.textproto"});
    EXPECT_EQ(r.status, 2) << spec << r.out;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << spec;
  }
}

}  // namespace
}  // namespace prism::testing
