#include "server/core/experiments/results.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/space/schedule.h"
#include "scheduler/stats/statistics.h"
#include "scheduler/strategy/asha.h"
#include "scheduler/strategy/screening.h"
#include "scheduler/strategy/suggest.h"
#include "server/core/experiments/ladder.h"
#include "server/core/experiments/seeds.h"
#include "server/core/infra/convert.h"

namespace prism::server {
namespace {

// Experiments whose rankings stay cached; beyond it the cache starts over
// (the working set is the few experiments people are looking at).
constexpr size_t kMaxCachedExperiments = 32;
constexpr int kMaxRankPageSize = 10000;

bool Satisfies(const SchedulePrinciples& p, const PrincipleSet& required) {
  for (Principle principle : kAllPrinciples) {
    if (required.Has(principle) && !p.Satisfies(principle)) return false;
  }
  return true;
}

// SortKey returns the value a sort compares, oriented so smaller is better,
// and whether the row has it (rows without go last).
std::pair<bool, double> SortKey(const RankedRow& r, v1::RankSort s) {
  switch (s) {
    case v1::RANK_SORT_DELTA:
      return {r.delta_vs_baseline.n > 0, r.delta_vs_baseline.mean};
    case v1::RANK_SORT_SPEEDUP:
      return {r.convergence_speedup > 0, -r.convergence_speedup};
    case v1::RANK_SORT_THROUGHPUT:
      return {true, -r.tokens_per_second};
    case v1::RANK_SORT_MIN_VAL_LOSS:
      return {true, r.min_val_loss};
    case v1::RANK_SORT_VAL_LOSS:
      return {r.final_val_loss.n > 0, r.final_val_loss.mean};
    default:
      return {true, static_cast<double>(r.rank)};
  }
}

// PairVerdict is b's verdict against a from the per-seed deltas b - a: one
// two-sided paired t-test, not adjusted (a single planned comparison).
v1::Verdict PairVerdict(const std::vector<double>& deltas,
                        std::optional<double>* p_value) {
  *p_value = PairedTTestP(deltas);
  if (!p_value->has_value()) return v1::VERDICT_NEEDS_SEEDS;
  if (**p_value >= kVerdictAlpha) return v1::VERDICT_INCONCLUSIVE;
  return MeanInterval(deltas).mean < 0.0 ? v1::VERDICT_BETTER
                                         : v1::VERDICT_WORSE;
}

}  // namespace

ResultsManager::ResultsManager(storage::ExperimentStore* experiments,
                               storage::CurveStore* curves,
                               ResultsOptions options)
    : experiments_(experiments),
      curves_(curves),
      options_(options),
      thread_([this] { RebuildLoop(); }) {}

ResultsManager::~ResultsManager() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    built_.SignalAll();
  }
  thread_.join();
}

void ResultsManager::SubscribeTo(FinishSignal* finished) {
  finished->Subscribe("results", [this](int64_t experiment_id) {
    TrialCompleted(experiment_id);
  });
}

void ResultsManager::TrialCompleted(int64_t experiment_id) {
  absl::MutexLock lock(&mu_);
  if (pending_.contains(experiment_id)) return;
  pending_[experiment_id] = absl::Now() + options_.rebuild_delay;
  built_.SignalAll();
}

void ResultsManager::WarmUp() {
  absl::MutexLock lock(&mu_);
  warm_up_requested_ = true;
  built_.SignalAll();
}

void ResultsManager::WaitIdle() {
  absl::MutexLock lock(&mu_);
  while (!stopping_ && (warm_up_requested_ || background_busy_ ||
                        !pending_.empty() || !building_.empty())) {
    built_.Wait(&mu_);
  }
}

int64_t ResultsManager::builds() const {
  absl::MutexLock lock(&mu_);
  return builds_;
}

void ResultsManager::RebuildLoop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (warm_up_requested_) {
      warm_up_requested_ = false;
      background_busy_ = true;
      mu_.Unlock();
      WarmUpNow();
      mu_.Lock();
      background_busy_ = false;
      built_.SignalAll();
      continue;
    }
    if (pending_.empty()) {
      built_.Wait(&mu_);
      continue;
    }
    auto next = pending_.begin();
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->second < next->second) next = it;
    }
    if (absl::Now() < next->second) {
      built_.WaitWithDeadline(&mu_, next->second);
      continue;
    }
    const int64_t id = next->first;
    pending_.erase(next);
    background_busy_ = true;
    mu_.Unlock();
    Rebuild(id);
    mu_.Lock();
    background_busy_ = false;
    built_.SignalAll();
  }
}

