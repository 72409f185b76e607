// The bill (server/core/experiments/plan.h): steps and shares per strategy
// counted by hand, FLOPs per token from the formula, tokens from the budget,
// the throughput measured or assumed, and the corpus warnings.
#include "server/core/experiments/plan.h"

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/experiments/spec.h"
#include "tests/testing/temp_dir.h"

namespace prism::server {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

struct Planned {
  v1::ExperimentSpec resolved;
  v1::PlanEstimate plan;
};

// PlanOf resolves `text` as a submit does and bills it.
Planned PlanOf(const std::string& text, const PlanContext& context = {}) {
  Planned out;
  absl::StatusOr<v1::ExperimentSpec> spec = ParseSpecText(text);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return out;
  absl::StatusOr<ExperimentPlan> plan = PlanExperiment(*spec, {});
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return out;
  std::set<std::string> schedules;
  for (const storage::NewTrial& t : plan->trials) schedules.insert(t.schedule);
  out.resolved = plan->spec;
  out.plan = EstimatePlan(plan->spec, static_cast<int64_t>(plan->trials.size()),
                          static_cast<int64_t>(schedules.size()), context);
  return out;
}

// The tiny preset's whole grid: 21 schedules (heads 1, 2, 4 non-decreasing
// over 6 layers, the last 4), the baseline 4x6 among them.
const char kTiny[] = R"pb(
  model { preset: "tiny" }
  budget { steps: 200 eval_every: 20 }
)pb";

TEST(PlanTest, GridIsExactAndCountsTokensAndFlops) {
  const Planned p = PlanOf(std::string(kTiny) + "seeds: [ 1, 2 ]");
  EXPECT_EQ(p.plan.schedules(), 21);
  EXPECT_EQ(p.plan.trials(), 42);
  EXPECT_EQ(p.plan.seeds(), 2);
  EXPECT_DOUBLE_EQ(p.plan.steps(), 42 * 200);
  EXPECT_DOUBLE_EQ(p.plan.max_steps(), 42 * 200);
  EXPECT_DOUBLE_EQ(p.plan.grid_steps(), 42 * 200);
  EXPECT_DOUBLE_EQ(p.plan.expected_share(), 1.0);
  EXPECT_DOUBLE_EQ(p.plan.max_share(), 1.0);
  EXPECT_THAT(p.plan.share_source(), StartsWith("exact"));
  // tiny: batch 16, grad_accum 1, context 128 (the preset's defaults).
  EXPECT_EQ(p.plan.tokens_per_step(), 16 * 128);
  EXPECT_DOUBLE_EQ(p.plan.tokens(), 42.0 * 200 * 2048);
  // d 128, 6 layers: a block is 12 d^2 + 13 d, plus the final norm's 2 d;
  // the token (256 x d) and position (128 x d) tables are the embeddings.
  const double blocks = 6.0 * (12 * 128 * 128 + 13 * 128) + 2 * 128;
  EXPECT_DOUBLE_EQ(p.plan.flops_per_token(),
                   6.0 * blocks + 6.0 * 6 * 128 * 128);
  EXPECT_EQ(p.plan.parameters(),
            static_cast<int64_t>(blocks) + 256 * 128 + 128 * 128);
  EXPECT_DOUBLE_EQ(p.plan.flops(), p.plan.flops_per_token() * p.plan.tokens());
}

TEST(PlanTest, The124mPresetCountsAsThePaperDoes) {
  const Planned p = PlanOf(R"pb(
    model { preset: "124m" }
    budget { steps: 5000 batch_size: 32 grad_accum: 16 }
    principles: [ PRINCIPLE_SMOOTH, PRINCIPLE_BASELINE, PRINCIPLE_POW2 ]
    seeds: [ 1, 2, 3 ]
  )pb");
  EXPECT_EQ(p.plan.trials(), 39);
  EXPECT_DOUBLE_EQ(p.plan.steps(), 195000);
  EXPECT_EQ(p.plan.tokens_per_step(), 524288);
  // 6 x 85,056,000 non-embedding parameters + 6 x 12 x 1024 x 768.
  EXPECT_DOUBLE_EQ(p.plan.flops_per_token(), 566959104.0);
  // nanoGPT's 123,689,472 and the 1024 x 768 position table.
  EXPECT_EQ(p.plan.parameters(), 123689472 + 1024 * 768);
}

