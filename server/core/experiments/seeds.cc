#include "server/core/experiments/seeds.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/space/schedule.h"
#include "scheduler/strategy/adaptive_seeds.h"
#include "scheduler/strategy/asha.h"
#include "scheduler/strategy/guided.h"
#include "scheduler/strategy/racing.h"
#include "scheduler/strategy/screening.h"
#include "server/core/infra/convert.h"

namespace prism::server {
namespace {

// A round whose snapshot keeps going stale (trials finishing while it
// reads) gives up after this many tries; the next finished trial retries.
constexpr int kMaxRoundAttempts = 8;

bool Unfinished(const v1::Experiment& e) {
  return e.state() == v1::EXPERIMENT_ACTIVE ||
         e.state() == v1::EXPERIMENT_PAUSED;
}

bool Pending(v1::TrialState s) {
  return s == v1::TRIAL_QUEUED || s == v1::TRIAL_LEASED ||
         s == v1::TRIAL_RUNNING;
}

bool Finished(v1::TrialState s) {
  return s == v1::TRIAL_COMPLETED || s == v1::TRIAL_DIVERGED ||
         s == v1::TRIAL_FAILED;
}

// RoundPlan is what one round adds or promotes, and its summary for users.
struct RoundPlan {
  std::vector<storage::NewTrial> trials;
  std::vector<AshaPromotion> promotions;
  std::string note;
};

// Decide makes the experiment's decision: guided search's when that is its
// strategy, adaptive seeds' otherwise.
absl::StatusOr<RoundPlan> Decide(const v1::ExperimentSpec& spec,
                                 const SpaceSpec& space,
                                 const std::string& baseline,
                                 const std::vector<SeedTrial>& trials,
                                 const Ranking& ranking) {
  RoundPlan plan;
  if (spec.strategy() == v1::STRATEGY_GUIDED) {
    GuidedPlan guided;
    guided.space = space;
    guided.baseline = baseline;
    guided.budget = spec.samples();
    guided.initial = spec.guided().initial();
    guided.parallel = spec.guided().parallel();
    guided.seed = spec.sample_seed();
    PRISM_ASSIGN_OR_RETURN(GuidedDecision d,
                           DecideGuided(guided, trials, ranking));
    for (const GuidedAddition& a : d.additions) {
      for (int64_t seed : spec.seeds()) {
        plan.trials.push_back(storage::NewTrial{a.schedule, seed, false});
      }
    }
    plan.note = DescribeGuidedDecision(guided, d);
    return plan;
  }
  const std::vector<int64_t> sequence(spec.seeds().begin(), spec.seeds().end());
  const SeedDecision decision =
      DecideSeeds(sequence, baseline, trials, ranking);
  for (const SeedAddition& a : decision.additions) {
    plan.trials.push_back(storage::NewTrial{a.schedule, a.seed, a.is_baseline});
  }
  plan.note = DescribeSeedDecision(decision);
  return plan;
}

}  // namespace

int ScreenedSchedules(const std::vector<AshaTrial>& trials) {
  std::set<std::string> screened;
  for (const AshaTrial& t : trials) {
    if (!t.is_baseline) screened.insert(t.schedule);
  }
  return static_cast<int>(screened.size());
}

SeedPlanner::SeedPlanner(storage::ExperimentStore* experiments,
                         const Clock* clock)
    : experiments_(experiments), clock_(clock) {}

void SeedPlanner::SubscribeTo(FinishSignal* finished) {
  finished->Subscribe("seeds", [this](int64_t experiment_id) {
    absl::StatusOr<int> added = TrialFinished(experiment_id);
    if (!added.ok()) {
      Log(LogLevel::kWarning, "seeds decision failed")
          .Kv("experiment", experiment_id)
          .Kv("error", added.status().ToString());
    }
  });
}

absl::StatusOr<int> SeedPlanner::TrialFinished(int64_t experiment_id) {
  PRISM_ASSIGN_OR_RETURN(v1::Experiment e,
                         experiments_->GetExperiment(experiment_id));
  if (!storage::DecidedByCoordinator(e.spec()) || !Unfinished(e)) return 0;
  return Round(e);
}

absl::StatusOr<int> SeedPlanner::ReconcileAll() {
  int added = 0;
  int64_t after = 0;
  do {
    PRISM_ASSIGN_OR_RETURN(storage::ExperimentPage page,
                           experiments_->ListExperiments("", 100, after));
    for (const v1::Experiment& e : page.experiments) {
      if (!storage::DecidedByCoordinator(e.spec()) || !Unfinished(e)) {
        continue;
      }
      // One experiment that cannot be decided (e.g. a trial whose ranking
      // columns are lost) must not keep the coordinator from starting.
      absl::StatusOr<int> n = Round(e);
      if (!n.ok()) {
        Log(LogLevel::kWarning, "seeds decision failed")
            .Kv("experiment", e.id())
            .Kv("error", n.status().ToString());
        continue;
      }
      added += *n;
    }
    after = page.next_after_id;
  } while (after != 0);
  return added;
}

absl::StatusOr<int> SeedPlanner::Round(const v1::Experiment& experiment) {
  absl::MutexLock lock(&mu_);
  const int64_t id = experiment.id();
  const SpaceSpec space = SpaceForSpec(experiment.spec());
  const std::string baseline =
      Schedule::Uniform(space.base_heads, space.layers).ToString();
  for (int attempt = 0; attempt < kMaxRoundAttempts; ++attempt) {
    PRISM_ASSIGN_OR_RETURN(std::vector<storage::TrialKey> keys,
                           experiments_->ListTrialKeys(id));
    PRISM_ASSIGN_OR_RETURN(std::vector<TrialOutcome> outcomes,
                           experiments_->ListFinishedOutcomes(id));
    std::vector<SeedTrial> trials;
    trials.reserve(keys.size());
    int64_t finished = 0;
    int64_t at_rung = 0;
    bool any_pending = false;
    for (const storage::TrialKey& k : keys) {
      finished += Finished(k.state) ? 1 : 0;
      at_rung += k.state == v1::TRIAL_STOPPED_AT_RUNG ? 1 : 0;
      any_pending |= Pending(k.state);
      trials.push_back(
          SeedTrial{k.schedule, k.seed, k.is_baseline, Pending(k.state)});
    }
    // A trial finished between the two reads: read both again.
    if (finished != static_cast<int64_t>(outcomes.size())) continue;
    RoundPlan decision;
    bool raced = false;  // the trials added are racing's
    int screened = 0;    // schedules tried at a first rung (the verdicts')
    if (experiment.spec().strategy() == v1::STRATEGY_ASHA) {
      const AshaSettings policy = AshaSettingsOf(experiment.spec());
      PRISM_ASSIGN_OR_RETURN(std::vector<AshaTrial> asha,
                             experiments_->ListAshaTrials(id, policy.rungs));
      screened = ScreenedSchedules(asha);
      AshaDecision d = DecideAsha(policy.rungs, policy.eta, policy.mode, asha,
                                  policy.first_rung_seeds, policy.all_seeds);
      decision.note = DescribeAshaDecision(d);
      decision.promotions = std::move(d.promotions);
      for (const AshaNewSeed& n : d.new_seeds) {
        decision.trials.push_back(
            storage::NewTrial{n.schedule, n.seed, false, n.to_step});
      }
    } else if (experiment.spec().strategy() == v1::STRATEGY_GUIDED_SCREENING) {
      const ScreeningSearch search = ScreeningSearchOf(experiment.spec());
      PRISM_ASSIGN_OR_RETURN(std::vector<AshaTrial> stored,
                             experiments_->ListAshaTrials(id, search.rungs));
      screened = ScreenedSchedules(stored);
      PRISM_ASSIGN_OR_RETURN(ScreeningDecision d,
                             DecideScreening(search, stored));
      decision.note = DescribeScreeningDecision(search, d);
      for (const std::string& s : d.added.schedules) {
        for (int64_t seed : experiment.spec().seeds()) {
          decision.trials.push_back(
              storage::NewTrial{s, seed, false, search.rungs.front()});
        }
      }
      decision.promotions = std::move(d.promotions);
    } else if (experiment.spec().has_seeds_policy() ||
               experiment.spec().strategy() == v1::STRATEGY_GUIDED) {
      PRISM_ASSIGN_OR_RETURN(
          decision, Decide(experiment.spec(), space, baseline, trials,
                           RankSchedules(space, baseline, outcomes,
                                         VerdictOptionsOf(experiment.spec()))));
    }
    // The search is done: racing for the best decides what comes next
    // (scheduler/strategy/racing.h).
    if (decision.trials.empty() && decision.promotions.empty() &&
        !any_pending && RacingOn(experiment.spec())) {
      RacingPlan racing = RacingPlanOf(experiment.spec());
      racing.verdicts.screened_schedules = screened;
      const RaceDecision race = DecideRace(racing, trials, outcomes);
      raced = !race.additions.empty();
      for (const SeedAddition& a : race.additions) {
        decision.trials.push_back(
            storage::NewTrial{a.schedule, a.seed, a.is_baseline});
      }
      // The search's last word stays (why it ended), then racing's.
      decision.note = decision.note.empty()
                          ? race.note
                          : absl::StrCat(decision.note, "; ", race.note);
    }
    // Nothing to add while trials are pending: the round that matters
    // comes when one of them finishes.
    if (decision.trials.empty() && decision.promotions.empty() && any_pending) {
      return 0;
    }
    storage::SeedRound round;
    round.experiment_id = id;
    round.seen_trials = static_cast<int64_t>(keys.size());
    // As ApplySeedRound counts: a trial stopping at a rung changes the
    // state a decision was made from.
    round.seen_finished = finished + at_rung;
    round.trials = std::move(decision.trials);
    round.promotions = std::move(decision.promotions);
    round.note = std::move(decision.note);
    round.now_ms = clock_->NowMs();
    absl::StatusOr<storage::SeedRoundResult> result =
        experiments_->ApplySeedRound(round);
    if (absl::IsAborted(result.status())) continue;
    if (!result.ok()) return result.status();
    // A racing round is stored; the next decision has not been made.
    if (raced && result->added > 0) Failpoint("racing.added");
    Log(LogLevel::kInfo, result->added > 0      ? "seeds added"
                         : result->promoted > 0 ? "trials promoted"
                                                : "seeds decided")
        .Kv("experiment", id)
        .Kv("trials", result->added)
        .Kv("promoted", result->promoted)
        .Kv("decision", round.note)
        .Kv("state", v1::ExperimentState_Name(result->state));
    return result->added + result->promoted;
  }
  return absl::AbortedError(
      absl::StrCat("experiment ", id, ": trials kept finishing during ",
                   kMaxRoundAttempts, " decisions; the next one retries"));
}

}  // namespace prism::server
