#include "server/core/infra/metrics.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace prism::server {
namespace {

// kOtherCode stands for every gRPC code or HTTP status outside the known
// range, so that the code and status labels stay a fixed set.
constexpr int kOtherCode = -1;

// GrpcCodeKey is `code` when gRPC defines it (0..16), else kOtherCode.
int GrpcCodeKey(int code) {
  return code >= 0 && code <= 16 ? code : kOtherCode;
}

// HttpStatusKey is `status` when it is a three-digit HTTP status, else
// kOtherCode.
int HttpStatusKey(int status) {
  return status >= 100 && status <= 599 ? status : kOtherCode;
}

// CodeName is a gRPC code's name ("OK", "NOT_FOUND"; absl's codes are the
// same numbers and names), or "other".
std::string CodeName(int code) {
  if (code == kOtherCode) return "other";
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

// StatusName is an HTTP status's number, or "other".
std::string StatusName(int status) {
  return status == kOtherCode ? "other" : absl::StrCat(status);
}

// Label escapes a label value (backslash, quote, newline).
std::string Label(absl::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void Header(std::string* out, absl::string_view name, absl::string_view type,
            absl::string_view help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type,
                  "\n");
}

}  // namespace

Metrics::Metrics(absl::flat_hash_set<std::string> rpc_methods)
    : rpc_methods_(std::move(rpc_methods)) {}

void Metrics::ObserveRpc(absl::string_view method, int grpc_code,
                         double seconds) {
  const std::string label(rpc_methods_.contains(method) ? method
                                                        : kUnknownMethod);
  const int code = GrpcCodeKey(grpc_code);
  absl::MutexLock lock(&mu_);
  Histogram& h = rpc_latency_[label];
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++h.counts[i];
  }
  ++h.count;
  h.sum += seconds;
  ++rpc_count_[{label, code}];
}

void Metrics::CountHttp(absl::string_view route, int status) {
  const int key = HttpStatusKey(status);
  absl::MutexLock lock(&mu_);
  ++http_count_[{std::string(route), key}];
}

std::string Metrics::Render(const Snapshot& g) const {
  std::string out;
  Header(&out, "prism_queue_depth", "gauge",
         "Queued trials of active experiments.");
  absl::StrAppend(&out, "prism_queue_depth ", g.queue_depth, "\n");
  Header(&out, "prism_trials", "gauge", "Trials by state.");
  for (const auto& [state, n] : g.trials_by_state) {
    absl::StrAppend(&out, "prism_trials{state=\"", Label(state), "\"} ", n,
                    "\n");
  }
  Header(&out, "prism_workers", "gauge",
         "Registered workers by state (lost: no heartbeat within the lease; "
         "stopped: exited cleanly).");
  for (const auto& [state, n] : g.workers_by_state) {
    absl::StrAppend(&out, "prism_workers{state=\"", Label(state), "\"} ", n,
                    "\n");
  }
  Header(&out, "prism_points_ingested_total", "counter",
         "Loss points stored by reports since start.");
  absl::StrAppend(&out, "prism_points_ingested_total ", g.points_ingested,
                  "\n");
  Header(&out, "prism_points_duplicate_total", "counter",
         "Re-sent loss points that were already stored.");
  absl::StrAppend(&out, "prism_points_duplicate_total ", g.points_duplicate,
                  "\n");
  Header(&out, "prism_report_batches_total", "counter",
         "Group commits of reports.");
  absl::StrAppend(&out, "prism_report_batches_total ", g.report_batches, "\n");
  Header(&out, "prism_storage_errors_total", "counter",
         "Database writes that failed, by storage fault.");
  for (const auto& [fault, n] : g.storage_errors) {
    absl::StrAppend(&out, "prism_storage_errors_total{fault=\"", Label(fault),
                    "\"} ", n, "\n");
  }
  Header(&out, "prism_storage_ready", "gauge",
         "1 while database writes succeed, 0 while they fail (as /readyz).");
  absl::StrAppend(&out, "prism_storage_ready ", g.storage_ready ? 1 : 0, "\n");
  Header(&out, "prism_storage_disruptions_total", "counter",
         "Periods in which database writes failed or commits stalled.");
  absl::StrAppend(&out, "prism_storage_disruptions_total ",
                  g.storage_disruptions, "\n");
  if (g.db_free_bytes >= 0) {
    Header(&out, "prism_db_filesystem_free_bytes", "gauge",
           "Bytes the coordinator may still write on the database's "
           "filesystem.");
    absl::StrAppend(&out, "prism_db_filesystem_free_bytes ", g.db_free_bytes,
                    "\n");
  }

  absl::MutexLock lock(&mu_);
  Header(&out, "prism_rpc_requests_total", "counter",
         "Finished RPCs by method and status code.");
  for (const auto& [key, n] : rpc_count_) {
    absl::StrAppend(&out, "prism_rpc_requests_total{method=\"",
                    Label(key.first), "\",code=\"", CodeName(key.second),
                    "\"} ", n, "\n");
  }
  Header(&out, "prism_rpc_duration_seconds", "histogram",
         "RPC latency at the coordinator, by method.");
  for (const auto& [method, h] : rpc_latency_) {
    const std::string m = Label(method);
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      absl::StrAppend(&out, "prism_rpc_duration_seconds_bucket{method=\"", m,
                      "\",le=\"", kBuckets[i], "\"} ", h.counts[i], "\n");
    }
    absl::StrAppend(&out, "prism_rpc_duration_seconds_bucket{method=\"", m,
                    "\",le=\"+Inf\"} ", h.count, "\n");
    absl::StrAppend(&out, "prism_rpc_duration_seconds_sum{method=\"", m, "\"} ",
                    h.sum, "\n");
    absl::StrAppend(&out, "prism_rpc_duration_seconds_count{method=\"", m,
                    "\"} ", h.count, "\n");
  }
  Header(&out, "prism_http_requests_total", "counter",
         "HTTP requests by route and status.");
  for (const auto& [key, n] : http_count_) {
    absl::StrAppend(&out, "prism_http_requests_total{route=\"",
                    Label(key.first), "\",status=\"", StatusName(key.second),
                    "\"} ", n, "\n");
  }
  return out;
}

}  // namespace prism::server
