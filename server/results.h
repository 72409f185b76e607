// ResultsManager: the analysis face — rank an experiment's schedules against
// the uniform baseline (scheduler/ranking.h over storage's completed
// trials), a trial with its curves and its same-seed baseline's, and two
// schedules compared side by side.
//
// Rankings are cached per experiment and versioned by the number of
// completed trials (which only grows), so a finished trial invalidates the
// cache and a repeated query skips storage entirely; filters, sorting and
// paging run on the cached rows, and only the returned page becomes protos.
//
// Thread-safety: all methods are thread-safe.
#ifndef PRISM_SERVER_RESULTS_H_
#define PRISM_SERVER_RESULTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prism/v1/prism.pb.h"
#include "scheduler/ranking.h"
#include "storage/store.h"

namespace prism::server {

class ResultsManager {
 public:
  explicit ResultsManager(storage::Store* store);

  // Rank returns the experiment's ranked schedules filtered by required
  // principles, sorted (default: mean final val loss ascending) and paged.
  // NotFound for an unknown experiment; InvalidArgument for a bad filter,
  // sort or page token.
  absl::StatusOr<v1::RankResponse> Rank(const v1::RankRequest& request);
  // GetTrial returns the trial (attempt history, principle report) and its
  // points; with_baseline adds the same seed's baseline trial and points.
  // NotFound for an unknown trial.
  absl::StatusOr<v1::GetTrialResponse> GetTrial(
      const v1::GetTrialRequest& request);
  // Compare returns both schedules' rows and the paired (common seeds)
  // delta b - a of final val loss. InvalidArgument for malformed schedules;
  // NotFound when either has no completed trial.
  absl::StatusOr<v1::CompareResponse> Compare(
      const v1::CompareRequest& request);

 private:
  // Analysis is one experiment's ranking, kept in domain form: only the
  // rows a page returns are converted to protos.
  struct Analysis {
    int64_t completed = 0;
    int base_heads = 0;
    Ranking ranking;
    // schedule -> seed -> final val loss, for paired comparisons.
    std::map<std::string, std::map<int64_t, double>> finals;
  };
  absl::StatusOr<std::shared_ptr<const Analysis>> Analyze(
      const v1::Experiment& experiment);

  storage::Store* const store_;
  absl::Mutex mu_;
  absl::flat_hash_map<int64_t, std::shared_ptr<const Analysis>> cache_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_RESULTS_H_
