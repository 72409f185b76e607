#include "cli/views/ranking.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/views/asha.h"
#include "cli/views/experiments.h"
#include "cli/views/format.h"
#include "cli/views/principles.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

namespace {

// RatioWithInterval is "1.12 [1.03,1.21]", or "1.12" without bounds, "-"
// without values.
std::string RatioWithInterval(const v1::Interval& interval) {
  if (interval.n() == 0) return "-";
  if (!interval.has_low() || !interval.has_high()) {
    return Fixed(interval.mean(), 2);
  }
  return fmt::format("{:.2f} [{:.2f},{:.2f}]", interval.mean(), interval.low(),
                     interval.high());
}

// SpeedupCell is "1.12 [1.03,1.21] 3/4": the mean ratio, its CI and m of n
// paired seeds that reached the target; "- 0/4" when none did; "" without
// paired seeds. The baseline's is 1 by definition: "1.00".
std::string SpeedupCell(const v1::RankedSchedule& r) {
  if (r.speedup_seeds() == 0) return "";
  if (r.is_baseline()) return Fixed(r.speedup().mean(), 2);
  return fmt::format("{} {}/{}", RatioWithInterval(r.speedup()),
                     r.speedup().n(), r.speedup_seeds());
}

// ThroughputCell is "0.98 [0.95,1.01] 3/3 worker": the mean tokens/s ratio,
// its CI, the pairs used of all and how they were paired; "" without pairs.
std::string ThroughputCell(const v1::RankedSchedule& r) {
  if (r.throughput_pairs() == 0) return "";
  if (r.is_baseline()) return Fixed(r.throughput_ratio().mean(), 2);
  return fmt::format("{} {}/{} {}", RatioWithInterval(r.throughput_ratio()),
                     r.throughput_ratio().n(), r.throughput_pairs(),
                     EnumValueName(r.throughput_pairing()));
}

// OptionalFixed is the value to `digits` decimals, "" when absent.
std::string OptionalFixed(bool present, double value, int digits) {
  return present ? Fixed(value, digits) : "";
}

// VerdictWord is the verdict for people: "better", "worse",
// "inconclusive", "needs seeds"; "" for the baseline.
std::string VerdictWord(v1::Verdict v) {
  switch (v) {
    case v1::VERDICT_BETTER:
      return "better";
    case v1::VERDICT_WORSE:
      return "worse";
    case v1::VERDICT_INCONCLUSIVE:
      return "inconclusive";
    case v1::VERDICT_NEEDS_SEEDS:
      return "needs seeds";
    default:
      return "";
  }
}

// AdjustedCell is the family-adjusted interval "[-0.0312,-0.0021]"; "" without
// one.
std::string AdjustedCell(const v1::RankedSchedule& r) {
  const v1::Interval& a = r.adjusted_delta();
  if (r.is_baseline() || !a.has_low() || !a.has_high()) return "";
  return fmt::format("[{:+.4f},{:+.4f}]", a.low(), a.high());
}

// ToSettleCell is an inconclusive row's seeds needed ("9 seeds", ">1000"),
// a needs-seeds row's "2 seeds"; "" otherwise.
std::string ToSettleCell(const v1::RankedSchedule& r) {
  if (r.verdict() == v1::VERDICT_NEEDS_SEEDS) return "2 seeds";
  if (r.verdict() != v1::VERDICT_INCONCLUSIVE || r.seeds_needed() <= 0) {
    return "";
  }
  if (r.seeds_needed() >= 1000) return ">1000";
  return absl::StrCat(r.seeds_needed(), " seeds");
}

// PrincipleLetters is "sbp" with a dot for each principle violated: s
// smooth, b baseline, p pow2 ("s.p" violates baseline preservation).
std::string PrincipleLetters(const v1::PrincipleReport& report) {
  return absl::StrCat(report.smooth() ? "s" : ".",
                      report.baseline() ? "b" : ".", report.pow2() ? "p" : ".");
}

bool HasDelta(const v1::RankedSchedule& r) {
  return !r.is_baseline() && r.delta_vs_baseline().n() > 0;
}

bool HasLoss(const v1::RankedSchedule& r) { return r.final_val_loss().n() > 0; }

using RankingColumn = Column<v1::RankedSchedule>;

// The columns more than one view shows.
constexpr RankingColumn kRank = {
    "rank", [](const v1::RankedSchedule& r) { return absl::StrCat(r.rank()); }};
constexpr RankingColumn kSchedule = {
    "schedule", [](const v1::RankedSchedule& r) { return r.schedule(); }};
constexpr RankingColumn kBaseline = {
    "baseline", [](const v1::RankedSchedule& r) -> std::string {
      return r.is_baseline() ? "true" : "false";
    }};
constexpr RankingColumn kPrinciples = {
    "principles",
    [](const v1::RankedSchedule& r) { return PrincipleFlags(r.principles()); }};
constexpr RankingColumn kValLoss = {
    "val_loss", [](const v1::RankedSchedule& r) -> std::string {
      return HasLoss(r) ? Fixed(r.final_val_loss().mean(), 4) : "";
    }};
constexpr RankingColumn kValCi95 = {
    "val_ci95",
    [](const v1::RankedSchedule& r) { return HalfWidth(r.final_val_loss()); }};
constexpr RankingColumn kDelta = {
    "delta", [](const v1::RankedSchedule& r) -> std::string {
      return HasDelta(r) ? fmt::format("{:+.4f}", r.delta_vs_baseline().mean())
                         : "";
    }};
constexpr RankingColumn kDeltaCi95 = {
    "delta_ci95", [](const v1::RankedSchedule& r) -> std::string {
      return HasDelta(r) ? HalfWidth(r.delta_vs_baseline()) : "";
    }};
constexpr RankingColumn kVerdict = {"verdict", [](const v1::RankedSchedule& r) {
                                      return VerdictWord(r.verdict());
                                    }};
constexpr RankingColumn kAdjP = {
    "adj_p", [](const v1::RankedSchedule& r) -> std::string {
      return r.has_adjusted_p_value() ? PValue(r.adjusted_p_value()) : "";
    }};
constexpr RankingColumn kMinValLoss = {
    "min_val_loss", [](const v1::RankedSchedule& r) -> std::string {
      return HasLoss(r) ? Fixed(r.min_val_loss(), 4) : "";
    }};
constexpr RankingColumn kSeeds = {"seeds", [](const v1::RankedSchedule& r) {
                                    return absl::StrCat(r.seeds_completed());
                                  }};
constexpr RankingColumn kPaired = {"paired", [](const v1::RankedSchedule& r) {
                                     return absl::StrCat(r.paired_seeds());
                                   }};
constexpr RankingColumn kDiverged = {"diverged",
                                     [](const v1::RankedSchedule& r) {
                                       return absl::StrCat(r.seeds_diverged());
                                     }};
constexpr RankingColumn kFailed = {"failed", [](const v1::RankedSchedule& r) {
                                     return absl::StrCat(r.seeds_failed());
                                   }};
constexpr RankingColumn kToSettle = {"to_settle", ToSettleCell};

// kDefaultColumns are the default text view: what a researcher reads first,
// in under 100 columns (--wide has the rest).
constexpr RankingColumn kDefaultColumns[] = {
    kRank,
    kSchedule,
    {"sbp",
     [](const v1::RankedSchedule& r) {
       return PrincipleLetters(r.principles());
     }},
    {"delta",
     [](const v1::RankedSchedule& r) -> std::string {
       if (r.is_baseline()) return "base";
       return HasDelta(r) ? fmt::format("{:+.4f}", r.delta_vs_baseline().mean())
                          : "";
     }},
    {"adj_ci95",
     [](const v1::RankedSchedule& r) -> std::string {
       const v1::Interval& adjusted = r.adjusted_delta();
       return HasDelta(r) && adjusted.has_low() && adjusted.has_high()
                  ? "±" + Fixed((adjusted.high() - adjusted.low()) / 2, 4)
                  : "";
     }},
    kVerdict,
    kToSettle,
    {"best",
     [](const v1::RankedSchedule& r) -> std::string {
       return r.in_best_set() ? "*" : "";
     }},
    {"speedup",
     [](const v1::RankedSchedule& r) {
       std::string speedup;
       if (r.speedup_seeds() > 0) {
         speedup = r.speedup().n() > 0 ? Fixed(r.speedup().mean(), 2) : "-";
         if (!r.is_baseline()) {
           absl::StrAppend(&speedup, " ", r.speedup().n(), "/",
                           r.speedup_seeds());
         }
       }
       return speedup;
     }},
    {"tps",
     [](const v1::RankedSchedule& r) {
       std::string tps;
       if (r.throughput_ratio().n() > 0) {
         tps = Fixed(r.throughput_ratio().mean(), 2);
         if (r.throughput_pairing() == v1::THROUGHPUT_PAIRING_UNPAIRED) {
           tps = "(" + tps + ")";
         }
       }
       return tps;
     }},
    {"seeds",
     [](const v1::RankedSchedule& r) {
       return absl::StrCat(r.paired_seeds(), "/", r.seeds_completed());
     }},
};

// kWideColumns are every column of the text view (--wide).
constexpr RankingColumn kWideColumns[] = {
    kRank,
    kSchedule,
    kBaseline,
    kPrinciples,
    kValLoss,
    kValCi95,
    kDelta,
    kDeltaCi95,
    kVerdict,
    kAdjP,
    kMinValLoss,
    {"speedup", SpeedupCell},
    {"tps_ratio", ThroughputCell},
    kSeeds,
    kPaired,
    kDiverged,
    kFailed,
    {"adj_ci95", AdjustedCell},
    kToSettle,
    {"best_set",
     [](const v1::RankedSchedule& r) -> std::string {
       return r.in_best_set() ? "yes" : "";
     }},
};

// kCsvColumns are the wide view's as numbers (the ratios' means alone),
// then their bounds, counts, pairing and hardware and the verdict's inputs.
constexpr RankingColumn kCsvColumns[] = {
    kRank,
    kSchedule,
    kBaseline,
    kPrinciples,
    kValLoss,
    kValCi95,
    kDelta,
    kDeltaCi95,
    {"verdict",
     [](const v1::RankedSchedule& r) -> std::string {
       return r.verdict() == v1::VERDICT_UNSPECIFIED
                  ? ""
                  : EnumValueName(r.verdict());
     }},
    kAdjP,
    kMinValLoss,
    {"speedup",
     [](const v1::RankedSchedule& r) {
       return OptionalFixed(r.speedup().n() > 0, r.speedup().mean(), 3);
     }},
    {"tps_ratio",
     [](const v1::RankedSchedule& r) {
       const v1::Interval& tps = r.throughput_ratio();
       return OptionalFixed(tps.n() > 0, tps.mean(), 3);
     }},
    kSeeds,
    kPaired,
    kDiverged,
    kFailed,
    {"speedup_low",
     [](const v1::RankedSchedule& r) {
       return OptionalFixed(r.speedup().has_low(), r.speedup().low(), 3);
     }},
    {"speedup_high",
     [](const v1::RankedSchedule& r) {
       return OptionalFixed(r.speedup().has_high(), r.speedup().high(), 3);
     }},
    {"speedup_reached",
     [](const v1::RankedSchedule& r) { return absl::StrCat(r.speedup().n()); }},
    {"speedup_seeds",
     [](const v1::RankedSchedule& r) {
       return absl::StrCat(r.speedup_seeds());
     }},
    {"tps_ratio_low",
     [](const v1::RankedSchedule& r) {
       const v1::Interval& tps = r.throughput_ratio();
       return OptionalFixed(tps.has_low(), tps.low(), 3);
     }},
    {"tps_ratio_high",
     [](const v1::RankedSchedule& r) {
       const v1::Interval& tps = r.throughput_ratio();
       return OptionalFixed(tps.has_high(), tps.high(), 3);
     }},
    {"tps_pairs_used",
     [](const v1::RankedSchedule& r) {
       return absl::StrCat(r.throughput_ratio().n());
     }},
    {"tps_pairs",
     [](const v1::RankedSchedule& r) {
       return absl::StrCat(r.throughput_pairs());
     }},
    {"tps_pairing",
     [](const v1::RankedSchedule& r) -> std::string {
       return r.throughput_pairing() == v1::THROUGHPUT_PAIRING_UNSPECIFIED
                  ? ""
                  : EnumValueName(r.throughput_pairing());
     }},
    {"tps_hardware",
     [](const v1::RankedSchedule& r) { return r.throughput_hardware(); }},
    {"adj_low",
     [](const v1::RankedSchedule& r) {
       return OptionalFixed(r.adjusted_delta().has_low(),
                            r.adjusted_delta().low(), 6);
     }},
    {"adj_high",
     [](const v1::RankedSchedule& r) {
       return OptionalFixed(r.adjusted_delta().has_high(),
                            r.adjusted_delta().high(), 6);
     }},
    {"adj_confidence",
     [](const v1::RankedSchedule& r) {
       return OptionalFixed(r.adjusted_confidence() > 0,
                            r.adjusted_confidence(), 6);
     }},
    {"delta_sd",
     [](const v1::RankedSchedule& r) {
       return OptionalFixed(r.delta_sd() > 0, r.delta_sd(), 6);
     }},
    {"dof",
     [](const v1::RankedSchedule& r) {
       return OptionalFixed(r.dof() > 0, r.dof(), 2);
     }},
    {"seeds_needed",
     [](const v1::RankedSchedule& r) {
       return absl::StrCat(r.seeds_needed());
     }},
    {"decided_at_seeds",
     [](const v1::RankedSchedule& r) {
       return absl::StrCat(r.decided_at_seeds());
     }},
    {"seeds_excluded",
     [](const v1::RankedSchedule& r) {
       return absl::StrCat(r.seeds_excluded());
     }},
    {"in_best_set",
     [](const v1::RankedSchedule& r) -> std::string {
       return r.in_best_set() ? "true" : "false";
     }},
};

}  // namespace

