#include "cli/views.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::RankedSchedule Row(int rank, const std::string& schedule, double loss,
                       int seeds, double speedup) {
  v1::RankedSchedule r;
  r.set_rank(rank);
  r.set_schedule(schedule);
  r.set_is_baseline(schedule == "4x6");
  r.mutable_final_val_loss()->set_mean(loss);
  r.mutable_final_val_loss()->set_n(seeds);
  // As the server sends them: no interval below 2 seeds.
  if (seeds >= 2) {
    r.mutable_final_val_loss()->set_low(loss - 0.01);
    r.mutable_final_val_loss()->set_high(loss + 0.01);
  }
  if (!r.is_baseline()) {
    r.mutable_delta_vs_baseline()->set_mean(loss - 2.6143);
    r.mutable_delta_vs_baseline()->set_n(seeds);
    r.set_paired_seeds(seeds);
    if (seeds >= 2) {
      r.mutable_delta_vs_baseline()->set_low(loss - 2.6143 - 0.01);
      r.mutable_delta_vs_baseline()->set_high(loss - 2.6143 + 0.01);
      r.set_p_value(0.02);
      r.set_adjusted_p_value(0.04);
      r.set_verdict(loss < 2.6143 ? v1::VERDICT_BETTER : v1::VERDICT_WORSE);
    } else {
      r.set_verdict(v1::VERDICT_NEEDS_SEEDS);
    }
  }
  r.set_min_val_loss(loss);
  // As the server sends them: every paired seed measured, the speed-up over
  // those that reached the target (all or none here), tokens/s paired on
  // the same worker.
  r.set_convergence_speedup(speedup);
  r.set_speedup_seeds(seeds);
  if (speedup > 0) {
    r.mutable_speedup()->set_mean(speedup);
    r.mutable_speedup()->set_n(seeds);
    if (seeds >= 2 && !r.is_baseline()) {
      r.mutable_speedup()->set_low(speedup - 0.05);
      r.mutable_speedup()->set_high(speedup + 0.05);
    }
  }
  r.set_tokens_per_second_ratio(1.0);
  r.mutable_throughput_ratio()->set_mean(1.0);
  r.mutable_throughput_ratio()->set_n(seeds);
  r.set_throughput_pairs(seeds);
  r.set_throughput_pairing(v1::THROUGHPUT_PAIRING_WORKER);
  r.set_seeds_completed(seeds);
  return r;
}

v1::RankResponse OneSeedRanking() {
  v1::RankResponse response;
  *response.add_schedules() = Row(1, "4x6", 2.6143, 1, 1.0);
  // Never reached the baseline's final loss: no speed-up.
  *response.add_schedules() = Row(2, "2x3,4x3", 2.6151, 1, 0.0);
  *response.mutable_baseline() = response.schedules(0);
  return response;
}

TEST(ViewsTest, TokensTableShowsStateAndLeavesNeverEmpty) {
  v1::ListTokensResponse tokens;
  v1::TokenInfo* active = tokens.add_tokens();
  active->set_id("aaaaaaaaaaaa");
  active->set_user("ann");
  active->set_role(v1::ROLE_USER);
  active->set_created_unix_ms(1'700'000'000'000);
  v1::TokenInfo* expired = tokens.add_tokens();
  *expired = *active;
  expired->set_id("bbbbbbbbbbbb");
  expired->set_expires_unix_ms(1'700'000'060'000);
  v1::TokenInfo* revoked = tokens.add_tokens();
  *revoked = *expired;
  revoked->set_id("cccccccccccc");
  revoked->set_revoked_unix_ms(1'700'000'030'000);
  std::ostringstream csv;
  TokensTable(tokens, /*now_ms=*/1'700'000'060'000).Print(csv, Format::kCsv);
  EXPECT_EQ(csv.str(),
            "id,user,role,state,created,expires,last_used,revoked\n"
            "aaaaaaaaaaaa,ann,user,active,2023-11-14T22:13:20Z,,,\n"
            "bbbbbbbbbbbb,ann,user,expired,2023-11-14T22:13:20Z,"
            "2023-11-14T22:14:20Z,,\n"
            "cccccccccccc,ann,user,revoked,2023-11-14T22:13:20Z,"
            "2023-11-14T22:14:20Z,,2023-11-14T22:13:50Z\n");
}

// Unwrapped joins the lines PrintRanking wrapped at 100 columns.
std::string Unwrapped(const std::string& text) {
  return absl::StrReplaceAll(text, {{"\n  ", " "}});
}

RankingView Wide() {
  RankingView view;
  view.wide = true;
  return view;
}