void ResultsManager::Rebuild(int64_t experiment_id) {
  absl::StatusOr<v1::Experiment> experiment =
      experiments_->GetExperiment(experiment_id);
  absl::Status status = experiment.status();
  if (experiment.ok()) status = Analyze(*experiment).status();
  if (!status.ok()) {
    Log(LogLevel::kWarning, "ranking rebuild failed")
        .Kv("experiment", experiment_id)
        .Kv("error", status.ToString());
  }
}

void ResultsManager::WarmUpNow() {
  std::vector<v1::Experiment> candidates;
  int64_t after = 0;
  do {
    absl::StatusOr<storage::ExperimentPage> page =
        experiments_->ListExperiments("", 100, after);
    if (!page.ok()) {
      Log(LogLevel::kWarning, "ranking warm-up failed")
          .Kv("error", page.status().ToString());
      return;
    }
    for (v1::Experiment& e : page->experiments) {
      if (e.counts().completed() > 0) candidates.push_back(std::move(e));
    }
    after = page->next_after_id;
  } while (after != 0);
  // Experiments still running (or paused) are the ones people watch; then
  // the most recently finished.
  auto live = [](const v1::Experiment& e) {
    return e.state() == v1::EXPERIMENT_ACTIVE ||
           e.state() == v1::EXPERIMENT_PAUSED;
  };
  std::sort(candidates.begin(), candidates.end(),
            [&live](const v1::Experiment& a, const v1::Experiment& b) {
              if (live(a) != live(b)) return live(a);
              return a.updated_unix_ms() > b.updated_unix_ms();
            });
  const size_t n = std::min<size_t>(
      candidates.size(), static_cast<size_t>(options_.warm_experiments));
  for (size_t i = 0; i < n; ++i) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    absl::Status status = Analyze(candidates[i]).status();
    if (!status.ok()) {
      Log(LogLevel::kWarning, "ranking warm-up failed")
          .Kv("experiment", candidates[i].id())
          .Kv("error", status.ToString());
    }
  }
}

absl::StatusOr<std::shared_ptr<const ResultsManager::Analysis>>
ResultsManager::Analyze(const v1::Experiment& experiment) {
  const int64_t id = experiment.id();
  PRISM_ASSIGN_OR_RETURN(int64_t finished, experiments_->CountFinished(id));
  {
    absl::MutexLock lock(&mu_);
    while (true) {
      auto it = cache_.find(id);
      if (it != cache_.end() && it->second->finished >= finished) {
        return it->second;
      }
      // A build in flight may already cover `finished`: wait, then look
      // again rather than reading the same rows twice.
      if (!building_.contains(id)) break;
      built_.Wait(&mu_);
    }
    building_.insert(id);
  }
  absl::StatusOr<std::shared_ptr<const Analysis>> analysis = Build(experiment);
  absl::MutexLock lock(&mu_);
  building_.erase(id);
  built_.SignalAll();
  if (!analysis.ok()) return analysis.status();
  ++builds_;
  auto it = cache_.find(id);
  // Keep whichever ranking is newer (a build may have overtaken this one).
  if (it == cache_.end() || it->second->finished < (*analysis)->finished) {
    if (cache_.size() >= kMaxCachedExperiments) cache_.clear();
    cache_[id] = *analysis;
  }
  return analysis;
}