std::string MissingValuesNote(const v1::RankResponse& response, bool wide) {
  bool no_speedup = false, no_interval = false;
  for (const v1::RankedSchedule& r : response.schedules()) {
    no_speedup |= r.speedup_seeds() == 0 || r.speedup().n() == 0;
    no_interval |= !r.final_val_loss().has_high() ||
                   (!r.is_baseline() && r.delta_vs_baseline().n() == 1);
  }
  std::vector<std::string> notes;
  if (!response.has_baseline() || response.baseline().schedule().empty()) {
    notes.push_back("delta, speedup, tps_ratio - = no baseline trial yet");
  } else if (no_speedup) {
    notes.push_back("speedup - = never reached the baseline's final val loss");
  }
  if (no_interval) {
    notes.push_back(wide ? "ci95, adj_p - = fewer than 2 (paired) seeds"
                         : "adj_ci95 - = fewer than 2 paired seeds");
  }
  return absl::StrJoin(notes, "; ");
}

std::string RatioMethod(const v1::RankResponse& response) {
  std::map<std::string, int> unpaired;
  for (const v1::RankedSchedule& r : response.schedules()) {
    if (r.throughput_pairing() == v1::THROUGHPUT_PAIRING_UNPAIRED) {
      ++unpaired[r.throughput_hardware()];
    }
  }
  std::string text =
      "speedup: mean of baseline_steps/steps per seed to that seed's "
      "baseline final val loss (steps interpolated between evals) [95% CI] "
      "over the m of n paired seeds that reached it\ntps_ratio: mean "
      "tokens/s ratio per seed [95% CI] over the used/all seed pairs, paired "
      "on the same worker, else the same device, else unpaired (also CPU "
      "trials whose shares of their cores differ by more than 0.15)";
  for (const auto& [hardware, count] : unpaired) {
    absl::StrAppend(&text, "\ntps_ratio unpaired (hardware differs) for ",
                    count, " schedule(s): ", hardware);
  }
  return text;
}

