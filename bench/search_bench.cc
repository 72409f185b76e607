// search_bench: the known-truth search benchmark of issue #27 (results in
// bench/RESULTS.md, "Search on known truth"). For each structure of
// scheduler/simulate/known_truth.h and each search seed it generates an
// experiment whose best schedule is known, then runs every strategy over the
// generated curves on a simulated fleet, in three dispatch orders (the
// enumeration's, reversed, shuffled), and reports per structure, strategy and
// order: the exact-best rate, the regret (true delta of the choice minus the
// best's, in noise sd), the share of searches within 1 noise sd, the steps
// trained as a fraction of the grid's, and (for the no-effect structure) how
// often the search named a winner (any verdict "better" among the schedules it
// trained to the end).
//
// The strategies drive the same pure rules the coordinator applies
// (DecideAsha, DecideGuided, DecideScreening, RankSchedules) over the
// curves directly, so thousands of searches take seconds; the coordinator's
// own path is covered by the end-to-end tests with replay workers.
//
// Simulated fleet: `--workers` workers take trials from one FIFO queue, in
// the order the coordinator queues them (the baseline's trials first, then
// the schedules in the dispatch order, seed-major); a trial takes as long as
// the steps it trains; after every finished trial the strategy decides
// again and appends what it adds or promotes to the queue.
//
//   build/bench/search_bench --searches 20 --workers 8
//   build/bench/search_bench --strategies asha-sync --orders shuffled \
//       --structures fading-trap --trap-fade 0.45 --rungs 40 120
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "scheduler/analysis/ranking.h"
#include "scheduler/simulate/known_truth.h"
#include "scheduler/strategy/asha.h"
#include "scheduler/strategy/guided.h"
#include "scheduler/strategy/racing.h"
#include "scheduler/strategy/screening.h"
#include "scheduler/strategy/surrogate.h"

namespace prism {
namespace {

enum class Order { kEnumeration, kReversed, kShuffled };

const char* OrderName(Order o) {
  switch (o) {
    case Order::kEnumeration:
      return "enumeration";
    case Order::kReversed:
      return "reversed";
    case Order::kShuffled:
      return "shuffled";
  }
  return "?";
}

// SearchResult is one search's answer and cost.
struct SearchResult {
  std::string chosen;         // "" when nothing trained to the end
  double steps = 0.0;         // steps trained, every trial
  bool named_winner = false;  // a verdict "better" among its finalists
  int64_t best_reached = 0;   // steps the true best trained, fewest seeds
  bool best_in_set = false;   // the true best is in the final best-set
  int seeds_added = 0;        // trials past the spec's seeds (racing)
};

// Fleet is the simulated workers and their queue of trials.
class Fleet {
 public:
  // `seeds`: the search's seeds (the truth may hold more, for racing).
  Fleet(const KnownTruth& truth, int workers, int seeds)
      : truth_(truth), workers_(workers), seeds_(seeds) {
    state_.resize(truth.trials.size());
    for (size_t i = 0; i < truth.trials.size(); ++i) {
      index_[{truth.trials[i].schedule, truth.trials[i].seed}] = i;
    }
  }

  // Queue adds the schedule's trials on every seed, to train to `target`
  // (0: the whole budget), or its first `seeds` seeds when seeds > 0.
  void Queue(const std::string& schedule, int64_t target, int seeds = 0) {
    if (seeds <= 0) seeds = seeds_;
    for (int64_t seed = 1; seed <= seeds; ++seed) {
      QueueSeed(schedule, seed, target);
    }
  }
  void QueueSeed(const std::string& schedule, int64_t seed, int64_t target) {
    const size_t i = index_.at({schedule, seed});
    if (!state_[i].queued && state_[i].trained == 0) stored_.push_back(i);
    state_[i].target = target;
    state_[i].queued = true;
    state_[i].at_rung = false;
    queue_.push_back(i);
  }

