#include "scheduler/strategy/surrogate.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/stats/least_squares.h"

namespace prism {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Schedule Parse(const char* text) { return *ParseSchedule(text); }

TEST(ScheduleFeaturesTest, PaperScheduleByHand) {
  // d_head 256 x3, 128 x3, 64 x6; runs 3, 3, 6; 6 of 12 layers at 12 heads.
  EXPECT_THAT(ScheduleFeatures(768, 12, Parse("3x3,6x3,12x6")),
              ElementsAre(8, 8, 8, 7, 7, 7, 6, 6, 6, 6, 6, 6,  // profile
                          2, 3, 6, 4.0, 0.5));
}

TEST(ScheduleFeaturesTest, UniformScheduleHasOneRunAndNoTransition) {
  EXPECT_THAT(ScheduleFeatures(64, 8, Parse("8x8")),
              ElementsAre(3, 3, 3, 3, 3, 3, 3, 3, 0, 8, 8, 8.0, 1.0));
}

TEST(ScheduleFeaturesTest, UnevenRunsByHand) {
  // d_head 32 32 16 16 8 8 8 8 -> log2 5 5 4 4 3 3 3 3; runs 2, 2, 4.
  const std::vector<double> f = ScheduleFeatures(64, 8, Parse("2x2,4x2,8x4"));
  ASSERT_EQ(f.size(), 13u);
  EXPECT_THAT(std::vector<double>(f.begin(), f.begin() + 8),
              ElementsAre(5, 5, 4, 4, 3, 3, 3, 3));
  EXPECT_EQ(f[8], 2);                  // transitions
  EXPECT_EQ(f[9], 2);                  // min run
  EXPECT_EQ(f[10], 4);                 // max run
  EXPECT_DOUBLE_EQ(f[11], 8.0 / 3.0);  // mean run
  EXPECT_DOUBLE_EQ(f[12], 0.5);        // at the baseline count
}

TEST(ScheduleFeaturesTest, NamesMatchTheFeatures) {
  EXPECT_THAT(
      ScheduleFeatureNames(2),
      ElementsAre("log2_dhead_1", "log2_dhead_2", "transitions", "min_run",
                  "max_run", "mean_run", "baseline_fraction"));
}

TEST(FitRidgeTest, TinyPenaltyIsLeastSquaresAndLargeShrinksToTheMean) {
  const Columns x = {{0, 1, 2, 3}};
  const std::vector<double> y = {1, 3, 5, 7};  // 1 + 2x
  const std::vector<double> w(4, 1.0);
  std::optional<std::vector<double>> exact = FitRidge(x, y, w, 1e-9);
  ASSERT_TRUE(exact.has_value());
  EXPECT_NEAR((*exact)[0], 1.0, 1e-6);
  EXPECT_NEAR((*exact)[1], 2.0, 1e-6);
  std::optional<std::vector<double>> flat = FitRidge(x, y, w, 1e9);
  ASSERT_TRUE(flat.has_value());
  EXPECT_NEAR((*flat)[1], 0.0, 1e-6);
  EXPECT_NEAR((*flat)[0], 4.0, 1e-6);  // the mean of y
  EXPECT_FALSE(FitRidge(x, y, w, 0.0).has_value());
  EXPECT_FALSE(FitRidge(x, {1.0}, {1.0}, 1.0).has_value());
}

// A known linear effect: delta = 0.01 + 0.05 x1 - 0.02 x2 on a grid of
// x1, x2 in [-1, 1], with a constant third feature and a small alternating
// noise.
double TrueDelta(double x1, double x2) { return 0.01 + 0.05 * x1 - 0.02 * x2; }

std::vector<SurrogateObservation> LinearData() {
  std::vector<SurrogateObservation> obs;
  int i = 0;
  for (double x1 = -1.0; x1 <= 1.0001; x1 += 0.25) {
    for (double x2 = -1.0; x2 <= 1.0001; x2 += 0.5) {
      const double noise = (i++ % 2 == 0 ? 1 : -1) * 0.001;
      obs.push_back({{x1, x2, 7.0}, TrueDelta(x1, x2) + noise, 1 + i % 3});
    }
  }
  return obs;
}

TEST(SurrogateTest, RecoversAKnownLinearEffect) {
  absl::StatusOr<Surrogate> s = Surrogate::Fit(LinearData());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->observations(), 45);
  for (const auto& [x1, x2] : std::vector<std::pair<double, double>>{
           {0.0, 0.0}, {0.6, -0.3}, {-0.9, 0.8}, {0.1, 0.9}}) {
    const SurrogatePrediction p = s->Predict({x1, x2, 7.0});
    // Ridge shrinks the slopes by about lambda / (n + lambda), ~2%.
    EXPECT_NEAR(p.delta, TrueDelta(x1, x2), 0.003) << x1 << "," << x2;
    EXPECT_GT(p.sd, 0.0);
  }
  EXPECT_LT(s->residual_sd(), 0.003);
  EXPECT_THAT(s->Describe(), HasSubstr("45 schedules"));
}

