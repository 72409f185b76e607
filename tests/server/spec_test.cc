#include "server/core/experiments/spec.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/strategy/screening.h"

namespace prism::server {
namespace {

using ::testing::HasSubstr;

v1::ExperimentSpec Parse(const std::string& text) {
  absl::StatusOr<v1::ExperimentSpec> spec = ParseSpecText(text);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

absl::StatusOr<ExperimentPlan> Plan(const std::string& text) {
  return PlanExperiment(Parse(text), PlanOptions{});
}

TEST(SpecTest, ZeroFieldsResolveFromThePresetAndTheResolvedSpecIsStored) {
  absl::StatusOr<ExperimentPlan> plan =
      Plan("model { preset: 'TINY' } seeds: 1 budget { steps: 80 }");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const v1::ExperimentSpec& s = plan->spec;
  EXPECT_EQ(s.model().preset(), "tiny");
  EXPECT_EQ(s.model().d_model(), 128);
  EXPECT_EQ(s.model().layers(), 6);
  EXPECT_EQ(s.model().base_heads(), 4);
  EXPECT_EQ(s.model().positions(), v1::POSITION_LEARNED);
  EXPECT_EQ(s.budget().steps(), 80);  // explicit values are kept
  EXPECT_EQ(s.budget().batch_size(), 16);
  EXPECT_DOUBLE_EQ(s.budget().learning_rate(), 2e-3);
  EXPECT_EQ(s.budget().eval_every(), 20);
  EXPECT_GT(s.budget().log_every(), 0);
  EXPECT_GT(s.budget().checkpoint_every(), 0);
  EXPECT_GT(s.budget().warmup_steps(), 0);
  EXPECT_EQ(s.min_run(), 2);
  EXPECT_EQ(s.max_run(), 4);
  EXPECT_EQ(s.strategy(), v1::STRATEGY_GRID);
  EXPECT_EQ(s.max_attempts(), kDefaultMaxAttempts);
  EXPECT_EQ(s.name(), "tiny search");
  EXPECT_EQ(plan->config_fingerprint.size(), 64u);
}

// Issue #32: with data roots set (the coordinator always sets them) a path
// outside them is refused, after `..` is folded, naming the path and roots.
TEST(SpecTest, DataPathsOutsideTheDataRootsAreRefused) {
  PlanOptions options;
  options.data_roots = {"/srv/shards"};
  for (const char* text :
       {"model { preset: 'tiny' } seeds: 1 data { train: '/etc/shadow' }",
        "model { preset: 'tiny' } seeds: 1 "
        "data { train: '/srv/shards/a.bin' val: '/srv/shards/../../dev/zero' "
        "}",
        "model { preset: 'tiny' } seeds: 1 data { train: 'relative.bin' }"}) {
    absl::Status s = PlanExperiment(Parse(text), options).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("is outside the data roots: /srv/shards"));
  }
  EXPECT_EQ(PlanExperiment(Parse("model { preset: 'tiny' } seeds: 1 "
                                 "data { train: '/etc/shadow' }"),
                           options)
                .status()
                .message(),
            "data.train: data path /etc/shadow is outside the data roots: "
            "/srv/shards (--data-root)");
  absl::StatusOr<ExperimentPlan> inside =
      PlanExperiment(Parse("model { preset: 'tiny' } seeds: 1 data { "
                           "train: '/srv/shards/x/../train.bin' }"),
                     options);
  ASSERT_TRUE(inside.ok()) << inside.status();
  // The spec keeps the path as written: each worker resolves it again.
  EXPECT_EQ(inside->spec.data().train(0), "/srv/shards/x/../train.bin");
}

// Found by fuzz/spec_fuzzer.cc: the text format accepts "\377" in a string
// field, the wire format does not, so the stored spec never read back.
TEST(SpecTest, StringsThatAreNotUtf8AreRefusedNamingTheField) {
  absl::Status s = ParseSpecText(
                       "model { preset: 'tiny' } seeds: 1 "
                       "data { train: 'a.bin' train: 'shards/\\377.bin' }")
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "spec_text: data.train[1] is not valid UTF-8");
  EXPECT_EQ(ParseSpecText("name: '\\xc3(' seeds: 1").status().message(),
            "spec_text: name is not valid UTF-8");
  absl::StatusOr<v1::ExperimentSpec> ok =
      ParseSpecText("name: 'caf\\303\\251 \u00e9t\u00e9' seeds: 1");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->name(), "caf\u00e9 \u00e9t\u00e9");
}

