#include "cli/views/summary.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/views/principles.h"
#include "fmt/format.h"

namespace prism::cli {

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

SeedsCommand SeedsAddCommand(int64_t experiment_id) {
  return [experiment_id](int n) {
    return fmt::format("prism seeds add {} --to {}", experiment_id, n);
  };
}

int SeedLimit(const v1::ExperimentSpec& spec) {
  constexpr int kMaxSeedsPerSchedule =
      64;  // scheduler/strategy/adaptive_seeds.h
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

}  // namespace prism::cli
