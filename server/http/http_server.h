// HttpServer: the coordinator's HTTP face (cpp-httplib) — the dashboard's
// static assets, a JSON API (reads, and the dashboard's actions: submit,
// cancel, pause, resume, priority, extend, delete, logout) and
// Prometheus metrics. JSON bodies are protobuf's JSON mapping
// (MessageToJsonString defaults: lowerCamelCase names, int64 as strings,
// enums as names, defaults omitted) of the very messages the RPCs return,
// produced by the same managers.
//
//   GET /api/v1/whoami                          WhoAmIResponse
//   GET /api/v1/experiments?owner=&page_size=&page_token=
//                                               ListExperimentsResponse
//   GET /api/v1/experiments/{id}                Experiment
//   GET /api/v1/experiments/{id}/rank?require=smooth,pow2&sort=val_loss|
//       delta|speedup|throughput|min_val_loss&descending=1&page_size=&
//       page_token=                             RankResponse
//   GET /api/v1/experiments/{id}/trials?state=queued|...&page_size=&
//       page_token=                             ListTrialsResponse
//   GET /api/v1/experiments/{id}/suggest?n=     SuggestResponse (n: 10
//       when absent)
//   GET /api/v1/experiments/{id}/ladder         LadderTransferResponse
//   GET /api/v1/experiments/{id}/compare?a=SCHEDULE&b=SCHEDULE
//                                               CompareResponse
//   GET /api/v1/trials/{id}?with_baseline=1     GetTrialResponse
//   GET /api/v1/workers                         ListWorkersResponse
//   GET /api/v1/events?experiment={id}          text/event-stream: one
//       `data: <ExperimentEvent JSON>` per event, `: keep-alive` comments
//       (every keepalive_seconds without an event); 429 JSON once
//       max_event_streams are open, or max_event_streams_per_user of the
//       caller's; a client more than max_stream_buffer_bytes behind is
//       cut off
//   GET /metrics                                Prometheus text (any
//       role; no auth with metrics_open)
//   GET /healthz                                liveness: "ok" while the
//       process serves HTTP (no auth: probes)
//   GET /readyz                                 readiness: "ok", or 503
//       with the cause while database writes fail (storage_health.h; no
//       auth: probes); back to 200 by itself once a write succeeds
//   GET /, GET /static/...                      the dashboard (no auth)
//   POST /api/v1/logout                         204, expires the cookie
//   POST /api/v1/experiments/{id}/delete        DeleteExperimentResponse
//   POST /api/v1/experiments/{id}/cancel        Experiment
//   POST /api/v1/experiments/{id}/pause         Experiment
//   POST /api/v1/experiments/{id}/resume        Experiment
//   POST /api/v1/experiments/{id}/priority      Experiment; body
//       SetPriorityRequest JSON ({"priority": 3})
//   POST /api/v1/experiments/{id}/extend        ExtendResponse; body
//       ExtendRequest JSON ({"addSeeds": 2} or {"schedules": [...]})
//   POST /api/v1/plan                           SubmitResponse of a dry run;
//       body: the spec as textproto
//   POST /api/v1/submit                         SubmitResponse; body: the
//       spec as textproto
//       (each the ExperimentService call of that name with the caller, so
//       the same rules: the owner or an admin, a user or admin role)
//
// Every response carries a Content-Security-Policy (scripts, styles and
// connections from this origin only, no inline script, frame-ancestors
// 'none'), X-Content-Type-Options: nosniff, X-Frame-Options: DENY and
// Referrer-Policy: no-referrer; every /api/ answer Cache-Control: no-store.
// The POST routes change state, so they answer only a request from the
// dashboard's own origin or from no browser: Origin, else Sec-Fetch-Site,
// else Referer must name this server's Host, and a request with none of them
// must carry an Authorization header (a cookie alone is what a cross-site
// page could make a browser send). Else 403, with nothing changed.
//
// API routes need `Authorization: Bearer <token>` or a `prism_token` cookie
// (any role for the GETs, a user or admin for the POSTs, 403 otherwise);
// otherwise 401. Over TLS (tls_cert_file and tls_key_file
// set: HTTPS only, a plaintext request gets no answer) a whoami authenticated
// by the header answers with the cookie, `Secure; HttpOnly; SameSite=Strict`,
// so no script can read it; over plain HTTP the dashboard sets it itself.
// Errors are JSON {"error": "..."} with 400 (bad input), 401, 403, 404 (unknown
// route or id), 413 (a body), 429 (over a per-caller limit) or 500/503.
//
// Every open event stream holds one of the pool's threads, and a stream only
// learns that its client left when a write fails (the second write after the
// client closed: the first still lands in the socket buffer). So streams
// write at least every keepalive_seconds, which frees a closed stream's
// thread within about twice that, and at most max_event_streams may be open
// at once, which keeps the rest of the pool for API calls.
//
// Requests are read by the bounded reader (server/http/http_connection.h), not
// by httplib: a request line over max_line_bytes (414), a head over
// max_head_bytes (431), a body over max_request_body_bytes (413; a spec
// for /api/v1/submit must fit) or a Transfer-Encoding (411) is answered and the
// connection closed without reading the rest; a head and body must arrive
// within header_timeout_ms (408). One peer address may hold
// max_connections_per_peer connections, the server max_threads (503).
//
// Thread-safety: requests are served concurrently on the server's pool.
#ifndef PRISM_SERVER_HTTP_HTTP_SERVER_H_
#define PRISM_SERVER_HTTP_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/core/auth/auth.h"
#include "server/core/experiments/experiments.h"
#include "server/core/experiments/results.h"
#include "server/core/infra/events.h"
#include "server/core/infra/metrics.h"
#include "server/core/infra/read_gate.h"
#include "server/core/infra/storage_health.h"
#include "server/core/queue/queue.h"
#include "server/http/http_api.h"
#include "server/http/http_head.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace prism::server {

