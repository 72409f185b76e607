#include "scheduler/strategy/suggest.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scheduler/synthetic_experiment.h"

namespace prism {
namespace {

using ::prism::testing::kBase64;
using ::prism::testing::Space64;
using ::prism::testing::SyntheticDelta;
using ::prism::testing::SyntheticExperiment;
using ::testing::HasSubstr;

// Experiment returns the baseline and `finished` schedules drawn from the
// space, each on seeds 1 and 2, plus `pending` more schedules queued.
SyntheticExperiment Experiment(int finished, int pending) {
  SyntheticExperiment e;
  std::vector<Schedule> drawn =
      *SampleSchedules(Space64(), finished + pending + 1, /*seed=*/3);
  drawn.erase(
      std::remove_if(drawn.begin(), drawn.end(),
                     [](const Schedule& s) { return s.ToString() == kBase64; }),
      drawn.end());
  for (int64_t seed : {1, 2}) {
    e.Finished(kBase64, seed);
    for (int i = 0; i < finished + pending; ++i) {
      if (i < finished) {
        e.Finished(drawn[i].ToString(), seed);
      } else {
        e.Pending(drawn[i].ToString(), seed);
      }
    }
  }
  return e;
}

TEST(SuggestTest, NeverProposesATriedOrInvalidSchedule) {
  const SyntheticExperiment e = Experiment(/*finished=*/8, /*pending=*/2);
  const std::set<std::string> tried = e.Tried();
  ASSERT_EQ(tried.size(), 11u);
  absl::StatusOr<SuggestionSet> s =
      SuggestSchedules(Space64(), e.Rank(), tried, kMaxSuggestions, 1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->observed, 8);
  EXPECT_FALSE(s->pool.sampled);
  // Every untried schedule of the 120, once.
  ASSERT_EQ(s->suggestions.size(), 120u - 11u);
  std::set<std::string> seen;
  for (size_t i = 0; i < s->suggestions.size(); ++i) {
    const Suggestion& x = s->suggestions[i];
    EXPECT_EQ(tried.count(x.schedule), 0u) << x.schedule;
    EXPECT_TRUE(seen.insert(x.schedule).second) << x.schedule;
    absl::StatusOr<Schedule> parsed = ParseSchedule(x.schedule);
    ASSERT_TRUE(parsed.ok());
    EXPECT_TRUE(InSpace(Space64(), *parsed)) << x.schedule;
    EXPECT_DOUBLE_EQ(x.acquisition,
                     x.predicted_delta - kLcbKappa * x.uncertainty);
    EXPECT_GT(x.uncertainty, 0.0);
    if (i > 0) {
      EXPECT_LE(s->suggestions[i - 1].acquisition, x.acquisition);
    }
  }
  EXPECT_THAT(s->method, HasSubstr("lower confidence bound"));
  EXPECT_THAT(s->method, HasSubstr("109 untried schedules"));
}

TEST(SuggestTest, TopSuggestionsAreBetterThanTheAverageCandidate) {
  const SyntheticExperiment e = Experiment(/*finished=*/12, /*pending=*/0);
  absl::StatusOr<SuggestionSet> all =
      SuggestSchedules(Space64(), e.Rank(), e.Tried(), kMaxSuggestions, 1);
  ASSERT_TRUE(all.ok()) << all.status();
  double mean_all = 0.0;
  for (const Suggestion& x : all->suggestions) {
    mean_all += SyntheticDelta(x.schedule);
  }
  mean_all /= static_cast<double>(all->suggestions.size());
  double mean_top = 0.0;
  for (int i = 0; i < 5; ++i) {
    mean_top += SyntheticDelta(all->suggestions[i].schedule) / 5;
  }
  EXPECT_LT(mean_top, mean_all - 0.005);
}

TEST(SuggestTest, TooFewFinishedSchedulesIsFailedPrecondition) {
  const SyntheticExperiment e = Experiment(/*finished=*/3, /*pending=*/4);
  absl::StatusOr<SuggestionSet> s =
      SuggestSchedules(Space64(), e.Rank(), e.Tried(), 5, 1);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("at least 5"));
  EXPECT_THAT(s.status().message(), HasSubstr("(there are 3)"));
}

// Rows as RankSchedules makes them: the baseline, then `schedules` rows
// with a paired delta on `seeds` seeds each.
Ranking RankingOf(int schedules, int seeds) {
  Ranking r;
  RankedRow base;
  base.is_baseline = true;
  r.rows.push_back(base);
  for (int i = 0; i < schedules; ++i) {
    RankedRow row;
    row.schedule = absl::StrCat("s", i);
    row.delta_vs_baseline.n = seeds;
    r.rows.push_back(row);
  }
  return r;
}

TEST(SuggestTest, WarnsWhenMostObservationsHaveOneSeedOrTheyAreFew) {
  // The case: 6 schedules on one seed each.
  const std::vector<std::string> six = SuggestionWarnings(RankingOf(6, 1));
  ASSERT_EQ(six.size(), 2u);
  EXPECT_THAT(six[0], HasSubstr("6 of the 6 schedules fitted on have one "
                                "paired seed"));
  EXPECT_THAT(six[0], ::testing::EndsWith("add seeds first"));
  EXPECT_THAT(six[1], HasSubstr("fitted on 6 schedules"));
  // Many schedules on 3 seeds: nothing to warn of.
  EXPECT_THAT(SuggestionWarnings(RankingOf(40, 3)), ::testing::IsEmpty());
  // Few schedules on 3 seeds: only that they are few.
  const std::vector<std::string> few = SuggestionWarnings(RankingOf(7, 3));
  ASSERT_EQ(few.size(), 1u);
  EXPECT_THAT(few[0], HasSubstr("fitted on 7 schedules"));
  // Many on one seed: only the seed warning.
  const std::vector<std::string> noisy = SuggestionWarnings(RankingOf(30, 1));
  ASSERT_EQ(noisy.size(), 1u);
  EXPECT_THAT(noisy[0], HasSubstr("30 of the 30"));
  // Half on one seed is not most.
  Ranking half = RankingOf(10, 2);
  for (int i = 1; i <= 5; ++i) half.rows[i].delta_vs_baseline.n = 1;
  EXPECT_THAT(SuggestionWarnings(half), ::testing::IsEmpty());
}

TEST(SuggestTest, NOutOfRangeIsInvalidArgument) {
  const SyntheticExperiment e = Experiment(/*finished=*/8, /*pending=*/0);
  for (int n : {0, -1, kMaxSuggestions + 1}) {
    absl::StatusOr<SuggestionSet> s =
        SuggestSchedules(Space64(), e.Rank(), e.Tried(), n, 1);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << n;
    EXPECT_THAT(s.status().message(), HasSubstr("n must be between 1 and"));
  }
}

TEST(SuggestTest, AHugeSpaceIsSampledUniformly) {
  SpaceSpec space;
  space.d_model = 768;
  space.layers = 24;
  space.base_heads = 12;
  ASSERT_GT(CountSchedules(space)->value, kMaxEnumeratedCandidates);
  const std::vector<Schedule> first = *SampleSchedules(space, 10, 7);
  std::set<std::string> tried;
  for (const Schedule& s : first) tried.insert(s.ToString());
  absl::StatusOr<CandidatePool> pool = UntriedCandidates(space, tried, 7);
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_TRUE(pool->sampled);
  EXPECT_LE(pool->schedules.size(), static_cast<size_t>(kSampledCandidates));
  EXPECT_GE(pool->schedules.size(),
            static_cast<size_t>(kSampledCandidates) - tried.size());
  for (const Schedule& s : pool->schedules) {
    EXPECT_EQ(tried.count(s.ToString()), 0u);
    EXPECT_TRUE(InSpace(space, s));
  }
}

}  // namespace
}  // namespace prism
