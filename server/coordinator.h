// Coordinator: the one place the coordinator is wired together — store,
// clock, auth, the managers (experiments, queue, ingest, results, events,
// metrics, adaptive seeds), the gRPC server with its five services, the HTTP
// server, and the lease-expiry loop.
//
//   CoordinatorOptions options;
//   options.db_path = "prism.db";
//   options.grpc_address = "127.0.0.1:0";   // port 0: pick a free one
//   absl::StatusOr<std::unique_ptr<Coordinator>> c =
//   Coordinator::Create(options); PRISM_RETURN_IF_ERROR((*c)->Start());
//   (*c)->grpc_address();                    // "127.0.0.1:40113"
//   (*c)->Shutdown();                        // drain, stop, close
//
// With a job backend, Start also starts the Scaler once the servers serve
// (it adopts its jobs of an earlier run first); Shutdown stops it and
// leaves the jobs running.
//
// The expiry loop also writes the tokens' recorded last uses, as does
// Shutdown.
//
// Storage faults (a full disk, an I/O error, a busy or read-only file) go
// through one StorageHealth (server/core/infra/storage_health.h): logged once
// per change, /readyz answers 503 while writes fail, /metrics counts them and
// `prism status` shows them to an admin. While writes fail or commits stall
// the expiry loop expires nothing; after, it first extends every live lease
// (as after a restart: workers could not heartbeat meanwhile). A start on a
// filesystem that refuses writes serves anyway, not ready, and recovers by
// itself.
//
// A start on a full disk cannot even open the database (SQLite has no room
// for its shared-memory index; Create fails with an I/O error). `prism
// coordinator` then retries Create every second and meanwhile runs
// OpeningProbes on the HTTP address: /healthz 200, /readyz 503 naming the
// open and the free space, /metrics with the storage gauges. gRPC does not
// listen until the database opens: there is no store behind the services
// to answer from, gRPC cannot hand a listening socket over (a stand-in
// server would leave a window of refused connections anyway), and every
// client already treats a refused connection as UNAVAILABLE and retries
// (workers back off and keep their points). Once Create succeeds the probes
// stop and Start binds the same HTTP port; no trial is failed for the wait
// (Start extends every live lease, as after any restart).
//
// Start runs every open adaptive-seeds or guided round again
// (server/core/experiments/seeds.h), extends every live lease by a full lease
// period (workers could not heartbeat while the coordinator was down) before it
// serves. Shutdown ends watch streams, stops both servers, lets the report
// writer commit what it holds, and closes the database.
//
// Thread-safety: Start and Shutdown from one thread; the accessors are safe
// once started.
#ifndef PRISM_SERVER_COORDINATOR_H_
#define PRISM_SERVER_COORDINATOR_H_

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/tls.h"
#include "server/core/auth/auth.h"
#include "server/core/experiments/experiments.h"
#include "server/core/experiments/ladder.h"
#include "server/core/experiments/limits.h"
#include "server/core/experiments/results.h"
#include "server/core/experiments/seeds.h"
#include "server/core/infra/clock.h"
#include "server/core/infra/events.h"
#include "server/core/infra/finish_signal.h"
#include "server/core/infra/metrics.h"
#include "server/core/infra/read_gate.h"
#include "server/core/infra/storage_health.h"
#include "server/core/queue/ingest.h"
#include "server/core/queue/lease_expiry.h"
#include "server/core/queue/queue.h"
#include "server/core/queue/scaler.h"
#include "server/http/http_server.h"
#include "storage/store.h"

namespace grpc {
class Server;
}

namespace prism::server {

class HttpServer;
class ExperimentServiceImpl;
class WorkerServiceImpl;
class ResultsServiceImpl;
class ScheduleServiceImpl;
class AuthServiceImpl;

struct CoordinatorOptions {
  std::string db_path;
  std::string grpc_address = "127.0.0.1:0";
  std::string http_address = "127.0.0.1:0";
  int lease_seconds = kDefaultLeaseSeconds;
  int heartbeat_seconds = kDefaultHeartbeatSeconds;
  int max_attempts = kDefaultMaxAttempts;
  int max_running_per_user = 0;  // 0: no limit
  // Fair share's usage decay (server/core/queue/fair_share.h); > 0.
  int64_t fair_share_half_life_ms = kDefaultFairShareHalfLifeMs;
  std::string admin_token_file;
  std::string admin_token_env;  // PRISM_ADMIN_TOKEN's value, if any
  std::string web_root;         // "" serves no dashboard
  // Token lifetimes, last-use recording and failed-auth throttling.
  AuthOptions auth;
  bool metrics_open = false;  // serve /metrics without a token
  // The bounds on every input (server/core/experiments/limits.h): message size,
  // trials, seeds, strings, pages, streams, experiments per user, priorities...
  Limits limits;
  int expiry_interval_ms = 1000;
  // "normal" or "full": what an acknowledged write survives (see
  // storage::SqliteStoreOptions::Durability).
  std::string durability = "normal";
  // Queue-driven worker jobs (server/core/queue/scaler.h); nullptr submits
  // none.
  std::shared_ptr<JobBackend> job_backend;
  ScalerOptions scaler;
  // The address the jobs' workers dial; "": the gRPC address it listens
  // on, a wildcard host (0.0.0.0, [::]) replaced by this host's name.
  std::string scaler_coordinator_address;
  // Directories a spec's data paths must lie in (--data-root, repeatable);
  // empty: the demo corpus root (base/data_roots.h). Resolved by Create.
  std::vector<std::string> data_roots;
  // TLS (proto/tls.h): with a certificate and key both gRPC and HTTP serve
  // TLS only; with a CA too (--tls-client-ca) every gRPC client must present
  // a certificate it signed. None: plaintext, as before.
  TlsFiles tls;
};

// ValidateOptions returns InvalidArgument naming the first bad option.
absl::Status ValidateOptions(const CoordinatorOptions& options);

// SplitHostPort splits "HOST:PORT" (or "[v6]:PORT"); InvalidArgument.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    const std::string& address);

// IsLoopbackHost is true for localhost, 127.x.y.z and ::1 (with or without
// brackets): the hosts a coordinator may serve plaintext on without a
// warning.
bool IsLoopbackHost(const std::string& host);

// HttpOptionsFor returns the HTTP server's options of a coordinator
// started with `options` (its limits, TLS files, dashboard, metrics_open).
HttpOptions HttpOptionsFor(const CoordinatorOptions& options);

// OpeningProbes: the HTTP face of a coordinator whose database cannot be
// opened yet (a start on a full disk: SQLite has no room even for its
// shared-memory index). It serves /healthz (200), /readyz (503 "not ready:
// database cannot be opened for writing for 3s: io_error: ...") and
// /metrics (the storage gauges, without a token), and 503 with that cause
// for every other path, on the coordinator's HTTP address, until Stop.
// gRPC does not listen meanwhile: see Coordinator's header comment.
//
// Thread-safety: OpenFailed from any thread; Stop from the one that
// started it.
class OpeningProbes {
 public:
  // Start binds options.http_address (port 0 picks a free one) and serves;
  // Unavailable when it cannot bind, InvalidArgument when the TLS files do
  // not load.
  static absl::StatusOr<std::unique_ptr<OpeningProbes>> Start(
      const CoordinatorOptions& options);
  ~OpeningProbes();

