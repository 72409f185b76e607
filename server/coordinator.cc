#include "server/coordinator.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/data_roots.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "proto/enum_names.h"
#include "proto/worker_protocol.h"
#include "server/core/experiments/reconcile.h"
#include "server/http/http_server.h"
#include "server/rpc/auth_service.h"
#include "server/rpc/experiment_service.h"
#include "server/rpc/results_service.h"
#include "server/rpc/rpc_observer.h"
#include "server/rpc/schedule_service.h"
#include "server/rpc/worker_service.h"
#include "storage/sqlite_store.h"

namespace prism::server {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(5);
// A commit slower than this is a stalled disk (StorageHealth): a heartbeat
// waiting behind it may have missed its interval (1 s at the shortest).
constexpr absl::Duration kStorageStallThreshold = absl::Seconds(1);

// SampleStorage fills the snapshot's storage gauges from `health` (the
// coordinator's /metrics and the opening probes' share them).
void SampleStorage(const StorageHealth& health, Metrics::Snapshot* s) {
  s->storage_errors = health.ErrorsByFault();
  s->storage_ready = health.Ready().ok();
  s->storage_disruptions = health.disruptions();
  if (absl::StatusOr<int64_t> free = health.FreeBytes(); free.ok()) {
    s->db_free_bytes = *free;
  }
}

// BuildGrpcServer starts the gRPC server with `services` and its limits,
// setting *port to the bound port; null (or *port 0) when it cannot listen.
std::unique_ptr<grpc::Server> BuildGrpcServer(
    const CoordinatorOptions& options, const TlsPem& tls,
    const std::vector<grpc::Service*>& services, Metrics* metrics, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.grpc_address, ServerCredentialsFor(tls),
                           port);
  // Without this gRPC sets SO_REUSEPORT, and a second coordinator given the
  // same port would silently share it instead of failing to start.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Answers (whole curves in GetTrial, pages) may be as big as
  // --max-message-bytes; a request only as big as the largest legitimate
  // one (MaxRequestBytes): a bigger one is refused from its length prefix,
  // before it is read.
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(MaxRequestBytes(options.limits)));
  builder.SetMaxSendMessageSize(
      static_cast<int>(options.limits.max_message_bytes));
  // Each stream on a connection may buffer a message: bound how many one
  // connection runs at once (gRPC's default is unlimited).
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             options.limits.grpc_max_streams_per_connection);
  // gRPC 1.51 assembles a whole message before it checks its size, so the
  // limit above alone still let parallel oversized calls fill memory. The
  // memory quota bounds what all connections buffer: past it gRPC cancels
  // streams (RESOURCE_EXHAUSTED) and stops reading.
  grpc::ResourceQuota quota("prism-grpc");
  quota.Resize(static_cast<size_t>(options.limits.grpc_max_buffered_bytes));
  builder.SetResourceQuota(quota);
  for (grpc::Service* service : services) builder.RegisterService(service);
  builder.experimental().SetInterceptorCreators(MakeRpcObservers(metrics));
  return builder.BuildAndStart();
}

// ScalerDialAddress is the address the scaler's workers dial: the option,
// else the gRPC address, with this host's name for a wildcard host.
std::string ScalerDialAddress(const CoordinatorOptions& options,
                              const std::string& grpc_address,
                              const std::string& grpc_host, int grpc_port) {
  if (!options.scaler_coordinator_address.empty()) {
    return options.scaler_coordinator_address;
  }
  if (grpc_host == "0.0.0.0" || grpc_host == "[::]" || grpc_host.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    return absl::StrCat(host, ":", grpc_port);
  }
  return grpc_address;
}