TEST(SpecTest, GridHasOneTrialPerScheduleAndSeedWithTheBaselineOnce) {
  absl::StatusOr<ExperimentPlan> plan =
      Plan("model { preset: 'tiny' } seeds: [3, 4]");
  ASSERT_TRUE(plan.ok()) << plan.status();
  // tiny: heads in {1, 2, 4}, non-decreasing, last = 4: C(7, 2) = 21.
  EXPECT_EQ(plan->trials.size(), 42u);
  std::set<std::pair<std::string, int64_t>> unique;
  int baselines = 0;
  for (const storage::NewTrial& t : plan->trials) {
    unique.insert({t.schedule, t.seed});
    if (t.is_baseline) {
      ++baselines;
      EXPECT_EQ(t.schedule, "4x6");
    }
  }
  EXPECT_EQ(unique.size(), plan->trials.size());
  EXPECT_EQ(baselines, 2);
  EXPECT_TRUE(plan->trials.front().is_baseline);
}

TEST(SpecTest, BaselineIsAddedToAnExplicitListAndDuplicatesCollapse) {
  absl::StatusOr<ExperimentPlan> plan = Plan(
      "model { preset: 'tiny' } seeds: 1 schedules: ['2x2,4x4', "
      "'2x1,2x1,4x4', '4x6']");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->trials.size(), 2u);
  EXPECT_EQ(plan->trials[0].schedule, "4x6");
  EXPECT_EQ(plan->trials[1].schedule, "2x2,4x4");
}

TEST(SpecTest, RandomStrategySamplesDeterministically) {
  const std::string text =
      "model { preset: '124m' } seeds: 1 strategy: STRATEGY_RANDOM "
      "samples: 10 sample_seed: 42";
  absl::StatusOr<ExperimentPlan> a = Plan(text);
  absl::StatusOr<ExperimentPlan> b = Plan(text);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_GE(a->trials.size(), 10u);
  ASSERT_EQ(a->trials.size(), b->trials.size());
  for (size_t i = 0; i < a->trials.size(); ++i) {
    EXPECT_EQ(a->trials[i].schedule, b->trials[i].schedule);
  }
}

TEST(SpecTest, ExplicitScheduleMustSatisfyRequestedPrinciples) {
  absl::StatusOr<ExperimentPlan> plan = Plan(
      "model { preset: 'tiny' } seeds: 1 principles: PRINCIPLE_SMOOTH "
      "schedules: '1x1,4x5'");
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("violates the principle smooth"));
}

TEST(SpecTest, CustomModelNeedsEveryShapeField) {
  absl::StatusOr<ExperimentPlan> missing =
      Plan("model { d_model: 64 layers: 2 } seeds: 1");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("base_heads, context, vocab_size"));
  absl::StatusOr<ExperimentPlan> custom = Plan(
      "model { d_model: 64 layers: 2 base_heads: 2 context: 32 vocab_size: "
      "256 } seeds: 1");
  ASSERT_TRUE(custom.ok()) << custom.status();
  EXPECT_TRUE(custom->spec.model().preset().empty());
  EXPECT_GT(custom->spec.budget().steps(), 0);
}

TEST(SpecTest, BudgetAndAttemptsAreChecked) {
  EXPECT_THAT(std::string(Plan("model { preset: 'tiny' } seeds: 1 budget { "
                               "learning_rate: -1 }")
                              .status()
                              .message()),
              HasSubstr("budget.learning_rate"));
  EXPECT_THAT(std::string(Plan("model { preset: 'tiny' } seeds: 1 budget { "
                               "steps: 10 warmup_steps: 20 }")
                              .status()
                              .message()),
              HasSubstr("warmup_steps"));
  EXPECT_THAT(std::string(Plan("model { preset: 'tiny' } seeds: 1 budget { "
                               "min_lr_ratio: 2 }")
                              .status()
                              .message()),
              HasSubstr("min_lr_ratio"));
  EXPECT_THAT(
      std::string(Plan("model { preset: 'tiny' } seeds: 1 max_attempts: -1")
                      .status()
                      .message()),
      HasSubstr("max_attempts"));
  EXPECT_THAT(
      std::string(
          Plan("model { preset: 'tiny' } seeds: -3").status().message()),
      HasSubstr("negative"));
}

