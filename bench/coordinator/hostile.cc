// coordinator_bench hostile and hostile-clients: reporting workers while
// hostile clients push every limit at once (scenarios.h).
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "bench/coordinator/harness.h"
#include "bench/coordinator/scenarios.h"
#include "cli/launcher.h"
#include "cli/subprocess.h"
#include "fmt/format.h"
#include "prism/v1/prism.grpc.pb.h"
#include "server/rpc/schedule_service.h"

namespace prism::bench {

namespace fs = std::filesystem;

namespace {

// HostileCounters are what the hostile clients got, shared by their threads.
struct HostileCounters {
  std::atomic<int64_t> watch_open{0};
  std::atomic<int64_t> watch_refused{0};
  std::atomic<int64_t> watch_events{0};
  std::atomic<int64_t> watch_rounds{0};  // messages: one per delivery round
  std::atomic<int64_t> watch_cut{0};     // ended by the server mid-stream
  std::atomic<int64_t> list_pages{0};
  std::atomic<int64_t> list_bytes_max{0};
  std::atomic<int64_t> list_errors{0};
  std::atomic<int64_t> specs_refused{0};
  std::atomic<int64_t> specs_accepted{0};
  std::atomic<int64_t> bodies_refused{0};
  std::atomic<int64_t> bodies_other{0};
  std::atomic<int64_t> slow_open{0};
  std::atomic<int64_t> slow_closed_by_server{0};
  std::atomic<int64_t> points{0};
  std::atomic<int64_t> report_errors{0};
  LatencyRecorder report_ms;
  LatencyRecorder dashboard_ms;
  std::atomic<int64_t> dashboard_errors{0};
};

// CpuSeconds is the user + system CPU time a process (or "self") has used.
double CpuSeconds(const std::string& process = "self") {
  std::ifstream stat("/proc/" + process + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)),
                   std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) end with ')'.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// OversizedSpecs are specs each limit refuses: too many seeds, too many
// explicit schedules, a spec text past max_spec_bytes, a name past
// max_string_bytes.
std::vector<v1::SubmitRequest> OversizedSpecs() {
  std::vector<v1::SubmitRequest> specs(4);
  for (v1::SubmitRequest& r : specs) {
    r.mutable_spec()->mutable_model()->set_preset("tiny");
  }
  for (int s = 1; s <= 300'000; ++s) specs[0].mutable_spec()->add_seeds(s);
  specs[1].mutable_spec()->add_seeds(1);
  for (int i = 0; i < 200'000; ++i) {
    specs[1].mutable_spec()->add_schedules("4x6");
  }
  specs[2].set_spec_text(std::string(int64_t{5} << 20, '#'));
  specs[3].mutable_spec()->add_seeds(1);
  specs[3].mutable_spec()->set_name(std::string(1 << 20, 'n'));
  return specs;
}

// SlowConnection sends an HTTP request one byte every `gap`, never ending
// its headers (slowloris); false once the server has closed it.
class SlowConnection {
 public:
  SlowConnection(const std::string& host, int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    if (fd_ < 0 ||
        connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Close();
    }
  }
  ~SlowConnection() { Close(); }
  bool open() const { return fd_ >= 0; }

  // Drip sends the next byte; false when the server has closed the socket.
  bool Drip() {
    if (fd_ < 0) return false;
    static constexpr char kRequest[] =
        "GET /api/v1/experiments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    const char byte =
        sent_ < sizeof kRequest - 1 ? kRequest[sent_] : 'a' + sent_ % 26;
    ++sent_;
    if (send(fd_, &byte, 1, MSG_NOSIGNAL) != 1) {
      Close();
      return false;
    }
    char buffer[256];
    const ssize_t n = recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) {  // orderly close (a 408 or a timeout) by the server
      Close();
      return false;
    }
    return true;
  }

 private:
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
  size_t sent_ = 0;
};

// CreateTokenOver issues a token through the AuthService as the admin.
std::string CreateTokenOver(v1::AuthService::Stub* auth,
                            const std::string& user, v1::Role role) {
  v1::CreateTokenRequest req;
  req.set_user(user);
  req.set_role(role);
  v1::CreateTokenResponse resp;
  grpc::Status s = auth->CreateToken(SetupCtx(kAdminToken).get(), req, &resp);
  if (!s.ok()) {
    std::cerr << "coordinator_bench: CreateToken: " << s.error_message()
              << "\n";
    std::exit(1);
  }
  return resp.token();
}

}  // namespace

