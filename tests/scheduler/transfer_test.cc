#include "scheduler/analysis/transfer.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/simulate/known_truth.h"

namespace prism {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> Doubles(const std::string& text) {
  std::vector<double> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    double v = 0.0;
    EXPECT_TRUE(absl::SimpleAtod(part, &v)) << part;
    out.push_back(v);
  }
  return out;
}

double Double(const std::string& text) {
  if (text == "nan") return kNaN;
  double v = 0.0;
  EXPECT_TRUE(absl::SimpleAtod(text, &v)) << text;
  return v;
}

void ExpectSame(double got, double want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": " << got;
  } else {
    EXPECT_NEAR(got, want, 1e-12) << what;
  }
}

// The fixture: reference/transfer_reference.py's output (scipy and numpy).
TEST(TransferReferenceTest, CorrelationsAndQuantilesMatchScipy) {
  std::ifstream in(std::string(PRISM_SOURCE_DIR) +
                   "/tests/scheduler/reference/transfer_reference.txt");
  ASSERT_TRUE(in.good());
  std::string line;
  int correlations = 0, quantiles = 0;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, '|');
    if (f[0] == "corr") {
      ASSERT_EQ(f.size(), 6u) << line;
      const std::vector<double> x = Doubles(f[2]), y = Doubles(f[3]);
      ExpectSame(SpearmanRho(x, y), Double(f[4]), "spearman " + f[1]);
      ExpectSame(KendallTauB(x, y), Double(f[5]), "kendall " + f[1]);
      ++correlations;
    } else if (f[0] == "quantile") {
      ASSERT_EQ(f.size(), 4u) << line;
      ExpectSame(LinearQuantile(Doubles(f[2]), Double(f[1])), Double(f[3]),
                 "quantile " + f[1]);
      ++quantiles;
    }
  }
  EXPECT_EQ(correlations, 11);
  EXPECT_EQ(quantiles, 6);
}

TrialOutcome Trial(int64_t id, const std::string& schedule, int64_t seed,
                   double loss, bool baseline = false) {
  TrialOutcome t;
  t.trial_id = id;
  t.schedule = schedule;
  t.seed = seed;
  t.final_val_loss = loss;
  t.is_baseline = baseline;
  return t;
}

