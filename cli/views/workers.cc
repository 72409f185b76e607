#include "cli/views/workers.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

namespace {

// WorkerRow is a worker as of now_ms (its heartbeat's age).
struct WorkerRow {
  const v1::Worker& worker;
  int64_t now_ms;
};

constexpr Column<WorkerRow> kWorkerColumns[] = {
    {"id", [](const WorkerRow& r) { return r.worker.id(); }},
    {"host", [](const WorkerRow& r) { return r.worker.host(); }},
    {"device", [](const WorkerRow& r) { return r.worker.device(); }},
    {"threads",
     [](const WorkerRow& r) { return absl::StrCat(r.worker.threads()); }},
    {"state",
     [](const WorkerRow& r) { return EnumValueName(r.worker.state()); }},
    {"trial",
     [](const WorkerRow& r) -> std::string {
       return r.worker.current_trial_id() > 0
                  ? absl::StrCat(r.worker.current_trial_id())
                  : "";
     }},
    {"heartbeat",
     [](const WorkerRow& r) -> std::string {
       const int64_t last = r.worker.last_heartbeat_unix_ms();
       return last > 0 ? absl::StrCat(FormatDuration((r.now_ms - last) / 1e3),
                                      " ago")
                       : "never";
     }},
    {"tokens_per_s",
     [](const WorkerRow& r) -> std::string {
       return r.worker.tokens_per_second() > 0
                  ? Fixed(r.worker.tokens_per_second(), 0)
                  : "";
     }},
    {"user", [](const WorkerRow& r) { return r.worker.user(); }},
};

}  // namespace

Table WorkersTable(const v1::ListWorkersResponse& response, int64_t now_ms) {
  std::vector<WorkerRow> rows;
  for (const v1::Worker& w : response.workers()) rows.push_back({w, now_ms});
  return TableOf<WorkerRow>(kWorkerColumns, rows);
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

}  // namespace prism::cli