TEST(SpecTest, VerdictPolicyResolvesToExplicitDefaults) {
  absl::StatusOr<ExperimentPlan> plan =
      Plan("model { preset: 'tiny' } seeds: 1");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->spec.verdicts().method(), v1::VERDICT_METHOD_MODERATED_T);
  EXPECT_EQ(plan->spec.verdicts().family(), v1::VERDICT_FAMILY_BH);
  EXPECT_DOUBLE_EQ(plan->spec.verdicts().alpha(), 0.05);
  plan = Plan(
      "model { preset: 'tiny' } seeds: 1 verdicts { method: "
      "VERDICT_METHOD_PAIRED_T family: VERDICT_FAMILY_HOLM alpha: 0.01 }");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->spec.verdicts().method(), v1::VERDICT_METHOD_PAIRED_T);
  EXPECT_EQ(plan->spec.verdicts().family(), v1::VERDICT_FAMILY_HOLM);
  EXPECT_DOUBLE_EQ(plan->spec.verdicts().alpha(), 0.01);
}

TEST(SpecTest, BadVerdictPolicyIsRefusedNamingTheField) {
  for (const char* alpha : {"0.5", "0.7", "-0.1", "nan"}) {
    absl::StatusOr<ExperimentPlan> plan = Plan(
        std::string("model { preset: 'tiny' } seeds: 1 verdicts { alpha: ") +
        alpha + " }");
    ASSERT_FALSE(plan.ok()) << alpha;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(plan.status().message(), HasSubstr("verdicts.alpha"));
  }
  v1::ExperimentSpec spec = Parse("model { preset: 'tiny' } seeds: 1");
  spec.mutable_verdicts()->set_method(static_cast<v1::VerdictMethod>(9));
  absl::StatusOr<ExperimentPlan> plan = PlanExperiment(spec, PlanOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("verdicts.method"));
  spec = Parse("model { preset: 'tiny' } seeds: 1");
  spec.mutable_verdicts()->set_family(static_cast<v1::VerdictFamily>(7));
  plan = PlanExperiment(spec, PlanOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("verdicts.family"));
}

TEST(SpecTest, ParseErrorsCarryLineAndColumn) {
  absl::StatusOr<v1::ExperimentSpec> spec =
      ParseSpecText("name: 'x'\nseeds: one\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("spec_text:2:8"));
}

TEST(SpecTest, TheGridCapIsConfigurable) {
  PlanOptions options;
  options.max_trials = 10;
  absl::StatusOr<ExperimentPlan> plan =
      PlanExperiment(Parse("model { preset: 'tiny' } seeds: 1"), options);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("21 schedules x 1 seeds, over the limit of 10"));
}

TEST(SpecTest, ASeedsPolicyPlansTheFirstMinSeedsAndResolvesTheSequence) {
  absl::StatusOr<ExperimentPlan> plan = Plan(
      "model { preset: 'tiny' } schedules: '2x2,4x4' seeds: [7, 3] "
      "seeds_policy { min: 2 max: 4 }");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->spec.seeds(), ::testing::ElementsAre(7, 3, 8, 9));
  std::set<std::pair<std::string, int64_t>> trials;
  for (const storage::NewTrial& t : plan->trials) {
    trials.insert({t.schedule, t.seed});
  }
  EXPECT_EQ(trials,
            (std::set<std::pair<std::string, int64_t>>{
                {"4x6", 7}, {"4x6", 3}, {"2x2,4x4", 7}, {"2x2,4x4", 3}}));

  // Without listed seeds the sequence is 1..max.
  plan = Plan(
      "model { preset: 'tiny' } schedules: '2x2,4x4' "
      "seeds_policy { min: 3 max: 5 }");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->spec.seeds(), ::testing::ElementsAre(1, 2, 3, 4, 5));
  EXPECT_EQ(plan->trials.size(), 6u);
}