TEST(ViewsTest, WorkersGoneOverAnHourAgoAreDroppedTheRestKept) {
  constexpr int64_t kNow = int64_t{1'800'000'000'000};
  v1::ListWorkersResponse response;
  const auto add = [&](const std::string& id, v1::WorkerState state,
                       int64_t heartbeat_ago_ms, int64_t stopped_ago_ms) {
    v1::Worker* w = response.add_workers();
    w->set_id(id);
    w->set_state(state);
    w->set_last_heartbeat_unix_ms(kNow - heartbeat_ago_ms);
    if (stopped_ago_ms >= 0) w->set_stopped_unix_ms(kNow - stopped_ago_ms);
  };
  add("busy", v1::WORKER_BUSY, 1000, -1);
  add("idle-quiet", v1::WORKER_IDLE, kGoneWorkerShownMs * 5, -1);
  add("stopped-now", v1::WORKER_STOPPED, 2000, 1000);
  add("stopped-old", v1::WORKER_STOPPED, kGoneWorkerShownMs * 3,
      kGoneWorkerShownMs + 1);
  add("lost-now", v1::WORKER_LOST, kGoneWorkerShownMs - 1, -1);
  add("lost-old", v1::WORKER_LOST, kGoneWorkerShownMs + 1, -1);
  EXPECT_EQ(DropGoneWorkers(&response, kNow), 2);
  std::vector<std::string> kept;
  for (const v1::Worker& w : response.workers()) kept.push_back(w.id());
  EXPECT_THAT(kept, ::testing::ElementsAre("busy", "idle-quiet", "stopped-now",
                                           "lost-now"));
  EXPECT_EQ(DropGoneWorkers(&response, kNow), 0);
}

TEST(ViewsTest, RankingTextShowsDashesAndSaysWhyOnce) {
  std::ostringstream out;
  PrintRanking(OneSeedRanking(), Format::kText, out, Wide());
  const std::string text = out.str();
  // The 2x3,4x3 row: no CI (one seed), a delta, no CI, no speed-up.
  EXPECT_THAT(text, HasSubstr("2.6151         -  +0.0008           -"));
  // No seed reached the target: 0 of 1; tokens/s on the same worker.
  EXPECT_THAT(text, HasSubstr("needs seeds      -        2.6151  - 0/1    "
                              "1.00 1/1 worker      1       1         0       "
                              "0         -  2 seeds"));
  EXPECT_THAT(text,
              HasSubstr("speedup - = never reached the baseline's final val "
                        "loss; ci95, adj_p - = fewer than 2 (paired) seeds\n"));
  EXPECT_EQ(text.find("never reached"), text.rfind("never reached"));
}

// Defined below, with the tests that read it closely.
v1::RankResponse TwoSeedRanking();

TEST(ViewsTest, DefaultRankingFitsOneHundredColumnsAndEndsWithASummary) {
  v1::RankResponse response = TwoSeedRanking();
  response.mutable_experiment()->set_id(7);
  v1::RankedSchedule* best = response.mutable_schedules(0);
  best->mutable_adjusted_delta()->set_mean(-0.0142);
  best->mutable_adjusted_delta()->set_low(-0.0272);
  best->mutable_adjusted_delta()->set_high(-0.0012);
  best->set_in_best_set(true);
  v1::RankedSchedule* unsure = response.add_schedules();
  *unsure = Row(4, "1x2,4x4", 2.6100, 2, 1.0);
  unsure->set_verdict(v1::VERDICT_INCONCLUSIVE);
  unsure->set_seeds_needed(9);
  unsure->set_in_best_set(true);
  v1::VerdictReport* v = response.mutable_verdicts();
  v->set_method_description(
      "moderated t (prior sd 0.006 pooled, from 5 "
      "schedules)");
  v->set_family(v1::VERDICT_FAMILY_BH);
  v->set_alpha(0.05);
  v->set_better(1);
  v->set_inconclusive(1);
  v->set_needs_seeds(1);
  v->add_best_set("2x3,4x3");
  v->add_best_set("1x2,4x4");
  std::ostringstream out;
  PrintRanking(response, Format::kText, out);
  const std::string text = out.str();
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    EXPECT_LE(DisplayWidth(line), 100u) << line;
  }
  EXPECT_THAT(text, HasSubstr("-0.0142  ±0.0130   better"));
  EXPECT_THAT(text, HasSubstr("inconclusive  9 seeds"));
  EXPECT_THAT(text, HasSubstr("verdicts: 1 better, 0 worse, 1 inconclusive, "
                              "1 need seeds\n"));
  EXPECT_THAT(text, HasSubstr("best-set (95% confidence, Hsu's MCB): 2 "
                              "schedule(s): 2x3,4x3 1x2,4x4\n"));
  // The next step is one command, on a line of its own, within the limit.
  EXPECT_THAT(text, HasSubstr("next: the best-set's inconclusive schedules "
                              "need up to 9 paired seeds"));
  EXPECT_THAT(text, HasSubstr("\n  prism seeds add 7 --to 9\n"));
  EXPECT_THAT(text, HasSubstr("moderated t (prior sd 0.006 pooled"));

  // Past what a schedule may have (64, or the seeds policy's max), no count
  // is named: the best-set is a tie at this size.
  unsure->set_seeds_needed(1000);
  out.str("");
  PrintRanking(response, Format::kText, out);
  EXPECT_THAT(Unwrapped(out.str()),
              HasSubstr("would need 1000 paired seeds to settle, past the 64 "
                        "a schedule may have: at this size they are a tie"));
  EXPECT_THAT(out.str(), Not(HasSubstr("prism seeds add")));
  unsure->set_seeds_needed(9);
  response.mutable_experiment()
      ->mutable_spec()
      ->mutable_seeds_policy()
      ->set_max(6);
  out.str("");
  PrintRanking(response, Format::kText, out);
  EXPECT_THAT(Unwrapped(out.str()),
              HasSubstr("past the 6 a schedule may have"));
  response.mutable_experiment()
      ->mutable_spec()
      ->mutable_seeds_policy()
      ->set_max(12);
  out.str("");
  PrintRanking(response, Format::kText, out);
  EXPECT_THAT(out.str(), HasSubstr("\n  prism seeds add 7 --to 9\n"));
}