// LogServing logs where the coordinator serves, and warns once when it
// serves without TLS on a non-loopback host.
void LogServing(const CoordinatorOptions& options, const TlsPem& tls,
                const std::string& grpc_address,
                const std::string& http_address,
                const std::vector<std::string>& hosts) {
  const char* tls_mode = tls.cert.empty() ? "off"
                         : tls.ca.empty() ? "on"
                                          : "mutual";
  Log(LogLevel::kInfo, "coordinator serving")
      .Kv("grpc", grpc_address)
      .Kv("http", http_address)
      .Kv("tls", tls_mode)
      .Kv("db", options.db_path)
      .Kv("data_roots", absl::StrJoin(options.data_roots, ","));
  if (tls.cert.empty()) {
    for (const std::string& host : hosts) {
      if (!IsLoopbackHost(host)) {
        Log(LogLevel::kWarning,
            "serving without TLS on a non-loopback address: tokens and "
            "results cross the network in the clear (--tls-cert, --tls-key)")
            .Kv("host", host);
        break;
      }
    }
  }
}

}  // namespace

absl::Status ValidateOptions(const CoordinatorOptions& o) {
  if (o.db_path.empty()) return absl::InvalidArgumentError("--db is required");
  if (o.lease_seconds < 1) {
    return absl::InvalidArgumentError("--lease-seconds must be at least 1");
  }
  if (o.heartbeat_seconds < 1 || o.heartbeat_seconds >= o.lease_seconds) {
    return absl::InvalidArgumentError(
        "--heartbeat-seconds must be at least 1 and below --lease-seconds");
  }
  if (o.max_attempts < 1) {
    return absl::InvalidArgumentError("--max-attempts must be at least 1");
  }
  PRISM_RETURN_IF_ERROR(ValidateLimits(o.limits));
  if (o.max_attempts > o.limits.max_attempts_limit) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-attempts (", o.max_attempts,
                     ") must not exceed --max-attempts-limit (",
                     o.limits.max_attempts_limit, ")"));
  }
  if (o.max_running_per_user < 0) {
    return absl::InvalidArgumentError(
        "--max-running-per-user must not be negative (0: no limit)");
  }
  if (o.fair_share_half_life_ms <= 0) {
    return absl::InvalidArgumentError(
        "--fair-share-half-life must be positive (e.g. 1d, 12h)");
  }
  if (o.durability != "normal" && o.durability != "full") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--durability must be normal or full (got '", o.durability, "')"));
  }
  if (o.auth.max_lifetime_seconds < 0) {
    return absl::InvalidArgumentError(
        "--token-max-lifetime must not be negative (0: no limit)");
  }
  if (o.auth.throttle.max_failures < 0) {
    return absl::InvalidArgumentError(
        "--auth-max-failures must not be negative (0: no limit)");
  }
  if (o.auth.throttle.window_ms < 1000) {
    return absl::InvalidArgumentError(
        "--auth-failure-window must be at least 1s");
  }
  if (o.auth.throttle.max_peers < 1) {
    return absl::InvalidArgumentError("--auth-max-peers must be at least 1");
  }
  if (!o.tls.ca.empty() && o.tls.cert.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-client-ca ", o.tls.ca, " needs --tls-cert and --tls-key"));
  }
  PRISM_RETURN_IF_ERROR(SplitHostPort(o.grpc_address).status());
  PRISM_RETURN_IF_ERROR(SplitHostPort(o.http_address).status());
  if (o.job_backend != nullptr) {
    PRISM_RETURN_IF_ERROR(ValidateScalerOptions(o.scaler));
    if (!o.scaler_coordinator_address.empty()) {
      PRISM_RETURN_IF_ERROR(
          SplitHostPort(o.scaler_coordinator_address).status());
    }
  }
  return absl::OkStatus();
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "[::1]" || host == "::1" ||
         absl::StartsWith(host, "127.");
}

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "address '", address, "' is not HOST:PORT (port 0 picks a free one)"));
  }
  return std::make_pair(address.substr(0, colon), port);
}