  // OpenFailed records the latest failed open (what /readyz says).
  void OpenFailed(storage::StorageFault fault, const absl::Status& status) {
    health_.OpenFailed(fault, status);
  }
  // http_address is where it listens: HOST:PORT with the port it picked.
  const std::string& http_address() const { return http_address_; }
  // Ready is what /readyz answers (Unavailable naming the failed open).
  absl::Status Ready() const { return health_.Ready(); }
  // Stop stops serving and frees the port for the coordinator; idempotent.
  void Stop();

 private:
  explicit OpeningProbes(const CoordinatorOptions& options);

  StorageHealth health_;
  Metrics metrics_;
  std::unique_ptr<HttpServer> http_;
  std::string http_address_;
};

class Coordinator {
 public:
  // Create resolves the data roots and reads the TLS files (InvalidArgument
  // for a root that cannot be resolved; LoadTlsFiles's errors; both before
  // any database is opened), opens the SQLite store at options.db_path and
  // bootstraps the first admin token of a new database.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(
      const CoordinatorOptions& options, const Clock* clock = SystemClock());
  // Create with an injected store (tests).
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(
      const CoordinatorOptions& options, std::unique_ptr<storage::Store> store,
      const Clock* clock);
  ~Coordinator();

  // Start serves gRPC and HTTP and starts the expiry loop. Unavailable when
  // an address cannot be bound.
  absl::Status Start();
  // Shutdown is idempotent.
  void Shutdown();

  std::string grpc_address() const { return grpc_address_; }
  std::string http_address() const { return http_address_; }
  // admin_token is the generated first admin token that nobody else has
  // seen yet (to print once), if this start created one.
  const std::optional<std::string>& admin_token() const { return admin_token_; }

  storage::Store* store() { return store_.get(); }
  AuthManager* auth() { return auth_.get(); }
  QueueManager* queue() { return queue_.get(); }
  ExperimentManager* experiments() { return experiments_.get(); }
  ResultsManager* results() { return results_.get(); }
  Metrics* metrics() { return &metrics_; }
  const StorageHealth& storage_health() const { return health_; }

 private:
  Coordinator(const CoordinatorOptions& options, TlsPem tls,
              std::unique_ptr<storage::Store> store, const Clock* clock);
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(
      const CoordinatorOptions& options, TlsPem tls,
      std::unique_ptr<storage::Store> store, const Clock* clock);
  absl::Status Bootstrap();
  Metrics::Snapshot SampleGauges();
  // FlushTokenUses writes the tokens' last uses (logging a failure).
  void FlushTokenUses();

  const CoordinatorOptions options_;
  const TlsPem tls_;
  const Clock* const clock_;
  // Before the store, which reports to it until it is closed.
  StorageHealth health_;
  std::unique_ptr<storage::Store> store_;
  Metrics metrics_;
  EventBus events_;
  FinishSignal finish_signal_;  // the queue publishes, managers react
  ReadGate reads_;              // expensive reads, over gRPC and HTTP
  std::unique_ptr<AuthManager> auth_;
  std::unique_ptr<IngestWriter> ingest_;
  std::unique_ptr<QueueManager> queue_;
  std::unique_ptr<ExperimentManager> experiments_;
  std::unique_ptr<ResultsManager> results_;
  std::unique_ptr<SeedPlanner> seeds_;
  std::unique_ptr<LadderPlanner> ladder_;
  std::unique_ptr<Scaler> scaler_;
  std::unique_ptr<LeaseExpiry> expiry_;
  std::unique_ptr<ExperimentServiceImpl> experiment_service_;
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<ResultsServiceImpl> results_service_;
  std::unique_ptr<ScheduleServiceImpl> schedule_service_;
  std::unique_ptr<AuthServiceImpl> auth_service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<HttpServer> http_;
  std::optional<std::string> admin_token_;
  std::string grpc_address_;
  std::string http_address_;

  bool started_ = false;
  bool shut_down_ = false;
};

}  // namespace prism::server

#endif  // PRISM_SERVER_COORDINATOR_H_