absl::StatusOr<std::shared_ptr<const ResultsManager::Analysis>>
ResultsManager::Build(const v1::Experiment& experiment) {
  PRISM_ASSIGN_OR_RETURN(std::vector<TrialOutcome> outcomes,
                         experiments_->ListFinishedOutcomes(experiment.id()));
  const SpaceSpec space = SpaceForSpec(experiment.spec());
  const std::string baseline =
      Schedule::Uniform(space.base_heads, space.layers).ToString();
  VerdictOptions verdicts = VerdictOptionsOf(experiment.spec());
  if (experiment.spec().strategy() == v1::STRATEGY_ASHA ||
      experiment.spec().strategy() == v1::STRATEGY_GUIDED_SCREENING) {
    // Every schedule tried at a first rung was screened; the finalists were
    // chosen among them (VerdictOptions::screened_schedules).
    const AshaSettings asha = AshaSettingsOf(experiment.spec());
    PRISM_ASSIGN_OR_RETURN(
        std::vector<AshaTrial> trials,
        experiments_->ListAshaTrials(experiment.id(), asha.rungs));
    verdicts.screened_schedules = ScreenedSchedules(trials);
  }
  Ranking ranking = RankSchedules(space, baseline, outcomes, verdicts);

  auto analysis = std::make_shared<Analysis>();
  if (RacingOn(experiment.spec())) {
    PRISM_ASSIGN_OR_RETURN(std::vector<storage::TrialKey> keys,
                           experiments_->ListTrialKeys(experiment.id()));
    std::vector<SeedTrial> trials;
    trials.reserve(keys.size());
    for (const storage::TrialKey& k : keys) {
      const bool pending = k.state == v1::TRIAL_QUEUED ||
                           k.state == v1::TRIAL_LEASED ||
                           k.state == v1::TRIAL_RUNNING;
      trials.push_back(SeedTrial{k.schedule, k.seed, k.is_baseline, pending});
    }
    RacingPlan plan = RacingPlanOf(experiment.spec());
    plan.verdicts.screened_schedules = verdicts.screened_schedules;
    const RaceDecision race = DecideRace(plan, trials, outcomes);
    analysis->race = RaceReportOf(race, experiment.spec());
    // Once the race has looked, its contenders are the best-set it
    // promises (the ranking's own is one look at all the data).
    if (race.started > 0) {
      const std::set<std::string> kept(race.contenders.begin(),
                                       race.contenders.end());
      ranking.verdicts.best_set.clear();
      for (RankedRow& row : ranking.rows) {
        row.in_best_set = kept.count(row.schedule) > 0;
        if (row.in_best_set) ranking.verdicts.best_set.push_back(row.schedule);
      }
      if (ranking.baseline.has_value()) {
        ranking.baseline->in_best_set = kept.count(baseline) > 0;
      }
    }
  }
  analysis->finished = static_cast<int64_t>(outcomes.size());
  analysis->base_heads = space.base_heads;
  analysis->ranking = std::move(ranking);
  for (const TrialOutcome& o : outcomes) {
    if (o.state != OutcomeState::kCompleted) continue;
    analysis->finals[o.schedule].emplace(o.seed, o.final_val_loss);
  }
  return std::shared_ptr<const Analysis>(std::move(analysis));
}

