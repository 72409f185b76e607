#include "cli/views.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "proto/enum_names.h"

namespace prism::cli {
namespace {

std::string Fixed(double value, int digits) {
  return fmt::format("{:.{}f}", value, digits);
}

// HalfWidth is the 95% CI half-width, "" (missing) when there is no interval
// (fewer than 2 seeds).
std::string HalfWidth(const v1::Interval& interval) {
  if (!interval.has_high()) return "";
  return Fixed(interval.high() - interval.mean(), 4);
}

std::string PValue(double p) { return p < 0.001 ? "<0.001" : Fixed(p, 3); }

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

std::string BestSetLine(const v1::RankResponse& response, size_t most) {
  const v1::VerdictReport& v = response.verdicts();
  if (v.best_set().empty()) {
    return "best-set: needs 2 paired seeds per schedule";
  }
  std::vector<std::string> names(
      v.best_set().begin(),
      v.best_set().begin() + std::min<size_t>(most, v.best_set_size()));
  std::string line =
      fmt::format("best-set ({:g}% confidence, Hsu's MCB): {} schedule(s): {}",
                  100 * (1 - (v.alpha() > 0 ? v.alpha() : 0.05)),
                  v.best_set_size(), absl::StrJoin(names, " "));
  if (static_cast<size_t>(v.best_set_size()) > most) {
    absl::StrAppend(&line, " and ", v.best_set_size() - most, " more");
  }
  return line;
}

// PrincipleSummaryLine condenses the principle table into one line:
// "principles (effect of violating, 95% CI, p): smooth +0.0040 ±0.0100 p
// 0.420, ..."; "" when the ranking has no principle analysis.
std::string PrincipleSummaryLine(const v1::RankResponse& response) {
  std::vector<std::string> estimated, not_estimable;
  for (const v1::PrincipleEffect& e : response.principle_effects()) {
    if (e.has_effect()) {
      const std::string half = HalfWidth(e.effect());
      estimated.push_back(fmt::format(
          "{} {:+.4f}{}{}", EnumValueName(e.principle()), e.effect().mean(),
          half.empty() ? "" : absl::StrCat(" ±", half),
          e.has_p_value() ? absl::StrCat(" p ", PValue(e.p_value())) : ""));
    } else {
      not_estimable.push_back(EnumValueName(e.principle()));
    }
  }
  if (estimated.empty() && not_estimable.empty()) return "";
  std::string line = "principles";
  if (!estimated.empty()) {
    absl::StrAppend(&line, " (effect of violating, 95% CI, p): ",
                    absl::StrJoin(estimated, ", "));
  }
  if (!not_estimable.empty()) {
    absl::StrAppend(&line, estimated.empty() ? ": " : "; ",
                    absl::StrJoin(not_estimable, ", "),
                    " not estimable here (see the table)");
  }
  return line;
}

SeedsCommand SeedsAddCommand(int64_t experiment_id) {
  return [experiment_id](int n) {
    return fmt::format("prism seeds add {} --to {}", experiment_id, n);
  };
}

int SeedLimit(const v1::ExperimentSpec& spec) {
  constexpr int kMaxSeedsPerSchedule = 64;  // scheduler/adaptive_seeds.h
  if (spec.has_seeds_policy() && spec.seeds_policy().max() > 0) {
    return std::min(kMaxSeedsPerSchedule, spec.seeds_policy().max());
  }
  if (spec.has_racing() && !spec.racing().off() &&
      spec.racing().max_seeds() > 0) {
    return std::min(kMaxSeedsPerSchedule, spec.racing().max_seeds());
  }
  return kMaxSeedsPerSchedule;
}

namespace {

// SeedsNow is the most seeds any ranked schedule (the baseline's included)
// completed: what a command for more seeds must go above.
int SeedsNow(const v1::RankResponse& response) {
  int most = response.baseline().seeds_completed();
  for (const v1::RankedSchedule& r : response.schedules()) {
    most = std::max(most, r.seeds_completed());
  }
  return most;
}

// SettleLine is the next step for a best-set with inconclusive schedules
// that `settle` paired seeds would decide (RankedSchedule.seeds_needed).
std::string SettleLine(const v1::RankResponse& response, int settle,
                       const SeedsCommand& more_seeds) {
  const int limit = SeedLimit(response.experiment().spec());
  const int now = SeedsNow(response);
  if (settle > limit || now >= limit) {
    return fmt::format(
        "next: the best-set's inconclusive schedules would need {} paired "
        "seeds to settle, past the {} a schedule may have: at this size "
        "they are a tie (carry the best-set forward together)",
        settle, limit);
  }
  const int to = std::max(settle, now + 1);
  return fmt::format(
      "next: the best-set's inconclusive schedules need up to {} paired "
      "seeds to settle (they have {}); train them on {}, reusing every "
      "trial:\n  {}",
      settle, now, to, more_seeds(to));
}

// RaceLine is the next step for a race that stopped unsettled: more seeds
// for its contenders alone (`prism seeds add --schedules`).
std::string RaceLine(const v1::RankResponse& response) {
  const SeedsCommand more_seeds = SeedsAddCommand(response.experiment().id());
  const v1::RaceReport& race = response.race();
  int limit = SeedLimit(response.experiment().spec());
  if (race.max_seeds() > 0) limit = std::min(limit, race.max_seeds());
  if (race.state() == "at max" || race.look_seeds() >= limit) {
    return fmt::format(
        "next: {} contenders are still in the race on {} seeds, racing's "
        "max_seeds: at this size they are a tie (carry them forward together)",
        race.contenders_size(), race.look_seeds());
  }
  const int to = std::min(limit, 2 * race.look_seeds());
  return fmt::format(
      "next: {} contenders are still in the race on {} seeds (the racing "
      "budget is spent); train them on {}, reusing every trial:\n  {} "
      "--schedules {}",
      race.contenders_size(), race.look_seeds(), to, more_seeds(to),
      absl::StrJoin(race.contenders(), " "));
}

}  // namespace

std::vector<std::string> SummaryLines(const v1::RankResponse& response,
                                      const SeedsCommand& given) {
  const SeedsCommand more_seeds =
      given ? given : SeedsAddCommand(response.experiment().id());
  const v1::VerdictReport& v = response.verdicts();
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "verdicts: {} better, {} worse, {} inconclusive, {} need seeds",
      v.better(), v.worse(), v.inconclusive(), v.needs_seeds()));
  if (response.has_race()) {
    const v1::RaceReport& race = response.race();
    lines.push_back(fmt::format(
        "racing: {}; {:.1f}% of the grid's steps in all ({:.1f}% added by "
        "racing, budget {:g}%, at most {} seeds each)",
        race.note(), 100.0 * race.grid_share(), 100.0 * race.race_share(),
        100.0 * race.budget(), race.max_seeds()));
  }
  lines.push_back(BestSetLine(response, 6));
  if (std::string p = PrincipleSummaryLine(response); !p.empty()) {
    lines.push_back(std::move(p));
  }
  int settle = 0;
  for (const v1::RankedSchedule& r : response.schedules()) {
    if (r.verdict() == v1::VERDICT_INCONCLUSIVE && r.in_best_set()) {
      settle = std::max(settle, r.seeds_needed());
    }
  }
  const std::string race_state =
      response.has_race() ? response.race().state() : std::string();
  if (race_state == "budget spent" || race_state == "at max") {
    lines.push_back(RaceLine(response));
  } else if (race_state == "settled") {
    lines.push_back(fmt::format(
        "next: {} is the best at this size; carry it forward",
        response.race().best_is_baseline() ? std::string("the baseline")
                                           : response.race().best()));
  } else if (response.compared_schedules() == 0) {
    lines.push_back(
        fmt::format("next: verdicts need 2+ seeds per schedule; 3 seeds find "
                    "effects of 3 trial-noise sd at >= 80% power:\n  {}",
                    more_seeds(3)));
  } else if (settle > 0) {
    lines.push_back(SettleLine(response, settle, more_seeds));
  } else if (v.best_set_size() > 1) {
    lines.push_back(
        "next: carry the best-set forward (its schedules in a spec's "
        "`schedules`) at the next size");
  } else if (v.best_set_size() == 1) {
    lines.push_back(
        fmt::format("next: {} is the best at this size; carry it "
                    "forward",
                    v.best_set(0)));
  }
  return lines;
}

