#include "cli/views/workers.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/views/format.h"
#include "proto/enum_names.h"

namespace prism::cli {

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

}  // namespace prism::cli