HttpOptions HttpOptionsFor(const CoordinatorOptions& options) {
  const Limits& limits = options.limits;
  HttpOptions http_options;
  http_options.web_root = options.web_root;
  http_options.metrics_open = options.metrics_open;
  http_options.max_event_streams = limits.max_event_streams;
  http_options.max_event_streams_per_user = limits.max_event_streams_per_user;
  http_options.max_stream_buffer_bytes = limits.max_stream_buffer_bytes;
  http_options.max_threads = limits.http_max_connections;
  http_options.threads =
      std::min(http_options.threads, limits.http_max_connections);
  http_options.max_connections_per_peer = limits.http_max_connections_per_peer;
  http_options.max_head_bytes = limits.http_max_head_bytes;
  http_options.max_line_bytes =
      std::min(http_options.max_line_bytes, limits.http_max_head_bytes);
  http_options.header_timeout_ms = limits.http_header_timeout_ms;
  http_options.tls_cert_file = options.tls.cert;
  http_options.tls_key_file = options.tls.key;
  return http_options;
}

absl::StatusOr<std::unique_ptr<OpeningProbes>> OpeningProbes::Start(
    const CoordinatorOptions& options) {
  PRISM_ASSIGN_OR_RETURN(auto host_port, SplitHostPort(options.http_address));
  std::unique_ptr<OpeningProbes> probes(new OpeningProbes(options));
  PRISM_ASSIGN_OR_RETURN(
      int port, probes->http_->Bind(host_port.first, host_port.second));
  probes->http_address_ = absl::StrCat(host_port.first, ":", port);
  probes->http_->Start();
  return probes;
}

OpeningProbes::OpeningProbes(const CoordinatorOptions& options)
    : health_(options.db_path, kStorageStallThreshold) {
  HttpOptions http_options = HttpOptionsFor(options);
  http_options.threads = std::min(http_options.threads, 4);
  http_ = std::make_unique<HttpServer>(
      &metrics_,
      [this] {
        Metrics::Snapshot s;
        SampleStorage(health_, &s);
        return s;
      },
      &health_, http_options);
}

OpeningProbes::~OpeningProbes() { Stop(); }

void OpeningProbes::Stop() { http_->Stop(); }

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(
    const CoordinatorOptions& options, const Clock* clock) {
  PRISM_RETURN_IF_ERROR(ValidateOptions(options));
  PRISM_RETURN_IF_ERROR(ResolveDataRoots(options.data_roots).status());
  PRISM_ASSIGN_OR_RETURN(TlsPem tls,
                         LoadTlsFiles(options.tls, "--tls-client-ca"));
  storage::SqliteStoreOptions store_options;
  store_options.durability =
      options.durability == "full"
          ? storage::SqliteStoreOptions::Durability::kFull
          : storage::SqliteStoreOptions::Durability::kNormal;
  PRISM_ASSIGN_OR_RETURN(
      std::unique_ptr<storage::SqliteStore> store,
      storage::SqliteStore::Open(options.db_path, store_options));
  return Create(options, std::move(tls), std::move(store), clock);
}

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(
    const CoordinatorOptions& options, std::unique_ptr<storage::Store> store,
    const Clock* clock) {
  PRISM_RETURN_IF_ERROR(ValidateOptions(options));
  PRISM_ASSIGN_OR_RETURN(TlsPem tls,
                         LoadTlsFiles(options.tls, "--tls-client-ca"));
  return Create(options, std::move(tls), std::move(store), clock);
}

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(
    const CoordinatorOptions& options, TlsPem tls,
    std::unique_ptr<storage::Store> store, const Clock* clock) {
  CoordinatorOptions resolved = options;
  PRISM_ASSIGN_OR_RETURN(
      resolved.data_roots,
      ResolveDataRoots(options.data_roots.empty()
                           ? std::vector<std::string>{DefaultDataRoot()}
                           : options.data_roots));
  std::unique_ptr<Coordinator> c(
      new Coordinator(resolved, std::move(tls), std::move(store), clock));
  PRISM_RETURN_IF_ERROR(c->Bootstrap());
  return c;
}