namespace {

// ClientCounterFields names the counters the hostile clients keep, so a
// clients process can hand them to the bench (`name=value` on a line).
std::vector<std::pair<std::string, std::atomic<int64_t>*>> ClientCounterFields(
    HostileCounters* k) {
  return {{"watch_open", &k->watch_open},
          {"watch_refused", &k->watch_refused},
          {"watch_events", &k->watch_events},
          {"watch_rounds", &k->watch_rounds},
          {"watch_cut", &k->watch_cut},
          {"list_pages", &k->list_pages},
          {"list_bytes_max", &k->list_bytes_max},
          {"list_errors", &k->list_errors},
          {"specs_refused", &k->specs_refused},
          {"specs_accepted", &k->specs_accepted},
          {"bodies_refused", &k->bodies_refused},
          {"bodies_other", &k->bodies_other},
          {"slow_open", &k->slow_open},
          {"slow_closed_by_server", &k->slow_closed_by_server}};
}

// Watcher is one hostile Watch stream on a channel of its own, driven by
// gRPC's callback API: it reads every round until the stream ends.
class Watcher final : public grpc::ClientReadReactor<v1::WatchResponse> {
 public:
  Watcher(std::shared_ptr<grpc::Channel> channel, const std::string& token,
          int64_t experiment_id, HostileCounters* k)
      : stub_(v1::ResultsService::NewStub(std::move(channel))), k_(*k) {
    ctx_.AddMetadata("authorization", "Bearer " + token);
    req_.set_experiment_id(experiment_id);
  }

  void Start() {
    started_ = true;
    stub_->async()->Watch(&ctx_, &req_, this);
    StartRead(&round_);
    StartCall();
  }
  void Cancel() { ctx_.TryCancel(); }
  void WaitDone() {
    if (started_) done_.WaitForNotification();
  }

  // Reads are one at a time and OnDone comes after the last: opened_
  // needs no lock.
  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (!opened_) ++k_.watch_open;
    opened_ = true;
    k_.watch_events += round_.events_size();
    ++k_.watch_rounds;
    StartRead(&round_);
  }
  void OnDone(const grpc::Status& s) override {
    if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++(opened_ ? k_.watch_cut : k_.watch_refused);
    }
    done_.Notify();
  }

 private:
  std::unique_ptr<v1::ResultsService::Stub> stub_;
  HostileCounters& k_;
  grpc::ClientContext ctx_;
  v1::WatchRequest req_;
  v1::WatchResponse round_;
  bool started_ = false;
  bool opened_ = false;
  absl::Notification done_;
};

// HostileClients are the hostile kinds: Watch streams (callbacks), and
// threads for maximal List pages, oversized specs and bodies, slow
// connections (not the reporting workers, not the dashboard probe). Start
// returns once every thread is connected and set up; they push from Go
// until Stop.
class HostileClients {
 public:
  HostileClients(const HostileOptions& o, HostileTarget t, HostileCounters* k)
      : o_(o), t_(std::move(t)), k_(*k), oversized_(OversizedSpecs()) {}
  ~HostileClients() { Stop(); }