// ExpectOneLineInvalid plans each tiny-preset spec with the case's fields
// and expects INVALID_ARGUMENT, one line, holding the case's message.
void ExpectOneLineInvalid(
    const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [policy, message] : cases) {
    absl::StatusOr<ExperimentPlan> plan =
        Plan("model { preset: 'tiny' } " + policy);
    ASSERT_FALSE(plan.ok()) << policy;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(plan.status().message()), HasSubstr(message))
        << policy;
    EXPECT_EQ(std::string(plan.status().message()).find('\n'),
              std::string::npos);
  }
}

TEST(SpecTest, BadSeedsPoliciesAreOneLineInvalidArguments) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"seeds_policy { min: 1 max: 4 }", "seeds_policy.min must be at least 2"},
      {"seeds_policy { max: 4 }", "seeds_policy.min must be at least 2"},
      {"seeds_policy { min: 3 max: 2 }",
       "seeds_policy.max (2) is below seeds_policy.min (3)"},
      {"seeds_policy { min: 2 max: 65 }",
       "seeds_policy.max must be at most 64 (got 65)"},
      {"seeds: [1, 2, 3] seeds_policy { min: 2 max: 2 }",
       "seeds lists 3 seeds, more than seeds_policy.max (2)"},
      {"seeds: [1, 1] seeds_policy { min: 2 max: 3 }",
       "seed 1 is listed twice"},
      {"seeds: 9223372036854775806 seeds_policy { min: 2 max: 3 }",
       "leaves no room"},
  };
  ExpectOneLineInvalid(cases);
}

TEST(SpecTest, TheGridCapCountsEverySeedAPolicyMayAdd) {
  PlanOptions options;
  options.max_trials = 60;
  absl::StatusOr<ExperimentPlan> plan = PlanExperiment(
      Parse("model { preset: 'tiny' } seeds_policy { min: 2 max: 3 }"),
      options);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("21 schedules x 3 seeds, over the limit of 60"));
}

TEST(SpecTest, AshaResolvesDefaultRungsAndStartsSchedulesAtTheFirstRung) {
  absl::StatusOr<ExperimentPlan> plan = Plan(
      "model { preset: 'tiny' } seeds: 1 seeds: 2 strategy: STRATEGY_ASHA "
      "schedules: '2x2,4x4' schedules: '1x2,4x4' "
      "budget { steps: 180 eval_every: 20 }");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->spec.asha().eta(), 3);
  EXPECT_THAT(plan->spec.asha().rungs(), ::testing::ElementsAre(60, 80, 120));
  // The resolved spec records the default rule.
  EXPECT_EQ(plan->spec.asha().mode(), v1::ASHA_MODE_SYNCHRONOUS);
  ASSERT_EQ(plan->trials.size(), 6u);
  for (const storage::NewTrial& t : plan->trials) {
    EXPECT_EQ(t.target_steps, t.is_baseline ? 0 : 60) << t.schedule;
  }
  EXPECT_TRUE(storage::DecidedByCoordinator(plan->spec));
}