std::string ExtensionLine(const v1::ExtendResponse& r, bool dry_run) {
  std::string what;
  const int seeds = r.seeds_added_size();
  if (seeds > 0) {
    absl::StrAppend(&what, seeds == 1 ? "seed " : "seeds ",
                    absl::StrJoin(r.seeds_added(), ", "));
    // Each schedule that gets seeds gets every new one, unless it lacked
    // some of the old ones too (to_seeds fills those).
    if (r.trials_created() % seeds == 0 && r.schedules_added().empty()) {
      absl::StrAppend(&what, " on ", r.trials_created() / seeds, " schedules");
    }
  }
  if (!r.schedules_added().empty()) {
    absl::StrAppend(&what, what.empty() ? "" : "; ", "schedules ",
                    absl::StrJoin(r.schedules_added(), " "));
  }
  return absl::StrCat(dry_run ? "would queue " : "queued ", r.trials_created(),
                      r.trials_created() == 1 ? " trial" : " trials",
                      what.empty() ? "" : absl::StrCat(" (", what, ")"), "; ",
                      dry_run ? "reuses " : "reused ", r.trials_reused(),
                      " finished trials");
}

std::string ProtoJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options)
           .ok()) {
    return "{}\n";
  }
  if (json.empty() || json.back() != '\n') json += '\n';
  return json;
}

