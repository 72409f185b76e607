#include "server/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>
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
#include "base/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "proto/enum_names.h"
#include "scheduler/principles.h"
#include "server/convert.h"

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

absl::StatusOr<int64_t> PathId(const httplib::Request& req, const char* what) {
  int64_t id = 0;
  const std::string text = req.matches.size() > 1 ? req.matches[1].str() : "";
  if (!absl::SimpleAtoi(text, &id) || id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " id '", text, "' is not a positive integer"));
  }
  return id;
}

absl::StatusOr<int> IntParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return 0;
  int value = 0;
  const std::string text = req.get_param_value(name);
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", text, "' is not an integer"));
  }
  return value;
}

bool BoolParam(const httplib::Request& req, const char* name) {
  const std::string v = absl::AsciiStrToLower(req.get_param_value(name));
  return v == "1" || v == "true" || v == "yes";
}

// ParseSort and ParseState read optional query parameters: empty is the
// default (UNSPECIFIED), anything else must name a value.
absl::StatusOr<v1::RankSort> ParseSort(absl::string_view text) {
  if (text.empty()) return v1::RANK_SORT_UNSPECIFIED;
  return ParseEnumValue<v1::RankSort>(text, "sort");
}

absl::StatusOr<v1::TrialState> ParseState(absl::string_view text) {
  if (text.empty()) return v1::TRIAL_STATE_UNSPECIFIED;
  return ParseEnumValue<v1::TrialState>(text, "state");
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
                                 "/api/v1/whoami",
                                 "/api/v1/experiments",
                                 "/api/v1/experiments/{id}",
                                 "/api/v1/experiments/{id}/rank",
                                 "/api/v1/experiments/{id}/trials",
                                 "/api/v1/trials/{id}",
                                 "/api/v1/workers",
                                 "/api/v1/events"};
  for (const char* known : kKnown) {
    if (label == known) return label;
  }
  return "other";
}

