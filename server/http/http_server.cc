#include "server/http/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "base/json.h"
#include "base/log.h"
#include "google/protobuf/util/json_util.h"
#include "server/http/http_connection.h"

namespace prism::server {
namespace {

constexpr char kJson[] = "application/json";
constexpr char kTokenCookie[] = "prism_token";

std::string ErrorJson(absl::string_view message) {
  return absl::StrCat("{\"error\": ", JsonString(message), "}");
}

int HttpStatusFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:  // e.g. no read slot in time
      return 503;
    default:
      return 500;
  }
}

void WriteError(httplib::Response& res, const absl::Status& status) {
  res.status = HttpStatusFor(status);
  res.set_content(ErrorJson(status.message()), kJson);
}

template <typename M>
absl::StatusOr<std::string> ToJson(absl::StatusOr<M> message) {
  if (!message.ok()) return message.status();
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(*message, &out);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot render JSON: ", std::string(status.message())));
  }
  return out;
}

std::string CookieValue(const httplib::Request& req, absl::string_view name) {
  const std::string header = req.get_header_value("Cookie");
  for (absl::string_view part : absl::StrSplit(header, ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, name) && absl::ConsumePrefix(&part, "=")) {
      return std::string(part);
    }
  }
  return "";
}

// SessionCookie is the Set-Cookie value that gives (or, for "", expires)
// the token cookie over TLS; "" when the token holds characters a cookie
// cannot (it then travels in the header only).
std::string SessionCookie(absl::string_view token) {
  for (char c : token) {
    if (c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' ||
        c == '\\') {
      return "";
    }
  }
  return absl::StrCat(kTokenCookie, "=", token,
                      token.empty() ? "; Max-Age=0" : "",
                      "; Path=/; Secure; HttpOnly; SameSite=Strict");
}

// AuthenticateRequest checks the Authorization header, or else the token
// cookie the dashboard sets; failures count against the remote address.
absl::StatusOr<Caller> AuthenticateRequest(AuthManager* auth,
                                           const httplib::Request& req) {
  const std::string header = req.get_header_value("Authorization");
  const std::string cookie = CookieValue(req, kTokenCookie);
  const std::string peer = PeerHost(req.remote_addr);
  return header.empty() && !cookie.empty()
             ? auth->AuthenticateToken(cookie, peer)
             : auth->Authenticate(header, peer);
}

// kSecurityHeaders go on every response. The dashboard loads scripts, styles
// and data from its own origin only (its pages set styles through the CSSOM,
// which style-src does not govern; the favicon is a data: URL), and no other
// origin may frame it (frame-ancestors; X-Frame-Options for older browsers).
constexpr std::pair<const char*, const char*> kSecurityHeaders[] = {
    {"Content-Security-Policy",
     "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' "
     "data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; "
     "base-uri 'none'; form-action 'self'"},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "DENY"},
    {"Referrer-Policy", "no-referrer"},
};

// AuthorityOf returns the host[:port] of an origin or URL
// ("https://a.example:8443/x" -> "a.example:8443"), lowercased; "" when it
// has no scheme.
std::string AuthorityOf(absl::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == absl::string_view::npos) return "";
  absl::string_view rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  return absl::AsciiStrToLower(rest);
}

// CheckSameOrigin is OK for a state-changing request that comes from the
// dashboard's own origin, or from no browser at all. Browsers name the
// requesting page's origin in Origin on every POST, and in Sec-Fetch-Site;
// a cross-site page can set neither, nor an Authorization header (that
// needs a CORS preflight this server never answers). So: Origin, when sent,
// must name the request's own Host (scheme aside, so a TLS-terminating proxy
// that keeps Host works); else Sec-Fetch-Site, when sent, must be
// same-origin; else Referer, when sent, must be on the own Host; and a
// request with none of the three must carry its token in Authorization (a
// script or curl; a cookie alone does not do). PermissionDenied otherwise.
absl::Status CheckSameOrigin(const httplib::Request& req) {
  const std::string host = absl::AsciiStrToLower(req.get_header_value("Host"));
  const auto refuse = [&](absl::string_view why) {
    return absl::PermissionDeniedError(
        absl::StrCat("cross-origin request refused: ", why, " (this server is ",
                     host.empty() ? "unnamed: no Host header" : host, ")"));
  };
  if (req.has_header("Origin")) {
    const std::string origin = req.get_header_value("Origin");
    if (host.empty() || AuthorityOf(origin) != host) {
      return refuse(absl::StrCat("Origin is ", origin));
    }
    return absl::OkStatus();
  }
  if (req.has_header("Sec-Fetch-Site")) {
    const std::string site = req.get_header_value("Sec-Fetch-Site");
    if (site != "same-origin") {
      return refuse(absl::StrCat("Sec-Fetch-Site is ", site));
    }
    return absl::OkStatus();
  }
  if (req.has_header("Referer")) {
    const std::string referer = req.get_header_value("Referer");
    if (host.empty() || AuthorityOf(referer) != host) {
      return refuse(absl::StrCat("Referer is ", referer));
    }
    return absl::OkStatus();
  }
  if (!req.has_header("Authorization")) {
    return refuse(
        "no Origin, Sec-Fetch-Site or Referer names this server, and no "
        "Authorization header");
  }
  return absl::OkStatus();
}