// Racing (issue 39): on by default where a search screens on 3+ seeds,
// off for a grid unless asked, resolved with every field explicit.
TEST(SpecTest, RacingIsOnByDefaultAfterScreeningAndResolvedExplicitly) {
  absl::StatusOr<ExperimentPlan> asha =
      Plan("model { preset: 'tiny' } seeds: [4, 5, 6] strategy: STRATEGY_ASHA");
  ASSERT_TRUE(asha.ok()) << asha.status();
  EXPECT_FALSE(asha->spec.racing().off());
  EXPECT_EQ(asha->spec.racing().max_seeds(), 12);
  EXPECT_DOUBLE_EQ(asha->spec.racing().budget(), 0.1);
  EXPECT_EQ(asha->spec.racing().racers(), 4);
  // The seeds it may add are recorded: the spec's sequence continued.
  EXPECT_THAT(asha->spec.racing().seeds(),
              ::testing::ElementsAre(7, 8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_THAT(asha->spec.seeds(), ::testing::ElementsAre(4, 5, 6));
  EXPECT_TRUE(storage::DecidedByCoordinator(asha->spec));
  absl::StatusOr<ExperimentPlan> screen = Plan(
      "model { preset: 'tiny' } seeds: [1, 2, 3] strategy: "
      "STRATEGY_GUIDED_SCREENING");
  ASSERT_TRUE(screen.ok()) << screen.status();
  EXPECT_EQ(screen->spec.racing().max_seeds(), 12);

  // A grid races only when asked; off keeps it off; 2 seeds is too few for
  // the default.
  absl::StatusOr<ExperimentPlan> grid =
      Plan("model { preset: 'tiny' } seeds: [1, 2, 3]");
  ASSERT_TRUE(grid.ok());
  EXPECT_FALSE(grid->spec.has_racing());
  EXPECT_FALSE(storage::DecidedByCoordinator(grid->spec));
  grid = Plan(
      "model { preset: 'tiny' } seeds: [1, 2] racing { max_seeds: 6 budget: "
      "0.25 racers: 2 }");
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(grid->spec.racing().max_seeds(), 6);
  EXPECT_DOUBLE_EQ(grid->spec.racing().budget(), 0.25);
  EXPECT_EQ(grid->spec.racing().racers(), 2);
  EXPECT_TRUE(storage::DecidedByCoordinator(grid->spec));
  absl::StatusOr<ExperimentPlan> off = Plan(
      "model { preset: 'tiny' } seeds: [4, 5, 6] strategy: STRATEGY_ASHA "
      "racing { off: true }");
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->spec.racing().off());
  absl::StatusOr<ExperimentPlan> two =
      Plan("model { preset: 'tiny' } seeds: [1, 2] strategy: STRATEGY_ASHA");
  ASSERT_TRUE(two.ok());
  EXPECT_FALSE(two->spec.has_racing());
}

TEST(SpecTest, BadRacingPoliciesAreOneLineInvalidArguments) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"seeds: [1, 2, 3] racing { budget: 1.5 }",
       "racing.budget must be in (0, 1]"},
      {"seeds: [1, 2, 3] racing { budget: -0.1 }",
       "racing.budget must be in (0, 1]"},
      {"seeds: [1, 2, 3] racing { budget: nan }",
       "racing.budget must be in (0, 1]"},
      {"seeds: [1, 2, 3] racing { max_seeds: 2 }",
       "racing.max_seeds must be from the spec's 3 seeds to 64 (got 2)"},
      {"seeds: [1, 2, 3] racing { max_seeds: 65 }",
       "racing.max_seeds must be from the spec's 3 seeds to 64 (got 65)"},
      {"seeds: [1, 2, 3] racing { racers: -1 }",
       "racing.racers must be from 1 to 64 (got -1)"},
      {"seeds: 1 racing {}", "racing: needs at least 2 seeds"},
      {"seeds: [1, 1] racing {}", "seed 1 is listed twice"},
      {"seeds: [1, 9223372036854775806] racing {}", "leaves no room"},
      {"seeds: [1, 2] strategy: STRATEGY_GUIDED samples: 8 racing {}",
       "racing: not with STRATEGY_GUIDED"},
      {"seeds_policy { min: 2 max: 4 } racing {}",
       "racing: cannot be combined with seeds_policy"},
      {"seeds: [1, 2, 3] racing { seeds: 9 }",
       "racing.seeds: is set by the coordinator"},
  };
  ExpectOneLineInvalid(cases);
}