std::string PrincipleFlags(const v1::PrincipleReport& report) {
  std::vector<std::string> flags;
  if (report.smooth()) flags.push_back("smooth");
  if (report.baseline()) flags.push_back("baseline");
  if (report.pow2()) flags.push_back("pow2");
  return flags.empty() ? "none" : absl::StrJoin(flags, ",");
}

// PrincipleLetters is "sbp" with a dot for each principle violated: s
// smooth, b baseline, p pow2 ("s.p" violates baseline preservation).
std::string PrincipleLetters(const v1::PrincipleReport& report) {
  return absl::StrCat(report.smooth() ? "s" : ".",
                      report.baseline() ? "b" : ".", report.pow2() ? "p" : ".");
}

std::string MfuText(const v1::TrialMetrics& metrics) {
  const double peak = metrics.peak_matmul_flops();
  const double measured = metrics.measured_peak_matmul_flops();
  if (peak <= 0) return "MFU not measured";
  if (measured > 0 && measured < peak) {
    return fmt::format(
        "MFU {:.1f}% ({:.1f} GFLOP/s achieved, above the {:.1f} GFLOP/s "
        "matmul measured)",
        metrics.mfu() * 100, peak / 1e9, measured / 1e9);
  }
  return fmt::format("MFU {:.1f}% of {:.1f} GFLOP/s", metrics.mfu() * 100,
                     peak / 1e9);
}

Table ExperimentsTable(const v1::ListExperimentsResponse& response) {
  Table table({"id", "name", "owner", "state", "priority", "queued", "running",
               "completed", "failed", "cancelled", "total", "progress",
               "position", "reason"});
  for (const v1::Experiment& e : response.experiments()) {
    const v1::TrialCounts& c = e.counts();
    table.AddRow(
        {absl::StrCat(e.id()), e.name(), e.owner(), EnumValueName(e.state()),
         absl::StrCat(e.priority()), absl::StrCat(c.queued()),
         absl::StrCat(c.leased() + c.running()), absl::StrCat(c.completed()),
         absl::StrCat(c.failed() + c.diverged()), absl::StrCat(c.cancelled()),
         absl::StrCat(c.total()), fmt::format("{:.0f}%", e.progress() * 100),
         e.queue_position() > 0 ? absl::StrCat(e.queue_position()) : "",
         e.queue_reason()});
  }
  return table;
}

Table NarrowExperimentsTable(const v1::ListExperimentsResponse& response) {
  constexpr size_t kNameWidth = 28;
  Table table({"id", "name", "owner", "state", "pri", "done", "running",
               "queued", "failed", "progress", "pos"});
  for (const v1::Experiment& e : response.experiments()) {
    const v1::TrialCounts& c = e.counts();
    const std::string name = CutToWidth(Printable(e.name()), kNameWidth);
    table.AddRow(
        {absl::StrCat(e.id()), name, e.owner(), EnumValueName(e.state()),
         absl::StrCat(e.priority()),
         absl::StrCat(c.completed(), "/", c.total()),
         absl::StrCat(c.leased() + c.running()), absl::StrCat(c.queued()),
         absl::StrCat(c.failed() + c.diverged()),
         fmt::format("{:.0f}%", e.progress() * 100),
         e.queue_position() > 0 ? absl::StrCat(e.queue_position()) : ""});
  }
  return table;
}

std::string WaitingLines(const v1::ListExperimentsResponse& response) {
  std::string out;
  for (const v1::Experiment& e : response.experiments()) {
    if (e.queue_reason().empty()) continue;
    absl::StrAppend(
        &out,
        WrapText(absl::StrCat(
                     "waiting: experiment ", e.id(),
                     e.queue_position() > 0
                         ? absl::StrCat(" (position ", e.queue_position(), ")")
                         : "",
                     ": ", Printable(e.queue_reason())),
                 100, 2),
        "\n");
  }
  return out;
}

Table TrialsTable(const v1::ListTrialsResponse& response) {
  Table table({"id", "schedule", "seed", "baseline", "state", "attempt", "step",
               "total_steps", "val_loss", "worker"});
  for (const v1::Trial& t : response.trials()) {
    // A trial stopped at an ASHA rung shows its val loss there.
    const bool finished = t.state() == v1::TRIAL_COMPLETED ||
                          t.state() == v1::TRIAL_DIVERGED ||
                          t.state() == v1::TRIAL_STOPPED_AT_RUNG;
    table.AddRow({absl::StrCat(t.id()), t.schedule(), absl::StrCat(t.seed()),
                  t.is_baseline() ? "true" : "false", EnumValueName(t.state()),
                  absl::StrCat(t.attempt()), absl::StrCat(t.last_step()),
                  absl::StrCat(t.total_steps()),
                  finished ? Fixed(t.metrics().final_val_loss(), 4) : "",
                  t.worker_id()});
  }
  return table;
}

