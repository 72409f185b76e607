// verdict_calibration: the verdicts on known truth
// (scheduler/simulate/calibration.h), the table in bench/RESULTS.md "Verdicts
// on known truth". Each row runs
// --experiments simulated experiments of 120 schedules (d_model 64, 8 layers,
// 8 heads; the uniform baseline among them) through RankSchedules and
// reports, against the truth: the share of experiments with any false
// better/worse (FWER), the mean false discovery proportion (FDR), the power
// on planted effects, how often the best-set holds the true best, its mean
// size, and trials per schedule. "var spread s": each schedule's noise sd is
// noise_sd * exp(s Z), Z standard normal; "3 sd on 20%": a fifth of the
// schedules 3 trial-noise sd better than the baseline (one 2 sd more).
//
//   build/bench/verdict_calibration --experiments 200
//   build/bench/verdict_calibration --rows "spread 0.5|" --rows "BH|3|"
//
// --rows runs only the rows whose label (scenario|method|fam|seeds| with the
// table's words, e.g. "null, var spread 0.5|moderated t|Holm|3|") contains
// one of the given substrings.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "scheduler/simulate/calibration.h"

namespace {

struct Row {
  std::string scenario;
  prism::CalibrationSpec spec;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Verdicts on known truth: error rate, power, best-set");
  int experiments = 200;
  uint64_t seed = 1;
  app.add_option("--experiments", experiments, "Experiments per row")
      ->check(CLI::Range(1, 100000));
  app.add_option("--seed", seed, "First experiment's generator seed");
  std::vector<std::string> filters;
  app.add_option("--rows", filters,
                 "Run only rows whose label scenario|method|fam|seeds| "
                 "contains one of these");
  CLI11_PARSE(app, argc, argv);

  using prism::TruthStructure;
  using prism::VerdictFamily;
  using prism::VerdictMethod;
  const double sd = 0.006;
  std::vector<Row> rows;
  auto add = [&](const std::string& name, TruthStructure structure,
                 double effect, double fraction, VerdictMethod method,
                 VerdictFamily family, bool adaptive, double spread = 0.0,
                 int diverged = 0) {
    Row r;
    r.scenario = name;
    r.spec.experiments = experiments;
    r.spec.truth.structure = structure;
    r.spec.truth.noise_sd = sd;
    r.spec.truth.effect = effect;
    r.spec.truth.planted_fraction = fraction;
    r.spec.truth.best_gap = 2 * sd;
    r.spec.truth.variance_spread = spread;
    r.spec.truth.diverged_trials = diverged;
    r.spec.truth.seed = seed;
    r.spec.verdicts.method = method;
    r.spec.verdicts.family = family;
    r.spec.adaptive = adaptive;
    rows.push_back(r);
  };
  const auto kMod = VerdictMethod::kModeratedT;
  const auto kPaired = VerdictMethod::kPairedT;
  const auto kBH = VerdictFamily::kBenjaminiHochberg;
  const auto kHolm = VerdictFamily::kHolm;
  for (bool adaptive : {false, true}) {
    for (auto family : {kBH, kHolm}) {
      add("null", TruthStructure::kNull, 0, 0, kMod, family, adaptive);
      add("null, var spread 0.25", TruthStructure::kNull, 0, 0, kMod, family,
          adaptive, 0.25);
      add("null, var spread 0.5", TruthStructure::kNull, 0, 0, kMod, family,
          adaptive, 0.5);
      add("3 sd on 20%", TruthStructure::kPlanted, 3 * sd, 0.2, kMod, family,
          adaptive);
      add("3 sd on 20%, var spread 0.5", TruthStructure::kPlanted, 3 * sd, 0.2,
          kMod, family, adaptive, 0.5);
      add("3 sd on 10%", TruthStructure::kPlanted, 3 * sd, 0.1, kMod, family,
          adaptive);
      add("3 sd on 20%, spread 0.25, 2 diverged", TruthStructure::kPlanted,
          3 * sd, 0.2, kMod, family, adaptive, 0.25, 2);
      add("5 sd on 55% (issue 15)", TruthStructure::kPlanted, 5 * sd, 0.55,
          kMod, family, adaptive);
    }
  }
  add("3 sd on 20%", TruthStructure::kPlanted, 3 * sd, 0.2, kPaired, kBH,
      false);
  add("3 sd on 20%", TruthStructure::kPlanted, 3 * sd, 0.2, kPaired, kHolm,
      false);
  add("5 sd on 55% (issue 15)", TruthStructure::kPlanted, 5 * sd, 0.55, kPaired,
      kHolm, false);

  std::printf(
      "%d experiments per row; 120 schedules; noise sd %.3f per trial; seed "
      "offsets sd 0.02\n",
      experiments, sd);
  std::printf("%-38s %-11s %-4s %-8s %6s %6s %6s %7s %6s %6s\n", "scenario",
              "method", "fam", "seeds", "FWER", "FDR", "power", "best-in",
              "set", "seeds");
  for (const Row& r : rows) {
    const std::string seeds =
        r.spec.adaptive ? "3..6" : std::to_string(r.spec.truth.seeds);
    const std::string family = r.spec.verdicts.family == kHolm ? "Holm" : "BH";
    const std::string label = absl::StrCat(
        r.scenario, "|", prism::VerdictMethodName(r.spec.verdicts.method), "|",
        family, "|", seeds, "|");
    if (!filters.empty() && std::none_of(filters.begin(), filters.end(),
                                         [&label](const std::string& f) {
                                           return absl::StrContains(label, f);
                                         })) {
      continue;
    }
    const prism::CalibrationResult c = prism::RunCalibration(r.spec);
    std::printf(
        "%-38s %-11s %-4s %-8s %6.3f %6.3f %6.3f %7.3f %6.1f %6.2f\n",
        r.scenario.c_str(), prism::VerdictMethodName(r.spec.verdicts.method),
        family.c_str(), seeds.c_str(), c.FamilywiseErrorRate(),
        c.FalseDiscoveryRate(),
        r.spec.truth.structure == TruthStructure::kNull ? 0.0 : c.Power(),
        c.BestSetCoverage(), c.MeanBestSetSize(), c.MeanSeedsPerSchedule());
    std::fflush(stdout);
  }
  return 0;
}