TEST(PlanTest, SynchronousAshaIsCountedFromItsRungs) {
  const Planned p = PlanOf(std::string(kTiny) + R"pb(
    seeds: [ 1, 2 ]
    strategy: STRATEGY_ASHA
    asha {
      rungs: [ 40, 100 ]
      eta: 2
    }
  )pb");
  // 20 schedules x 2 seeds to 40, 10 on to 100, 5 on to 200; the baseline
  // 2 x 200. Two seeds: no racing by default.
  const double steps = 20 * 2 * 40 + 10 * 2 * 60 + 5 * 2 * 100 + 2 * 200;
  EXPECT_DOUBLE_EQ(p.plan.steps(), steps);
  EXPECT_DOUBLE_EQ(p.plan.max_steps(), steps);
  EXPECT_DOUBLE_EQ(p.plan.expected_share(), steps / (21 * 2 * 200));
  EXPECT_THAT(p.plan.share_source(), HasSubstr("ASHA synchronous"));
}

TEST(PlanTest, AshaDefaultWithRacingNamesTheBenchmarkFigures) {
  const Planned p = PlanOf(std::string(kTiny) + R"pb(
    seeds: [ 1, 2, 3 ]
    strategy: STRATEGY_ASHA
  )pb");
  // The staged default: one seed to 140 (70%), the best 20 / 5 = 4 on to
  // 200 on every seed, the baseline 3 x 200.
  const double asha = 20 * 140 + 4 * (60 + 2 * 200) + 3 * 200;
  const double grid = 21 * 3 * 200;
  // Racing: at most 10% of the grid's steps (below 21 x 9 more seeds x 200).
  const double racing = 0.1 * grid;
  EXPECT_NEAR(p.plan.max_steps(), asha + racing, 1e-6);
  EXPECT_NEAR(p.plan.steps(), asha + 0.85 * racing, 1e-6);
  EXPECT_THAT(p.plan.share_source(),
              HasSubstr("the known-truth benchmark measured the default at "
                        "38.7% of the grid's steps"));
  EXPECT_THAT(p.plan.share_source(), HasSubstr("racing"));
  EXPECT_THAT(p.plan.share_source(), HasSubstr("bench/RESULTS.md"));
}

TEST(PlanTest, AsynchronousAshaMayTrainTheWholeGrid) {
  const Planned p = PlanOf(std::string(kTiny) + R"pb(
    seeds: [ 1, 2 ]
    strategy: STRATEGY_ASHA
    asha {
      rungs: [ 40, 100 ]
      eta: 2
      mode: ASHA_MODE_ASYNCHRONOUS
    }
  )pb");
  EXPECT_DOUBLE_EQ(p.plan.max_share(), 1.0);
  // Expected: as the synchronous quotas would promote (the test above).
  EXPECT_DOUBLE_EQ(p.plan.expected_share(), 4200.0 / (21 * 2 * 200));
}

TEST(PlanTest, GuidedScreeningIsBoundedByItsGridFraction) {
  const Planned p = PlanOf(R"pb(
    model { preset: "small" }
    budget { steps: 200 eval_every: 10 }
    seeds: [ 1 ]
    strategy: STRATEGY_GUIDED_SCREENING
    screening { grid_fraction: 0.3 }
    racing { off: true }
  )pb");
  EXPECT_NEAR(p.plan.max_share(), 0.3, 1e-9);
  EXPECT_NEAR(p.plan.expected_share(), 0.288, 1e-9);
  EXPECT_THAT(p.plan.share_source(), HasSubstr("28.8%"));
}

TEST(PlanTest, SeedsPolicyExpectsTheBenchmarksShareOfItsMaximum) {
  const Planned p = PlanOf(std::string(kTiny) + R"pb(
    schedules: [ "1x2,4x4", "2x3,4x3" ]
    seeds_policy { min: 2 max: 6 }
  )pb");
  EXPECT_EQ(p.plan.trials(), 3 * 2);
  EXPECT_EQ(p.plan.seeds(), 2);
  const double per_seed = 3 * 200;
  EXPECT_NEAR(p.plan.max_steps(), 6 * per_seed, 1e-9);
  EXPECT_NEAR(p.plan.steps(), (2 + 0.83 * 4) * per_seed, 1e-9);
  EXPECT_NEAR(p.plan.max_share(), 1.0, 1e-9);
  EXPECT_THAT(p.plan.share_source(), HasSubstr("5.49"));
}

TEST(PlanTest, GuidedCountsItsScheduleBudget) {
  const Planned p = PlanOf(std::string(kTiny) + R"pb(
    seeds: [ 1, 2 ]
    strategy: STRATEGY_GUIDED
    samples: 6
  )pb");
  EXPECT_DOUBLE_EQ(p.plan.steps(), 7 * 2 * 200);
  EXPECT_DOUBLE_EQ(p.plan.max_steps(), 7 * 2 * 200);
  EXPECT_DOUBLE_EQ(p.plan.expected_share(), 7.0 / 21);
}