Table WorkersTable(const v1::ListWorkersResponse& response, int64_t now_ms) {
  Table table({"id", "host", "device", "threads", "state", "trial", "heartbeat",
               "tokens_per_s", "user"});
  for (const v1::Worker& w : response.workers()) {
    const std::string heartbeat =
        w.last_heartbeat_unix_ms() > 0
            ? absl::StrCat(
                  FormatDuration((now_ms - w.last_heartbeat_unix_ms()) / 1e3),
                  " ago")
            : "never";
    table.AddRow(
        {w.id(), w.host(), w.device(), absl::StrCat(w.threads()),
         EnumValueName(w.state()),
         w.current_trial_id() > 0 ? absl::StrCat(w.current_trial_id()) : "",
         heartbeat,
         w.tokens_per_second() > 0 ? Fixed(w.tokens_per_second(), 0) : "",
         w.user()});
  }
  return table;
}

int DropGoneWorkers(v1::ListWorkersResponse* response, int64_t now_ms) {
  const auto gone = [now_ms](const v1::Worker& w) {
    switch (w.state()) {
      case v1::WORKER_STOPPED:
        return now_ms - w.stopped_unix_ms() > kGoneWorkerShownMs;
      case v1::WORKER_LOST:
        return now_ms - w.last_heartbeat_unix_ms() > kGoneWorkerShownMs;
      default:
        return false;
    }
  };
  auto* workers = response->mutable_workers();
  const int before = workers->size();
  workers->erase(std::remove_if(workers->begin(), workers->end(), gone),
                 workers->end());
  return before - workers->size();
}

Table TokensTable(const v1::ListTokensResponse& response, int64_t now_ms) {
  const auto time = [](int64_t unix_ms) -> std::string {
    return unix_ms == 0 ? "" : FormatUtc(unix_ms);
  };
  Table table({"id", "user", "role", "state", "created", "expires", "last_used",
               "revoked"});
  for (const v1::TokenInfo& t : response.tokens()) {
    const char* state = "active";
    if (t.revoked_unix_ms() != 0) {
      state = "revoked";
    } else if (t.expires_unix_ms() != 0 && now_ms >= t.expires_unix_ms()) {
      state = "expired";
    }
    table.AddRow({t.id(), t.user(), EnumValueName(t.role()), state,
                  time(t.created_unix_ms()), time(t.expires_unix_ms()),
                  time(t.last_used_unix_ms()), time(t.revoked_unix_ms())});
  }
  return table;
}

// NarrowRankingTable is the default text view: what a researcher reads
// first, in under 100 columns (--wide has the rest).
Table NarrowRankingTable(const v1::RankResponse& response) {
  Table table({"rank", "schedule", "sbp", "delta", "adj_ci95", "verdict",
               "to_settle", "best", "speedup", "tps", "seeds"});
  for (const v1::RankedSchedule& r : response.schedules()) {
    const bool has_delta = !r.is_baseline() && r.delta_vs_baseline().n() > 0;
    const v1::Interval& d = r.delta_vs_baseline();
    const v1::Interval& adjusted = r.adjusted_delta();
    const std::string adjusted_ci =
        has_delta && adjusted.has_low() && adjusted.has_high()
            ? "±" + Fixed((adjusted.high() - adjusted.low()) / 2, 4)
            : "";
    std::string tps;
    if (r.throughput_ratio().n() > 0) {
      tps = Fixed(r.throughput_ratio().mean(), 2);
      if (r.throughput_pairing() == v1::THROUGHPUT_PAIRING_UNPAIRED) {
        tps = "(" + tps + ")";
      }
    }
    std::string speedup;
    if (r.speedup_seeds() > 0) {
      speedup = r.speedup().n() > 0 ? Fixed(r.speedup().mean(), 2) : "-";
      if (!r.is_baseline()) {
        absl::StrAppend(&speedup, " ", r.speedup().n(), "/", r.speedup_seeds());
      }
    }
    table.AddRow({absl::StrCat(r.rank()), r.schedule(),
                  PrincipleLetters(r.principles()),
                  r.is_baseline() ? "base"
                  : has_delta     ? fmt::format("{:+.4f}", d.mean())
                                  : "",
                  adjusted_ci, VerdictWord(r.verdict()), ToSettleCell(r),
                  r.in_best_set() ? "*" : "", speedup, tps,
                  absl::StrCat(r.paired_seeds(), "/", r.seeds_completed())});
  }
  return table;
}