TEST(SpecTest, AshaOnThreeSeedsDefaultsToScreeningOnOneSeed) {
  absl::StatusOr<ExperimentPlan> plan = Plan(
      "model { preset: 'tiny' } seeds: [4, 5, 6] strategy: STRATEGY_ASHA "
      "schedules: '2x2,4x4' schedules: '1x2,4x4' "
      "budget { steps: 180 eval_every: 20 }");
  ASSERT_TRUE(plan.ok()) << plan.status();
  // 70% of 180 is 126, on the eval grid 120; eta 5; one screen seed.
  EXPECT_THAT(plan->spec.asha().rungs(), ::testing::ElementsAre(120));
  EXPECT_EQ(plan->spec.asha().eta(), 5);
  EXPECT_EQ(plan->spec.asha().screen_seeds(), 1);
  // The baseline on every seed, the schedules on the first listed seed only
  // (the others start when they go on from the rung).
  ASSERT_EQ(plan->trials.size(), 5u);
  for (const storage::NewTrial& t : plan->trials) {
    if (t.is_baseline) {
      EXPECT_EQ(t.target_steps, 0);
    } else {
      EXPECT_EQ(t.seed, 4) << t.schedule;
      EXPECT_EQ(t.target_steps, 120) << t.schedule;
    }
  }
  // Any plan setting of the user's keeps every seed from the first rung
  // unless screen_seeds says otherwise.
  absl::StatusOr<ExperimentPlan> listed = Plan(
      "model { preset: 'tiny' } seeds: [4, 5, 6] strategy: STRATEGY_ASHA "
      "schedules: '2x2,4x4' asha { rungs: 60 } "
      "budget { steps: 180 eval_every: 20 }");
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->spec.asha().eta(), 3);
  EXPECT_EQ(listed->spec.asha().screen_seeds(), 3);
  EXPECT_EQ(listed->trials.size(), 6u);
  absl::StatusOr<ExperimentPlan> two = Plan(
      "model { preset: 'tiny' } seeds: [4, 5, 6] strategy: STRATEGY_ASHA "
      "schedules: '2x2,4x4' asha { screen_seeds: 2 } "
      "budget { steps: 180 eval_every: 20 }");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_THAT(two->spec.asha().rungs(), ::testing::ElementsAre(60, 80, 120));
  EXPECT_EQ(two->spec.asha().screen_seeds(), 2);
  EXPECT_EQ(two->trials.size(), 5u);
}

TEST(SpecTest, AshaKeepsListedRungsAndSamplesWhenAsked) {
  absl::StatusOr<ExperimentPlan> plan = Plan(
      "model { preset: 'tiny' } seeds: 1 strategy: STRATEGY_ASHA samples: 4 "
      "asha { rungs: 40 rungs: 100 eta: 2 } "
      "budget { steps: 200 eval_every: 20 }");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->spec.asha().rungs(), ::testing::ElementsAre(40, 100));
  EXPECT_EQ(plan->spec.asha().eta(), 2);
  // The schedules STRATEGY_RANDOM draws with the same samples and seed.
  absl::StatusOr<ExperimentPlan> random = Plan(
      "model { preset: 'tiny' } seeds: 1 strategy: STRATEGY_RANDOM samples: 4 "
      "budget { steps: 200 eval_every: 20 }");
  ASSERT_TRUE(random.ok()) << random.status();
  ASSERT_EQ(plan->trials.size(), random->trials.size());
  for (size_t i = 0; i < plan->trials.size(); ++i) {
    EXPECT_EQ(plan->trials[i].schedule, random->trials[i].schedule);
    EXPECT_EQ(plan->trials[i].target_steps,
              plan->trials[i].is_baseline ? 0 : 40);
  }
}

TEST(SpecTest, TrialsAreQueuedInAnOrderShuffledBySampleSeed) {
  auto order = [](uint64_t sample_seed) {
    absl::StatusOr<ExperimentPlan> plan = Plan(absl::StrCat(
        "model { preset: 'tiny' } seeds: 1 sample_seed: ", sample_seed));
    EXPECT_TRUE(plan.ok()) << plan.status();
    std::vector<std::string> schedules;
    for (const storage::NewTrial& t : plan->trials) {
      if (!t.is_baseline) schedules.push_back(t.schedule);
    }
    return schedules;
  };
  const std::vector<std::string> a = order(1);
  EXPECT_EQ(a, order(1));
  EXPECT_NE(a, order(2));
  std::vector<std::string> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(a, sorted);
  EXPECT_EQ(std::set<std::string>(a.begin(), a.end()).size(), a.size());
}