absl::StatusOr<v1::RankResponse> ResultsManager::Rank(
    const v1::RankRequest& request) {
  PRISM_ASSIGN_OR_RETURN(PrincipleSet required,
                         PrinciplesFromProto(request.require()));
  if (!v1::RankSort_IsValid(request.sort())) {
    return absl::InvalidArgumentError(
        absl::StrCat("sort ", request.sort(), " is not a RankSort"));
  }
  PRISM_ASSIGN_OR_RETURN(int64_t offset,
                         DecodePageToken("rank", request.page_token()));
  if (request.page_size() < 0) {
    return absl::InvalidArgumentError("page_size must not be negative");
  }
  PRISM_ASSIGN_OR_RETURN(v1::Experiment experiment,
                         experiments_->GetExperiment(request.experiment_id()));
  PRISM_ASSIGN_OR_RETURN(std::shared_ptr<const Analysis> analysis,
                         Analyze(experiment));

  const Ranking& ranking = analysis->ranking;
  std::vector<const RankedRow*> rows;
  rows.reserve(ranking.rows.size());
  for (const RankedRow& r : ranking.rows) {
    if (Satisfies(r.principles, required)) rows.push_back(&r);
  }
  const v1::RankSort sort = request.sort();
  const bool descending = request.descending();
  std::stable_sort(rows.begin(), rows.end(),
                   [sort, descending](const RankedRow* a, const RankedRow* b) {
                     // A NaN key counts as none, so this stays a strict
                     // weak order whatever the rows hold.
                     auto ka = SortKey(*a, sort);
                     auto kb = SortKey(*b, sort);
                     ka.first = ka.first && !std::isnan(ka.second);
                     kb.first = kb.first && !std::isnan(kb.second);
                     if (ka.first != kb.first) return ka.first;
                     if (!ka.first) return a->rank < b->rank;
                     if (ka.second != kb.second) {
                       return descending ? ka.second > kb.second
                                         : ka.second < kb.second;
                     }
                     return a->rank < b->rank;
                   });

  v1::RankResponse response;
  const int64_t total = static_cast<int64_t>(rows.size());
  const int64_t size =
      request.page_size() == 0
          ? total
          : std::min<int64_t>(request.page_size(), kMaxRankPageSize);
  int64_t end = std::min(total, offset + size);
  int64_t bytes = 0;
  for (int64_t i = offset; i < end; ++i) {
    v1::RankedSchedule row = RankedRowToProto(*rows[i], analysis->base_heads);
    bytes += static_cast<int64_t>(row.ByteSizeLong());
    if (i > offset && bytes > options_.max_page_bytes) {
      end = i;  // the rest on the next page
      break;
    }
    *response.add_schedules() = std::move(row);
  }
  if (end < total) response.set_next_page_token(EncodePageToken("rank", end));
  if (ranking.baseline.has_value()) {
    *response.mutable_baseline() =
        RankedRowToProto(*ranking.baseline, analysis->base_heads);
  }
  for (const PrincipleEffect& e : ranking.principle_effects) {
    *response.add_principle_effects() = PrincipleEffectToProto(e);
  }
  response.set_total(static_cast<int32_t>(total));
  response.set_compared_schedules(ranking.compared_schedules);
  *response.mutable_verdicts() = VerdictReportToProto(ranking.verdicts);
  if (analysis->race.has_value()) {
    *response.mutable_race() = *analysis->race;
    // Racing's trials in all, against the grid's.
    FillSearchCost(&experiment);
    if (experiment.grid_steps() > 0) {
      response.mutable_race()->set_grid_share(
          static_cast<double>(experiment.steps_trained()) /
          experiment.grid_steps());
    }
  }
  if (experiment.spec().strategy() == v1::STRATEGY_ASHA) {
    // The rungs as the coordinator's next decision would see them; trials
    // stopped at a rung are not in the ranking above.
    const AshaSettings asha = AshaSettingsOf(experiment.spec());
    PRISM_ASSIGN_OR_RETURN(
        std::vector<AshaTrial> trials,
        experiments_->ListAshaTrials(experiment.id(), asha.rungs));
    for (const AshaRungView& rung :
         DecideAsha(asha.rungs, asha.eta, asha.mode, trials,
                    asha.first_rung_seeds, asha.all_seeds)
             .rungs) {
      *response.add_asha_rungs() = AshaRungToProto(rung);
    }
  } else if (experiment.spec().strategy() == v1::STRATEGY_GUIDED_SCREENING) {
    const ScreeningSearch search = ScreeningSearchOf(experiment.spec());
    PRISM_ASSIGN_OR_RETURN(
        std::vector<AshaTrial> trials,
        experiments_->ListAshaTrials(experiment.id(), search.rungs));
    PRISM_ASSIGN_OR_RETURN(ScreeningDecision d,
                           DecideScreening(search, trials));
    for (const AshaRungView& rung : d.rungs) {
      *response.add_asha_rungs() = AshaRungToProto(rung);
    }
  }
  FillSearchCost(&experiment);
  *response.mutable_experiment() = std::move(experiment);
  return response;
}

absl::StatusOr<v1::GetTrialResponse> ResultsManager::GetTrial(
    const v1::GetTrialRequest& request) {
  PRISM_ASSIGN_OR_RETURN(v1::Trial trial,
                         experiments_->GetTrial(request.trial_id()));
  PRISM_ASSIGN_OR_RETURN(v1::Experiment experiment,
                         experiments_->GetExperiment(trial.experiment_id()));
  const SpaceSpec space = SpaceForSpec(experiment.spec());
  *trial.mutable_principles() = ReportSchedule(space, trial.schedule());
  v1::GetTrialResponse response;
  PRISM_ASSIGN_OR_RETURN(std::vector<v1::LossPoint> points,
                         curves_->GetPoints(trial.id()));
  for (v1::LossPoint& p : points) *response.add_points() = std::move(p);
  if (request.with_baseline() && !trial.is_baseline()) {
    absl::StatusOr<v1::Trial> baseline =
        experiments_->FindBaselineTrial(trial.experiment_id(), trial.seed());
    if (baseline.ok()) {
      *baseline->mutable_principles() =
          ReportSchedule(space, baseline->schedule());
      PRISM_ASSIGN_OR_RETURN(std::vector<v1::LossPoint> baseline_points,
                             curves_->GetPoints(baseline->id()));
      for (v1::LossPoint& p : baseline_points) {
        *response.add_baseline_points() = std::move(p);
      }
      *response.mutable_baseline() = *std::move(baseline);
    } else if (!absl::IsNotFound(baseline.status())) {
      return baseline.status();
    }
  }
  *response.mutable_trial() = std::move(trial);
  return response;
}