std::string VerdictMethod(const v1::RankResponse& response) {
  const v1::VerdictReport& v = response.verdicts();
  const std::string family = v.family() == v1::VERDICT_FAMILY_HOLM
                                 ? "Holm (familywise error)"
                                 : "Benjamini-Hochberg (FDR)";
  std::string text = fmt::format(
      "verdicts: {}, {} at {:g} over {} schedule(s); adj_ci95 = the "
      "family-adjusted interval, which agrees with the verdict; inconclusive "
      "= no difference found (not 'equal'); to_settle = paired seeds that "
      "would detect the observed delta at 80% power; needs seeds = fewer "
      "than 2 paired seeds; diverged and failed seeds are counted, not in "
      "the statistics",
      v.method_description().empty() ? "paired t" : v.method_description(),
      family, v.alpha() > 0 ? v.alpha() : 0.05, response.compared_schedules());
  if (v.excluded_trials() > 0) {
    absl::StrAppend(&text, "; ", v.excluded_trials(),
                    " completed trial(s) with a non-finite val loss excluded");
  }
  if (v.looks_size() > 1) {
    std::vector<std::string> looks;
    for (const v1::VerdictLook& l : v.looks()) {
      looks.push_back(fmt::format("{} seeds at {:.4f}", l.seeds(), l.alpha()));
    }
    absl::StrAppend(
        &text, "\nplanned looks (alpha spent): ", absl::StrJoin(looks, ", "));
  }
  return text;
}