// Racing (issue 39): one line on how the best was settled, and a next step
// that races further rather than resubmitting.
TEST(ViewsTest, RacingSaysHowTheBestWasSettledAndWhatWouldSettleIt) {
  v1::RankResponse response = TwoSeedRanking();
  v1::RaceReport* race = response.mutable_race();
  race->set_state("settled");
  race->set_best("2x3,4x3");
  race->set_best_seeds(9);
  race->add_contenders("2x3,4x3");
  race->set_started(3);
  race->set_seeds_added(21);
  race->set_grid_share(0.456);
  race->set_race_share(0.072);
  race->set_budget(0.1);
  race->set_max_seeds(12);
  race->set_note(
      "best 2x3,4x3 settled on 9 seeds (3 contenders raced, 21 seeds added)");
  std::ostringstream out;
  PrintRanking(response, Format::kText, out);
  std::string text = out.str();
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    EXPECT_LE(DisplayWidth(line), 100u) << line;
  }
  EXPECT_THAT(text, HasSubstr("racing: best 2x3,4x3 settled on 9 seeds (3 "
                              "contenders raced, 21 seeds added); 45.6% of "
                              "the grid's\n  steps in all (7.2% added by "
                              "racing, budget 10%, at most 12 seeds each)"));
  EXPECT_THAT(text, HasSubstr("next: 2x3,4x3 is the best at this size"));

  race->set_state("budget spent");
  race->add_contenders("1x2,4x4");
  race->set_look_seeds(6);
  race->set_note("unsettled: the racing budget is spent");
  out.str("");
  PrintRanking(response, Format::kText, out);
  text = out.str();
  EXPECT_THAT(text, HasSubstr("next: 2 contenders are still in the race on 6 "
                              "seeds (the racing budget is spent)"));
  EXPECT_THAT(text, HasSubstr("\n  prism seeds add 0 --to 12 --schedules "
                              "2x3,4x3 1x2,4x4\n"));

  // At racing's max_seeds no command would be taken: a tie at this size.
  race->set_state("at max");
  race->set_look_seeds(12);
  out.str("");
  PrintRanking(response, Format::kText, out);
  EXPECT_THAT(Unwrapped(out.str()),
              HasSubstr("still in the race on 12 seeds, racing's max_seeds: at "
                        "this size they are a tie"));
  EXPECT_THAT(out.str(), Not(HasSubstr("prism seeds add")));
}

TEST(ViewsTest, OneSeedRankingSaysHowManySeedsWouldTell) {
  v1::RankResponse response = OneSeedRanking();
  response.mutable_verdicts()->set_needs_seeds(4);
  std::ostringstream out;
  RankingView view;
  view.more_seeds = [](int n) { return absl::StrCat("prism run --seeds ", n); };
  PrintRanking(response, Format::kText, out, view);
  EXPECT_THAT(out.str(), HasSubstr("best-set: needs 2 paired seeds per "
                                   "schedule\n"));
  EXPECT_THAT(out.str(), HasSubstr("next: verdicts need 2+ seeds per "
                                   "schedule; 3 seeds find effects of 3 "
                                   "trial-noise sd at >= 80% power:\n  prism "
                                   "run --seeds 3\n"));
}

TEST(ViewsTest, MissingValuesNoteNamesOnlyColumnsWithMissingValues) {
  v1::RankResponse response;
  *response.add_schedules() = Row(1, "4x6", 2.6, 2, 1.0);
  *response.add_schedules() = Row(2, "2x3,4x3", 2.7, 2, 0.8);
  *response.mutable_baseline() = response.schedules(0);
  EXPECT_EQ(MissingValuesNote(response), "");

  response.mutable_schedules(1)->set_convergence_speedup(0.0);
  response.mutable_schedules(1)->clear_speedup();
  EXPECT_EQ(MissingValuesNote(response),
            "speedup - = never reached the baseline's final val loss");

  response.clear_baseline();
  EXPECT_EQ(MissingValuesNote(response),
            "delta, speedup, tps_ratio - = no baseline trial yet");
}

TEST(ViewsTest, RankingCsvKeepsMissingValuesEmpty) {
  std::ostringstream out;
  PrintRanking(OneSeedRanking(), Format::kCsv, out);
  EXPECT_THAT(
      out.str(),
      HasSubstr("2.6151,,+0.0008,,needs_seeds,,2.6151,,1.000,1,1,0,0,,,0,1,"
                ",,1,1,worker,,,,,,,0,0,0,false\n"));
  EXPECT_THAT(out.str(), Not(HasSubstr("never reached")));
}