Coordinator::Coordinator(const CoordinatorOptions& options, TlsPem tls,
                         std::unique_ptr<storage::Store> store,
                         const Clock* clock)
    : options_(options),
      tls_(std::move(tls)),
      clock_(clock),
      health_(options.db_path, kStorageStallThreshold),
      store_(std::move(store)),
      metrics_(PrismRpcMethods()),
      events_(absl::Milliseconds(options.limits.watch_interval_ms),
              options.limits.max_live_points),
      reads_(options.limits.max_concurrent_reads > 0
                 ? options.limits.max_concurrent_reads
                 : ReadGate::DefaultConcurrency(),
             options.limits.max_waiting_reads, options.limits.read_nice) {
  store_->SetWriteObserver(&health_);
  auth_ = std::make_unique<AuthManager>(store_.get(), clock_, options.auth);
  ingest_ = std::make_unique<IngestWriter>(store_.get(), IngestOptions{});
  const Limits& limits = options.limits;
  QueueOptions queue_options;
  queue_options.max_points_per_report = limits.max_points_per_report;
  queue_options.max_string_bytes = limits.max_string_bytes;
  queue_options.lease_seconds = options.lease_seconds;
  queue_options.heartbeat_seconds = options.heartbeat_seconds;
  queue_options.max_running_per_user = options.max_running_per_user;
  queue_options.fair_share_half_life_ms = options.fair_share_half_life_ms;
  ResultsOptions results_options;
  results_options.max_page_bytes = limits.max_page_bytes;
  results_ = std::make_unique<ResultsManager>(store_.get(), store_.get(),
                                              results_options);
  seeds_ = std::make_unique<SeedPlanner>(store_.get(), clock_);
  PlanOptions plan_options;
  plan_options.default_max_attempts = options.max_attempts;
  plan_options.max_trials = limits.max_trials_per_experiment;
  plan_options.data_roots = options.data_roots;
  ladder_ = std::make_unique<LadderPlanner>(store_.get(), clock_, plan_options);
  // The reactions to a finished trial live with the managers that react
  // (server/core/infra/finish_signal.h), in this order: the ranking is
  // refreshed, the seeds round runs, then the ladder advances.
  results_->SubscribeTo(&finish_signal_);
  seeds_->SubscribeTo(&finish_signal_);
  ladder_->SubscribeTo(&finish_signal_);
  queue_ = std::make_unique<QueueManager>(
      store_.get(), store_.get(), store_.get(), store_.get(), store_.get(),
      clock_, &events_, ingest_.get(), queue_options, &finish_signal_);
  LeaseExpiryOptions expiry_options;
  expiry_options.interval_ms = options.expiry_interval_ms;
  expiry_options.lease_seconds = options.lease_seconds;
  expiry_options.heartbeat_seconds = options.heartbeat_seconds;
  expiry_ = std::make_unique<LeaseExpiry>(
      queue_.get(), &health_,
      [store = store_.get()] { return store->ProbeWrite(); },
      [this] { FlushTokenUses(); }, expiry_options);
  experiments_ = std::make_unique<ExperimentManager>(
      store_.get(), store_.get(), store_.get(), clock_, &events_, plan_options,
      limits, queue_.get());
  experiment_service_ = std::make_unique<ExperimentServiceImpl>(
      auth_.get(), &reads_, experiments_.get(), &health_);
  worker_service_ =
      std::make_unique<WorkerServiceImpl>(auth_.get(), queue_.get());
  results_service_ = std::make_unique<ResultsServiceImpl>(
      auth_.get(), results_.get(), experiments_.get(), &events_, &reads_,
      limits);
  schedule_service_ =
      std::make_unique<ScheduleServiceImpl>(auth_.get(), &reads_, limits);
  auth_service_ = std::make_unique<AuthServiceImpl>(auth_.get());
  http_ = std::make_unique<HttpServer>(
      auth_.get(), experiments_.get(), results_.get(), queue_.get(), &events_,
      &reads_, &metrics_, [this] { return SampleGauges(); }, &health_,
      HttpOptionsFor(options));
  if (options.job_backend != nullptr) {
    scaler_ = std::make_unique<Scaler>(
        options.scaler, options.job_backend.get(), store_.get(),
        [queue = queue_.get()] { return SnapshotOf(queue); }, clock_);
  }
}

Coordinator::~Coordinator() { Shutdown(); }