  void Start() {
    StartThreads();
    while (ready_ < static_cast<int>(threads_.size())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void Go() { go_ = true; }
  void Stop() {
    stop_ = go_ = true;  // the watchers' thread cancels their streams
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  // StartThreads starts every kind of client below, in this order.
  void StartThreads();
  // StartWatchers opens o_.watch_streams Watch streams on the experiment
  // the workers report into.
  void StartWatchers();
  // StartListPages asks for maximal List pages: the largest page size over
  // a 64-layer space.
  void StartListPages();
  // StartOversizedSpecs submits oversized specs over gRPC.
  void StartOversizedSpecs();
  // StartOversizedBodies posts 32 MiB bodies over HTTP.
  void StartOversizedBodies();
  // StartSlowConnections drips a byte a second into headers it never ends.
  void StartSlowConnections();

  const HostileOptions o_;
  const HostileTarget t_;
  HostileCounters& k_;
  const std::vector<v1::SubmitRequest> oversized_;
  std::atomic<int> ready_{0};
  std::atomic<bool> go_{false}, stop_{false};
  std::vector<std::thread> threads_;
};

void HostileClients::StartThreads() {
  StartWatchers();
  StartListPages();
  StartOversizedSpecs();
  StartOversizedBodies();
  StartSlowConnections();
}

void HostileClients::StartWatchers() {
  // Watchers: one channel each, spread over the users, on the experiment
  // the workers report into (every report is an event). They are callback
  // streams driven by gRPC's few threads, not a thread each: 1,000 client
  // threads woken at once take the coordinator's cores even at SCHED_IDLE
  // (weight 3 each), which clients on other hosts would not.
  threads_.emplace_back([this] {
    std::vector<std::shared_ptr<grpc::Channel>> channels;
    for (int i = 0; i < o_.watch_streams; ++i) {
      channels.push_back(NewChannel(t_.grpc_address, 1000 + i));
      channels.back()->GetState(/*try_to_connect=*/true);
    }
    // Connected before the clock starts, like dashboards left open: the
    // storm measured is of Watch calls, not of TCP handshakes.
    std::vector<std::unique_ptr<Watcher>> watchers;
    for (int i = 0; i < o_.watch_streams; ++i) {
      channels[i]->WaitForConnected(std::chrono::system_clock::now() +
                                    std::chrono::seconds(30));
      watchers.push_back(std::make_unique<Watcher>(
          channels[i], t_.viewer_tokens[i % t_.viewer_tokens.size()],
          t_.experiment_id, &k_));
    }
    ++ready_;
    while (!go_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!stop_) {
      for (auto& w : watchers) w->Start();  // all at once
      while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      for (auto& w : watchers) w->Cancel();
      for (auto& w : watchers) w->WaitDone();
    }
  });
}

void HostileClients::StartListPages() {
  for (int i = 0; i < o_.list_threads; ++i) {
    threads_.emplace_back([this, i] {
      auto stub = v1::ScheduleService::NewStub(
          NewChannel(t_.grpc_address, 100'000 + i));
      v1::ListSchedulesRequest req;
      req.mutable_space()->set_d_model(4096);
      req.mutable_space()->set_layers(64);
      req.mutable_space()->set_base_heads(64);
      req.set_page_size(server::kMaxSchedulePageSize);
      ++ready_;
      while (!go_) std::this_thread::yield();
      while (!stop_) {
        v1::ListSchedulesResponse resp;
        grpc::ClientContext ctx;
        ctx.AddMetadata("authorization", "Bearer " + t_.viewer_tokens[0]);
        if (stub->List(&ctx, req, &resp).ok()) {
          ++k_.list_pages;
          const int64_t bytes = static_cast<int64_t>(resp.ByteSizeLong());
          int64_t max = k_.list_bytes_max.load();
          while (bytes > max &&
                 !k_.list_bytes_max.compare_exchange_weak(max, bytes)) {
          }
          req.set_page_token(resp.next_page_token());
        } else {
          ++k_.list_errors;
        }
      }
    });
  }
}

void HostileClients::StartOversizedSpecs() {
  for (int i = 0; i < o_.oversized_threads; ++i) {
    threads_.emplace_back([this, i] {
      auto stub = v1::ExperimentService::NewStub(
          NewChannel(t_.grpc_address, 200'000 + i));
      ++ready_;
      while (!go_) std::this_thread::yield();
      for (size_t n = 0; !stop_; ++n) {
        v1::SubmitResponse resp;
        grpc::Status s = stub->Submit(Ctx(t_.user_token).get(),
                                      oversized_[n % oversized_.size()], &resp);
        ++(s.ok() ? k_.specs_accepted : k_.specs_refused);
      }
    });
  }
}

void HostileClients::StartOversizedBodies() {
  for (int i = 0; i < o_.body_threads; ++i) {
    threads_.emplace_back([this] {
      const std::string body(int64_t{32} << 20, 'x');
      ++ready_;
      while (!go_) std::this_thread::yield();
      while (!stop_) {
        httplib::Client client(t_.http_host, t_.http_port);
        httplib::Result r =
            client.Post("/api/v1/experiments", body, "application/json");
        // Refused: 413, or the connection closed under the body (the
        // coordinator answers from the headers and reads none of it).
        const bool refused = r ? r->status == 413
                               : r.error() == httplib::Error::Write ||
                                     r.error() == httplib::Error::Read;
        ++(refused ? k_.bodies_refused : k_.bodies_other);
      }
    });
  }
}

void HostileClients::StartSlowConnections() {
  threads_.emplace_back([this] {
    std::vector<std::unique_ptr<SlowConnection>> slow;
    ++ready_;
    while (!go_) std::this_thread::yield();
    for (int i = 0; i < o_.slow_connections; ++i) {
      slow.push_back(
          std::make_unique<SlowConnection>(t_.http_host, t_.http_port));
      if (slow.back()->open()) ++k_.slow_open;
    }
    while (!stop_) {
      for (auto& s : slow) {
        if (s->open() && !s->Drip()) ++k_.slow_closed_by_server;
      }
      for (int t = 0; t < 10 && !stop_; ++t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });
}

}  // namespace

int HostileClientsMain(const HostileOptions& o, const HostileTarget& t,
                       int seconds, const std::string& ready_file) {
  if (o.clients_idle) {
    // Before any thread starts: each inherits the policy of its creator.
    const sched_param param{};
    if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) {
      std::cerr << "coordinator_bench: hostile-clients: SCHED_IDLE: "
                << std::strerror(errno) << "\n";
      return 1;
    }
  }
  HostileCounters k;
  double cpu = 0;
  {
    HostileClients clients(o, t, &k);
    clients.Start();
    std::ofstream(ready_file) << "ready\n";
    const double cpu_before = CpuSeconds();
    clients.Go();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    clients.Stop();
    cpu = CpuSeconds() - cpu_before;
  }
  std::string line = fmt::format("cpu_seconds={:.2f}", cpu);
  for (const auto& [name, value] : ClientCounterFields(&k)) {
    absl::StrAppend(&line, " ", name, "=", value->load());
  }
  std::cout << line << std::endl;
  return 0;
}

namespace {

// SpawnHostileClients starts `hostile-clients` at nice o.clients_nice (under
// SCHED_IDLE with o.clients_idle) and returns once its clients are set up.
absl::StatusOr<cli::Subprocess> SpawnHostileClients(const HostileOptions& o,
                                                    const HostileTarget& t,
                                                    int seconds,
                                                    const TempDir& dir) {
  const std::string nice = cli::FindProgram("nice");
  if (nice.empty()) return absl::NotFoundError("no `nice` on PATH");
  const std::string ready_file = dir.File("clients.ready");
  cli::SpawnOptions spawn;
  spawn.argv = {nice,
                "-n",
                std::to_string(o.clients_nice),
                cli::SelfExecutable(),
                "hostile-clients",
                "--grpc",
                t.grpc_address,
                "--http-host",
                t.http_host,
                "--http-port",
                std::to_string(t.http_port),
                "--user-token",
                t.user_token,
                "--experiment",
                std::to_string(t.experiment_id),
                "--seconds",
                std::to_string(seconds),
                "--watch-streams",
                std::to_string(o.watch_streams),
                "--list-threads",
                std::to_string(o.list_threads),
                "--oversized-threads",
                std::to_string(o.oversized_threads),
                "--body-threads",
                std::to_string(o.body_threads),
                "--slow-connections",
                std::to_string(o.slow_connections),
                "--ready-file",
                ready_file};
  if (o.clients_idle) spawn.argv.push_back("--sched-idle");
  for (const std::string& token : t.viewer_tokens) {
    spawn.argv.push_back("--viewer-token");
    spawn.argv.push_back(token);
  }
  spawn.stdout_path = dir.File("clients.out");
  spawn.stderr_path = dir.File("clients.err");
  absl::StatusOr<cli::Subprocess> p = cli::Subprocess::Spawn(spawn);
  if (!p.ok()) return p.status();
  // Setting up 1,000 channels at nice 19 beside an idle coordinator takes
  // seconds; ten minutes means something is wrong.
  const Clock::time_point deadline = Clock::now() + std::chrono::minutes(10);
  while (!fs::exists(ready_file)) {
    if (!p->Running() || Clock::now() > deadline) {
      return absl::InternalError(fmt::format(
          "the clients process did not get ready (see {})", spawn.stderr_path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return p;
}

// CollectHostileClients waits for the clients process to end, adds its
// counters into `k` and returns its CPU seconds.
absl::StatusOr<double> CollectHostileClients(cli::Subprocess* p,
                                             const std::string& out,
                                             HostileCounters* k) {
  absl::StatusOr<int> status = p->Wait(absl::Minutes(2));
  if (!status.ok()) {
    p->Stop(absl::Seconds(5));
    return status.status();
  }
  if (*status != 0) {
    return absl::InternalError(
        fmt::format("the clients process exited with {}", *status));
  }
  std::ifstream file(out);
  std::string line;
  std::getline(file, line);
  double cpu = -1;
  for (absl::string_view field : absl::StrSplit(line, ' ')) {
    const std::pair<std::string, std::string> kv =
        absl::StrSplit(field, absl::MaxSplits('=', 1));
    if (kv.first == "cpu_seconds") {
      if (!absl::SimpleAtod(kv.second, &cpu)) cpu = -1;
      continue;
    }
    for (const auto& [name, value] : ClientCounterFields(k)) {
      int64_t n = 0;
      if (name == kv.first && absl::SimpleAtoi(kv.second, &n)) *value += n;
    }
  }
  if (cpu < 0) {
    return absl::InternalError("the clients process printed no figures: " +
                               line);
  }
  return cpu;
}

// StartHostileCoordinator starts the coordinator as its own process, with
// its default limits, so its RSS is its own and not the clients'.
absl::StatusOr<cli::LocalCoordinator> StartHostileCoordinator(
    const HostileOptions& o, const TempDir& dir) {
  cli::CoordinatorLaunch launch;
  launch.binary = o.prism;
  launch.args = {"--db",
                 dir.File("prism.db"),
                 "--listen",
                 "127.0.0.1:0",
                 "--http",
                 "127.0.0.1:0",
                 "--lease-seconds",
                 "600",
                 "--heartbeat-seconds",
                 "60",
                 "--log-level",
                 "warning"};
  // Every hostile client here is 127.0.0.1, where in use they would be many
  // hosts: one peer's connection cap (64) would refuse the slow connections
  // and the dashboard probe alike. Raised to what the run opens, unless a
  // --coordinator-arg sets it.
  if (std::none_of(o.coordinator_args.begin(), o.coordinator_args.end(),
                   [](const std::string& arg) {
                     return absl::StartsWith(arg,
                                             "--http-max-connections-per-peer");
                   })) {
    launch.args.push_back(absl::StrCat("--http-max-connections-per-peer=",
                                       o.slow_connections + 64));
  }
  for (const std::string& arg : o.coordinator_args) launch.args.push_back(arg);
  launch.env = {absl::StrCat("PRISM_ADMIN_TOKEN=", kAdminToken)};
  launch.log_path = dir.File("coordinator.log");
  launch.ready_file = dir.File("ready.json");
  return cli::StartCoordinator(launch);
}

// HostileSetup is what SetUpHostileRun made: the tokens and the experiment
// the workers report into.
struct HostileSetup {
  std::string worker_token;
  std::string user_token;
  std::vector<std::string> viewer_tokens;
  int64_t ingest_id = 0;
};

// SetUpHostileRun creates a worker's token, mallory's (a user) and
// o.watch_users viewers', and submits the experiment the workers report
// into; Internal("Submit: ...") when the submit fails.
absl::StatusOr<HostileSetup> SetUpHostileRun(const HostileOptions& o,
                                             const std::string& grpc_address) {
  HostileSetup setup;
  auto auth = v1::AuthService::NewStub(NewChannel(grpc_address, -1));
  setup.worker_token = CreateTokenOver(auth.get(), "farm", v1::ROLE_WORKER);
  setup.user_token = CreateTokenOver(auth.get(), "mallory", v1::ROLE_USER);
  for (int u = 0; u < o.watch_users; ++u) {
    setup.viewer_tokens.push_back(CreateTokenOver(
        auth.get(), absl::StrCat("viewer", u), v1::ROLE_VIEWER));
  }
  auto experiments =
      v1::ExperimentService::NewStub(NewChannel(grpc_address, -2));
  v1::SubmitRequest ingest;
  ingest.mutable_spec()->mutable_model()->set_preset("tiny");
  ingest.mutable_spec()->mutable_budget()->set_steps(kIngestSteps);
  ingest.mutable_spec()->mutable_budget()->set_log_every(1);
  ingest.mutable_spec()->mutable_budget()->set_eval_every(
      static_cast<int32_t>(kIngestSteps));
  for (int s = 1; s <= (o.workers + 20) / 21; ++s) {
    ingest.mutable_spec()->add_seeds(s);
  }
  v1::SubmitResponse submitted;
  grpc::Status submit_status =
      experiments->Submit(SetupCtx(setup.user_token).get(), ingest, &submitted);
  if (!submit_status.ok()) {
    return absl::InternalError(
        absl::StrCat("Submit: ", submit_status.error_message()));
  }
  setup.ingest_id = submitted.experiment().id();
  return setup;
}

// ProbeDashboard is the dashboard as a person uses it meanwhile: one API
// call a second from `go` until `stop`, timed into k->dashboard_ms.
void ProbeDashboard(const std::string& host, int port, const std::string& token,
                    std::atomic<int>* ready, const std::atomic<bool>* go,
                    const std::atomic<bool>* stop, HostileCounters* k) {
  ++*ready;
  while (!*go) std::this_thread::yield();
  while (!*stop) {
    httplib::Client client(host, port);
    client.set_connection_timeout(10);
    client.set_read_timeout(10);
    const Clock::time_point t0 = Clock::now();
    httplib::Result r =
        client.Get("/api/v1/experiments",
                   httplib::Headers{{"Authorization", "Bearer " + token}});
    if (r && r->status == 200) {
      k->dashboard_ms.Record(Ms(Clock::now() - t0));
    } else {
      ++k->dashboard_errors;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// StartHostileClients starts the hostile clients for `seconds`: apart, a
// process of their own (SpawnHostileClients), else threads of this one
// counting into `k`.
absl::Status StartHostileClients(const HostileOptions& o,
                                 const HostileTarget& target, int seconds,
                                 const TempDir& dir, bool apart,
                                 HostileCounters* k,
                                 std::optional<HostileClients>* local,
                                 std::optional<cli::Subprocess>* process) {
  if (apart) {
    absl::StatusOr<cli::Subprocess> p =
        SpawnHostileClients(o, target, seconds, dir);
    if (!p.ok()) return p.status();
    process->emplace(std::move(*p));
  } else {
    local->emplace(o, target, k);
    (*local)->Start();
  }
  return absl::OkStatus();
}

// PrintHostileHeader says what the run does, where the RSS comes from, and
// the window table's header (and where the clients run, when apart).
void PrintHostileHeader(const HostileOptions& o, int64_t ingest_id,
                        const std::string& pid, const Rss& before,
                        const std::optional<cli::Subprocess>& clients_process,
                        const std::string& clients_sched) {
  std::cout << fmt::format(
      "hostile: {} s; {} workers each reporting {} points every {} ms into "
      "experiment {}; at once: {} Watch streams attempted on it by {} "
      "viewers, {} threads of maximal ScheduleService.List pages (page size "
      "{}, 4096/64/64), {} threads of oversized specs and {} of 32 MiB HTTP "
      "bodies, {} slow HTTP connections (a byte a second), one dashboard call "
      "a second\n",
      o.seconds, o.workers, o.points_per_report, o.interval_ms, ingest_id,
      o.watch_streams, o.watch_users, o.list_threads,
      server::kMaxSchedulePageSize, o.oversized_threads, o.body_threads,
      o.slow_connections);
  std::cout << fmt::format(
      "RSS is the coordinator process's (pid {}), MiB total (anonymous + "
      "file-backed); before the load: {}\n",
      pid, before.ToString());
  std::cout << fmt::format("{:>5} {:>9} {:>19} {:>7} {:>9} {:>9} {:>22}\n", "s",
                           "points/s", "report p50 / p99 ms", "watches",
                           "events/s", "msgs/s", "RSS (anon + file)");
  if (clients_process) {
    std::cout << fmt::format(
        "the hostile clients run in process {} ({}; watch figures below "
        "come at the end)\n",
        clients_process->pid(), clients_sched);
  }
}

// PrintWindows prints a row per window of `w` seconds from `start` until
// `windows` have passed, adds each window's report latencies to
// *report_total, and returns the coordinator's peak RSS (at least
// `rss_before`).
double PrintWindows(int w, int windows, Clock::time_point start,
                    const std::string& pid, double rss_before,
                    HostileCounters* k, LatencyCounts* report_total) {
  double rss_max = rss_before;
  int64_t events_last = 0, rounds_last = 0, points_last = 0;
  for (int wnd = 1; wnd <= windows; ++wnd) {
    std::this_thread::sleep_until(start + std::chrono::seconds(w * wnd));
    const LatencyCounts window = k->report_ms.Take();
    report_total->Add(window);
    const Rss rss = Rss::Read(pid);
    rss_max = std::max(rss_max, rss.total);
    const int64_t events = k->watch_events.load(), points = k->points.load();
    const int64_t rounds = k->watch_rounds.load();
    std::cout
        << fmt::format(
               "{:>5} {:>9.0f} {:>8.3f} / {:<8.3f} {:>7} {:>9.0f} {:>9.0f} "
               "{:>22}",
               w * wnd, (points - points_last) / double(w),
               window.Percentile(50), window.Percentile(99),
               k->watch_open.load() - k->watch_cut.load(),
               (events - events_last) / double(w),
               (rounds - rounds_last) / double(w), rss.ToString())
        << std::endl;
    events_last = events;
    rounds_last = rounds;
    points_last = points;
  }
  return rss_max;
}

// PrintHostileTotals prints what each kind of client got over the run.
void PrintHostileTotals(const HostileCounters& k,
                        const LatencyCounts& report_total,
                        const LatencyCounts& dashboard) {
  std::cout << fmt::format(
      "reports: {} points acknowledged, p50 {:.3f} ms, p99 {:.3f} ms, max "
      "{:.1f} ms, {} failed\n",
      k.points.load(), report_total.Percentile(50), report_total.Percentile(99),
      report_total.max_ms, k.report_errors.load());
  std::cout << fmt::format(
      "watch: {} opened, {} refused (RESOURCE_EXHAUSTED at open), {} cut off "
      "behind, {} events received in {} messages\n",
      k.watch_open.load(), k.watch_refused.load(), k.watch_cut.load(),
      k.watch_events.load(), k.watch_rounds.load());
  std::cout << fmt::format(
      "list: {} maximal pages, largest {:.1f} MiB, {} errors\n",
      k.list_pages.load(), k.list_bytes_max.load() / 1048576.0,
      k.list_errors.load());
  std::cout << fmt::format(
      "oversized: {} specs refused, {} accepted; {} HTTP bodies refused with "
      "413, {} answered otherwise\n",
      k.specs_refused.load(), k.specs_accepted.load(), k.bodies_refused.load(),
      k.bodies_other.load());
  std::cout << fmt::format(
      "slow connections: {} opened, {} closed by the server; dashboard "
      "calls: {} answered (p50 {:.1f} ms, max {:.1f} ms), {} failed\n",
      k.slow_open.load(), k.slow_closed_by_server.load(), dashboard.n,
      dashboard.Percentile(50), dashboard.max_ms, k.dashboard_errors.load());
}

// PrintHostileCpu prints the CPU each process used over the run;
// `clients_sched` is set when the hostile clients ran in a process apart.
void PrintHostileCpu(double seconds_run, double coordinator_cpu,
                     double bench_cpu,
                     const std::optional<std::string>& clients_sched,
                     double clients_cpu) {
  std::cout << fmt::format(
      "CPU over the run ({:.0f} s, {} cores = {:.0f} core-seconds): "
      "coordinator {:.1f} s, {}\n",
      seconds_run, std::thread::hardware_concurrency(),
      seconds_run * std::thread::hardware_concurrency(), coordinator_cpu,
      clients_sched
          ? fmt::format("this process (workers) {:.1f} s, the hostile "
                        "clients' process ({}) {:.1f} s",
                        bench_cpu, *clients_sched, clients_cpu)
          : fmt::format("this process (workers and hostile clients) {:.1f} s",
                        bench_cpu));
}

// StoredPoints returns how many points the coordinator stored for the
// workers' trials (read back with the admin token).
int64_t StoredPoints(const std::string& grpc_address,
                     const std::vector<int64_t>& trial_ids) {
  auto results = v1::ResultsService::NewStub(NewChannel(grpc_address, -3));
  int64_t stored = 0;
  for (int64_t trial_id : trial_ids) {
    v1::GetTrialRequest req;
    req.set_trial_id(trial_id);
    v1::GetTrialResponse resp;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", absl::StrCat("Bearer ", kAdminToken));
    if (results->GetTrial(&ctx, req, &resp).ok()) stored += resp.points_size();
  }
  return stored;
}

// BoundsHeld prints the RSS and the points acknowledged against those
// stored, stops the coordinator, and prints and returns whether every bound
// held: peak RSS under o.rss_bound_mib, report p99 under 50 ms, no
// oversized spec accepted, no acknowledged point lost.
bool BoundsHeld(const HostileOptions& o, const Rss& before, double rss_max,
                const Rss& after, const LatencyCounts& report_total,
                const HostileCounters& k, int64_t acked_points, int64_t stored,
                cli::LocalCoordinator* c) {
  std::cout << fmt::format(
      "RSS: {} before, peak {:.1f}, {} at the end (bound {} MiB); "
      "acknowledged {} points, in the database {}: lost {}\n",
      before.ToString(), rss_max, after.ToString(), o.rss_bound_mib,
      acked_points, stored, acked_points - stored);
  c->process.Stop(absl::Seconds(20));
  const bool held = rss_max < static_cast<double>(o.rss_bound_mib) &&
                    report_total.Percentile(99) < 50.0 &&
                    k.specs_accepted == 0 && acked_points == stored;
  std::cout << (held ? "hostile: every bound held\n"
                     : "hostile: a bound did not hold\n");
  return held;
}

}  // namespace

int Hostile(const HostileOptions& o) {
  TempDir dir;
  absl::StatusOr<cli::LocalCoordinator> c = StartHostileCoordinator(o, dir);
  if (!c.ok()) {
    std::cerr << "coordinator_bench: " << c.status() << "\n";
    return 1;
  }
  const std::string grpc_address = c->endpoints.grpc;
  const std::string pid = std::to_string(c->process.pid());
  absl::StatusOr<HostileSetup> setup = SetUpHostileRun(o, grpc_address);
  if (!setup.ok()) {
    std::cerr << "coordinator_bench: " << setup.status().message() << "\n";
    return 1;
  }
  const std::string http = c->endpoints.http;
  const std::string http_host = http.substr(0, http.rfind(':'));
  const int http_port = std::stoi(http.substr(http.rfind(':') + 1));

  HostileCounters k;
  std::vector<int64_t> acked(o.workers), trial_ids(o.workers);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, stop{false}, failed_setup{false};
  std::vector<std::thread> threads;
  const ReportLoop fleet{grpc_address,  setup->worker_token,
                         o.workers,     o.points_per_report,
                         o.interval_ms, &ready,
                         &go,           &stop,
                         &failed_setup, &k.report_ms,
                         &k.points,     &k.report_errors,
                         &acked,        &trial_ids};
  for (int w = 0; w < o.workers; ++w) {
    threads.emplace_back([&fleet, w] { fleet.Run(w); });
  }
  threads.emplace_back([&] {
    ProbeDashboard(http_host, http_port, setup->viewer_tokens[0], &ready, &go,
                   &stop, &k);
  });
  // abandon ends the workers and the dashboard probe after a failed setup.
  auto abandon = [&] {
    stop = go = true;
    for (std::thread& t : threads) t.join();
    return 1;
  };

  const int clients = static_cast<int>(threads.size());
  while (ready < clients)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (failed_setup) return abandon();
  const HostileTarget target{
      grpc_address,         http_host,       http_port, setup->user_token,
      setup->viewer_tokens, setup->ingest_id};
  const int w = o.window_seconds;
  const int windows = std::max(1, o.seconds / w);
  const bool clients_apart = o.clients_nice >= 0;
  const std::string clients_sched =
      o.clients_idle ? std::string("SCHED_IDLE")
                     : fmt::format("nice {}", o.clients_nice);
  std::optional<HostileClients> local_clients;
  std::optional<cli::Subprocess> clients_process;
  if (absl::Status s =
          StartHostileClients(o, target, w * windows, dir, clients_apart, &k,
                              &local_clients, &clients_process);
      !s.ok()) {
    std::cerr << "coordinator_bench: hostile clients: " << s << "\n";
    return abandon();
  }
  const Rss before = Rss::Read(pid);
  const double coordinator_cpu_before = CpuSeconds(pid);
  const double clients_cpu_before = CpuSeconds();
  PrintHostileHeader(o, setup->ingest_id, pid, before, clients_process,
                     clients_sched);
  const Clock::time_point start = Clock::now();
  go = true;
  if (local_clients) local_clients->Go();
  LatencyCounts report_total;
  const double rss_max =
      PrintWindows(w, windows, start, pid, before.total, &k, &report_total);
  const double seconds_run = Ms(Clock::now() - start) / 1000.0;
  const double coordinator_cpu = CpuSeconds(pid) - coordinator_cpu_before;
  const double bench_cpu = CpuSeconds() - clients_cpu_before;
  double clients_cpu = 0;
  if (local_clients) local_clients->Stop();
  stop = true;
  for (std::thread& t : threads) t.join();
  if (clients_process) {
    absl::StatusOr<double> cpu =
        CollectHostileClients(&*clients_process, dir.File("clients.out"), &k);
    if (!cpu.ok()) {
      std::cerr << "coordinator_bench: hostile clients: " << cpu.status()
                << "\n";
      return 1;
    }
    clients_cpu = *cpu;
  }
  report_total.Add(k.report_ms.Take());
  PrintHostileTotals(k, report_total, k.dashboard_ms.Take());

  PrintHostileCpu(
      seconds_run, coordinator_cpu, bench_cpu,
      clients_apart ? std::optional<std::string>(clients_sched) : std::nullopt,
      clients_cpu);
  int64_t acked_points = 0;
  for (int64_t n : acked) acked_points += n;
  const bool held =
      BoundsHeld(o, before, rss_max, Rss::Read(pid), report_total, k,
                 acked_points, StoredPoints(grpc_address, trial_ids), &*c);
  return held ? 0 : 1;
}

}  // namespace prism::bench