v1::RankResponse TwoSeedRanking() {
  v1::RankResponse response;
  *response.add_schedules() = Row(1, "2x3,4x3", 2.6001, 2, 1.2);
  *response.add_schedules() = Row(2, "4x6", 2.6143, 2, 1.0);
  v1::RankedSchedule thin = Row(3, "1x3,4x3", 2.5, 1, 0.0);
  thin.set_seeds_completed(1);
  thin.set_seeds_diverged(1);
  thin.set_seeds_failed(2);
  thin.set_diverged(true);
  *response.add_schedules() = thin;
  *response.mutable_baseline() = response.schedules(1);
  response.set_compared_schedules(1);
  return response;
}

TEST(ViewsTest, RankingTextShowsVerdictsAdjustedPAndSeedCounts) {
  std::ostringstream out;
  PrintRanking(TwoSeedRanking(), Format::kText, out, Wide());
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("verdict"));
  EXPECT_THAT(text, HasSubstr("adj_p"));
  EXPECT_THAT(text, HasSubstr("-0.0142      0.0100  better       0.040"));
  // One paired seed: a delta but no CI, no test; 1 diverged, 2 failed.
  EXPECT_THAT(text, HasSubstr("-0.1143           -  needs seeds      -"));
  EXPECT_THAT(text,
              HasSubstr("1       1         1       2         -  2 seeds"));
  EXPECT_THAT(text,
              HasSubstr("verdicts: paired t, Benjamini-Hochberg (FDR) at 0.05 "
                        "over 1 schedule(s)"));
  EXPECT_THAT(text, HasSubstr("inconclusive = no difference found (not "
                              "'equal')"));
  EXPECT_THAT(text, Not(HasSubstr("tied")));
  EXPECT_THAT(text, Not(HasSubstr("beats it")));
}

TEST(ViewsTest, RankingTextShowsSpeedupAndThroughputWithIntervalsAndCounts) {
  v1::RankResponse response = TwoSeedRanking();
  v1::RankedSchedule* gpu = response.mutable_schedules(0);
  // 3 paired seeds, 2 reached the target.
  gpu->set_speedup_seeds(3);
  gpu->mutable_throughput_ratio()->set_mean(5.5);
  gpu->mutable_throughput_ratio()->set_low(4.25);
  gpu->mutable_throughput_ratio()->set_high(6.75);
  gpu->set_throughput_pairing(v1::THROUGHPUT_PAIRING_UNPAIRED);
  gpu->set_throughput_hardware("cuda:0 vs cpu (4 threads)");
  std::ostringstream out;
  PrintRanking(response, Format::kText, out, Wide());
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("1.20 [1.15,1.25] 2/3  "
                              "5.50 [4.25,6.75] 2/2 unpaired"));
  // The baseline's ratios are 1 by definition: no interval, no counts.
  EXPECT_THAT(text, HasSubstr("2.6143  1.00                  1.00      "));
  EXPECT_THAT(text, HasSubstr("tps_ratio unpaired (hardware differs) for 1 "
                              "schedule(s): cuda:0 vs cpu (4 threads)\n"));
  EXPECT_THAT(text, HasSubstr("over the m of n paired seeds that reached it"));

  std::ostringstream csv;
  PrintRanking(response, Format::kCsv, csv);
  EXPECT_THAT(csv.str(), HasSubstr(",1.200,5.500,2,2,0,0,1.150,1.250,2,3,4.250,"
                                   "6.750,2,2,unpaired,cuda:0 vs cpu (4 "
                                   "threads),"));
}

TEST(ViewsTest, RankingJsonOmitsAbsentIntervalsAndPValues) {
  std::ostringstream one;
  PrintRanking(OneSeedRanking(), Format::kJson, one);
  EXPECT_THAT(one.str(), Not(HasSubstr("\"low\"")));
  EXPECT_THAT(one.str(), Not(HasSubstr("\"high\"")));
  EXPECT_THAT(one.str(), Not(HasSubstr("PValue")));
  EXPECT_THAT(one.str(), HasSubstr("\"verdict\": \"VERDICT_NEEDS_SEEDS\""));
  EXPECT_THAT(one.str(), HasSubstr("\"seedsDiverged\": 0"));
  std::ostringstream two;
  PrintRanking(TwoSeedRanking(), Format::kJson, two);
  EXPECT_THAT(two.str(), HasSubstr("\"low\""));
  EXPECT_THAT(two.str(), HasSubstr("\"adjustedPValue\": 0.04"));
  EXPECT_THAT(two.str(), HasSubstr("\"speedupSeeds\": 2"));
  EXPECT_THAT(
      two.str(),
      HasSubstr("\"throughputPairing\": \"THROUGHPUT_PAIRING_WORKER\""));
  EXPECT_THAT(two.str(), HasSubstr("\"seedsFailed\": 2"));
  EXPECT_THAT(two.str(), HasSubstr("\"comparedSchedules\": 1"));
}