inline constexpr int kDefaultHttpThreads = 32;
inline constexpr int kDefaultMaxHttpThreads = 512;
inline constexpr int kDefaultMaxEventStreams = kDefaultHttpThreads / 2;

struct HttpOptions {
  std::string web_root;  // directory with index.html and static/; "" = none
  // Each kept-alive connection and each event stream holds one thread.
  int threads = kDefaultHttpThreads;
  // Connections served at once: a thread each beyond `threads` while none
  // is idle (slow clients cannot starve the rest below this). Past it a
  // connection waits in a short backlog, then is closed unanswered.
  int max_threads = kDefaultMaxHttpThreads;
  // Connections one peer address may hold open (503 past it).
  int max_connections_per_peer = 64;
  // Bounds on a request read before httplib parses it
  // (server/http/http_connection.h): a line, the whole head, and the time its
  // head and body may take to arrive.
  int64_t max_line_bytes = kDefaultMaxHttpLineBytes;
  int64_t max_head_bytes = kDefaultMaxHttpHeadBytes;
  int header_timeout_ms = 10000;
  int keepalive_seconds = 1;  // event streams' longest silence
  int max_event_streams = kDefaultMaxEventStreams;
  int max_event_streams_per_user = 4;
  int64_t max_stream_buffer_bytes = int64_t{16} << 20;
  int64_t max_request_body_bytes = int64_t{64} << 10;
  bool metrics_open = false;  // serve /metrics without a token
  // PEM certificate (chain) and private key files: HTTPS instead of HTTP.
  // The coordinator checked them (proto/tls.h); Bind fails if they do not
  // load.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class HttpServer {
 public:
  using GaugeSampler = std::function<Metrics::Snapshot()>;

  // `reads` gates the JSON API's answers like the gRPC reads (read_gate.h).
  HttpServer(AuthManager* auth, ExperimentManager* experiments,
             ResultsManager* results, QueueManager* queue, EventBus* events,
             ReadGate* reads, Metrics* metrics, GaugeSampler gauges,
             const StorageHealth* health, HttpOptions options);
  // HttpServer (probes only) serves a coordinator whose database cannot be
  // opened yet (a start on a full disk): /healthz, /readyz from `health`,
  // /metrics without a token (only what `gauges` samples: the storage
  // state, no more than /readyz tells anyone), and 503 with the readiness
  // cause for every other path. Stop it before the full server binds its
  // port.
  HttpServer(Metrics* metrics, GaugeSampler gauges, const StorageHealth* health,
             HttpOptions options);
  ~HttpServer();

  // Bind listens on host:port (port 0 picks a free one) and returns the
  // port. Unavailable when it cannot bind; InvalidArgument when the TLS
  // files do not load.
  absl::StatusOr<int> Bind(const std::string& host, int port);
  // Start serves on a background thread (after Bind) and returns once the
  // server accepts connections, so a Stop right after it is never missed.
  void Start();
  // Stop ends event streams and stops serving; idempotent.
  void Stop();

 private:
  void Route();
  bool tls() const { return !options_.tls_cert_file.empty(); }
  bool probes_only() const { return auth_ == nullptr; }
  // Answer renders a parsed API call's JSON answer.
  absl::StatusOr<std::string> Answer(const ApiRequest& request,
                                     const Caller& caller);
  // Act performs a state-changing call as `caller` and renders its answer.
  absl::StatusOr<std::string> Act(const ActionRequest& action,
                                  const Caller& caller);
  void ServeEvents(const httplib::Request& req, httplib::Response& res);

  AuthManager* const auth_;
  ExperimentManager* const experiments_;
  ResultsManager* const results_;
  QueueManager* const queue_;
  EventBus* const events_;
  ReadGate* const reads_;
  Metrics* const metrics_;
  const GaugeSampler gauges_;
  const StorageHealth* const health_;
  const HttpOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> listen_returned_{false};
  StreamSlots event_slots_;  // open event streams
};

}  // namespace prism::server

#endif  // PRISM_SERVER_HTTP_HTTP_SERVER_H_