TEST(PlanTest, RandomIsExactOverItsDraws) {
  const Planned p = PlanOf(std::string(kTiny) + R"pb(
    seeds: [ 1 ]
    strategy: STRATEGY_RANDOM
    samples: 5
  )pb");
  EXPECT_DOUBLE_EQ(p.plan.steps(), p.plan.trials() * 200.0);
  EXPECT_DOUBLE_EQ(p.plan.expected_share(), p.plan.trials() / 21.0);
}

TEST(PlanTest, PlanTrialsBillsExactlyTheTrialsAdded) {
  const Planned p = PlanOf(std::string(kTiny) + "seeds: [ 1 ]");
  const v1::PlanEstimate added = PlanTrials(p.resolved, 4, 800.0, {});
  EXPECT_EQ(added.trials(), 4);
  EXPECT_DOUBLE_EQ(added.steps(), 800.0);
  EXPECT_DOUBLE_EQ(added.max_steps(), 800.0);
  EXPECT_DOUBLE_EQ(added.expected_share(), 800.0 / (21 * 200));
  EXPECT_DOUBLE_EQ(added.tokens(), 800.0 * 2048);
  EXPECT_GT(added.worker_hours(), 0.0);
}

TEST(PlanTest, ByteLevelDemoCorpusAgainstAGpt2VocabularyWarns) {
  const Planned p = PlanOf(R"pb(
    model { preset: "124m" }
    seeds: [ 1 ]
    schedules: [ "3x3,6x3,12x6" ]
  )pb");
  ASSERT_EQ(p.plan.warnings_size(), 1) << p.plan.DebugString();
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("byte-level"));
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("50,304"));
  // 50,048 of 50,304 rows.
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("99.5% of the embedding"));
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("50,048 rows"));
  // The byte-level presets train every row.
  EXPECT_THAT(PlanOf(std::string(kTiny) + "seeds: [ 1 ]").plan.warnings(),
              IsEmpty());
}

// WriteShard writes an llm.c shard of `tokens` byte-level ids (i % 256, or
// `top` once at the end).
std::string WriteShard(const std::string& path, int64_t tokens, int top) {
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = static_cast<int32_t>(tokens);
  std::vector<uint16_t> body(static_cast<size_t>(tokens));
  for (int64_t i = 0; i < tokens; ++i) body[i] = static_cast<uint16_t>(i % 256);
  if (top >= 0) body.back() = static_cast<uint16_t>(top);
  FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return path;
  std::fwrite(header.data(), 4, header.size(), f);
  std::fwrite(body.data(), 2, body.size(), f);
  std::fclose(f);
  return path;
}

TEST(PlanTest, ACorpusReadManyTimesOverWarnsWithItsEpochs) {
  testing::TempDir dir("prism_plan");
  WriteShard(dir.path() + "/train_000000.bin", 6000, -1);
  WriteShard(dir.path() + "/train_000001.bin", 4000, -1);
  WriteShard(dir.path() + "/val_000000.bin", 1000, -1);
  const Planned p =
      PlanOf(std::string(kTiny) + "seeds: [ 1 ]\ndata { train: \"" +
             dir.path() + "\" }");
  // The directory's train shards, not its val shard.
  EXPECT_EQ(p.plan.corpus_tokens(), 10000);
  // 200 steps x 2,048 tokens over 10,000: 41 epochs a trial.
  ASSERT_EQ(p.plan.warnings_size(), 1) << p.plan.DebugString();
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("41 epochs"));
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("10,000 train tokens"));
}

TEST(PlanTest, ATokenPastTheVocabularyWarnsThatWorkersRefuseIt) {
  testing::TempDir dir("prism_plan");
  const std::string shard =
      WriteShard(dir.path() + "/train_000000.bin", 1000, 300);
  const Planned p = PlanOf(std::string(kTiny) +
                           "seeds: [ 1 ]\ndata { train: \"" + shard + "\" }");
  ASSERT_GE(p.plan.warnings_size(), 1) << p.plan.DebugString();
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("token id 300"));
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("refuse"));
}

TEST(PlanTest, AnUnreadableCorpusSaysSoAndLeavesItsSizeUnknown) {
  const Planned p =
      PlanOf(std::string(kTiny) +
             "seeds: [ 1 ]\ndata { train: \"/nonexistent/x.bin\" }");
  EXPECT_EQ(p.plan.corpus_tokens(), 0);
  ASSERT_EQ(p.plan.warnings_size(), 1);
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("not read here"));
  EXPECT_THAT(p.plan.warnings(0), HasSubstr("not found"));
  // A FIFO is never opened (it would block the submit until written).
  testing::TempDir dir("prism_plan");
  const std::string fifo = dir.path() + "/train.bin";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const Planned blocked = PlanOf(
      std::string(kTiny) + "seeds: [ 1 ]\ndata { train: \"" + fifo + "\" }");
  ASSERT_EQ(blocked.plan.warnings_size(), 1);
  EXPECT_THAT(blocked.plan.warnings(0), HasSubstr("not a regular file"));
}