Table RankingTable(const v1::RankResponse& response, Format format, bool wide) {
  if (format == Format::kText && !wide) return NarrowRankingTable(response);
  const bool csv = format == Format::kCsv;
  std::vector<std::string> columns = {
      "rank",         "schedule", "baseline",   "principles", "val_loss",
      "val_ci95",     "delta",    "delta_ci95", "verdict",    "adj_p",
      "min_val_loss", "speedup",  "tps_ratio",  "seeds",      "paired",
      "diverged",     "failed"};
  if (csv) {
    columns.insert(
        columns.end(),
        {"speedup_low", "speedup_high", "speedup_reached", "speedup_seeds",
         "tps_ratio_low", "tps_ratio_high", "tps_pairs_used", "tps_pairs",
         "tps_pairing", "tps_hardware", "adj_low", "adj_high", "adj_confidence",
         "delta_sd", "dof", "seeds_needed", "decided_at_seeds",
         "seeds_excluded", "in_best_set"});
  } else {
    columns.insert(columns.end(), {"adj_ci95", "to_settle", "best_set"});
  }
  Table table(std::move(columns));
  for (const v1::RankedSchedule& r : response.schedules()) {
    const bool has_delta = !r.is_baseline() && r.delta_vs_baseline().n() > 0;
    const bool has_loss = r.final_val_loss().n() > 0;
    const v1::Interval& speedup = r.speedup();
    const v1::Interval& tps = r.throughput_ratio();
    std::vector<std::string> cells = {
        absl::StrCat(r.rank()),
        r.schedule(),
        r.is_baseline() ? "true" : "false",
        PrincipleFlags(r.principles()),
        has_loss ? Fixed(r.final_val_loss().mean(), 4) : "",
        HalfWidth(r.final_val_loss()),
        has_delta ? fmt::format("{:+.4f}", r.delta_vs_baseline().mean()) : "",
        has_delta ? HalfWidth(r.delta_vs_baseline()) : "",
        csv ? (r.verdict() == v1::VERDICT_UNSPECIFIED
                   ? ""
                   : EnumValueName(r.verdict()))
            : VerdictWord(r.verdict()),
        r.has_adjusted_p_value() ? PValue(r.adjusted_p_value()) : "",
        has_loss ? Fixed(r.min_val_loss(), 4) : "",
        csv ? OptionalFixed(speedup.n() > 0, speedup.mean(), 3)
            : SpeedupCell(r),
        csv ? OptionalFixed(tps.n() > 0, tps.mean(), 3) : ThroughputCell(r),
        absl::StrCat(r.seeds_completed()),
        absl::StrCat(r.paired_seeds()),
        absl::StrCat(r.seeds_diverged()),
        absl::StrCat(r.seeds_failed())};
    if (!csv) {
      cells.insert(cells.end(), {AdjustedCell(r), ToSettleCell(r),
                                 r.in_best_set() ? "yes" : ""});
    } else {
      cells.insert(
          cells.end(),
          {OptionalFixed(speedup.has_low(), speedup.low(), 3),
           OptionalFixed(speedup.has_high(), speedup.high(), 3),
           absl::StrCat(speedup.n()), absl::StrCat(r.speedup_seeds()),
           OptionalFixed(tps.has_low(), tps.low(), 3),
           OptionalFixed(tps.has_high(), tps.high(), 3), absl::StrCat(tps.n()),
           absl::StrCat(r.throughput_pairs()),
           r.throughput_pairing() == v1::THROUGHPUT_PAIRING_UNSPECIFIED
               ? ""
               : EnumValueName(r.throughput_pairing()),
           r.throughput_hardware(),
           OptionalFixed(r.adjusted_delta().has_low(), r.adjusted_delta().low(),
                         6),
           OptionalFixed(r.adjusted_delta().has_high(),
                         r.adjusted_delta().high(), 6),
           OptionalFixed(r.adjusted_confidence() > 0, r.adjusted_confidence(),
                         6),
           OptionalFixed(r.delta_sd() > 0, r.delta_sd(), 6),
           OptionalFixed(r.dof() > 0, r.dof(), 2),
           absl::StrCat(r.seeds_needed()), absl::StrCat(r.decided_at_seeds()),
           absl::StrCat(r.seeds_excluded()),
           r.in_best_set() ? "true" : "false"});
    }
    table.AddRow(std::move(cells));
  }
  return table;
}

Table PointsTable(const v1::GetTrialResponse& response) {
  Table table(
      {"split", "step", "loss", "learning_rate", "tokens_per_s", "elapsed_s"});
  for (const v1::LossPoint& p : response.points()) {
    table.AddRow(
        {p.split() == v1::SPLIT_VAL ? "val" : "train", absl::StrCat(p.step()),
         Fixed(p.loss(), 4), fmt::format("{:.3g}", p.learning_rate()),
         Fixed(p.tokens_per_second(), 0), Fixed(p.elapsed_seconds(), 1)});
  }
  return table;
}

std::string PrincipleEffectNote(const v1::PrincipleEffect& effect) {
  if (effect.status() == v1::EFFECT_ESTIMATED && effect.has_effect()) {
    return fmt::format("{} schedules, {} dof", effect.effect().n(),
                       effect.dof());
  }
  if (effect.status() == v1::EFFECT_STATUS_UNSPECIFIED) return "";
  return absl::StrCat(
      "not estimable (",
      effect.note().empty() ? EnumValueName(effect.status()) : effect.note(),
      ")");
}