// One row of each kind, as the coordinator sends them: smooth estimated over
// 6 schedules (3 dof), baseline violated by nothing, pow2 not separable.
v1::RankResponse RankingWithEffects() {
  v1::RankResponse response = TwoSeedRanking();
  v1::PrincipleEffect* smooth = response.add_principle_effects();
  smooth->set_principle(v1::PRINCIPLE_SMOOTH);
  smooth->set_satisfied(2);
  smooth->set_violated(4);
  smooth->set_mean_delta_satisfied(-0.002);
  smooth->set_mean_delta_violated(0.011);
  smooth->set_status(v1::EFFECT_ESTIMATED);
  smooth->mutable_effect()->set_mean(0.0125);
  smooth->mutable_effect()->set_low(0.0025);
  smooth->mutable_effect()->set_high(0.0225);
  smooth->mutable_effect()->set_n(6);
  smooth->set_standard_error(0.0031);
  smooth->set_p_value(0.0273);
  smooth->set_dof(3);
  v1::PrincipleEffect* baseline = response.add_principle_effects();
  baseline->set_principle(v1::PRINCIPLE_BASELINE);
  baseline->set_satisfied(6);
  baseline->set_mean_delta_satisfied(0.0067);
  baseline->set_status(v1::EFFECT_NOTHING_VIOLATES);
  baseline->set_note("nothing violates it");
  v1::PrincipleEffect* pow2 = response.add_principle_effects();
  pow2->set_principle(v1::PRINCIPLE_POW2);
  pow2->set_satisfied(3);
  pow2->set_violated(3);
  pow2->set_status(v1::EFFECT_NOT_SEPARABLE);
  pow2->set_note("baseline and pow2 co-vary completely: effects not separable");
  return response;
}

TEST(ViewsTest, PrincipleEffectsShowTheEstimateOrWhyThereIsNone) {
  std::ostringstream out;
  PrintRanking(RankingWithEffects(), Format::kText, out, Wide());
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("principle  satisfied  violated   effect  "
                              "effect_ci95      p  mean_delta_satisfied  "
                              "mean_delta_violated  note\n"));
  EXPECT_THAT(text, HasSubstr("smooth             2         4  +0.0125       "
                              "0.0100  0.027               -0.0020          "
                              "    +0.0110  6 schedules, 3 dof\n"));
  EXPECT_THAT(text, HasSubstr("baseline           6         0        -      "
                              "      -      -               +0.0067          "
                              "          -  not estimable (nothing violates "
                              "it)\n"));
  EXPECT_THAT(text, HasSubstr("not estimable (baseline and pow2 co-vary "
                              "completely: effects not separable)\n"));
  EXPECT_THAT(text, HasSubstr("effect: coefficient of violating the principle "
                              "in a regression of each schedule's mean "
                              "paired delta"));
}

TEST(ViewsTest, DefaultPrincipleTableFitsAndMovesLongNotesBelowIt) {
  std::ostringstream out;
  PrintRanking(RankingWithEffects(), Format::kText, out);
  const std::string text = out.str();
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    EXPECT_LE(DisplayWidth(line), 100u) << line;
  }
  EXPECT_THAT(text, HasSubstr("principle  satisfied  violated   effect  "
                              "effect_ci95      p  note\n"
                              "smooth             2         4  +0.0125       "
                              "0.0100  0.027  6 schedules, 3 dof\n"));
  EXPECT_THAT(text, HasSubstr("pow2               3         3        -      "
                              "      -      -  see below\n"
                              "pow2: not estimable (baseline and pow2 co-vary "
                              "completely: effects not separable)\n"));
  EXPECT_THAT(text, Not(HasSubstr("mean_delta")));
  // The summary condenses the table to one line.
  EXPECT_THAT(absl::StrReplaceAll(text, {{"\n  ", " "}}),
              HasSubstr("principles (effect of violating, 95% CI, p): smooth "
                        "+0.0125 ±0.0100 p 0.027; baseline, pow2 not "
                        "estimable here (see the table)\n"));
}

TEST(ViewsTest, PrincipleEffectsOfAPrincipledGridAreNotEstimable) {
  // prism run --grid principled: every schedule satisfies every principle.
  v1::RankResponse response = OneSeedRanking();
  for (v1::Principle p :
       {v1::PRINCIPLE_SMOOTH, v1::PRINCIPLE_BASELINE, v1::PRINCIPLE_POW2}) {
    v1::PrincipleEffect* e = response.add_principle_effects();
    e->set_principle(p);
    e->set_satisfied(4);
    e->set_mean_delta_satisfied(0.00227);
    e->set_status(v1::EFFECT_NOTHING_VIOLATES);
    e->set_note("nothing violates it");
  }
  std::ostringstream out;
  PrintRanking(response, Format::kText, out, Wide());
  EXPECT_THAT(
      out.str(),
      HasSubstr("principle  satisfied  violated  effect  effect_ci95  p  "
                "mean_delta_satisfied  mean_delta_violated  note\n"
                "smooth             4         0       -            -  -      "
                "         +0.0023                    -  not estimable "
                "(nothing violates it)\n"
                "baseline           4         0       -            -  -      "
                "         +0.0023                    -  not estimable "
                "(nothing violates it)\n"
                "pow2               4         0       -            -  -      "
                "         +0.0023                    -  not estimable "
                "(nothing violates it)\n"));
  EXPECT_THAT(out.str(), HasSubstr("principles: smooth, baseline, pow2 not "
                                   "estimable here (see the table)\n"));
}

TEST(ViewsTest, PrincipleEffectNoteFallsBackToTheStatus) {
  v1::PrincipleEffect effect;
  EXPECT_EQ(PrincipleEffectNote(effect), "");  // an older coordinator
  effect.set_status(v1::EFFECT_TOO_FEW_SCHEDULES);
  EXPECT_EQ(PrincipleEffectNote(effect), "not estimable (too_few_schedules)");
}