absl::Status Coordinator::Bootstrap() {
  BootstrapOptions bootstrap;
  bootstrap.admin_token_file = options_.admin_token_file;
  bootstrap.env_token = options_.admin_token_env;
  PRISM_ASSIGN_OR_RETURN(BootstrapResult result, auth_->Bootstrap(bootstrap));
  if (result.created) {
    Log(LogLevel::kInfo, "created the first admin token")
        .Kv("source", result.source)
        .Kv("file", options_.admin_token_file);
  }
  admin_token_ = result.token_to_print;
  return absl::OkStatus();
}

absl::Status Coordinator::Start() {
  PRISM_RETURN_IF_ERROR(ReconcileAfterRestart(*seeds_, *ladder_, health_));

  PRISM_ASSIGN_OR_RETURN(auto grpc_host, SplitHostPort(options_.grpc_address));
  int grpc_port = 0;
  grpc_server_ = BuildGrpcServer(
      options_, tls_,
      {experiment_service_.get(), worker_service_.get(), results_service_.get(),
       schedule_service_.get(), auth_service_.get()},
      &metrics_, &grpc_port);
  if (grpc_server_ == nullptr || grpc_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for gRPC on ", options_.grpc_address));
  }
  grpc_address_ = absl::StrCat(grpc_host.first, ":", grpc_port);

  PRISM_ASSIGN_OR_RETURN(auto http_host, SplitHostPort(options_.http_address));
  PRISM_ASSIGN_OR_RETURN(int http_port,
                         http_->Bind(http_host.first, http_host.second));
  http_address_ = absl::StrCat(http_host.first, ":", http_port);
  http_->Start();

  PRISM_RETURN_IF_ERROR(expiry_->ExtendAfterStart());
  expiry_->Start();
  if (scaler_ != nullptr) {
    PRISM_RETURN_IF_ERROR(scaler_->Init());
    const std::string dial =
        ScalerDialAddress(options_, grpc_address_, grpc_host.first, grpc_port);
    scaler_->Start(dial);
    Log(LogLevel::kInfo, "scaler started")
        .Kv("backend", options_.job_backend->name())
        .Kv("jobs", scaler_->job_name())
        .Kv("max_workers", options_.scaler.max_workers)
        .Kv("workers_dial", dial);
  }
  // The first Rank after a start should not pay for reading every trial.
  results_->WarmUp();
  started_ = true;
  LogServing(options_, tls_, grpc_address_, http_address_,
             {grpc_host.first, http_host.first});
  return absl::OkStatus();
}

void Coordinator::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (scaler_ != nullptr) scaler_->Stop();
  expiry_->Stop();
  // Watchers first, so their streams end and do not hold the servers open.
  events_.Shutdown();
  http_->Stop();
  if (grpc_server_ != nullptr) {
    grpc_server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    grpc_server_->Wait();
  }
  // Every acknowledged report is committed; commit what is still queued.
  ingest_->Shutdown();
  FlushTokenUses();
  if (started_) Log(LogLevel::kInfo, "coordinator stopped");
}

Metrics::Snapshot Coordinator::SampleGauges() {
  Metrics::Snapshot s;
  if (absl::StatusOr<int64_t> queued = store_->CountQueued(); queued.ok()) {
    s.queue_depth = *queued;
  }
  if (auto by_state = store_->CountTrialsByState(); by_state.ok()) {
    for (const auto& [state, n] : *by_state) {
      s.trials_by_state[EnumValueName(state)] = n;
    }
  }
  if (auto workers = queue_->ListWorkers(); workers.ok()) {
    for (const v1::Worker& w : workers->workers()) {
      ++s.workers_by_state[EnumValueName(w.state())];
    }
  }
  const IngestStats ingest = ingest_->stats();
  s.points_ingested = ingest.points_stored;
  s.points_duplicate = ingest.points_duplicate;
  s.report_batches = ingest.batches;
  SampleStorage(health_, &s);
  return s;
}

void Coordinator::FlushTokenUses() {
  if (absl::Status flushed = auth_->FlushLastUsed(); !flushed.ok()) {
    Log(LogLevel::kWarning, "recording token last use failed")
        .Kv("error", flushed.ToString());
  }
}

}  // namespace prism::server