  // Step runs until one trial finishes; returns false when nothing is left
  // to run.
  bool Step() {
    while (static_cast<int>(running_.size()) < workers_ && !queue_.empty()) {
      const size_t i = queue_.front();
      queue_.pop_front();
      const int64_t end = End(i);
      running_.push({now_ + static_cast<double>(end - state_[i].trained),
                     sequence_++, i});
    }
    if (running_.empty()) return false;
    const auto [when, seq, i] = running_.top();
    running_.pop();
    now_ = when;
    TrialState& s = state_[i];
    steps_ += static_cast<double>(End(i) - s.trained);
    s.trained = End(i);
    s.queued = false;
    s.at_rung = s.target != 0;
    return true;
  }

  // AshaTrials is every queued or trained trial as DecideAsha sees it, in
  // the order first queued (as the coordinator stores them).
  std::vector<AshaTrial> AshaTrials(const std::vector<int64_t>& rungs) const {
    std::vector<AshaTrial> out;
    for (size_t i : stored_) {
      const TrialState& s = state_[i];
      const KnownTruthTrial& t = truth_.trials[i];
      AshaTrial a;
      a.schedule = t.schedule;
      a.seed = t.seed;
      a.is_baseline = t.is_baseline;
      a.at_rung = s.at_rung;
      a.target_steps = s.target;
      for (int64_t r : rungs) {
        if (r <= s.trained) a.val_loss[r] = ValLossAt(t, r);
      }
      out.push_back(std::move(a));
    }
    return out;
  }

  // SeedTrials and Outcomes are the trials as DecideGuided and RankSchedules
  // see them: pending, and finished at the whole budget.
  std::vector<SeedTrial> SeedTrials() const {
    std::vector<SeedTrial> out;
    for (size_t i = 0; i < state_.size(); ++i) {
      if (!state_[i].queued && state_[i].trained == 0) continue;
      const KnownTruthTrial& t = truth_.trials[i];
      out.push_back(
          SeedTrial{t.schedule, t.seed, t.is_baseline, state_[i].queued});
    }
    return out;
  }
  // Screened counts the schedules other than the baseline that trained at
  // all: the verdicts' family (VerdictOptions::screened_schedules).
  int Screened() const {
    std::set<std::string> tried;
    for (size_t i = 0; i < state_.size(); ++i) {
      const KnownTruthTrial& t = truth_.trials[i];
      if (t.is_baseline || state_[i].trained == 0) continue;
      tried.insert(t.schedule);
    }
    return static_cast<int>(tried.size());
  }
  std::vector<TrialOutcome> Outcomes() const {
    std::vector<TrialOutcome> out;
    for (size_t i = 0; i < state_.size(); ++i) {
      if (state_[i].queued || state_[i].trained < truth_.spec.steps) continue;
      out.push_back(TruthOutcome(truth_.trials[i], static_cast<int64_t>(i)));
    }
    return out;
  }

  // Reached is the fewest steps any of the schedule's trials trained.
  int64_t Reached(const std::string& schedule) const {
    int64_t fewest = truth_.spec.steps;
    for (int64_t seed = 1; seed <= seeds_; ++seed) {
      fewest = std::min(fewest, state_[index_.at({schedule, seed})].trained);
    }
    return fewest;
  }

  double steps() const { return steps_; }
  bool Busy() const { return !running_.empty() || !queue_.empty(); }

 private:
  struct TrialState {
    int64_t trained = 0;
    int64_t target = 0;
    bool queued = false;
    bool at_rung = false;
  };
  int64_t End(size_t i) const {
    return state_[i].target == 0 ? truth_.spec.steps : state_[i].target;
  }