TEST(SpecTest, BadAshaPoliciesAreInvalidArgumentsNamingTheProblem) {
  const std::string base =
      "model { preset: 'tiny' } seeds: 1 schedules: '2x2,4x4' "
      "budget { steps: 100 eval_every: 10 } ";
  struct Case {
    std::string spec;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"strategy: STRATEGY_ASHA asha { eta: 1 }",
       "asha.eta must be at least 2 (got 1)"},
      {"strategy: STRATEGY_ASHA asha { rungs: 10 rungs: 100 }",
       "asha.rungs[1] = 100 is not below budget.steps (100)"},
      {"strategy: STRATEGY_ASHA asha { rungs: 30 rungs: 20 }",
       "asha.rungs[1] = 20 must be above the rung before it (30)"},
      {"strategy: STRATEGY_ASHA asha { rungs: 15 }",
       "asha.rungs[0] = 15 is not a multiple of budget.eval_every (10)"},
      {"strategy: STRATEGY_ASHA seeds_policy { min: 2 max: 4 }",
       "seeds_policy cannot be combined with STRATEGY_ASHA"},
      {"asha { eta: 3 }", "asha is set but strategy is not STRATEGY_ASHA"},
      {"strategy: STRATEGY_ASHA asha { screen_seeds: 2 }",
       "asha.screen_seeds = 2 must be between 1 and the experiment's 1 "
       "seed(s)"},
      {"strategy: STRATEGY_ASHA asha { screen_seeds: -1 }",
       "asha.screen_seeds = -1 must be between 1"},

      {"strategy: STRATEGY_GUIDED asha { mode: ASHA_MODE_SYNCHRONOUS }",
       "asha.mode: ASHA_MODE_SYNCHRONOUS waits for every member of a rung"},
      {"strategy: STRATEGY_GUIDED asha { mode: ASHA_MODE_GUARDED }",
       "asha.mode: ASHA_MODE_GUARDED waits for every member of a rung"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ExperimentPlan> plan = Plan(base + c.spec);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument)
        << c.spec;
    EXPECT_THAT(plan.status().message(), HasSubstr(c.message)) << c.spec;
  }
  // Screening chooses its own schedules, so without the list.
  absl::StatusOr<ExperimentPlan> screening = Plan(
      "model { preset: 'tiny' } seeds: [1, 2] budget { steps: 100 eval_every: "
      "10 } strategy: STRATEGY_GUIDED_SCREENING asha { screen_seeds: 1 }");
  EXPECT_EQ(screening.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(screening.status().message(),
              HasSubstr("asha.screen_seeds: STRATEGY_GUIDED_SCREENING screens "
                        "every bracket"));
  absl::StatusOr<ExperimentPlan> short_budget = Plan(
      "model { preset: 'tiny' } seeds: 1 strategy: STRATEGY_ASHA "
      "budget { steps: 10 eval_every: 10 }");
  EXPECT_THAT(short_budget.status().message(), HasSubstr("too short"));
}