// RouteLabel keeps /metrics cardinality bounded: ids become {id}.
std::string RouteLabel(const std::string& path) {
  if (absl::StartsWith(path, "/static/")) return "/static";
  std::vector<std::string> parts = absl::StrSplit(path, '/');
  for (std::string& p : parts) {
    int64_t n;
    if (!p.empty() && absl::SimpleAtoi(p, &n)) p = "{id}";
  }
  std::string label = absl::StrJoin(parts, "/");
  static const char* kKnown[] = {"/",
                                 "/metrics",
                                 "/healthz",
                                 "/readyz",
                                 "/api/v1/whoami",
                                 "/api/v1/experiments",
                                 "/api/v1/experiments/{id}",
                                 "/api/v1/experiments/{id}/rank",
                                 "/api/v1/experiments/{id}/trials",
                                 "/api/v1/experiments/{id}/suggest",
                                 "/api/v1/experiments/{id}/ladder",
                                 "/api/v1/experiments/{id}/compare",
                                 "/api/v1/experiments/{id}/delete",
                                 "/api/v1/experiments/{id}/cancel",
                                 "/api/v1/experiments/{id}/pause",
                                 "/api/v1/experiments/{id}/resume",
                                 "/api/v1/experiments/{id}/priority",
                                 "/api/v1/experiments/{id}/extend",
                                 "/api/v1/plan",
                                 "/api/v1/submit",
                                 "/api/v1/trials/{id}",
                                 "/api/v1/workers",
                                 "/api/v1/events",
                                 "/api/v1/logout"};
  for (const char* known : kKnown) {
    if (label == known) return label;
  }
  return "other";
}

// GrowingPool is the HTTP server's connection pool: `threads` wait for
// connections, and while none is idle a new connection gets a thread of its
// own, up to `max_threads` (then it waits in line, at most kBacklog of
// them: past that the accepting thread closes it at once). A client
// dripping a header byte at a time holds its thread until the header
// timeout (http_connection.h): with a fixed pool, a few dozen such clients
// left nothing for the dashboard.
class GrowingPool final : public httplib::TaskQueue {
 public:
  static constexpr int kBacklog = 64;