absl::StatusOr<v1::CompareResponse> ResultsManager::Compare(
    const v1::CompareRequest& request) {
  PRISM_ASSIGN_OR_RETURN(Schedule a, ParseSchedule(request.schedule_a()));
  PRISM_ASSIGN_OR_RETURN(Schedule b, ParseSchedule(request.schedule_b()));
  PRISM_ASSIGN_OR_RETURN(v1::Experiment experiment,
                         experiments_->GetExperiment(request.experiment_id()));
  PRISM_ASSIGN_OR_RETURN(std::shared_ptr<const Analysis> analysis,
                         Analyze(experiment));
  auto find = [&](const Schedule& s) -> absl::StatusOr<const RankedRow*> {
    const std::string text = s.ToString();
    for (const RankedRow& r : analysis->ranking.rows) {
      if (r.schedule == text && r.seeds_completed > 0) return &r;
    }
    return absl::NotFoundError(absl::StrCat("schedule ", text,
                                            " has no completed trial in "
                                            "experiment ",
                                            request.experiment_id()));
  };
  PRISM_ASSIGN_OR_RETURN(const RankedRow* row_a, find(a));
  PRISM_ASSIGN_OR_RETURN(const RankedRow* row_b, find(b));
  const auto& finals_a = analysis->finals.at(row_a->schedule);
  const auto& finals_b = analysis->finals.at(row_b->schedule);
  std::vector<double> deltas;
  for (const auto& [seed, loss_a] : finals_a) {
    auto it = finals_b.find(seed);
    if (it != finals_b.end()) deltas.push_back(it->second - loss_a);
  }
  v1::CompareResponse response;
  *response.mutable_a() = RankedRowToProto(*row_a, analysis->base_heads);
  *response.mutable_b() = RankedRowToProto(*row_b, analysis->base_heads);
  *response.mutable_delta() = IntervalToProto(MeanInterval(deltas));
  std::optional<double> p_value;
  response.set_verdict(PairVerdict(deltas, &p_value));
  if (p_value.has_value()) response.set_p_value(*p_value);
  return response;
}

absl::StatusOr<v1::SuggestResponse> ResultsManager::Suggest(
    const v1::SuggestRequest& request) {
  if (request.n() < 1 || request.n() > kMaxSuggestions) {
    return absl::InvalidArgumentError(absl::StrCat("n must be between 1 and ",
                                                   kMaxSuggestions, " (got ",
                                                   request.n(), ")"));
  }
  PRISM_ASSIGN_OR_RETURN(v1::Experiment experiment,
                         experiments_->GetExperiment(request.experiment_id()));
  PRISM_ASSIGN_OR_RETURN(std::shared_ptr<const Analysis> analysis,
                         Analyze(experiment));
  PRISM_ASSIGN_OR_RETURN(std::vector<storage::TrialKey> keys,
                         experiments_->ListTrialKeys(experiment.id()));
  const SpaceSpec space = SpaceForSpec(experiment.spec());
  std::set<std::string> tried = {
      Schedule::Uniform(space.base_heads, space.layers).ToString()};
  for (const storage::TrialKey& k : keys) tried.insert(k.schedule);
  // Seeded by the state, so the same state suggests the same schedules.
  absl::StatusOr<SuggestionSet> set =
      SuggestSchedules(space, analysis->ranking, tried, request.n(),
                       experiment.spec().sample_seed() + tried.size());
  if (!set.ok()) {
    return absl::Status(set.status().code(),
                        absl::StrCat("experiment ", experiment.id(), ": ",
                                     set.status().message()));
  }
  v1::SuggestResponse response;
  for (const Suggestion& x : set->suggestions) {
    v1::Suggestion* out = response.add_suggestions();
    out->set_schedule(x.schedule);
    out->set_predicted_delta(x.predicted_delta);
    out->set_uncertainty(x.uncertainty);
    out->set_acquisition(x.acquisition);
    *out->mutable_principles() = ReportSchedule(space, x.schedule);
  }
  response.set_method(set->method);
  response.set_observed_schedules(set->observed);
  response.set_candidates(static_cast<int64_t>(set->pool.schedules.size()));
  response.set_sampled(set->pool.sampled);
  response.set_space_size(set->pool.space_size.ToString());
  for (std::string& w : SuggestionWarnings(analysis->ranking)) {
    // The one-seed warning ends with the command that adds seeds.
    if (absl::EndsWith(w, "add seeds first")) {
      absl::StrAppend(&w, ": prism seeds add ", experiment.id(), " --to 3");
    }
    response.add_warnings(std::move(w));
  }
  return response;
}

absl::StatusOr<v1::LadderTransferResponse> ResultsManager::LadderTransfer(
    const v1::LadderTransferRequest& request) {
  return MeasureLadder(experiments_, request.experiment_id());
}

}  // namespace prism::server