TEST(SpecTest, ScreeningResolvesItsDefaultsAndPlantsTheFirstBracket) {
  absl::StatusOr<ExperimentPlan> plan = Plan(
      "model { preset: 'tiny' } seeds: 1 seeds: 2 "
      "strategy: STRATEGY_GUIDED_SCREENING screening { bracket_size: 6 } "
      "budget { steps: 180 eval_every: 20 } sample_seed: 4");
  ASSERT_TRUE(plan.ok()) << plan.status();
  // The resolved spec records every setting.
  EXPECT_EQ(plan->spec.screening().bracket_size(), 6);
  EXPECT_DOUBLE_EQ(plan->spec.screening().explore(), kDefaultScreeningExplore);
  EXPECT_DOUBLE_EQ(plan->spec.screening().grid_fraction(),
                   kDefaultScreeningGridFraction);
  // Screening's own default rungs (DefaultScreeningRungs): one fewer than
  // STRATEGY_ASHA's 60, 80, 120 for this budget.
  EXPECT_THAT(plan->spec.asha().rungs(), ::testing::ElementsAre(60, 100));
  EXPECT_EQ(plan->spec.asha().mode(), v1::ASHA_MODE_SYNCHRONOUS);
  EXPECT_TRUE(storage::DecidedByCoordinator(plan->spec));
  // The baseline and one bracket of 6, on both seeds; the schedules at the
  // first rung.
  std::set<std::string> schedules;
  for (const storage::NewTrial& t : plan->trials) {
    EXPECT_EQ(t.target_steps, t.is_baseline ? 0 : 60) << t.schedule;
    if (!t.is_baseline) schedules.insert(t.schedule);
  }
  EXPECT_EQ(schedules.size(), 6u);
  EXPECT_EQ(plan->trials.size(), 14u);
  // Unset, the bracket is kDefaultScreeningBracketSize: with the default
  // rungs at eta 3 it keeps 39 -> 13 -> 4 finalists for the verdict.
  absl::StatusOr<ExperimentPlan> by_default = Plan(
      "model { preset: 'tiny' } seeds: 1 "
      "strategy: STRATEGY_GUIDED_SCREENING "
      "budget { steps: 180 eval_every: 20 }");
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  EXPECT_EQ(by_default->spec.screening().bracket_size(), 39);
  EXPECT_EQ(kDefaultScreeningBracketSize, 39);
  // The bracket is drawn with sample_seed.
  absl::StatusOr<ExperimentPlan> again = Plan(
      "model { preset: 'tiny' } seeds: 1 seeds: 2 "
      "strategy: STRATEGY_GUIDED_SCREENING screening { bracket_size: 6 } "
      "budget { steps: 180 eval_every: 20 } sample_seed: 4");
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->trials.size(), plan->trials.size());
  for (size_t i = 0; i < plan->trials.size(); ++i) {
    EXPECT_EQ(again->trials[i].schedule, plan->trials[i].schedule);
  }
}

TEST(SpecTest, BadScreeningPoliciesAreInvalidArgumentsNamingTheField) {
  const std::string base =
      "model { preset: 'tiny' } seeds: 1 budget { steps: 100 eval_every: 10 } "
      "strategy: STRATEGY_GUIDED_SCREENING ";
  struct Case {
    std::string spec;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"screening { explore: 1.5 }",
       "screening.explore must be in [0, 1] (got 1.5)"},
      {"screening { explore: -0.1 }",
       "screening.explore must be in [0, 1] (got -0.1)"},
      {"screening { explore: nan }", "screening.explore must be in [0, 1]"},
      {"screening { bracket_size: 0 }",
       "screening.bracket_size must be at least 1 (got 0)"},
      {"screening { bracket_size: -3 }",
       "screening.bracket_size must be at least 1 (got -3)"},
      {"screening { grid_fraction: 0 }",
       "screening.grid_fraction must be in (0, 1] (got 0)"},
      {"screening { grid_fraction: 1.2 }",
       "screening.grid_fraction must be in (0, 1] (got 1.2)"},
      {"asha { mode: ASHA_MODE_GUARDED }",
       "asha.mode: STRATEGY_GUIDED_SCREENING decides each bracket by "
       "ASHA_MODE_SYNCHRONOUS (got ASHA_MODE_GUARDED)"},
      {"asha { rungs: 30 rungs: 20 }",
       "asha.rungs[1] = 20 must be above the rung before it (30)"},
      {"samples: 10", "samples is not used by STRATEGY_GUIDED_SCREENING"},
      {"schedules: '2x2,4x4'",
       "schedules cannot be listed with STRATEGY_GUIDED_SCREENING"},
      {"seeds_policy { min: 2 max: 4 }",
       "seeds_policy cannot be combined with STRATEGY_GUIDED_SCREENING"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ExperimentPlan> plan = Plan(base + c.spec);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument)
        << c.spec;
    EXPECT_THAT(plan.status().message(), HasSubstr(c.message)) << c.spec;
    EXPECT_EQ(std::string(plan.status().message()).find('\n'),
              std::string::npos)
        << c.spec;
  }
  absl::StatusOr<ExperimentPlan> elsewhere =
      Plan("model { preset: 'tiny' } seeds: 1 screening { bracket_size: 4 }");
  EXPECT_THAT(elsewhere.status().message(),
              HasSubstr("screening is set but strategy is not "
                        "STRATEGY_GUIDED_SCREENING"));
}

}  // namespace
}  // namespace prism::server