storage::ThroughputSample Sample(const v1::ExperimentSpec& resolved, double tps,
                                 const std::string& device) {
  storage::ThroughputSample s;
  s.tokens_per_second = tps;
  s.device = device;
  s.model = resolved.model();
  s.budget = resolved.budget();
  return s;
}

TEST(PlanTest, MeasuredThroughputIsTheMedianOfTrialsOfTheSameShape) {
  const Planned base = PlanOf(std::string(kTiny) + "seeds: [ 1 ]");
  PlanContext context;
  for (double tps : {1000.0, 3000.0, 2000.0}) {
    context.samples.push_back(Sample(base.resolved, tps, "cpu (1 thread)"));
  }
  // Another batch and another shape do not count.
  storage::ThroughputSample other_batch =
      Sample(base.resolved, 99999, "cpu (1 thread)");
  other_batch.budget.set_batch_size(8);
  context.samples.push_back(other_batch);
  storage::ThroughputSample other_shape =
      Sample(base.resolved, 99999, "cpu (1 thread)");
  other_shape.model.set_d_model(256);
  context.samples.push_back(other_shape);

  const v1::PlanEstimate p =
      EstimatePlan(base.resolved, base.plan.trials(), 21, context);
  EXPECT_DOUBLE_EQ(p.tokens_per_second(), 2000.0);
  EXPECT_THAT(p.throughput_source(),
              StartsWith("measured: median of 3 finished trials of this model "
                         "shape (batch 16) on cpu (1 thread)"));
  EXPECT_DOUBLE_EQ(p.worker_hours(), p.tokens() / 2000.0 / 3600.0);
  EXPECT_DOUBLE_EQ(p.max_worker_hours(), p.max_tokens() / 2000.0 / 3600.0);
}

TEST(PlanTest, MeasuredThroughputPrefersTheLiveWorkersDevices) {
  const Planned base = PlanOf(std::string(kTiny) + "seeds: [ 1 ]");
  PlanContext context;
  context.samples.push_back(Sample(base.resolved, 50000, "cuda:0"));
  context.samples.push_back(Sample(base.resolved, 2000, "cpu (2 threads)"));
  context.samples.push_back(Sample(base.resolved, 2200, "cpu (2 threads)"));
  v1::Worker gpu;
  gpu.set_device("cuda");
  context.live_workers.push_back(gpu);
  EXPECT_DOUBLE_EQ(
      EstimatePlan(base.resolved, 21, 21, context).tokens_per_second(), 50000);
  context.live_workers[0].set_device("cpu");
  const v1::PlanEstimate cpu = EstimatePlan(base.resolved, 21, 21, context);
  EXPECT_DOUBLE_EQ(cpu.tokens_per_second(), 2100);
  EXPECT_THAT(cpu.throughput_source(), HasSubstr("median of 2"));
}

TEST(PlanTest, WithoutMeasurementsTheStatedTableIsAssumed) {
  const Planned tiny = PlanOf(std::string(kTiny) + "seeds: [ 1 ]");
  EXPECT_THAT(tiny.plan.throughput_source(), StartsWith("assumed: CPU"));
  EXPECT_THAT(tiny.plan.throughput_source(), HasSubstr("docs/search.md"));
  // 87 GFLOP/s over the trainer's 3 x forward FLOPs a token.
  const double forward =
      2.0 * 1189888 + 2.0 * (256 * 128) + 4.0 * 6 * 128 * 128;
  EXPECT_NEAR(tiny.plan.tokens_per_second(), 87e9 / (3 * forward), 1e-6);
  // Two threads a worker double it.
  PlanContext two;
  v1::Worker w;
  w.set_device("cpu");
  w.set_threads(2);
  two.live_workers.push_back(w);
  EXPECT_NEAR(EstimatePlan(tiny.resolved, 21, 21, two).tokens_per_second(),
              2 * tiny.plan.tokens_per_second(), 1e-6);
  const Planned gpu = PlanOf(R"pb(
    model { preset: "124m" }
    seeds: [ 1 ]
    schedules: [ "3x3,6x3,12x6" ]
  )pb");
  EXPECT_THAT(gpu.plan.throughput_source(), StartsWith("assumed: one A100"));
  EXPECT_GT(gpu.plan.worker_hours(), 0.0);
}

}  // namespace
}  // namespace prism::server