  const KnownTruth& truth_;
  const int workers_;
  const int seeds_;
  std::vector<TrialState> state_;
  std::map<std::pair<std::string, int64_t>, size_t> index_;
  std::deque<size_t> queue_;
  std::vector<size_t> stored_;  // trial indices, in the order first queued
  using Running = std::tuple<double, int64_t, size_t>;
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>>
      running_;
  double now_ = 0.0;
  int64_t sequence_ = 0;
  double steps_ = 0.0;
};

// family_of_screened puts every screened schedule in the verdicts' family,
// as the coordinator does; --finalists-family measures the family of the
// finalists alone (the coordinator before Dec 4).
bool family_of_screened = true;

// The search's seeds, and racing's plan (race_max_seeds 0: no racing).
int search_seeds = 3;
int race_max_seeds = 0;
double race_budget = kDefaultRacingBudget;
int race_racers = kDefaultRacers;
bool race_notes = false;  // --race-notes: each race's last note on stderr

// VerdictsFor are the verdicts' options of a search, as VerdictOptionsOf
// sets them: with racing, its looks over the seed sequence.
VerdictOptions VerdictsFor(const Fleet& fleet, bool racing) {
  VerdictOptions verdicts;
  if (family_of_screened) verdicts.screened_schedules = fleet.Screened();
  if (racing) {
    for (int64_t seed = 1; seed <= race_max_seeds; ++seed) {
      verdicts.seed_sequence.push_back(seed);
    }
    verdicts.looks = LooksForSeeds(search_seeds, race_max_seeds);
  }
  return verdicts;
}

// Finalists ranks what trained to the end; the choice is the lowest mean
// paired delta (the ranking's first non-baseline row with a delta), and
// the best-set is Hsu's MCB of that ranking.
SearchResult Choose(const KnownTruth& truth, const Fleet& fleet,
                    bool racing = false) {
  SearchResult r;
  r.steps = fleet.steps();
  r.best_reached = fleet.Reached(truth.best);
  const Ranking ranking =
      RankSchedules(truth.spec.space, truth.baseline, fleet.Outcomes(),
                    VerdictsFor(fleet, racing));
  for (const std::string& s : ranking.verdicts.best_set) {
    r.best_in_set |= s == truth.best;
  }
  double best = 0.0;
  for (const RankedRow& row : ranking.rows) {
    if (row.is_baseline || row.paired_seeds < 1) continue;
    if (row.verdict == Verdict::kBetter) r.named_winner = true;
    if (r.chosen.empty() || row.delta_vs_baseline.mean < best) {
      r.chosen = row.schedule;
      best = row.delta_vs_baseline.mean;
    }
  }
  return r;
}

std::vector<std::string> Dispatch(const KnownTruth& truth, Order order,
                                  uint64_t seed) {
  std::vector<std::string> out;
  for (const std::string& s : truth.schedules) {
    if (s != truth.baseline) out.push_back(s);
  }
  if (order == Order::kReversed) std::reverse(out.begin(), out.end());
  if (order == Order::kShuffled) {
    std::vector<Schedule> parsed;
    for (const std::string& s : out) parsed.push_back(*ParseSchedule(s));
    out.clear();
    for (const Schedule& s : ShuffleSchedules(parsed, seed)) {
      out.push_back(s.ToString());
    }
  }
  return out;
}

// Race runs racing after a search (scheduler/strategy/racing.h) until it adds
// nothing, and chooses the contender with the lowest mean paired delta
// (the search's choice when the baseline is the only one left).
SearchResult Race(const KnownTruth& truth, Fleet& fleet) {
  RacingPlan plan;
  plan.space = truth.spec.space;
  plan.baseline = truth.baseline;
  for (int64_t seed = 1; seed <= race_max_seeds; ++seed) {
    plan.sequence.push_back(seed);
  }
  plan.first = search_seeds;
  plan.verdicts = VerdictsFor(fleet, /*racing=*/false);
  plan.steps = truth.spec.steps;
  plan.racers = race_racers;
  plan.step_budget = race_budget * static_cast<double>(truth.schedules.size()) *
                     search_seeds * static_cast<double>(truth.spec.steps);
  RaceDecision d;
  while (true) {
    d = DecideRace(plan, fleet.SeedTrials(), fleet.Outcomes());
    if (d.additions.empty()) break;
    for (const SeedAddition& a : d.additions) {
      fleet.QueueSeed(a.schedule, a.seed, 0);
    }
    while (fleet.Step()) {
    }
  }
  if (race_notes) std::fprintf(stderr, "race: %s\n", d.note.c_str());
  SearchResult r = Choose(truth, fleet, /*racing=*/true);
  r.seeds_added = d.seeds_added;
  r.best_in_set = false;
  for (const std::string& c : d.contenders) r.best_in_set |= c == truth.best;
  if (!d.best.empty() && !d.best_is_baseline) {
    r.chosen = d.best;
  } else {
    for (const std::string& c : d.contenders) {
      if (c != truth.baseline) {
        r.chosen = c;  // the lowest mean among the schedules left
        break;
      }
    }
  }
  return r;
}

// RunAsha screens on the first `screen_seeds` seeds (0: every seed), as the
// coordinator plans STRATEGY_ASHA: new trials on the other seeds come with
// the promotions from the first rung (AshaDecision::new_seeds).
SearchResult RunAsha(const KnownTruth& truth,
                     const std::vector<std::string>& order, AshaMode mode,
                     const std::vector<int64_t>& rungs, int eta,
                     int screen_seeds, int workers, bool racing = false) {
  std::vector<int64_t> first_rung_seeds;
  std::vector<int64_t> all_seeds;
  if (screen_seeds > 0 && screen_seeds < search_seeds) {
    for (int64_t seed = 1; seed <= search_seeds; ++seed) {
      all_seeds.push_back(seed);
      if (seed <= screen_seeds) first_rung_seeds.push_back(seed);
    }
  }
  Fleet fleet(truth, workers, search_seeds);
  fleet.Queue(truth.baseline, 0);
  for (const std::string& s : order) {
    fleet.Queue(s, rungs.front(), screen_seeds);
  }
  while (fleet.Step()) {
    const AshaDecision d = DecideAsha(rungs, eta, mode, fleet.AshaTrials(rungs),
                                      first_rung_seeds, all_seeds);
    for (const AshaPromotion& p : d.promotions) {
      fleet.Queue(p.schedule, p.to_step,
                  p.from_step == rungs.front() ? std::max(screen_seeds, 0) : 0);
    }
    for (const AshaNewSeed& n : d.new_seeds) {
      fleet.QueueSeed(n.schedule, n.seed, n.to_step);
    }
  }
  return racing ? Race(truth, fleet) : Choose(truth, fleet);
}

// RunFull trains `schedules` (and the baseline) to the end.
SearchResult RunFull(const KnownTruth& truth,
                     const std::vector<std::string>& schedules, int workers,
                     bool racing = false) {
  Fleet fleet(truth, workers, search_seeds);
  fleet.Queue(truth.baseline, 0);
  for (const std::string& s : schedules) fleet.Queue(s, 0);
  while (fleet.Step()) {
  }
  return racing ? Race(truth, fleet) : Choose(truth, fleet);
}

SearchResult RunGuided(const KnownTruth& truth, int budget, uint64_t seed,
                       int workers) {
  GuidedPlan plan;
  plan.space = truth.spec.space;
  plan.baseline = truth.baseline;
  plan.budget = budget;
  plan.initial = DefaultGuidedInitial(budget);
  plan.seed = seed;
  Fleet fleet(truth, workers, search_seeds);
  fleet.Queue(truth.baseline, 0);
  absl::StatusOr<std::vector<Schedule>> initial =
      GuidedInitialDesign(plan.space, plan.baseline, plan.initial, plan.seed);
  for (const Schedule& s : *initial) fleet.Queue(s.ToString(), 0);
  while (true) {
    if (!fleet.Step()) {
      // Nothing running: one more decision may add schedules.
    }
    const Ranking ranking =
        RankSchedules(plan.space, plan.baseline, fleet.Outcomes());
    absl::StatusOr<GuidedDecision> d =
        DecideGuided(plan, fleet.SeedTrials(), ranking);
    if (!d.ok()) break;
    bool pending = false;
    for (const SeedTrial& t : fleet.SeedTrials()) pending |= t.pending;
    for (const GuidedAddition& a : d->additions) fleet.Queue(a.schedule, 0);
    if (d->additions.empty() && !pending) break;
  }
  return Choose(truth, fleet);
}

// RunScreening is the guided search that screens, by the rule the
// coordinator applies to STRATEGY_GUIDED_SCREENING (DecideScreening,
// scheduler/strategy/screening.h): brackets of `size` schedules enter at the
// first rung, each decided by the synchronous rule on its own; the next bracket
// opens (surrogate on every complete rung's scores, a third explored at
// random) once the latest one has completed its first rung, while the
// projected cost stays within `fraction` of the grid's steps.
SearchResult RunScreening(const KnownTruth& truth,
                          const std::vector<int64_t>& rungs, int eta, int size,
                          double fraction, uint64_t seed, int workers,
                          bool racing = false) {
  ScreeningSearch search;
  search.plan.space = truth.spec.space;
  search.plan.baseline = truth.baseline;
  search.plan.size = size;
  search.plan.seed = seed;
  search.rungs = rungs;
  search.eta = eta;
  search.seeds = search_seeds;
  search.steps = truth.spec.steps;
  search.grid_steps = static_cast<double>(truth.schedules.size()) *
                      search_seeds * static_cast<double>(truth.spec.steps);
  search.grid_fraction = fraction;
  Fleet fleet(truth, workers, search_seeds);
  fleet.Queue(truth.baseline, 0);
  bool first = true;
  while (true) {
    const bool ran = first || fleet.Step();
    first = false;
    absl::StatusOr<ScreeningDecision> d =
        DecideScreening(search, fleet.AshaTrials(rungs));
    if (!d.ok()) break;
    for (const AshaPromotion& p : d->promotions) {
      fleet.Queue(p.schedule, p.to_step);
    }
    for (const std::string& s : d->added.schedules) {
      fleet.Queue(s, rungs.front());
    }
    if (!ran && !fleet.Busy() && d->added.schedules.empty()) break;
  }
  return racing ? Race(truth, fleet) : Choose(truth, fleet);
}

struct Cell {
  int searches = 0;
  int exact = 0;
  int within_sd = 0;
  int named = 0;
  double regret_sum = 0.0;
  double regret_max = 0.0;
  double fraction_sum = 0.0;
  int in_set = 0;                  // the true best in the final best-set
  int seeds_added = 0;             // racing's trials, summed
  int kept = 0;                    // the best trained to the end
  std::map<int64_t, int> lost_at;  // else: steps the best trained
};

// Cells holds a structure's tallies by strategy and dispatch order (its
// index in the --orders list).
using Cells = std::map<std::pair<std::string, int>, Cell>;

// BenchOptions are the command line's settings; racing's and the verdicts'
// family go to the globals above.
struct BenchOptions {
  int searches = 20;
  int workers = 8;
  double guided_fraction = 0.3;
  std::string structures = "smooth,isolated-best,fading-trap,null,near-ties";
  std::vector<int64_t> rungs;
  int eta = 0;
  bool finalists_family = false;
  int screen_size = kDefaultScreeningBracketSize;
  std::string strategy_list =
      "grid,random,asha-async,asha-sync,asha-sync-classic,asha-guarded,guided,"
      "guided-screen,grid-race,asha-race,screen-race";
  int race_max = 0;
  // The generator's shape, for out-of-sample checks of a rule tuned on its
  // defaults (KnownTruthSpec's fields of the same names).
  double trap_fade = KnownTruthSpec().trap_fade;
  double effect_growth = KnownTruthSpec().effect_growth;
  double noise_sd = KnownTruthSpec().noise_sd;
  std::string order_list = "enumeration,reversed,shuffled";
  int screen_seeds = 0;
  int seeds = KnownTruthSpec().seeds;
  bool lost_at = false;
};

void AddOptions(CLI::App& app, BenchOptions* o) {
  app.add_option("--searches", o->searches, "search seeds per structure");
  app.add_option("--workers", o->workers, "simulated workers");
  app.add_option("--structures", o->structures, "comma-separated");
  app.add_option("--rungs", o->rungs,
                 "ASHA and guided-screen rungs (default: DefaultAshaRungs, "
                 "DefaultScreeningRungs)");
  app.add_option("--eta", o->eta,
                 "ASHA reduction factor (0: the default plan's)");
  app.add_flag("--finalists-family", o->finalists_family,
               "verdicts over the finalists alone, not every screened "
               "schedule");
  app.add_option("--screen-size", o->screen_size,
                 "guided-screen: schedules per bracket");
  app.add_option("--guided-fraction", o->guided_fraction,
                 "random and guided: schedules tried, as a share of the grid");
  app.add_option("--strategies", o->strategy_list,
                 "comma-separated, from the default list (asha-sync-classic: "
                 "the former default plan, every seed from the first rung; "
                 "X-race: grid, asha-sync or guided-screen, then racing)");
  app.add_option("--race-max-seeds", o->race_max,
                 "racing: seeds per schedule at most (0: "
                 "DefaultRacingMaxSeeds)");
  app.add_option("--race-racers", race_racers,
                 "racing: contenders that get seeds each round");
  app.add_flag("--race-notes", race_notes,
               "racing: each search's last race note on stderr");
  app.add_option("--race-budget", race_budget,
                 "racing: the steps it may add, as a share of the grid's");
  app.add_option("--trap-fade", o->trap_fade,
                 "fading-trap: where the trap is gone, as a share of the "
                 "budget");
  app.add_option("--effect-growth", o->effect_growth,
                 "the effect grows as (t / steps)^this");
  app.add_option("--noise-sd", o->noise_sd, "final val loss noise sd");
  app.add_option("--orders", o->order_list, "comma-separated dispatch orders");
  app.add_option("--screen-seeds", o->screen_seeds,
                 "ASHA: seeds each schedule trains to the first rung (0: the "
                 "default plan's, else every seed)");
  app.add_option("--seeds", o->seeds, "seeds per schedule");
  app.add_flag("--lost-at", o->lost_at,
               "on stderr: where searches stopped training the true best");
}

// ParseOrders reads --orders into *orders; false (said on stderr) for an
// unknown order.
bool ParseOrders(const std::string& list, std::vector<Order>* orders) {
  for (absl::string_view word : absl::StrSplit(list, ',')) {
    bool known = false;
    for (Order o : {Order::kEnumeration, Order::kReversed, Order::kShuffled}) {
      if (word == OrderName(o)) {
        orders->push_back(o);
        known = true;
      }
    }
    if (!known) {
      std::fprintf(stderr, "--orders: unknown order '%s'\n",
                   std::string(word).c_str());
      return false;
    }
  }
  return true;
}

// ParseStrategies reads --strategies into *strategies; false (said on
// stderr) for an unknown strategy.
bool ParseStrategies(const std::string& list,
                     std::vector<std::string>* strategies) {
  for (absl::string_view word : absl::StrSplit(list, ',')) {
    static const std::set<std::string> kKnown = {
        "grid",         "random",    "asha-async",    "asha-sync",
        "asha-guarded", "guided",    "guided-screen", "asha-sync-classic",
        "grid-race",    "asha-race", "screen-race"};
    if (kKnown.count(std::string(word)) == 0) {
      std::fprintf(stderr, "--strategies: unknown strategy '%s'\n",
                   std::string(word).c_str());
      return false;
    }
    strategies->emplace_back(word);
  }
  return true;
}

// SearchSetup is one search's truth and the plans its strategies run.
struct SearchSetup {
  KnownTruthSpec spec;
  KnownTruth truth;
  AshaPlan plan;     // as the coordinator resolves a spec
  AshaPlan classic;  // the former default
  int screen_eta = 0;
  std::vector<int64_t> screen_rungs;
  double grid_steps = 0.0;
  int tried = 0;  // random and guided: schedules tried
};

// SetUpSearch generates search `search`'s truth of `structure` and resolves
// the strategies' plans; the generator's error on failure.
absl::StatusOr<SearchSetup> SetUpSearch(TruthStructure structure, int search,
                                        const BenchOptions& o) {
  SearchSetup setup;
  KnownTruthSpec& spec = setup.spec;
  spec.structure = structure;
  spec.seed = static_cast<uint64_t>(search);
  spec.trap_fade = o.trap_fade;
  spec.effect_growth = o.effect_growth;
  spec.noise_sd = o.noise_sd;
  // The search's seeds, then every seed racing may add (drawn apart:
  // the first `seeds` are the experiments of the rounds before racing).
  spec.seeds = o.seeds;
  spec.extra_seeds = std::max(0, race_max_seeds - o.seeds);
  absl::StatusOr<KnownTruth> truth = GenerateKnownTruth(spec);
  if (!truth.ok()) return truth.status();
  setup.truth = *std::move(truth);
  // As the coordinator resolves a spec (server/core/experiments/spec.cc).
  setup.plan =
      ResolveAshaPlan(AshaPlan{o.rungs, o.eta, o.screen_seeds}, spec.steps,
                      static_cast<int>(spec.eval_every), o.seeds);
  // The former default: DefaultAshaRungs at eta 3 on every seed.
  setup.classic =
      AshaPlan{DefaultAshaRungs(spec.steps, kDefaultAshaEta, spec.eval_every),
               kDefaultAshaEta, o.seeds};
  setup.screen_eta = o.eta == 0 ? kDefaultAshaEta : o.eta;
  setup.screen_rungs =
      o.rungs.empty()
          ? DefaultScreeningRungs(spec.steps, setup.screen_eta, spec.eval_every)
          : o.rungs;
  const int n = static_cast<int>(setup.truth.schedules.size());
  setup.grid_steps =
      static_cast<double>(n) * o.seeds * static_cast<double>(spec.steps);
  setup.tried =
      std::max(kMinSurrogateSchedules + 1,
               static_cast<int>(std::lround(o.guided_fraction * (n - 1))));
  return setup;
}

// RunStrategy runs one strategy of search `search` over the dispatch order.
SearchResult RunStrategy(const std::string& strategy, const SearchSetup& setup,
                         const std::vector<std::string>& order, int search,
                         const BenchOptions& o) {
  const KnownTruth& truth = setup.truth;
  if (strategy == "grid" || strategy == "grid-race") {
    return RunFull(truth, order, o.workers, strategy == "grid-race");
  }
  if (strategy == "random") {
    // A uniform subset; the dispatch order is irrelevant to it.
    std::vector<std::string> subset = Dispatch(
        truth, Order::kShuffled, static_cast<uint64_t>(search) * 7919 + 1);
    subset.resize(static_cast<size_t>(setup.tried));
    return RunFull(truth, subset, o.workers);
  }
  if (strategy == "asha-sync-classic") {
    return RunAsha(truth, order, AshaMode::kSynchronous, setup.classic.rungs,
                   setup.classic.eta, setup.classic.screen_seeds, o.workers);
  }
  if (strategy == "guided-screen" || strategy == "screen-race") {
    return RunScreening(truth, setup.screen_rungs, setup.screen_eta,
                        o.screen_size, o.guided_fraction,
                        static_cast<uint64_t>(search), o.workers,
                        strategy == "screen-race");
  }
  if (strategy == "guided") {
    return RunGuided(truth, setup.tried, static_cast<uint64_t>(search),
                     o.workers);
  }
  const AshaMode mode = strategy == "asha-async" ? AshaMode::kAsynchronous
                        : strategy == "asha-sync" || strategy == "asha-race"
                            ? AshaMode::kSynchronous
                            : AshaMode::kGuarded;
  return RunAsha(truth, order, mode, setup.plan.rungs, setup.plan.eta,
                 setup.plan.screen_seeds, o.workers, strategy == "asha-race");
}

// Tally adds one search's result to its cell.
void Tally(const SearchResult& r, const SearchSetup& setup, Cell* c) {
  const KnownTruth& truth = setup.truth;
  ++c->searches;
  const double best = truth.true_delta.at(truth.best);
  const double chosen = r.chosen.empty() ? 0.0 : truth.true_delta.at(r.chosen);
  const double regret = (chosen - best) / setup.spec.noise_sd;
  c->exact += r.chosen == truth.best ? 1 : 0;
  c->within_sd += regret <= 1.0 + 1e-9 ? 1 : 0;
  c->named += r.named_winner ? 1 : 0;
  c->regret_sum += regret;
  c->regret_max = std::max(c->regret_max, regret);
  c->fraction_sum += r.steps / setup.grid_steps;
  c->in_set += r.best_in_set ? 1 : 0;
  c->seeds_added += r.seeds_added;
  if (r.best_reached >= setup.spec.steps) {
    ++c->kept;
  } else {
    ++c->lost_at[r.best_reached];
  }
}

void PrintTableHeader() {
  std::printf(
      "| structure | strategy | order | exact best | regret <= 1 sd | mean "
      "regret (sd) | max regret (sd) | grid steps | named a winner | best "
      "trained to the end | best in best-set | seeds added |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
      "--- |\n");
}

// PrintCells prints a structure's rows, and with --lost-at where the
// searches stopped training the true best on stderr.
void PrintCells(const std::string& word,
                const std::vector<std::string>& strategies,
                const std::vector<Order>& orders, bool lost_at, Cells* cells) {
  for (const std::string& strategy : strategies) {
    for (size_t o = 0; o < orders.size(); ++o) {
      const Cell& c = (*cells)[{strategy, static_cast<int>(o)}];
      std::printf(
          "| %s | %s | %s | %d/%d | %d/%d | %.2f | %.2f | %.1f%% | %d/%d | "
          "%d/%d | %d/%d | %.1f |\n",
          std::string(word).c_str(), strategy.c_str(), OrderName(orders[o]),
          c.exact, c.searches, c.within_sd, c.searches,
          c.regret_sum / c.searches, c.regret_max,
          100.0 * c.fraction_sum / c.searches, c.named, c.searches, c.kept,
          c.searches, c.in_set, c.searches,
          static_cast<double>(c.seeds_added) / c.searches);
      if (lost_at && !c.lost_at.empty()) {
        std::string where;
        for (const auto& [step, count] : c.lost_at) {
          absl::StrAppend(&where, where.empty() ? "" : ", ", count,
                          " after step ", step);
        }
        std::fprintf(stderr, "%s %s %s: the best stopped: %s\n",
                     std::string(word).c_str(), strategy.c_str(),
                     OrderName(orders[o]), where.c_str());
      }
    }
  }
}

// RunStructure runs every search of one truth structure and prints its rows;
// 0, or 2 (said on stderr) for an unknown structure or a generator error.
int RunStructure(const std::string& word, const BenchOptions& o,
                 const std::vector<Order>& orders,
                 const std::vector<std::string>& strategies) {
  absl::StatusOr<TruthStructure> structure = ParseTruthStructure(word);
  if (!structure.ok()) {
    std::fprintf(stderr, "%s\n", structure.status().ToString().c_str());
    return 2;
  }
  Cells cells;
  for (int search = 1; search <= o.searches; ++search) {
    absl::StatusOr<SearchSetup> setup = SetUpSearch(*structure, search, o);
    if (!setup.ok()) {
      std::fprintf(stderr, "%s\n", setup.status().ToString().c_str());
      return 2;
    }
    for (size_t k = 0; k < orders.size(); ++k) {
      const std::vector<std::string> order =
          Dispatch(setup->truth, orders[k], static_cast<uint64_t>(search));
      for (const std::string& strategy : strategies) {
        const SearchResult r = RunStrategy(strategy, *setup, order, search, o);
        Tally(r, *setup, &cells[{strategy, static_cast<int>(k)}]);
      }
    }
  }
  PrintCells(word, strategies, orders, o.lost_at, &cells);
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace prism

int main(int argc, char** argv) {
  using namespace prism;
  CLI::App app{"known-truth search benchmark (issue #27)"};
  BenchOptions o;
  AddOptions(app, &o);
  CLI11_PARSE(app, argc, argv);
  family_of_screened = !o.finalists_family;
  search_seeds = o.seeds;
  race_max_seeds = o.race_max > 0 ? o.race_max : DefaultRacingMaxSeeds(o.seeds);

  std::vector<Order> orders;
  if (!ParseOrders(o.order_list, &orders)) return 2;
  std::vector<std::string> strategies;
  if (!ParseStrategies(o.strategy_list, &strategies)) return 2;
  PrintTableHeader();
  for (const std::string& word :
       std::vector<std::string>(absl::StrSplit(o.structures, ','))) {
    if (int status = RunStructure(word, o, orders, strategies); status != 0) {
      return status;
    }
  }
  return 0;
}