std::string PrincipleMethod(bool wide) {
  std::string text =
      "effect: coefficient of violating the principle in a regression of "
      "each schedule's mean paired delta on all the principles' "
      "violations (weighted by paired seeds, baseline left out), with its "
      "95% t-interval half-width and unadjusted p";
  if (wide) {
    absl::StrAppend(&text,
                    "; mean_delta_*: plain means, not adjusted for the other "
                    "principles");
  }
  return text;
}

namespace {

// kNarrowNoteWidth is the widest note the default principle table shows.
constexpr size_t kNarrowNoteWidth = 39;

// PrincipleLongNotes are the notes the default principle table moved out:
// "pow2: not estimable (...)".
std::vector<std::string> PrincipleLongNotes(const v1::RankResponse& response) {
  std::vector<std::string> lines;
  for (const v1::PrincipleEffect& e : response.principle_effects()) {
    const std::string note = PrincipleEffectNote(e);
    if (note.size() > kNarrowNoteWidth) {
      lines.push_back(absl::StrCat(EnumValueName(e.principle()), ": ", note));
    }
  }
  return lines;
}

}  // namespace

Table PrincipleEffectsTable(const v1::RankResponse& response, bool wide) {
  std::vector<std::string> columns = {"principle", "satisfied",   "violated",
                                      "effect",    "effect_ci95", "p"};
  if (wide) {
    columns.insert(columns.end(),
                   {"mean_delta_satisfied", "mean_delta_violated"});
  }
  columns.push_back("note");
  Table table(std::move(columns));
  for (const v1::PrincipleEffect& e : response.principle_effects()) {
    const bool estimated = e.has_effect();
    std::vector<std::string> cells = {
        EnumValueName(e.principle()),
        absl::StrCat(e.satisfied()),
        absl::StrCat(e.violated()),
        estimated ? fmt::format("{:+.4f}", e.effect().mean()) : "",
        estimated ? HalfWidth(e.effect()) : "",
        e.has_p_value() ? PValue(e.p_value()) : ""};
    if (wide) {
      cells.push_back(e.satisfied() > 0
                          ? fmt::format("{:+.4f}", e.mean_delta_satisfied())
                          : "");
      cells.push_back(e.violated() > 0
                          ? fmt::format("{:+.4f}", e.mean_delta_violated())
                          : "");
    }
    std::string note = PrincipleEffectNote(e);
    // The default view keeps the table within 100 columns: a longer note
    // goes under the table (PrincipleLongNotes).
    if (!wide && note.size() > kNarrowNoteWidth) note = "see below";
    cells.push_back(std::move(note));
    table.AddRow(std::move(cells));
  }
  return table;
}

std::string SearchCostLine(const v1::Experiment& e) {
  if (e.grid_steps() <= 0) return "";
  return fmt::format(
      "steps trained: {} of the grid's {:.0f} ({:.1f}%)", e.steps_trained(),
      e.grid_steps(),
      100.0 * static_cast<double>(e.steps_trained()) / e.grid_steps());
}

std::string AshaRungLine(const v1::AshaRung& rung) {
  return fmt::format(
      "rung {}: promoted {} / quota {} / reached {} of {} "
      "members{}",
      rung.step(), rung.promoted(), rung.promote_quota(), rung.schedules_size(),
      rung.members(), rung.complete() ? " (complete)" : "");
}

