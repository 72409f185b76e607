// Metrics: the coordinator's Prometheus counters and histograms, rendered in
// the text exposition format (version 0.0.4) for GET /metrics:
//
//   prism_queue_depth                      queued trials of active experiments
//   prism_trials{state}                    trials by state
//   prism_workers{state}                   workers by derived state
//   prism_points_ingested_total            points stored by reports
//   prism_points_duplicate_total           re-sent points found stored
//   prism_report_batches_total             group commits
//   prism_rpc_requests_total{method,code}  RPCs finished
//   prism_rpc_duration_seconds{method}     RPC latency histogram
//   prism_http_requests_total{route,status}
//   prism_storage_errors_total{fault}      failed writes by storage fault
//                                          (disk_full, io_error, busy,
//                                          read_only)
//   prism_storage_ready                    1 while writes succeed, else 0
//   prism_storage_disruptions_total        failing or stalled periods
//   prism_db_filesystem_free_bytes         free space where the database is
//
// Gauges are sampled by the caller at scrape time (Snapshot); counters and
// histograms accumulate here.
//
// Every label takes its values from a fixed set, so that no request, with
// or without a token, can add series (issue #40): `method` is one of the
// methods given to the constructor or "unknown" (a made-up method name
// folds into it), `code` a gRPC code name or "other", `route` one of the
// HTTP server's route labels (RouteLabel in server/http/http_server.cc
// folds the rest into "other"), `status` a three-digit HTTP status or
// "other", and the gauges' states and faults the names of enums.
//
// Thread-safety: all methods are thread-safe.
#ifndef PRISM_SERVER_CORE_INFRA_METRICS_H_
#define PRISM_SERVER_CORE_INFRA_METRICS_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace prism::server {

class Metrics {
 public:
  struct Snapshot {
    int64_t queue_depth = 0;
    std::map<std::string, int64_t> trials_by_state;   // "queued" -> n
    std::map<std::string, int64_t> workers_by_state;  // "idle" -> n
    int64_t points_ingested = 0;
    int64_t points_duplicate = 0;
    int64_t report_batches = 0;
    // Storage health (server/core/infra/storage_health.h).
    std::map<std::string, int64_t> storage_errors;  // "disk_full" -> n
    bool storage_ready = true;
    int64_t storage_disruptions = 0;
    int64_t db_free_bytes = -1;  // -1: could not be measured (not shown)
  };

  // kUnknownMethod is the method label of calls to any method not given to
  // the constructor.
  static constexpr absl::string_view kUnknownMethod = "unknown";

  // Metrics labels RPCs of `rpc_methods` ("/prism.v1.AuthService/WhoAmI",
  // as gRPC names them) by method; every other method is kUnknownMethod.
  explicit Metrics(absl::flat_hash_set<std::string> rpc_methods = {});

  // ObserveRpc records one finished RPC (`method` as gRPC names it). A code
  // outside gRPC's 0..16 counts as "other".
  void ObserveRpc(absl::string_view method, int grpc_code, double seconds);
  // CountHttp counts one HTTP response; `route` must come from a fixed set
  // of labels (RouteLabel). A status outside 100..599 counts as "other".
  void CountHttp(absl::string_view route, int status);
  // Render returns the exposition text with `gauges` included.
  std::string Render(const Snapshot& gauges) const;

 private:
  static constexpr std::array<double, 14> kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  struct Histogram {
    std::array<int64_t, kBuckets.size()> counts{};
    int64_t count = 0;
    double sum = 0.0;
  };
  const absl::flat_hash_set<std::string> rpc_methods_;
  mutable absl::Mutex mu_;
  std::map<std::string, Histogram> rpc_latency_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, int>, int64_t> rpc_count_
      ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, int>, int64_t> http_count_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_INFRA_METRICS_H_