absl::Span<const Column<v1::RankedSchedule>> RankingColumns(Format format,
                                                            bool wide) {
  if (format == Format::kCsv) return kCsvColumns;
  if (format == Format::kText && !wide) return kDefaultColumns;
  return kWideColumns;
}

Table RankingTable(const v1::RankResponse& response, Format format, bool wide) {
  return TableOf(RankingColumns(format, wide), response.schedules());
}

namespace {

// PrintSearchCost prints the experiment's steps trained against the grid's.
void PrintSearchCost(const v1::RankResponse& response, std::ostream& out) {
  const std::string line = SearchCostLine(response.experiment());
  if (!line.empty()) out << "\n" << line << "\n";
}

// PrintAshaRungs prints the rung view of an ASHA experiment's ranking.
void PrintAshaRungs(const v1::RankResponse& response, std::ostream& out) {
  if (response.asha_rungs().empty()) return;
  out << "\nASHA rungs (trials stopped at a rung are not ranked above):\n";
  for (const v1::AshaRung& rung : response.asha_rungs()) {
    out << AshaRungLine(rung) << "\n";
  }
  AshaRungsTable(response).Print(out, Format::kText);
}

}  // namespace

void PrintRanking(const v1::RankResponse& response, Format format,
                  std::ostream& out, const RankingView& view) {
  if (format == Format::kJson) {
    out << ProtoJson(response);
    return;
  }
  RankingTable(response, format, view.wide).Print(out, format);
  if (format == Format::kCsv) return;
  if (response.schedules().empty()) {
    out << "(no completed trials yet)\n";
    PrintSearchCost(response, out);
    PrintAshaRungs(response, out);
    return;
  }
  // The default view keeps every line within 100 columns; --wide prints
  // the long explanations as single lines.
  auto prose = [&](const std::string& text) {
    out << (view.wide ? text : WrapText(text)) << "\n";
  };
  const std::string missing = MissingValuesNote(response, view.wide);
  if (!missing.empty()) prose(missing);
  if (!view.wide) {
    prose(
        "sbp = the design principles held (s smooth, b baseline, p pow2; . "
        "violated); best = in the best-set; (tps) = unpaired, not a parity "
        "figure; prism results --wide shows every column");
  }
  if (response.has_baseline() && !response.baseline().schedule().empty()) {
    out << "\nbaseline " << response.baseline().schedule() << ": val loss "
        << Fixed(response.baseline().final_val_loss().mean(), 4) << " over "
        << response.baseline().seeds_completed() << " seed(s)\n";
  }
  if (view.wide) out << RatioMethod(response) << "\n";
  prose(VerdictMethod(response));
  if (!response.principle_effects().empty()) {
    out << "\n";
    PrincipleEffectsTable(response, view.wide).Print(out, format);
    if (!view.wide) {
      for (const std::string& line : PrincipleLongNotes(response)) {
        prose(line);
      }
    }
    prose(PrincipleMethod(view.wide));
  }
  PrintSearchCost(response, out);
  PrintAshaRungs(response, out);
  out << "\n";
  for (const std::string& line : SummaryLines(response, view.more_seeds)) {
    // A command stands whole on its own line, to be pasted.
    const size_t command = line.find("\n  ");
    prose(line.substr(0, command));
    if (command != std::string::npos) out << line.substr(command + 1) << "\n";
  }
}

}  // namespace prism::cli
