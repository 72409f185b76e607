// Limits: the bound the coordinator puts on every input a client controls,
// so that no caller can make it store or hold an unbounded amount. Each is a
// `prism coordinator --max-...` flag (README, "Limits"). An input over a
// limit is refused before anything is stored: InvalidArgument for a request
// that is too big in itself (a spec with too many trials, a string too long),
// ResourceExhausted for one that would exceed a caller's share (streams,
// active experiments). The message names the flag and the value:
//
//   spec has 600000 trials; limit --max-trials-per-experiment=100000
//
//   Limits limits;                      // the defaults
//   PRISM_RETURN_IF_ERROR(ValidateLimits(limits));
//   PRISM_RETURN_IF_ERROR(CheckSpecLimits(spec, caller, limits));
//
// Thread-safety: plain data and pure functions.
#ifndef PRISM_SERVER_CORE_EXPERIMENTS_LIMITS_H_
#define PRISM_SERVER_CORE_EXPERIMENTS_LIMITS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "prism/v1/prism.pb.h"
#include "server/core/auth/auth.h"
#include "server/core/experiments/spec.h"
#include "server/core/infra/checks.h"

namespace prism::server {

struct Limits {
  // Largest gRPC message sent (the CLI and workers accept as much), and the
  // most any request may be: requests are held to MaxRequestBytes, below.
  int64_t max_message_bytes = int64_t{64} << 20;
  // Calls one gRPC connection may run at once (HTTP/2 streams).
  int grpc_max_streams_per_connection = 64;
  // What gRPC may hold of received data across all connections (its memory
  // quota: gRPC 1.51 assembles a whole message before checking its size, so
  // this is what bounds parallel oversized calls); at least
  // MaxRequestBytes.
  int64_t grpc_max_buffered_bytes = int64_t{32} << 20;
  // Trials one experiment may plan, for every strategy (after planning).
  // 20,000 trials are ~5 MiB of rows, and at a minute a trial 2 weeks of one
  // worker: more than one experiment of a shared queue needs (the paper's
  // 124M grid is 39).
  int64_t max_trials_per_experiment = 20000;
  int max_seeds = 1000;
  // The repeated spec fields that multiply what a spec costs, each bounded
  // before planning: a ladder's rungs (each a size; the spec's ladder is
  // stored with every rung's experiment), convergence milestones (ranked
  // per schedule), and an explicit schedule list.
  int max_ladder_rungs = 8;
  int max_loss_targets = 32;
  int max_listed_schedules = 10000;
  // The resolved spec as stored (and returned by Get): what planning adds
  // to a submitted spec is bounded by the fields above, this bounds the
  // whole.
  int64_t max_stored_spec_bytes = int64_t{1} << 20;
  int max_points_per_report = 100000;
  // Any one string a client sends: names, schedules, data paths, worker
  // ids, hosts, devices, tokens, page tokens, spec text lines.
  int max_string_bytes = 4096;
  // A spec's whole textproto (spec_text).
  int64_t max_spec_bytes = int64_t{4} << 20;
  // A page of results (ScheduleService.List, ListTrials) in bytes: a page
  // holds fewer items than page_size when they would exceed it.
  int64_t max_page_bytes = int64_t{16} << 20;
  // Open Watch streams (gRPC) and dashboard event streams (SSE), in total
  // and per user.
  int max_watch_streams = 256;
  int max_watch_streams_per_user = 16;
  int max_event_streams = 16;
  int max_event_streams_per_user = 4;
  // Events one stream may hold unsent, in bytes; a watcher further behind
  // is cut off (RESOURCE_EXHAUSTED) instead of buffered.
  int64_t max_stream_buffer_bytes = int64_t{16} << 20;
  // Live streams are paced: one delivery round per interval, a trial's
  // updates within it merged into one event (events.h), so watchers cost
  // the coordinator per trial updated, not per point reported.
  int watch_interval_ms = 1000;
  // Points per split one merged live event carries; more are thinned.
  int max_live_points = 8;
  // Expensive reads (List pages, Rank, GetTrial, Compare, Suggest,
  // ListTrials, the dashboard's API) running at once, and waiting in line
  // for a turn (read_gate.h): 0 = half the cores, at least 1.
  int max_concurrent_reads = 0;
  int max_waiting_reads = 256;
  // How many nice steps (0-19) below the rest of the coordinator those
  // reads run: when the cores are busy, storing reported points, leases
  // and heartbeats go first.
  int read_nice = 10;
  // The dashboard's HTTP edge (server/http/http_connection.h): connections in
  // total and from one peer address, the largest request head (request
  // line and headers), and how long a request's head and body may take to
  // arrive.
  int http_max_connections = 512;
  int http_max_connections_per_peer = 64;
  int64_t http_max_head_bytes = int64_t{64} << 10;
  int http_header_timeout_ms = 10000;
  // Active or paused experiments, and queued trials, a non-admin user may
  // have unless an admin sets their own (`prism user set --max-active N
  // --max-queued N`). With the trials limit above, one user holds at most
  // 20,000 queued trials (~5 MiB) however many experiments they submit, and
  // 20 experiments are more than a person follows at once.
  int max_active_experiments_per_user = 20;
  int64_t max_queued_trials_per_user = 20000;
  // Non-admins' priorities lie in [-max_user_priority, max_user_priority].
  int max_user_priority = 10;
  // The largest max_attempts a spec may ask for.
  int max_attempts_limit = 20;
  // Model size.
  int max_layers = 512;
  int max_d_model = 16384;
  int max_heads = 1024;
  int max_context = 131072;
  int64_t max_parameters = int64_t{20'000'000'000};
};

// kMaxLossPointWireBytes bounds one LossPoint on the wire, with its tag
// and length in the enclosing message: six fields of at most 10 + 1 bytes.
inline constexpr int64_t kMaxLossPointWireBytes = 2 + 6 * 11;
// kRequestOverheadBytes covers a request's fields besides its points or
// spec text: ids, strings up to max_string_bytes, final metrics.
inline constexpr int64_t kRequestOverheadBytes = int64_t{1} << 20;

// MaxRequestBytes is the largest gRPC request the coordinator receives:
// the bigger of a spec of max_spec_bytes and a report (or completion) of
// max_points_per_report points, plus kRequestOverheadBytes, and at most
// max_message_bytes. With the defaults: 7.5 MiB.
int64_t MaxRequestBytes(const Limits& limits);

// ValidateLimits returns InvalidArgument naming the first limit that is not
// positive (or, for max_user_priority, negative), or a
// grpc_max_buffered_bytes below MaxRequestBytes.
absl::Status ValidateLimits(const Limits& limits);

// CheckPriority returns InvalidArgument when a non-admin asks for a
// priority outside [-max_user_priority, max_user_priority].
absl::Status CheckPriority(const Caller& caller, int64_t priority,
                           const Limits& limits);

// CheckSpecTextLength refuses a spec_text over limits.max_spec_bytes
// (checked before it is parsed). InvalidArgument.
absl::Status CheckSpecTextLength(absl::string_view spec_text,
                                 const Limits& limits);

// CheckTrialCount refuses more than limits.max_trials_per_experiment
// trials: InvalidArgument "spec has N trials; limit
// --max-trials-per-experiment=M".
absl::Status CheckTrialCount(int64_t trials, const Limits& limits);

// CheckSpecLimits bounds a submitted spec before it is planned: string
// lengths, seeds, loss targets, ladder rungs (and each rung's seeds and loss
// targets), the explicit schedule list and it times the seeds (what planning
// would build before adding the baseline), max_attempts, the priority, and
// the model size fields the spec sets. InvalidArgument naming the field and
// the flag.
absl::Status CheckSpecLimits(const v1::ExperimentSpec& spec,
                             const Caller& caller, const Limits& limits);

// CheckPlanLimits bounds what planning resolved: the trials of every
// strategy and the model's size (shape and parameters, presets included).
// InvalidArgument.
absl::Status CheckPlanLimits(const ExperimentPlan& plan, const Limits& limits);

// CheckStoredSpecBytes refuses a resolved spec of more than
// limits.max_stored_spec_bytes serialized. InvalidArgument.
absl::Status CheckStoredSpecBytes(int64_t bytes, const Limits& limits);

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_EXPERIMENTS_LIMITS_H_