// SseStream buffers one event-stream client's events between the bus
// (producer) and the HTTP thread writing them (consumer): the bus's shared
// events, in an EventBuffer; a client further behind is cut off.
class SseStream {
 public:
  explicit SseStream(int64_t max_bytes) : pending_(max_bytes) {}
  void Push(const SharedEvent& e) {
    absl::MutexLock lock(&mu_);
    if (e.event == nullptr || !pending_.Push(e)) closed_ = true;
  }
  // Wait returns what arrived within `timeout`; false once closed and empty.
  bool Wait(absl::Duration timeout, std::vector<SharedEvent>* out) {
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

}  // namespace

HttpServer::HttpServer(AuthManager* auth, ExperimentManager* experiments,
                       ResultsManager* results, QueueManager* queue,
                       EventBus* events, Metrics* metrics, GaugeSampler gauges,
                       HttpOptions options)
    : auth_(auth),
      experiments_(experiments),
      results_(results),
      queue_(queue),
      events_(events),
      metrics_(metrics),
      gauges_(std::move(gauges)),
      options_(std::move(options)),
      server_(std::make_unique<httplib::Server>()),
      event_slots_(options_.max_event_streams, "max-event-streams",
                   options_.max_event_streams_per_user,
                   "max-event-streams-per-user") {
  const int threads = options_.threads;
  // Every route is a GET: a request body beyond this is refused with 413
  // before it is read.
  server_->set_payload_max_length(options_.max_request_body_bytes);
  server_->new_task_queue = [threads] {
    return new httplib::ThreadPool(threads);
  };
  // Without TCP_NODELAY a response's second write waits for the client's
  // delayed ACK: ~40 ms per request on a kept-alive connection, which the
  // dashboard's page loads paid for every asset and API call.
  server_->set_tcp_nodelay(true);
  // Debian's cpp-httplib compresses with Brotli at quality 11 whenever the
  // client accepts it, and browsers always do: ~1 s for the dashboard's
  // 145 KB chart library on this 2-core VM, against a few ms for gzip. Offer
  // browsers gzip only. (httplib passes its own mutable request as const.)
  server_->set_pre_routing_handler(
      [](const httplib::Request& req, httplib::Response&) {
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

HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<int> HttpServer::Bind(const std::string& host, int port) {
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
  using Handler = std::function<absl::StatusOr<std::string>(
      const httplib::Request&, const Caller&)>;
  // api wraps a read-only JSON route: authenticate (header or cookie), then
  // answer the handler's JSON or a JSON error.
  auto api = [this, &s](const char* pattern, Handler handler) {
    s.Get(pattern, [this, handler](const httplib::Request& req,
                                   httplib::Response& res) {
      const std::string header = req.get_header_value("Authorization");
      const std::string cookie = CookieValue(req, kTokenCookie);
      absl::StatusOr<Caller> caller = header.empty() && !cookie.empty()
                                          ? auth_->AuthenticateToken(cookie)
                                          : auth_->Authenticate(header);
      absl::Status allowed =
          caller.ok() ? Authorize(*caller, Permission::kRead) : caller.status();
      if (!allowed.ok()) return WriteError(res, allowed);
      absl::StatusOr<std::string> body = handler(req, *caller);
      if (!body.ok()) return WriteError(res, body.status());
      res.set_content(*body, kJson);
    });
  };

  api("/api/v1/whoami", [](const httplib::Request&, const Caller& caller) {
    return ToJson(absl::StatusOr<v1::WhoAmIResponse>(WhoAmIFor(caller)));
  });
  api("/api/v1/experiments",
      [this](const httplib::Request& req,
             const Caller&) -> absl::StatusOr<std::string> {
        v1::ListExperimentsRequest r;
        r.set_owner(req.get_param_value("owner"));
        PRISM_ASSIGN_OR_RETURN(int size, IntParam(req, "page_size"));
        r.set_page_size(size);
        r.set_page_token(req.get_param_value("page_token"));
        return ToJson(experiments_->List(r));
      });
  api(R"(/api/v1/experiments/([^/]+))",
      [this](const httplib::Request& req,
             const Caller&) -> absl::StatusOr<std::string> {
        PRISM_ASSIGN_OR_RETURN(int64_t id, PathId(req, "experiment"));
        return ToJson(experiments_->Get(id));
      });
  api(R"(/api/v1/experiments/([^/]+)/rank)",
      [this](const httplib::Request& req,
             const Caller&) -> absl::StatusOr<std::string> {
        v1::RankRequest r;
        PRISM_ASSIGN_OR_RETURN(int64_t id, PathId(req, "experiment"));
        r.set_experiment_id(id);
        const std::string require = req.get_param_value("require");
        if (!require.empty()) {
          PRISM_ASSIGN_OR_RETURN(PrincipleSet set, ParsePrinciples(require));
          for (Principle p : kAllPrinciples) {
            if (set.Has(p)) r.add_require(PrincipleToProto(p));
          }
        }
        PRISM_ASSIGN_OR_RETURN(v1::RankSort sort,
                               ParseSort(req.get_param_value("sort")));
        r.set_sort(sort);
        r.set_descending(BoolParam(req, "descending"));
        PRISM_ASSIGN_OR_RETURN(int size, IntParam(req, "page_size"));
        r.set_page_size(size);
        r.set_page_token(req.get_param_value("page_token"));
        return ToJson(results_->Rank(r));
      });
  api(R"(/api/v1/experiments/([^/]+)/trials)",
      [this](const httplib::Request& req,
             const Caller&) -> absl::StatusOr<std::string> {
        v1::ListTrialsRequest r;
        PRISM_ASSIGN_OR_RETURN(int64_t id, PathId(req, "experiment"));
        r.set_experiment_id(id);
        PRISM_ASSIGN_OR_RETURN(v1::TrialState state,
                               ParseState(req.get_param_value("state")));
        r.set_state(state);
        PRISM_ASSIGN_OR_RETURN(int size, IntParam(req, "page_size"));
        r.set_page_size(size);
        r.set_page_token(req.get_param_value("page_token"));
        return ToJson(experiments_->ListTrials(r));
      });
  api(R"(/api/v1/trials/([^/]+))",
      [this](const httplib::Request& req,
             const Caller&) -> absl::StatusOr<std::string> {
        v1::GetTrialRequest r;
        PRISM_ASSIGN_OR_RETURN(int64_t id, PathId(req, "trial"));
        r.set_trial_id(id);
        r.set_with_baseline(BoolParam(req, "with_baseline"));
        return ToJson(results_->GetTrial(r));
      });
  api("/api/v1/workers", [this](const httplib::Request&, const Caller&) {
    return ToJson(queue_->ListWorkers());
  });

  s.Get("/api/v1/events",
        [this](const httplib::Request& req, httplib::Response& res) {
          ServeEvents(req, res);
        });

  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
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
}

void HttpServer::ServeEvents(const httplib::Request& req,
                             httplib::Response& res) {
  const std::string header = req.get_header_value("Authorization");
  const std::string cookie = CookieValue(req, kTokenCookie);
  absl::StatusOr<Caller> caller = header.empty() && !cookie.empty()
                                      ? auth_->AuthenticateToken(cookie)
                                      : auth_->Authenticate(header);
  if (!caller.ok()) return WriteError(res, caller.status());
  int64_t id = 0;
  if (!absl::SimpleAtoi(req.get_param_value("experiment"), &id) || id <= 0) {
    return WriteError(
        res, absl::InvalidArgumentError("experiment=<id> is required"));
  }
  absl::StatusOr<v1::Experiment> experiment = experiments_->Get(id);
  if (!experiment.ok()) return WriteError(res, experiment.status());
  // The slot is given back by the content provider's releaser below, which
  // httplib runs when the response ends, however it ends.
  if (absl::Status slot = event_slots_.Acquire(caller->user); !slot.ok()) {
    res.set_header("Retry-After", "5");
    return WriteError(res, slot);
  }

  auto stream = std::make_shared<SseStream>(options_.max_stream_buffer_bytes);
  v1::ExperimentEvent first;
  first.set_unix_ms(experiment->updated_unix_ms());
  *first.mutable_experiment_updated() = *std::move(experiment);
  SharedEvent shared;
  shared.bytes = static_cast<int64_t>(first.ByteSizeLong());
  shared.event = std::make_shared<const v1::ExperimentEvent>(std::move(first));
  stream->Push(shared);
  stream->subscription = events_->Subscribe(
      id, [stream](const SharedEvent& e) { stream->Push(e); });

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  const auto keepalive = absl::Seconds(options_.keepalive_seconds);
  auto last_write = std::make_shared<absl::Time>(absl::Now());
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, stream, keepalive, last_write](size_t, httplib::DataSink& sink) {
        std::vector<SharedEvent> events;
        // Short waits so Stop() is noticed promptly.
        const bool open =
            stream->Wait(std::min(keepalive, absl::Seconds(1)), &events);
        if (stopping_) {
          sink.done();
          return true;
        }
        std::string chunk;
        for (const SharedEvent& e : events) {
          std::string json;
          if (google::protobuf::util::MessageToJsonString(*e.event, &json)
                  .ok()) {
            absl::StrAppend(&chunk, "data: ", json, "\n\n");
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