TEST(ViewsTest, PrincipleEffectsJsonOmitsTheEffectWhenNotEstimable) {
  std::ostringstream out;
  PrintRanking(RankingWithEffects(), Format::kJson, out);
  const std::string json = out.str();
  EXPECT_THAT(json, HasSubstr("\"status\": \"EFFECT_ESTIMATED\""));
  EXPECT_THAT(json, HasSubstr("\"status\": \"EFFECT_NOTHING_VIOLATES\""));
  EXPECT_THAT(json, HasSubstr("\"pValue\": 0.0273"));
  EXPECT_THAT(json, HasSubstr("\"note\": \"nothing violates it\""));
  // One effect object: the estimated one.
  EXPECT_EQ(json.find("\"effect\": {"), json.rfind("\"effect\": {"));
  EXPECT_NE(json.find("\"effect\": {"), std::string::npos);
}

TEST(ViewsTest, MfuTextSaysWhenTheTrialBeatTheMeasuredPeak) {
  v1::TrialMetrics m;
  EXPECT_EQ(MfuText(m), "MFU not measured");
  m.set_mfu(0.791);
  m.set_peak_matmul_flops(90e9);
  m.set_measured_peak_matmul_flops(90e9);
  EXPECT_EQ(MfuText(m), "MFU 79.1% of 90.0 GFLOP/s");
  m.set_measured_peak_matmul_flops(0);  // a trial from before the field
  EXPECT_EQ(MfuText(m), "MFU 79.1% of 90.0 GFLOP/s");
  m.set_mfu(1.0);
  m.set_peak_matmul_flops(46e9);
  m.set_measured_peak_matmul_flops(13e9);
  EXPECT_EQ(MfuText(m),
            "MFU 100.0% (46.0 GFLOP/s achieved, above the 13.0 GFLOP/s "
            "matmul measured)");
}

v1::CompareResponse Compared(int seeds, v1::Verdict verdict) {
  v1::CompareResponse r;
  r.mutable_a()->set_schedule("4x6");
  r.mutable_b()->set_schedule("2x3,4x3");
  r.mutable_delta()->set_mean(-0.0123);
  r.mutable_delta()->set_n(seeds);
  if (seeds >= 2) {
    r.mutable_delta()->set_low(-0.0223);
    r.mutable_delta()->set_high(-0.0023);
    r.set_p_value(0.0312);
  }
  r.set_verdict(verdict);
  return r;
}

TEST(ViewsTest, CompareShowsBsVerdictItsPValueAndTheMethod) {
  std::ostringstream out;
  PrintCompare(Compared(3, v1::VERDICT_BETTER), Format::kText, out);
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("4x6  2x3,4x3"));
  EXPECT_THAT(text, HasSubstr("-0.0123  0.0100"));
  EXPECT_THAT(text, HasSubstr("better     0.031\n"));
  EXPECT_THAT(text, HasSubstr("not adjusted (one planned comparison)"));
  EXPECT_THAT(text, Not(HasSubstr("fewer than 2 seeds")));

  std::ostringstream one;
  PrintCompare(Compared(1, v1::VERDICT_NEEDS_SEEDS), Format::kText, one);
  EXPECT_THAT(one.str(), HasSubstr("needs_seeds"));
  EXPECT_THAT(one.str(), HasSubstr("ci95, p - = fewer than 2 seeds"));

  std::ostringstream json;
  PrintCompare(Compared(1, v1::VERDICT_NEEDS_SEEDS), Format::kJson, json);
  EXPECT_THAT(json.str(), HasSubstr("\"verdict\": \"VERDICT_NEEDS_SEEDS\""));
  EXPECT_THAT(json.str(), Not(HasSubstr("pValue")));
  std::ostringstream json3;
  PrintCompare(Compared(3, v1::VERDICT_BETTER), Format::kJson, json3);
  EXPECT_THAT(json3.str(), HasSubstr("\"pValue\": 0.0312"));

  std::ostringstream csv;
  PrintCompare(Compared(3, v1::VERDICT_BETTER), Format::kCsv, csv);
  EXPECT_EQ(csv.str(),
            "a,b,common_seeds,delta_b_minus_a,ci95,verdict_b,p\n"
            "4x6,\"2x3,4x3\",3,-0.0123,0.0100,better,0.031\n");
}

TEST(ViewsTest, SuggestionsShowPredictionUncertaintyAndTheMethod) {
  v1::SuggestResponse response;
  v1::Suggestion* x = response.add_suggestions();
  x->set_schedule("1x1,4x5");
  x->set_predicted_delta(-0.02131);
  x->set_uncertainty(0.00412);
  x->set_acquisition(-0.02543);
  x->mutable_principles()->set_pow2(true);
  response.set_method("bootstrap ensemble of 64 ridge regressions");

  std::ostringstream text;
  PrintSuggestions(response, Format::kText, text);
  EXPECT_THAT(text.str(), HasSubstr("predicted_delta"));
  EXPECT_THAT(text.str(), HasSubstr("-0.0213"));
  EXPECT_THAT(text.str(), HasSubstr("0.0041"));
  EXPECT_THAT(text.str(), HasSubstr("-0.0254"));
  EXPECT_THAT(text.str(), HasSubstr("bootstrap ensemble of 64 ridge"));
  EXPECT_THAT(text.str(), Not(HasSubstr("warning")));
  response.add_warnings("fitted on 6 schedules");
  std::ostringstream warned;
  PrintSuggestions(response, Format::kText, warned);
  EXPECT_THAT(warned.str(), HasSubstr("\nwarning: fitted on 6 schedules\n"));

  std::ostringstream csv;
  PrintSuggestions(response, Format::kCsv, csv);
  EXPECT_EQ(csv.str(),
            "rank,schedule,principles,predicted_delta,uncertainty,lcb\n"
            "1,\"1x1,4x5\",pow2,-0.0213,0.0041,-0.0254\n");

  std::ostringstream json;
  PrintSuggestions(response, Format::kJson, json);
  EXPECT_THAT(json.str(), HasSubstr("\"predictedDelta\": -0.02131"));
}