Table AshaRungsTable(const v1::RankResponse& response) {
  Table table({"rung", "schedule", "score", "scored_as", "seeds", "promoted"});
  for (const v1::AshaRung& rung : response.asha_rungs()) {
    for (const v1::AshaRungEntry& e : rung.schedules()) {
      table.AddRow({absl::StrCat(rung.step()), e.schedule(),
                    rung.paired() ? fmt::format("{:+.4f}", e.score())
                                  : Fixed(e.score(), 4),
                    rung.paired() ? "paired delta" : "val loss",
                    absl::StrCat(e.seeds()), e.promoted() ? "yes" : "no"});
    }
  }
  return table;
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

Table CompareTable(const v1::CompareResponse& response) {
  Table table(
      {"a", "b", "common_seeds", "delta_b_minus_a", "ci95", "verdict_b", "p"});
  const v1::Interval& d = response.delta();
  table.AddRow({response.a().schedule(), response.b().schedule(),
                absl::StrCat(d.n()),
                d.n() > 0 ? fmt::format("{:+.4f}", d.mean()) : "", HalfWidth(d),
                EnumValueName(response.verdict()),
                response.has_p_value() ? PValue(response.p_value()) : ""});
  return table;
}

std::string CompareMethod() {
  return "verdict_b: b against a, two-sided paired t-test of b - a over the "
         "common seeds at alpha 0.05, not adjusted (one planned comparison); "
         "delta < 0: b's val loss is lower; needs_seeds = fewer than 2 common "
         "seeds";
}

void PrintCompare(const v1::CompareResponse& response, Format format,
                  std::ostream& out) {
  if (format == Format::kJson) {
    out << ProtoJson(response);
    return;
  }
  CompareTable(response).Print(out, format);
  if (format == Format::kCsv) return;
  if (!response.delta().has_high()) out << "ci95, p - = fewer than 2 seeds\n";
  out << CompareMethod() << "\n";
}

Table SuggestionsTable(const v1::SuggestResponse& response) {
  Table table({"rank", "schedule", "principles", "predicted_delta",
               "uncertainty", "lcb"});
  int rank = 0;
  for (const v1::Suggestion& x : response.suggestions()) {
    table.AddRow(
        {absl::StrCat(++rank), x.schedule(), PrincipleFlags(x.principles()),
         fmt::format("{:+.4f}", x.predicted_delta()), Fixed(x.uncertainty(), 4),
         fmt::format("{:+.4f}", x.acquisition())});
  }
  return table;
}

void PrintSuggestions(const v1::SuggestResponse& response, Format format,
                      std::ostream& out) {
  if (format == Format::kJson) {
    out << ProtoJson(response);
    return;
  }
  SuggestionsTable(response).Print(out, format);
  if (format == Format::kCsv) return;
  out << "predicted_delta: the surrogate's mean paired delta of final val "
         "loss vs the baseline (< 0 is better); uncertainty: its sd; lcb = "
         "predicted_delta - uncertainty, the rank order\n"
      << Printable(response.method()) << "\n";
}

namespace {

std::string Correlation(const v1::LadderEstimate& e) {
  return fmt::format("{:+.2f} [{:+.2f}, {:+.2f}]", e.estimate(), e.low(),
                     e.high());
}

}  // namespace

void PrintLadder(const v1::LadderTransferResponse& response, Format format,
                 std::ostream& out) {
  if (format == Format::kJson) {
    out << ProtoJson(response);
    return;
  }
  if (format == Format::kCsv) {
    Table table({"small_rung", "small_experiment", "large_experiment",
                 "small_size", "large_size", "schedules", "small_seeds",
                 "large_seeds", "spearman", "spearman_low", "spearman_high",
                 "kendall", "kendall_low", "kendall_high", "large_best",
                 "best_set_holds_large_best", "note"});
    for (const v1::LadderPair& p : response.pairs()) {
      const bool measured = p.note().empty();
      auto num = [&](double v) {
        return measured ? fmt::format("{:.6g}", v) : std::string();
      };
      table.AddRow({absl::StrCat(p.small_rung() + 1),
                    absl::StrCat(p.small_experiment_id()),
                    absl::StrCat(p.large_experiment_id()), p.small_size(),
                    p.large_size(), measured ? absl::StrCat(p.schedules()) : "",
                    measured ? absl::StrCat(p.small_seeds()) : "",
                    measured ? absl::StrCat(p.large_seeds()) : "",
                    num(p.spearman().estimate()), num(p.spearman().low()),
                    num(p.spearman().high()), num(p.kendall().estimate()),
                    num(p.kendall().low()), num(p.kendall().high()),
                    p.large_best(),
                    p.has_best_set_holds_large_best()
                        ? (p.best_set_holds_large_best() ? "true" : "false")
                        : "",
                    p.note()});
    }
    table.Print(out, format);
    return;
  }
  out << "ladder " << response.ladder_id() << ": " << response.rungs_size()
      << " of " << response.planned_rungs() << " rungs submitted\n";
  for (const v1::Experiment& e : response.rungs()) {
    out << "  rung " << e.ladder_rung() + 1 << ": experiment " << e.id() << ", "
        << EnumValueName(e.state());
    if (!e.ladder_note().empty()) out << "; " << Printable(e.ladder_note());
    out << "\n";
  }
  out << "\n";
  Table table({"rungs", "sizes", "n", "spearman [95% CI]", "kendall [95% CI]",
               "holds best"});
  std::vector<std::string> notes;
  for (const v1::LadderPair& p : response.pairs()) {
    const std::string rungs =
        absl::StrCat(p.small_rung() + 1, "->", p.small_rung() + 2);
    const std::string sizes =
        absl::StrCat(p.small_size(), "->", p.large_size());
    if (!p.note().empty()) {
      table.AddRow({rungs, sizes, "", "", "", ""});
      notes.push_back(absl::StrCat(rungs, ": ", p.note()));
      continue;
    }
    table.AddRow({rungs, sizes, absl::StrCat(p.schedules()),
                  Correlation(p.spearman()), Correlation(p.kendall()),
                  p.has_best_set_holds_large_best()
                      ? (p.best_set_holds_large_best() ? "yes" : "no")
                      : ""});
  }
  table.Print(out, format);
  for (const std::string& note : notes) out << Printable(note) << "\n";
  if (!response.pairs().empty() &&
      notes.size() < static_cast<size_t>(response.pairs_size())) {
    out << "n: schedules run at both sizes (the baseline left out); "
           "correlations of their mean paired deltas, 95% bootstrap over "
           "seeds; holds best: the small best-set holds the large best\n";
  }
}

std::string HeadroomLine(const v1::Headroom& h) {
  const auto of = [](int64_t value, int64_t limit) {
    return limit > 0 ? absl::StrCat(value, " of ", limit)
                     : absl::StrCat(value, " (no limit)");
  };
  return WrapText(
      absl::StrCat(
          "limits: ", of(h.trials(), h.max_trials_per_experiment()),
          " trials per experiment; your queued trials ",
          of(h.queued_trials(), h.max_queued_trials()),
          "; your active experiments ",
          of(h.active_experiments(), h.max_active_experiments()), "; spec ",
          fmt::format("{:.1f} of {:.1f} KiB",
                      static_cast<double>(h.spec_bytes()) / 1024.0,
                      static_cast<double>(h.max_stored_spec_bytes()) / 1024.0)),
      100, 2);
}

std::string Thousands(double value) {
  const std::string digits = fmt::format("{:.0f}", std::abs(value));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < -0.5 ? "-" + out : out;
}

std::string Scaled(double value) {
  static constexpr const char* kUnits[] = {"", "k", "M", "G", "T", "P"};
  size_t unit = 0;
  while (std::abs(value) >= 1000.0 && unit + 1 < std::size(kUnits)) {
    value /= 1000.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f}", value)
                   : fmt::format("{:.1f}{}", value, kUnits[unit]);
}

namespace {

std::string Hours(double hours) {
  return hours >= 100 ? Thousands(hours) : fmt::format("{:.2g}", hours);
}

// PlanRow is one labelled line of the bill, its text wrapped under the label.
std::string PlanRow(absl::string_view label, absl::string_view text) {
  const std::string line =
      fmt::format("  {:<10}{}", std::string(label), std::string(text));
  return WrapText(line, 100, 12) + "\n";
}

}  // namespace

std::string PlanBlock(const v1::PlanEstimate& p) {
  std::string out;
  out += PlanRow(
      "schedules",
      absl::StrCat(Thousands(p.schedules()),
                   " in the space (the baseline "
                   "included); ",
                   Thousands(p.trials()), " trials queued now, ", p.seeds(),
                   p.seeds() == 1 ? " seed" : " seeds", " each"));
  out +=
      PlanRow("steps",
              fmt::format("{} expected, {} at most: {:.1f}% and {:.1f}% of the "
                          "grid's {} ({})",
                          Thousands(p.steps()), Thousands(p.max_steps()),
                          100.0 * p.expected_share(), 100.0 * p.max_share(),
                          Thousands(p.grid_steps()), p.share_source()));
  out +=
      PlanRow("tokens", fmt::format("{} expected, {} at most ({} a step)",
                                    Scaled(p.tokens()), Scaled(p.max_tokens()),
                                    Thousands(p.tokens_per_step())));
  out += PlanRow(
      "compute",
      fmt::format("{} parameters, {} FLOPs a token (6 x non-embedding "
                  "parameters + 6 x layers x context x d_model); {:.2e} "
                  "FLOPs expected",
                  Scaled(static_cast<double>(p.parameters())),
                  Scaled(p.flops_per_token()), p.flops()));
  out += PlanRow(
      "time",
      p.tokens_per_second() > 0
          ? fmt::format("{} worker-hours expected, {} at most, at {} "
                        "tokens/s a worker ({})",
                        Hours(p.worker_hours()), Hours(p.max_worker_hours()),
                        Scaled(p.tokens_per_second()), p.throughput_source())
          : std::string("unknown: no throughput measured or assumed"));
  out +=
      PlanRow("corpus",
              p.corpus_tokens() > 0
                  ? absl::StrCat(Scaled(static_cast<double>(p.corpus_tokens())),
                                 " train tokens")
                  : std::string("size unknown here"));
  for (const std::string& warning : p.warnings()) {
    out +=
        WrapText(absl::StrCat("warning: ", Printable(warning)), 100, 2) + "\n";
  }
  return out;
}

std::string PlanLine(const v1::PlanEstimate& p) {
  const bool measured = absl::StartsWith(p.throughput_source(), "measured");
  const std::string share =
      p.max_share() > p.expected_share()
          ? fmt::format("{:.1f}% of the grid's, at most {:.1f}%",
                        100.0 * p.expected_share(), 100.0 * p.max_share())
          : fmt::format("{:.1f}% of the grid's", 100.0 * p.expected_share());
  std::string line =
      fmt::format("bill: {} steps ({}), {} tokens, {} worker-hours ({})",
                  Thousands(p.steps()), share, Scaled(p.tokens()),
                  Hours(p.worker_hours()), measured ? "measured" : "assumed");
  if (p.warnings_size() > 0) {
    absl::StrAppend(&line, "; ", p.warnings_size(),
                    p.warnings_size() == 1 ? " warning" : " warnings");
  }
  return WrapText(line, 100, 2);
}

}  // namespace prism::cli