  GrowingPool(int threads, int max_threads) : max_threads_(max_threads) {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < threads; ++i) Spawn();
  }
  ~GrowingPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    absl::MutexLock lock(&mu_);
    if (static_cast<int>(threads_.size()) >= max_threads_ &&
        static_cast<int>(jobs_.size()) >= idle_ + kBacklog) {
      RefuseConnectionsOnThisThread(true);
      fn();
      RefuseConnectionsOnThisThread(false);
      return;
    }
    jobs_.push_back(std::move(fn));
    if (idle_ < static_cast<int>(jobs_.size()) &&
        static_cast<int>(threads_.size()) < max_threads_) {
      Spawn();
    }
  }

  void shutdown() override {
    std::vector<std::thread> threads;
    {
      absl::MutexLock lock(&mu_);
      shutting_down_ = true;
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
  }

 private:
  void Spawn() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    threads_.emplace_back([this] { Work(); });
  }
  bool HasJobOrShuttingDown() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !jobs_.empty() || shutting_down_;
  }
  void Work() {
    while (true) {
      std::function<void()> job;
      {
        absl::MutexLock lock(&mu_);
        ++idle_;
        mu_.Await(absl::Condition(this, &GrowingPool::HasJobOrShuttingDown));
        --idle_;
        if (jobs_.empty()) return;  // shutting down, and drained
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  const int max_threads_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

// SseStream buffers one event-stream client's rounds between the bus
// (producer) and the HTTP thread writing them (consumer): the bus's shared
// rounds, in an EventBuffer; a client further behind is cut off.
class SseStream {
 public:
  explicit SseStream(int64_t max_bytes) : pending_(max_bytes) {}
  void Push(const SharedRound& r) {
    absl::MutexLock lock(&mu_);
    if (r.round == nullptr || !pending_.Push(r)) closed_ = true;
  }
  // Wait returns what arrived within `timeout`; false once closed and empty.
  bool Wait(absl::Duration timeout, std::vector<SharedRound>* out) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(this, &SseStream::Ready), timeout);
    out->clear();
    while (!pending_.empty()) out->push_back(pending_.Pop());
    return !(closed_ && out->empty());
  }
  int64_t subscription = 0;

 private:
  bool Ready() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || !pending_.empty();
  }
  absl::Mutex mu_;
  EventBuffer pending_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

HttpConnectionLimits ConnectionLimitsFor(const HttpOptions& o) {
  HttpConnectionLimits limits;
  limits.head.max_line_bytes = o.max_line_bytes;
  limits.head.max_head_bytes = o.max_head_bytes;
  limits.head.max_body_bytes = o.max_request_body_bytes;
  limits.max_connections = std::max(o.threads, o.max_threads);
  limits.max_connections_per_peer = o.max_connections_per_peer;
  limits.header_timeout_ms = o.header_timeout_ms;
  return limits;
}

// MakeServer builds the bounded server (HTTPS with the TLS files set); the
// requests its reader refuses count in /metrics as route "refused".
std::unique_ptr<httplib::Server> MakeServer(const HttpOptions& o,
                                            Metrics* metrics) {
  RefusalCounter refused = [metrics](int status) {
    metrics->CountHttp("refused", status);
  };
  if (o.tls_cert_file.empty()) {
    return std::make_unique<BoundedHttpServer>(ConnectionLimitsFor(o),
                                               std::move(refused));
  }
  return std::make_unique<BoundedHttpsServer>(
      o.tls_cert_file.c_str(), o.tls_key_file.c_str(), ConnectionLimitsFor(o),
      std::move(refused));
}

}  // namespace

HttpServer::HttpServer(AuthManager* auth, ExperimentManager* experiments,
                       ResultsManager* results, QueueManager* queue,
                       EventBus* events, ReadGate* reads, Metrics* metrics,
                       GaugeSampler gauges, const StorageHealth* health,
                       HttpOptions options)
    : auth_(auth),
      experiments_(experiments),
      results_(results),
      queue_(queue),
      events_(events),
      reads_(reads),
      metrics_(metrics),
      gauges_(std::move(gauges)),
      health_(health),
      options_(std::move(options)),
      server_(MakeServer(options_, metrics)),
      event_slots_(options_.max_event_streams, "max-event-streams",
                   options_.max_event_streams_per_user,
                   "max-event-streams-per-user") {
  const int threads = options_.threads;
  const int max_threads = std::max(options_.threads, options_.max_threads);
  // The bounded reader refused longer bodies already; this is a second
  // fence.
  server_->set_payload_max_length(options_.max_request_body_bytes);
  server_->new_task_queue = [threads, max_threads] {
    return new GrowingPool(threads, max_threads);
  };
  // Without TCP_NODELAY a response's second write waits for the client's
  // delayed ACK: ~40 ms per request on a kept-alive connection, which the
  // dashboard's page loads paid for every asset and API call.
  server_->set_tcp_nodelay(true);
  // Debian's cpp-httplib compresses with Brotli at quality 11 whenever the
  // client accepts it, and browsers always do: ~1 s for the dashboard's
  // 145 KB chart library on this 2-core VM, against a few ms for gzip. Offer
  // browsers gzip only. (httplib passes its own mutable request as const.)
  httplib::Headers security;
  for (const auto& [name, value] : kSecurityHeaders) {
    security.emplace(name, value);
  }
  server_->set_default_headers(std::move(security));
  server_->set_pre_routing_handler(
      [](const httplib::Request& req, httplib::Response& res) {
        // API answers are per-user and change: no cache may keep them.
        if (absl::StartsWith(req.path, "/api/")) {
          res.set_header("Cache-Control", "no-store");
        }
        auto& headers = const_cast<httplib::Headers&>(req.headers);
        auto accept = headers.find("Accept-Encoding");
        if (accept != headers.end()) {
          std::vector<absl::string_view> kept;
          for (absl::string_view coding : absl::StrSplit(accept->second, ',')) {
            if (!absl::StartsWith(absl::StripAsciiWhitespace(coding), "br")) {
              kept.push_back(coding);
            }
          }
          accept->second = absl::StrJoin(kept, ",");
        }
        return httplib::Server::HandlerResponse::Unhandled;
      });
  Route();
}