TEST(SurrogateTest, UncertaintyGrowsAwayFromTheData) {
  absl::StatusOr<Surrogate> s = Surrogate::Fit(LinearData());
  ASSERT_TRUE(s.ok()) << s.status();
  const double center = s->Predict({0.0, 0.0, 7.0}).sd;
  const double edge = s->Predict({1.0, 1.0, 7.0}).sd;
  const double far = s->Predict({4.0, 4.0, 7.0}).sd;
  const double farther = s->Predict({16.0, -16.0, 7.0}).sd;
  EXPECT_LT(center, edge);
  EXPECT_LT(edge, far);
  EXPECT_LT(far, farther);
  EXPECT_GT(farther, 4 * center);
}

TEST(SurrogateTest, MoreDataShrinksTheUncertainty) {
  std::vector<SurrogateObservation> all = LinearData();
  std::vector<SurrogateObservation> few;
  for (size_t i = 0; i < all.size(); i += 5) few.push_back(all[i]);
  absl::StatusOr<Surrogate> small = Surrogate::Fit(few);
  absl::StatusOr<Surrogate> large = Surrogate::Fit(all);
  ASSERT_TRUE(small.ok() && large.ok());
  EXPECT_GT(small->Predict({0.5, 0.5, 7.0}).sd,
            large->Predict({0.5, 0.5, 7.0}).sd);
}

TEST(SurrogateTest, SameDataSamePredictions) {
  absl::StatusOr<Surrogate> a = Surrogate::Fit(LinearData());
  absl::StatusOr<Surrogate> b = Surrogate::Fit(LinearData());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->Predict({0.3, 2.0, 7.0}).sd, b->Predict({0.3, 2.0, 7.0}).sd);
}

TEST(SurrogateTest, TooFewSchedulesNamesTheNumbers) {
  std::vector<SurrogateObservation> obs = LinearData();
  obs.resize(kMinSurrogateSchedules - 1);
  absl::StatusOr<Surrogate> s = Surrogate::Fit(obs);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("at least 5 finished schedules"));
  EXPECT_THAT(s.status().message(), HasSubstr("(there are 4)"));
}

TEST(SurrogateTest, BadObservationsAreInvalidArgument) {
  std::vector<SurrogateObservation> obs = LinearData();
  obs[3].features.pop_back();
  EXPECT_EQ(Surrogate::Fit(obs).status().code(),
            absl::StatusCode::kInvalidArgument);
  obs = LinearData();
  obs[2].delta = std::nan("");
  EXPECT_EQ(Surrogate::Fit(obs).status().code(),
            absl::StatusCode::kInvalidArgument);
  obs = LinearData();
  obs[1].paired_seeds = 0;
  EXPECT_EQ(Surrogate::Fit(obs).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace prism
