// ResultsManager: the analysis face — rank an experiment's schedules against
// the uniform baseline (scheduler/analysis/ranking.h over storage's finished
// trials: completed ones in the statistics, diverged and failed counted), a
// trial with its curves and its same-seed baseline's, two schedules
// compared side by side, and untried schedules suggested by a surrogate
// fitted on the ranking (scheduler/strategy/suggest.h).
//
// Rankings are cached per experiment and versioned by the number of
// finished trials (which grows as trials end), so a finished trial invalidates
// the cache and a repeated query skips storage entirely; filters, sorting and
// paging run on the cached rows, and only the returned page becomes protos.
//
// Building a ranking from storage (the cold path: every completed trial read
// and ranked) costs tens of milliseconds at 10,000 trials, so users should not
// pay it: TrialCompleted schedules a rebuild on a background thread after
// rebuild_delay (a burst of completions within it costs one rebuild), and
// WarmUp (at coordinator start) builds the most recently active experiments'
// rankings. Rank never answers from an outdated ranking: when the cache is
// behind storage it waits for a rebuild in flight, or builds one itself.
//
//   ResultsManager results(store, store);
//   results.WarmUp();
//   results.TrialCompleted(7);    // from the queue; returns at once
//   results.Rank(request);        // warm once the rebuild landed
//
// Thread-safety: all methods are thread-safe. The destructor stops the
// background thread (an unfinished rebuild completes first).
#ifndef PRISM_SERVER_CORE_EXPERIMENTS_RESULTS_H_
#define PRISM_SERVER_CORE_EXPERIMENTS_RESULTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/analysis/ranking.h"
#include "server/core/infra/finish_signal.h"
#include "storage/curve_store.h"
#include "storage/experiment_store.h"

namespace prism::server {

struct ResultsOptions {
  // How long a completion's rebuild waits for more completions to join it.
  absl::Duration rebuild_delay = absl::Milliseconds(200);
  // How many experiments WarmUp builds: active and paused ones first, then
  // the most recently updated.
  int warm_experiments = 8;
  // A Rank page stops at this many bytes of schedules (at least one), and
  // next_page_token continues: Limits::max_page_bytes.
  int64_t max_page_bytes = int64_t{16} << 20;
};

class ResultsManager {
 public:
  explicit ResultsManager(storage::ExperimentStore* experiments,
                          storage::CurveStore* curves,
                          ResultsOptions options = {});
  ~ResultsManager();
  ResultsManager(const ResultsManager&) = delete;
  ResultsManager& operator=(const ResultsManager&) = delete;

  // SubscribeTo makes every trial that finishes refresh its experiment's
  // ranking in the background (TrialCompleted), so the next Rank finds it
  // warm.
  void SubscribeTo(FinishSignal* finished);
  // TrialCompleted schedules a rebuild of the experiment's ranking in
  // rebuild_delay (one already pending keeps its time); returns at once.
  void TrialCompleted(int64_t experiment_id);
  // WarmUp schedules, on the background thread, rebuilds of the
  // warm_experiments most recently active experiments with completed
  // trials; returns at once.
  void WarmUp();
  // WaitIdle blocks until no rebuild is pending or running (tests, benches).
  void WaitIdle();
  // builds returns how many rankings were built from storage so far.
  int64_t builds() const;

  // Rank returns the experiment's ranked schedules filtered by required
  // principles, sorted (default: by rank, the paired-delta order of
  // scheduler/analysis/ranking.h) and paged.
  // NotFound for an unknown experiment; InvalidArgument for a bad filter,
  // sort or page token.
  absl::StatusOr<v1::RankResponse> Rank(const v1::RankRequest& request);
  // GetTrial returns the trial (attempt history, principle report) and its
  // points; with_baseline adds the same seed's baseline trial and points.
  // NotFound for an unknown trial.
  absl::StatusOr<v1::GetTrialResponse> GetTrial(
      const v1::GetTrialRequest& request);
  // Compare returns both schedules' rows, the paired (common seeds) delta
  // b - a of final val loss, and b's verdict against a (one unadjusted
  // paired t-test; see CompareResponse). InvalidArgument for malformed
  // schedules; NotFound when either has no completed trial.
  absl::StatusOr<v1::CompareResponse> Compare(
      const v1::CompareRequest& request);
  // Suggest returns the n untried schedules the surrogate ranks best, from
  // the cached ranking and the experiment's trials (see SuggestRequest and
  // scheduler/strategy/suggest.h). InvalidArgument for n
  // outside 1..kMaxSuggestions; NotFound for an unknown experiment;
  // FailedPrecondition "experiment 7: the surrogate needs at least 5 finished
  // schedules ... (there are 2)". LadderTransfer measures the experiment's
  // ladder (server/core/experiments/ladder.h's MeasureLadder): NotFound;
  // FailedPrecondition when it is not a ladder's.
  absl::StatusOr<v1::LadderTransferResponse> LadderTransfer(
      const v1::LadderTransferRequest& request);
  absl::StatusOr<v1::SuggestResponse> Suggest(
      const v1::SuggestRequest& request);

 private:
  // Analysis is one experiment's ranking, kept in domain form: only the
  // rows a page returns are converted to protos.
  struct Analysis {
    int64_t finished = 0;  // completed, diverged and failed trials read
    int base_heads = 0;
    Ranking ranking;
    // schedule -> seed -> final val loss, for paired comparisons.
    std::map<std::string, std::map<int64_t, double>> finals;
    // Racing (RacingPolicy): its state when the experiment races.
    std::optional<v1::RaceReport> race;
  };
  // Analyze returns a ranking at least as new as the finished count it
  // reads first: the cached one, the one a rebuild in flight produces, or
  // one it builds.
  absl::StatusOr<std::shared_ptr<const Analysis>> Analyze(
      const v1::Experiment& experiment);
  absl::StatusOr<std::shared_ptr<const Analysis>> Build(
      const v1::Experiment& experiment);
  void RebuildLoop();
  void WarmUpNow();
  void Rebuild(int64_t experiment_id);

  storage::ExperimentStore* const experiments_;
  storage::CurveStore* const curves_;
  const ResultsOptions options_;
  mutable absl::Mutex mu_;
  absl::CondVar built_;  // signalled when a build ends, or work arrives
  absl::flat_hash_map<int64_t, std::shared_ptr<const Analysis>> cache_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> building_ ABSL_GUARDED_BY(mu_);
  // Experiments waiting for a background rebuild -> when it is due.
  absl::flat_hash_map<int64_t, absl::Time> pending_ ABSL_GUARDED_BY(mu_);
  bool warm_up_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool background_busy_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t builds_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_EXPERIMENTS_RESULTS_H_