HttpServer::HttpServer(Metrics* metrics, GaugeSampler gauges,
                       const StorageHealth* health, HttpOptions options)
    : HttpServer(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, metrics,
                 std::move(gauges), health, std::move(options)) {}

HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<int> HttpServer::Bind(const std::string& host, int port) {
  if (!server_->is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot serve HTTPS with --tls-cert ", options_.tls_cert_file,
        " and --tls-key ", options_.tls_key_file));
  }
  if (port == 0) {
    const int bound = server_->bind_to_any_port(host);
    if (bound < 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen for HTTP on ", host, ":0"));
    }
    return bound;
  }
  if (!server_->bind_to_port(host, port)) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for HTTP on ", host, ":", port));
  }
  return port;
}

void HttpServer::Start() {
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    listen_returned_ = true;
  });
  // httplib's stop() does nothing until the listen loop runs: a Stop soon
  // after Start would miss it and then wait forever on accept(). Return only
  // once the loop runs (or already gave up).
  while (!server_->is_running() && !listen_returned_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) return;
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

void HttpServer::Route() {
  httplib::Server& s = *server_;
  s.set_logger(
      [this](const httplib::Request& req, const httplib::Response& res) {
        metrics_->CountHttp(RouteLabel(req.path), res.status);
        if (LogEnabled(LogLevel::kDebug)) {
          Log(LogLevel::kDebug, "http")
              .Kv("method", req.method)
              .Kv("path", req.path)
              .Kv("status", res.status);
        }
      });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain; charset=utf-8");
  });
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    absl::Status ready = health_->Ready();
    if (!ready.ok()) {
      res.status = 503;
      res.set_content(absl::StrCat("not ready: ", ready.message(), "\n"),
                      "text/plain; charset=utf-8");
      return;
    }
    res.set_content("ok\n", "text/plain; charset=utf-8");
  });

  if (probes_only()) {
    // No database yet: nothing to check a token against. The storage
    // gauges say no more than /readyz tells anyone.
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_->Render(gauges_()),
                      "text/plain; version=0.0.4; charset=utf-8");
    });
    const auto not_open = [this](const httplib::Request&,
                                 httplib::Response& res) {
      WriteError(res, absl::UnavailableError(
                          absl::StrCat("the coordinator is not serving yet: ",
                                       health_->Ready().message())));
    };
    s.Get(".*", not_open);
    s.Post(".*", not_open);
    return;
  }
  s.Get("/api/v1/events",
        [this](const httplib::Request& req, httplib::Response& res) {
          ServeEvents(req, res);
        });
  // Every other API route: an unknown path is 404 before authentication
  // (header or cookie); a malformed query is 400 after it.
  s.Get(R"(/api/v1/.*)", [this](const httplib::Request& req,
                                httplib::Response& res) {
    const absl::StatusOr<ApiRequest> request =
        ParseApiRequest(req.path, req.params);
    if (absl::IsNotFound(request.status())) {
      return WriteError(res, request.status());
    }
    absl::StatusOr<Caller> caller = AuthenticateRequest(auth_, req);
    absl::Status allowed =
        caller.ok() ? Authorize(*caller, Permission::kRead) : caller.status();
    if (!allowed.ok()) return WriteError(res, allowed);
    if (!request.ok()) return WriteError(res, request.status());
    absl::StatusOr<std::string> body;
    const absl::Status read =
        reads_->Run(absl::Now() + absl::Minutes(1), [&]() -> absl::Status {
          body = Answer(*request, *caller);
          return body.status();
        });
    if (!read.ok()) return WriteError(res, read);
    const std::string header = req.get_header_value("Authorization");
    absl::string_view bearer = header;
    if (tls() && std::holds_alternative<v1::WhoAmIRequest>(*request) &&
        absl::ConsumePrefix(&bearer, "Bearer ")) {
      if (std::string cookie = SessionCookie(bearer); !cookie.empty()) {
        res.set_header("Set-Cookie", cookie);
      }
    }
    res.set_content(*body, kJson);
  });
  s.Post("/api/v1/logout",
         [this](const httplib::Request& req, httplib::Response& res) {
           if (absl::Status same = CheckSameOrigin(req); !same.ok()) {
             return WriteError(res, same);
           }
           res.status = 204;
           res.set_header("Set-Cookie", tls() ? SessionCookie("")
                                              : absl::StrCat(kTokenCookie,
                                                             "=; Path=/; "
                                                             "Max-Age=0"));
         });
  // Every state-changing route but logout: an unknown path is 404 first;
  // then the origin check, then authentication, then a malformed body is
  // 400. The managers apply the same owner-or-admin rule as the RPCs.
  s.Post(R"(/api/v1/.*)", [this](const httplib::Request& req,
                                 httplib::Response& res) {
    const absl::StatusOr<ActionRequest> action =
        ParseActionRequest(req.path, req.body);
    if (absl::IsNotFound(action.status())) {
      return WriteError(res, action.status());
    }
    if (absl::Status same = CheckSameOrigin(req); !same.ok()) {
      return WriteError(res, same);
    }
    absl::StatusOr<Caller> caller = AuthenticateRequest(auth_, req);
    absl::Status allowed =
        caller.ok() ? Authorize(*caller, Permission::kSubmit) : caller.status();
    if (!allowed.ok()) return WriteError(res, allowed);
    if (!action.ok()) return WriteError(res, action.status());
    absl::StatusOr<std::string> body = Act(*action, *caller);
    if (!body.ok()) return WriteError(res, body.status());
    res.set_content(*body, kJson);
  });

  s.Get("/metrics", [this](const httplib::Request& req,
                           httplib::Response& res) {
    if (!options_.metrics_open) {
      absl::StatusOr<Caller> caller = AuthenticateRequest(auth_, req);
      absl::Status allowed =
          caller.ok() ? Authorize(*caller, Permission::kRead) : caller.status();
      if (!allowed.ok()) return WriteError(res, allowed);
    }
    res.set_content(metrics_->Render(gauges_()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  const std::string web_root = options_.web_root;
  s.Get("/", [web_root](const httplib::Request&, httplib::Response& res) {
    std::ifstream in(web_root + "/index.html", std::ios::binary);
    if (web_root.empty() || !in) {
      return WriteError(
          res, absl::NotFoundError("the dashboard's assets were not found "
                                   "(start the coordinator with --web-root)"));
    }
    std::stringstream body;
    body << in.rdbuf();
    res.set_content(body.str(), "text/html; charset=utf-8");
  });
  if (!web_root.empty()) s.set_mount_point("/static", web_root + "/static");

  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    res.set_content(
        ErrorJson(res.status == 404 ? absl::StrCat("no such path: ", req.path)
                                    : absl::StrCat("HTTP ", res.status)),
        kJson);
  });
}

absl::StatusOr<std::string> HttpServer::Answer(const ApiRequest& request,
                                               const Caller& caller) {
  return std::visit(
      [&](const auto& r) -> absl::StatusOr<std::string> {
        using R = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<R, v1::WhoAmIRequest>) {
          return ToJson(absl::StatusOr<v1::WhoAmIResponse>(WhoAmIFor(caller)));
        } else if constexpr (std::is_same_v<R, v1::ListExperimentsRequest>) {
          return ToJson(experiments_->List(r));
        } else if constexpr (std::is_same_v<R, v1::GetExperimentRequest>) {
          return ToJson(experiments_->Get(r.id()));
        } else if constexpr (std::is_same_v<R, v1::RankRequest>) {
          return ToJson(results_->Rank(r));
        } else if constexpr (std::is_same_v<R, v1::ListTrialsRequest>) {
          return ToJson(experiments_->ListTrials(r));
        } else if constexpr (std::is_same_v<R, v1::GetTrialRequest>) {
          return ToJson(results_->GetTrial(r));
        } else if constexpr (std::is_same_v<R, v1::ListWorkersRequest>) {
          return ToJson(queue_->ListWorkers());
        } else if constexpr (std::is_same_v<R, v1::SuggestRequest>) {
          return ToJson(results_->Suggest(r));
        } else if constexpr (std::is_same_v<R, v1::LadderTransferRequest>) {
          return ToJson(results_->LadderTransfer(r));
        } else if constexpr (std::is_same_v<R, v1::CompareRequest>) {
          return ToJson(results_->Compare(r));
        } else {
          // Event streams are served by ServeEvents, not as one answer.
          return absl::NotFoundError("an event stream is not a JSON answer");
        }
      },
      request);
}