TEST(ViewsTest, RankingShowsTheSearchCostAndEachRungsCounts) {
  v1::RankResponse response;
  response.mutable_experiment()->set_steps_trained(5760);
  response.mutable_experiment()->set_grid_steps(24000);
  v1::AshaRung* rung = response.add_asha_rungs();
  rung->set_step(60);
  rung->set_promote_quota(3);
  rung->set_members(9);
  rung->set_promoted(3);
  rung->set_complete(true);
  for (int i = 0; i < 9; ++i) {
    rung->add_schedules()->set_schedule(absl::StrCat("s", i));
  }
  EXPECT_EQ(SearchCostLine(response.experiment()),
            "steps trained: 5760 of the grid's 24000 (24.0%)");
  EXPECT_EQ(AshaRungLine(*rung),
            "rung 60: promoted 3 / quota 3 / reached 9 of 9 members "
            "(complete)");
  std::ostringstream text;
  PrintRanking(response, Format::kText, text);
  EXPECT_THAT(text.str(), HasSubstr("steps trained: 5760 of the grid's"));
  EXPECT_THAT(text.str(), HasSubstr("rung 60: promoted 3 / quota 3"));
  // An uncountable grid prints no cost line.
  EXPECT_EQ(SearchCostLine(v1::Experiment()), "");
}

v1::PlanEstimate Bill() {
  v1::PlanEstimate p;
  p.set_schedules(13);
  p.set_trials(39);
  p.set_seeds(3);
  p.set_steps(195000);
  p.set_max_steps(195000);
  p.set_grid_steps(195000);
  p.set_expected_share(1.0);
  p.set_max_share(1.0);
  p.set_share_source("exact: every trial trains the whole budget");
  p.set_tokens_per_step(524288);
  p.set_tokens(195000.0 * 524288);
  p.set_max_tokens(195000.0 * 524288);
  p.set_parameters(124475904);
  p.set_flops_per_token(566959104);
  p.set_flops(566959104.0 * 195000 * 524288);
  p.set_tokens_per_second(145899.5);
  p.set_throughput_source(
      "assumed: one A100 GPU, 312 TFLOP/s bf16 peak at 40% MFU "
      "(docs/search.md, "
      "What it costs before it runs)");
  p.set_worker_hours(194.6);
  p.set_max_worker_hours(194.6);
  p.add_warnings(
      "the corpus is byte-level (token ids < 256) but the model's vocabulary "
      "is 50,304: 99.5% of the embedding (50,048 rows) is never trained");
  return p;
}

TEST(PlanViewTest, TheBlockNamesEveryFigureWithinAHundredColumns) {
  const std::string block = PlanBlock(Bill());
  EXPECT_THAT(block, HasSubstr("13 in the space"));
  EXPECT_THAT(block, HasSubstr("195,000 expected, 195,000 at most"));
  EXPECT_THAT(block, HasSubstr("100.0% and 100.0% of the grid's 195,000"));
  EXPECT_THAT(block, HasSubstr("102.2G expected"));
  EXPECT_THAT(block, HasSubstr("524,288 a step"));
  EXPECT_THAT(block, HasSubstr("124.5M parameters, 567.0M FLOPs a token"));
  EXPECT_THAT(block, HasSubstr("195 worker-hours expected"));
  EXPECT_THAT(block, HasSubstr("145.9k tokens/s"));
  EXPECT_THAT(block, HasSubstr("warning: the corpus is byte-level"));
  for (absl::string_view line : absl::StrSplit(block, '\n')) {
    EXPECT_LE(line.size(), 100u) << line;
  }
}

TEST(PlanViewTest, TheLineSaysTheBillAndCountsTheWarnings) {
  const std::string line = PlanLine(Bill());
  EXPECT_EQ(line,
            "bill: 195,000 steps (100.0% of the grid's), 102.2G tokens, 195 "
            "worker-hours (assumed); 1 warning");
  v1::PlanEstimate asha = Bill();
  asha.set_expected_share(0.472);
  asha.set_max_share(0.487);
  asha.clear_warnings();
  asha.set_throughput_source("measured: median of 3 finished trials");
  EXPECT_THAT(PlanLine(asha),
              HasSubstr("(47.2% of the grid's, at most 48.7%)"));
  EXPECT_THAT(PlanLine(asha), HasSubstr("worker-hours (measured)"));
  EXPECT_LE(PlanLine(asha).size(), 100u);
  // Worker time reads in the unit that fits.
  v1::PlanEstimate small = Bill();
  small.set_worker_hours(0.078);       // 4.68 minutes
  small.set_max_worker_hours(0.0075);  // 27 seconds
  EXPECT_THAT(PlanLine(small), HasSubstr(", 4.7 worker-minutes (assumed)"));
  EXPECT_THAT(PlanBlock(small),
              HasSubstr("4.7 worker-minutes expected, 27 worker-seconds at "
                        "most"));
  EXPECT_EQ(Thousands(1234567), "1,234,567");
  EXPECT_EQ(Thousands(999), "999");
  EXPECT_EQ(Scaled(999), "999");
  EXPECT_EQ(Scaled(1.5e12), "1.5T");
}