TEST(CollectPairedDeltasTest, PairsBySeedLikeTheRanking) {
  std::vector<TrialOutcome> trials = {
      Trial(1, "4x6", 1, 3.0, true), Trial(2, "4x6", 2, 3.1, true),
      Trial(3, "2x3,4x3", 1, 2.9),   Trial(4, "2x3,4x3", 2, 3.05),
      Trial(5, "2x3,4x3", 2, 9.0),  // a rerun: the lower id stands
      Trial(6, "1x2,4x4", 2, 3.2),   Trial(7, "1x2,4x4", 1, 1.0)};
  trials[6].state = OutcomeState::kFailed;
  const SizeDeltas d =
      *CollectPairedDeltas("tiny", "4x6", {"2x3,4x3", "1x2,4x4"}, trials);
  EXPECT_EQ(d.size, "tiny");
  ASSERT_EQ(d.deltas.size(), 2u);
  EXPECT_NEAR(d.deltas[0][0], -0.1, 1e-12);
  EXPECT_NEAR(d.deltas[0][1], -0.05, 1e-12);
  EXPECT_TRUE(std::isnan(d.deltas[1][0]));  // seed 1 failed
  EXPECT_NEAR(d.deltas[1][1], 0.1, 1e-12);
  EXPECT_EQ(CollectPairedDeltas("tiny", "8x6", {"4x6"}, trials).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TransferInput Noiseless() {
  TransferInput in;
  in.schedules = {"a", "b", "c", "d"};
  in.small.size = "tiny";
  in.small.deltas = {{-3, -3}, {-1, -1}, {0, 0}, {2, 2}};
  in.large.size = "small";
  in.large.deltas = {{-1, -1, -1}, {-2, -2, -2}, {0, 0, 0}, {1, 1, 1}};
  return in;
}

TEST(MeasureTransferTest, WithoutSeedNoiseTheIntervalIsTheEstimate) {
  TransferInput in = Noiseless();
  in.small_best_set = {"a"};
  const TransferStatistics t = *MeasureTransfer(in);
  EXPECT_DOUBLE_EQ(t.spearman.estimate, 0.8);
  EXPECT_DOUBLE_EQ(t.spearman.low, 0.8);
  EXPECT_DOUBLE_EQ(t.spearman.high, 0.8);
  EXPECT_NEAR(t.kendall.estimate, 2.0 / 3.0, 1e-12);
  EXPECT_EQ(t.small_seeds, 2);
  EXPECT_EQ(t.large_seeds, 3);
  EXPECT_EQ(t.large_best, "b");
  ASSERT_TRUE(t.best_set_contains_large_best.has_value());
  EXPECT_FALSE(*t.best_set_contains_large_best);
  EXPECT_EQ(t.unusable_replicates, 0);
  EXPECT_EQ(t.method,
            "Spearman rho and Kendall tau-b of mean paired deltas; 95% "
            "percentile bootstrap over seeds within each size (2000 "
            "replicates, seed 1)");
  in.small_best_set = {"a", "b"};
  EXPECT_TRUE(*MeasureTransfer(in)->best_set_contains_large_best);
  in.small_best_set.clear();
  EXPECT_FALSE(MeasureTransfer(in)->best_set_contains_large_best.has_value());
}

TEST(MeasureTransferTest, SeedNoiseWidensTheIntervalReproducibly) {
  TransferInput in = Noiseless();
  in.small.deltas = {{-3, -1, -2}, {-1, -2, 0}, {0, 1, -1}, {2, 0, 1}};
  in.small.deltas[3][2] = kNaN;  // a missing pair: some draws miss it
  in.large.deltas = {{-1, 0}, {-2, -1}, {0, -1}, {1, 0}};
  TransferOptions options;
  options.replicates = 500;
  options.seed = 9;
  const TransferStatistics a = *MeasureTransfer(in, options);
  const TransferStatistics b = *MeasureTransfer(in, options);
  EXPECT_EQ(a.spearman.low, b.spearman.low);
  EXPECT_EQ(a.kendall.high, b.kendall.high);
  EXPECT_LT(a.spearman.low, a.spearman.high);
  EXPECT_LE(a.spearman.low, a.spearman.estimate);
  EXPECT_GE(a.spearman.high, a.spearman.estimate);
  EXPECT_GT(a.unusable_replicates, 0);  // constant resamples, ties
  options.seed = 10;
  const TransferStatistics c = *MeasureTransfer(in, options);
  EXPECT_EQ(c.spearman.estimate, a.spearman.estimate);
}

TEST(MeasureTransferTest, BadInputIsInvalidArgument) {
  auto code = [](const TransferInput& in, const TransferOptions& o = {}) {
    return MeasureTransfer(in, o).status().code();
  };
  const absl::StatusCode bad = absl::StatusCode::kInvalidArgument;
  TransferInput in = Noiseless();
  in.schedules.pop_back();
  EXPECT_EQ(code(in), bad);  // 4 rows for 3 schedules
  in = Noiseless();
  in.large.deltas[2] = {kNaN, kNaN, kNaN};
  EXPECT_THAT(MeasureTransfer(in).status().message(),
              HasSubstr("size 'small': schedule 'c' has no paired delta"));
  in = Noiseless();
  in.small.deltas = {{1}, {2}, {3}, {4}};
  EXPECT_EQ(code(in), bad);  // one seed
  in = Noiseless();
  in.small_best_set = {"z"};
  EXPECT_EQ(code(in), bad);
  TransferOptions options;
  options.replicates = 10;
  EXPECT_EQ(code(Noiseless(), options), bad);
  options = {};
  options.confidence = 1.0;
  EXPECT_EQ(code(Noiseless(), options), bad);
}

// A simulated two-size experiment: the first size's smooth known truth
// (d_model 64, 8 layers of up to 8 heads), the second twice as wide with
// true deltas at the chosen rank correlation, both on 5 seeds with noise.
struct Ladder {
  TransferStatistics transfer;
  double true_spearman = 0.0;
};

Ladder RunLadder(double correlation, uint64_t seed) {
  KnownTruthSpec first_spec;
  first_spec.structure = TruthStructure::kSmooth;
  first_spec.seeds = 5;
  first_spec.curves = false;
  first_spec.noise_sd = 0.01;
  first_spec.seed = seed;
  const KnownTruth first = *GenerateKnownTruth(first_spec);
  TransferTruthSpec second_spec;
  second_spec.second = first_spec;
  second_spec.second.space = {128, 8, 16, {}, kDefaultMinRun, kDefaultMaxRun};
  second_spec.second.seed = seed + 100000;
  second_spec.correlation = correlation;
  const KnownTruth second = *GenerateSecondSize(first, second_spec);

  TransferInput in;
  std::vector<std::string> large_names;
  for (const std::string& s : second.schedules) {
    if (s == second.baseline) continue;
    large_names.push_back(s);
    in.schedules.push_back(second.transferred_from.at(s));
  }
  in.small = *CollectPairedDeltas("first", first.baseline, in.schedules,
                                  TruthOutcomes(first));
  in.large = *CollectPairedDeltas("second", second.baseline, large_names,
                                  TruthOutcomes(second));
  const std::set<std::string> labels(in.schedules.begin(), in.schedules.end());
  for (const std::string& s :
       RankSchedules(first.spec.space, first.baseline, TruthOutcomes(first))
           .verdicts.best_set) {
    if (labels.count(s)) in.small_best_set.push_back(s);
  }
  TransferOptions options;
  options.replicates = 400;
  options.seed = seed;
  return {*MeasureTransfer(in, options), second.true_spearman};
}

// Power where the ranking carries over whole, error rate where none of it
// does. The numbers are printed for bench/RESULTS.md.
TEST(TransferKnownTruthTest, PowerAtFullTransferErrorRateAtNone) {
  constexpr int kRuns = 60;
  int detected = 0, kendall_detected = 0, contained = 0, best_set_known = 0;
  double mean_estimate = 0.0;
  for (int r = 0; r < kRuns; ++r) {
    const Ladder l = RunLadder(1.0, 1000 + r);
    ASSERT_EQ(l.true_spearman, 1.0);
    detected += l.transfer.spearman.low > 0.0;
    kendall_detected += l.transfer.kendall.low > 0.0;
    mean_estimate += l.transfer.spearman.estimate / kRuns;
    if (l.transfer.best_set_contains_large_best.has_value()) {
      ++best_set_known;
      contained += *l.transfer.best_set_contains_large_best;
    }
  }
  std::cout << "rho=1: power " << detected << "/" << kRuns << " (Kendall "
            << kendall_detected << "), mean Spearman " << mean_estimate
            << ", best-set holds the large best " << contained << "/"
            << best_set_known << "\n";
  EXPECT_GE(detected, kRuns * 95 / 100);
  EXPECT_GE(kendall_detected, kRuns * 95 / 100);
  EXPECT_GE(contained, best_set_known * 85 / 100);

  int false_claims = 0, kendall_false = 0;
  for (int r = 0; r < kRuns; ++r) {
    const Ladder l = RunLadder(0.0, 2000 + r);
    ASSERT_LE(std::abs(l.true_spearman), kTransferTolerance);
    false_claims +=
        l.transfer.spearman.low > 0.0 || l.transfer.spearman.high < 0.0;
    kendall_false +=
        l.transfer.kendall.low > 0.0 || l.transfer.kendall.high < 0.0;
  }
  std::cout << "rho=0: intervals excluding 0 " << false_claims << "/" << kRuns
            << " (Kendall " << kendall_false << ")\n";
  // Nominal 5%; 6 of 60 allows for the binomial spread around it.
  EXPECT_LE(false_claims, 6);
  EXPECT_LE(kendall_false, 6);
}

}  // namespace
}  // namespace prism