absl::StatusOr<std::string> HttpServer::Act(const ActionRequest& action,
                                            const Caller& caller) {
  return std::visit(
      [&](const auto& r) -> absl::StatusOr<std::string> {
        using R = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<R, ExperimentAction>) {
          switch (r.verb) {
            case ExperimentAction::Verb::kCancel:
              return ToJson(experiments_->Cancel(caller, r.id));
            case ExperimentAction::Verb::kPause:
              return ToJson(experiments_->Pause(caller, r.id));
            case ExperimentAction::Verb::kResume:
              return ToJson(experiments_->Resume(caller, r.id));
            case ExperimentAction::Verb::kDelete:
              return ToJson(experiments_->Delete(caller, r.id));
          }
          return absl::InternalError("unknown experiment action");
        } else if constexpr (std::is_same_v<R, v1::SetPriorityRequest>) {
          return ToJson(experiments_->SetPriority(caller, r));
        } else if constexpr (std::is_same_v<R, v1::SubmitRequest>) {
          return ToJson(experiments_->Submit(caller, r));
        } else {
          static_assert(std::is_same_v<R, v1::ExtendRequest>);
          return ToJson(experiments_->Extend(caller, r));
        }
      },
      action);
}

void HttpServer::ServeEvents(const httplib::Request& req,
                             httplib::Response& res) {
  absl::StatusOr<Caller> caller = AuthenticateRequest(auth_, req);
  if (!caller.ok()) return WriteError(res, caller.status());
  absl::StatusOr<ApiRequest> request = ParseApiRequest(req.path, req.params);
  if (!request.ok()) return WriteError(res, request.status());
  const int64_t id = std::get<EventStreamRequest>(*request).experiment_id;
  absl::StatusOr<v1::Experiment> experiment = experiments_->Get(id);
  if (!experiment.ok()) return WriteError(res, experiment.status());
  // The slot is given back by the content provider's releaser below, which
  // httplib runs when the response ends, however it ends.
  if (absl::Status slot = event_slots_.Acquire(caller->user); !slot.ok()) {
    res.set_header("Retry-After", "5");
    return WriteError(res, slot);
  }

  auto stream = std::make_shared<SseStream>(options_.max_stream_buffer_bytes);
  v1::WatchResponse first;
  v1::ExperimentEvent* now = first.add_events();
  now->set_unix_ms(experiment->updated_unix_ms());
  *now->mutable_experiment_updated() = *std::move(experiment);
  stream->Push(SharedRound::Of(std::move(first)));
  stream->subscription = events_->Subscribe(
      id, [stream](const SharedRound& r) { stream->Push(r); });

  res.set_header("X-Accel-Buffering", "no");
  const auto keepalive = absl::Seconds(options_.keepalive_seconds);
  auto last_write = std::make_shared<absl::Time>(absl::Now());
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, stream, keepalive, last_write](size_t, httplib::DataSink& sink) {
        std::vector<SharedRound> rounds;
        // Short waits so Stop() is noticed promptly.
        const bool open =
            stream->Wait(std::min(keepalive, absl::Seconds(1)), &rounds);
        if (stopping_) {
          sink.done();
          return true;
        }
        std::string chunk;
        for (const SharedRound& r : rounds) {
          for (const v1::ExperimentEvent& e : r.round->events()) {
            std::string json;
            if (google::protobuf::util::MessageToJsonString(e, &json).ok()) {
              absl::StrAppend(&chunk, "data: ", json, "\n\n");
            }
          }
        }
        if (chunk.empty() && absl::Now() - *last_write >= keepalive) {
          chunk = ": keep-alive\n\n";
        }
        if (!chunk.empty()) {
          // A failed write means the client left: end the stream and free
          // its thread.
          if (!sink.write(chunk.data(), chunk.size())) return false;
          *last_write = absl::Now();
        }
        if (!open) sink.done();
        return true;
      },
      [this, stream, user = caller->user](bool) {
        events_->Unsubscribe(stream->subscription);
        event_slots_.Release(user);
      });
}

}  // namespace prism::server