// Names are a column set's names, in order; each column must have a name
// and a cell, and no two the same name (JSON keys a row's cells by name).
template <typename Row>
std::vector<std::string> Names(absl::Span<const Column<Row>> columns) {
  std::vector<std::string> names;
  for (const Column<Row>& column : columns) {
    EXPECT_NE(column.name, nullptr);
    if (column.name == nullptr) continue;
    EXPECT_NE(column.cell, nullptr) << column.name;
    EXPECT_THAT(names, Not(::testing::Contains(column.name))) << column.name;
    names.push_back(column.name);
  }
  return names;
}

TEST(ColumnsTest, EveryDeclaredColumnHasANameACellAndNoTwinInItsSet) {
  for (Format format : {Format::kText, Format::kCsv, Format::kJson}) {
    for (bool wide : {false, true}) {
      EXPECT_FALSE(Names(RankingColumns(format, wide)).empty());
    }
  }
  for (bool wide : {false, true}) {
    EXPECT_FALSE(Names(ExperimentsColumns(wide)).empty());
    EXPECT_FALSE(Names(PrincipleEffectColumns(wide)).empty());
  }
}

TEST(ColumnsTest, TheTablesPrintTheDeclaredColumns) {
  const v1::RankResponse ranking = TwoSeedRanking();
  for (Format format : {Format::kText, Format::kCsv}) {
    for (bool wide : {false, true}) {
      std::ostringstream csv;
      RankingTable(ranking, format, wide).Print(csv, Format::kCsv);
      const std::vector<std::string> lines = absl::StrSplit(csv.str(), '\n');
      EXPECT_EQ(lines[0],
                absl::StrJoin(Names(RankingColumns(format, wide)), ","));
    }
  }
}

TEST(ColumnsTest, WidePrincipleEffectsHoldTheDefaultColumnsInOrder) {
  const std::vector<std::string> wide = Names(PrincipleEffectColumns(true));
  const std::vector<std::string> narrow = Names(PrincipleEffectColumns(false));
  std::vector<std::string> common;
  for (const std::string& name : wide) {
    if (!absl::StartsWith(name, "mean_delta_")) common.push_back(name);
  }
  EXPECT_EQ(common, narrow);
  EXPECT_EQ(wide.size(), narrow.size() + 2);
}

TEST(ColumnsTest, RankingCsvHoldsTheWideColumnsButTheTextSummaries) {
  const std::vector<std::string> wide =
      Names(RankingColumns(Format::kText, /*wide=*/true));
  const std::vector<std::string> csv =
      Names(RankingColumns(Format::kCsv, /*wide=*/true));
  // adj_ci95, to_settle and best_set summarize CSV's adj_low/adj_high,
  // seeds_needed and in_best_set.
  std::vector<std::string> shared;
  for (const std::string& name : wide) {
    if (name != "adj_ci95" && name != "to_settle" && name != "best_set") {
      shared.push_back(name);
    }
  }
  ASSERT_LE(shared.size(), csv.size());
  EXPECT_EQ(shared,
            std::vector<std::string>(csv.begin(), csv.begin() + shared.size()));
  EXPECT_THAT(csv, ::testing::IsSupersetOf(
                       {"adj_low", "adj_high", "seeds_needed", "in_best_set"}));
  // --wide and CSV are the same set whatever `wide` says; JSON is --wide's.
  EXPECT_EQ(Names(RankingColumns(Format::kCsv, false)), csv);
  EXPECT_EQ(Names(RankingColumns(Format::kJson, false)), wide);
}

TEST(ColumnsTest, DefaultViewsShowWideColumnsOrTheirShortForms) {
  // The default ranking's short forms are in its legend (PrintRanking).
  const std::vector<std::string> wide_ranking =
      Names(RankingColumns(Format::kText, /*wide=*/true));
  for (const std::string& name :
       Names(RankingColumns(Format::kText, /*wide=*/false))) {
    if (name == "sbp" || name == "best" || name == "tps") continue;
    EXPECT_THAT(wide_ranking, ::testing::Contains(name));
  }
  const std::vector<std::string> wide_experiments =
      Names(ExperimentsColumns(/*wide=*/true));
  for (const std::string& name : Names(ExperimentsColumns(/*wide=*/false))) {
    // pri, done and pos: priority, completed/total and position.
    if (name == "pri" || name == "done" || name == "pos") continue;
    EXPECT_THAT(wide_experiments, ::testing::Contains(name));
  }
}

}  // namespace
}  // namespace prism::cli
