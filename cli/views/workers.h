// The workers view: `prism workers`' table and which workers it leaves out.
//
// Thread-safety: pure functions.
#ifndef PRISM_CLI_VIEWS_WORKERS_H_
#define PRISM_CLI_VIEWS_WORKERS_H_

#include <cstdint>

#include "cli/output.h"
#include "prism/v1/prism.pb.h"

namespace prism::cli {

// WorkersTable: id, host, device, threads, state, trial, heartbeat age,
// tokens/s, user.
Table WorkersTable(const v1::ListWorkersResponse& response, int64_t now_ms);

// kGoneWorkerShownMs: how long `prism workers` keeps listing a worker after
// it stopped (its Deregister) or was lost (its last heartbeat); --all lists
// every one. A fleet whose workers come and go would otherwise list every
// worker it ever had.
inline constexpr int64_t kGoneWorkerShownMs = int64_t{3600} * 1000;

// DropGoneWorkers removes the workers stopped or lost more than
// kGoneWorkerShownMs before now_ms and returns how many it removed.
int DropGoneWorkers(v1::ListWorkersResponse* response, int64_t now_ms);

}  // namespace prism::cli

#endif  // PRISM_CLI_VIEWS_WORKERS_H_
