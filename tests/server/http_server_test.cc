// The HTTP face of a real coordinator: the JSON API must equal the RPCs'
// messages in protobuf's JSON mapping, and refuse requests without a token.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &out).ok());
  return out;
}

// RawStream is an event-stream request on a plain socket, so a test can
// leave it the way a browser tab does: by closing the connection.
struct RawStream {
  int fd = -1;
  int status = 0;    // 0: no complete answer within the timeout
  std::string text;  // what arrived: headers, then events or the error
  void Close() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

// OpenRawStream sends GET /api/v1/events?experiment=<id> and reads until
// the first event (200) or the whole JSON error (anything else) arrived.
RawStream OpenRawStream(const std::string& http_address,
                        const std::string& token, int64_t id) {
  RawStream s;
  const size_t colon = http_address.rfind(':');
  int port = 0;
  if (!absl::SimpleAtoi(http_address.substr(colon + 1), &port)) return s;
  s.fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return s;
  }
  const std::string request =
      "GET /api/v1/events?experiment=" + std::to_string(id) +
      " HTTP/1.1\r\nHost: test\r\nAuthorization: "
      "Bearer " +
      token + "\r\n\r\n";
  if (send(s.fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) return s;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    const size_t head_end = s.text.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      const std::string body = s.text.substr(head_end + 4);
      const bool ok = s.text.rfind("HTTP/1.1 200", 0) == 0;
      if ((ok && body.find("\n\n") != std::string::npos) ||
          (!ok && body.find('}') != std::string::npos)) {
        EXPECT_TRUE(absl::SimpleAtoi(s.text.substr(9, 3), &s.status));
        return s;
      }
    }
    pollfd p{s.fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buffer[4096];
    const ssize_t n = recv(s.fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    s.text.append(buffer, static_cast<size_t>(n));
  }
  return s;
}

class HttpTest : public CoordinatorTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    web_root_ = dir_.File("web");
    std::filesystem::create_directories(web_root_ + "/static/js");
    std::ofstream(web_root_ + "/index.html")
        << "<!doctype html><title>p</title>";
    std::ofstream(web_root_ + "/static/js/main.js") << "export {};";
    o->web_root = web_root_;
  }
  void SetUp() override {
    CoordinatorTest::SetUp();
    viewer_ = Token("vera", v1::ROLE_VIEWER);
    alice_ = Token("alice", v1::ROLE_USER);
    worker_token_ = Token("farm", v1::ROLE_WORKER);
    client_ = std::make_unique<httplib::Client>("http://" +
                                                coordinator_->http_address());
    client_->set_read_timeout(10, 0);
  }

  httplib::Result Get(const std::string& path, const std::string& token) {
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    return client_->Get(path.c_str(), headers);
  }

  // Finished runs an experiment with one prism schedule to completion.
  int64_t Finished() {
    const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
    const std::string w = Register(worker_token_);
    for (int i = 0; i < 2; ++i) {
      v1::TrialTask task = Lease(worker_token_, w);
      v1::CompleteResponse done;
      EXPECT_TRUE(Complete(worker_token_, w, task.trial(),
                           task.trial().is_baseline() ? 3.0 : 2.9, &done)
                      .ok());
    }
    return id;
  }

  // Stored reads an experiment over the RPC: the check of what an HTTP
  // action did (or did not do).
  v1::Experiment Stored(int64_t id) {
    v1::GetExperimentRequest req;
    req.set_id(id);
    v1::Experiment e;
    auto ctx = Ctx(viewer_);
    EXPECT_TRUE(experiments_->Get(ctx.get(), req, &e).ok());
    return e;
  }

  std::string web_root_;
  std::string viewer_, alice_, worker_token_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpTest, JsonApiEqualsTheRpcMessages) {
  const int64_t id = Finished();
  const std::string e = "/api/v1/experiments/" + std::to_string(id);

  v1::GetExperimentRequest get;
  get.set_id(id);
  v1::Experiment experiment;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(experiments_->Get(ctx.get(), get, &experiment).ok());
  auto res = Get(e, viewer_);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(res->body, Json(experiment));

  v1::RankRequest rank_req;
  rank_req.set_experiment_id(id);
  rank_req.add_require(v1::PRINCIPLE_SMOOTH);
  rank_req.set_sort(v1::RANK_SORT_DELTA);
  rank_req.set_page_size(1);
  v1::RankResponse rank;
  auto ctx2 = Ctx(viewer_);
  ASSERT_TRUE(results_->Rank(ctx2.get(), rank_req, &rank).ok());
  res = Get(e + "/rank?require=smooth&sort=delta&page_size=1", viewer_);
  EXPECT_EQ(res->body, Json(rank));
  EXPECT_THAT(res->body, HasSubstr("\"schedule\":\"2x2,4x4\""));

  v1::ListTrialsRequest trials_req;
  trials_req.set_experiment_id(id);
  trials_req.set_state(v1::TRIAL_COMPLETED);
  v1::ListTrialsResponse trials;
  auto ctx3 = Ctx(viewer_);
  ASSERT_TRUE(experiments_->ListTrials(ctx3.get(), trials_req, &trials).ok());
  res = Get(e + "/trials?state=completed", viewer_);
  EXPECT_EQ(res->body, Json(trials));

  v1::GetTrialRequest trial_req;
  trial_req.set_trial_id(trials.trials(1).id());
  trial_req.set_with_baseline(true);
  v1::GetTrialResponse trial;
  auto ctx4 = Ctx(viewer_);
  ASSERT_TRUE(results_->GetTrial(ctx4.get(), trial_req, &trial).ok());
  res = Get("/api/v1/trials/" + std::to_string(trials.trials(1).id()) +
                "?with_baseline=1",
            viewer_);
  EXPECT_EQ(res->body, Json(trial));
  EXPECT_THAT(res->body, HasSubstr("baselinePoints"));

  v1::ListExperimentsResponse list;
  auto ctx5 = Ctx(viewer_);
  ASSERT_TRUE(
      experiments_->List(ctx5.get(), v1::ListExperimentsRequest(), &list).ok());
  EXPECT_EQ(Get("/api/v1/experiments", viewer_)->body, Json(list));

  v1::ListWorkersResponse workers;
  auto ctx6 = Ctx(viewer_);
  ASSERT_TRUE(
      workers_->ListWorkers(ctx6.get(), v1::ListWorkersRequest(), &workers)
          .ok());
  EXPECT_EQ(Get("/api/v1/workers", viewer_)->body, Json(workers));

  EXPECT_EQ(Get("/api/v1/whoami", viewer_)->body,
            "{\"user\":\"vera\",\"role\":\"ROLE_VIEWER\"}");
}

// Slow clients (a header byte at a time, never finished) each hold a
// connection's thread; more of them than the pool's resting threads must
// not keep the dashboard waiting: the pool grows while none is idle.
TEST_F(HttpTest, SlowClientsDoNotStarveTheDashboard) {
  const std::string address = coordinator_->http_address();
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port));
  std::vector<int> slow;
  // More than the resting threads, fewer than one peer's connection cap.
  for (int i = 0; i < kDefaultHttpThreads + 16; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    const std::string start = "GET /healthz HTTP/1.1\r\nX-Slow: ";
    ASSERT_GT(send(fd, start.data(), start.size(), MSG_NOSIGNAL), 0);
    slow.push_back(fd);
  }
  // Keep every slow client alive (a byte every 500 ms, their heads well
  // within the 10 s header timeout) for as long as the request below takes.
  std::atomic<bool> done{false};
  std::thread drip([&] {
    while (!done) {
      for (int fd : slow) send(fd, "a", 1, MSG_NOSIGNAL);
      for (int t = 0; t < 10 && !done; ++t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  });
  httplib::Result r = Get("/api/v1/experiments", viewer_);  // 10 s timeout
  done = true;
  drip.join();
  for (int fd : slow) close(fd);
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpTest, RequestsWithoutAValidTokenAre401Json) {
  auto res = Get("/api/v1/experiments", "");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_THAT(res->body, HasSubstr("\"error\""));
  EXPECT_EQ(Get("/api/v1/whoami", "prism_wrong")->status, 401);
  EXPECT_EQ(Get("/api/v1/events?experiment=1", "")->status, 401);
}

TEST_F(HttpTest, TheTokenCookieAuthenticatesToo) {
  httplib::Headers headers = {{"Cookie", "theme=dark; prism_token=" + viewer_}};
  auto res = client_->Get("/api/v1/whoami", headers);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->body, HasSubstr("vera"));
}

// Over plain HTTP the dashboard's script keeps the cookie: the server sets
// none (a Secure one would not be kept), and logout only expires it.
// tests/cli/tls_cluster_test.cc checks the HTTPS side.
TEST_F(HttpTest, PlainHttpSetsNoCookieAndLogoutExpiresIt) {
  auto whoami = Get("/api/v1/whoami", viewer_);
  ASSERT_TRUE(whoami);
  EXPECT_EQ(whoami->status, 200);
  EXPECT_FALSE(whoami->has_header("Set-Cookie"));
  auto logout = client_->Post(
      "/api/v1/logout", {{"Origin", "http://" + coordinator_->http_address()}},
      "", "text/plain");
  ASSERT_TRUE(logout);
  EXPECT_EQ(logout->status, 204);
  EXPECT_EQ(logout->get_header_value("Set-Cookie"),
            "prism_token=; Path=/; Max-Age=0");
}

// Issue 40: the page may run only its own scripts and be framed by no one;
// no API answer is kept by a cache.
TEST_F(HttpTest, EveryAnswerCarriesTheSecurityHeadersAndApiAnswersNoStore) {
  for (const auto& [path, token] :
       std::vector<std::pair<std::string, std::string>>{
           {"/", ""},
           {"/static/js/main.js", ""},
           {"/api/v1/whoami", viewer_},
           {"/api/v1/nothing", viewer_},
           {"/healthz", ""}}) {
    SCOPED_TRACE(path);
    auto res = Get(path, token);
    ASSERT_TRUE(res);
    const std::string csp = res->get_header_value("Content-Security-Policy");
    EXPECT_THAT(csp, HasSubstr("frame-ancestors 'none'"));
    EXPECT_THAT(csp, HasSubstr("script-src 'self'"));
    EXPECT_THAT(csp, Not(HasSubstr("unsafe-inline")));
    EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(res->get_header_value("X-Frame-Options"), "DENY");
    EXPECT_EQ(res->get_header_value("Referrer-Policy"), "no-referrer");
    EXPECT_EQ(res->get_header_value("Cache-Control"),
              path.rfind("/api/", 0) == 0 ? "no-store" : "");
  }
}

// Issue 40: a POST proves it comes from the dashboard's own origin (Origin,
// else Sec-Fetch-Site, else Referer) or from no browser (an Authorization
// header); anything else is 403 with nothing changed, even with a valid
// cookie.
TEST_F(HttpTest, StateChangingRoutesRefuseOtherOriginsAndChangeNothing) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  ASSERT_NE(id, 0);
  v1::ExperimentRef ref;
  ref.set_id(id);
  v1::Experiment cancelled;
  auto ctx = Ctx(alice_);
  ASSERT_TRUE(experiments_->Cancel(ctx.get(), ref, &cancelled).ok());
  const std::string own = "http://" + coordinator_->http_address();
  const std::string route = absl::StrCat("/api/v1/experiments/", id, "/delete");
  const std::string cookie = "prism_token=" + alice_;
  for (const httplib::Headers& headers : std::vector<httplib::Headers>{
           {{"Cookie", cookie}, {"Origin", "http://evil.example"}},
           {{"Cookie", cookie}, {"Origin", "null"}},
           {{"Cookie", cookie}, {"Origin", "http://127.0.0.1:1"}},
           {{"Cookie", cookie}, {"Sec-Fetch-Site", "same-site"}},
           {{"Cookie", cookie}, {"Referer", "http://evil.example/page"}},
           {{"Cookie", cookie}},
           {{"Authorization", "Bearer " + alice_},
            {"Origin", "http://evil.example"}}}) {
    std::string trace;
    for (const auto& [name, value] : headers) {
      absl::StrAppend(&trace, name, ": ", value, "; ");
    }
    SCOPED_TRACE(trace);
    for (const std::string& path : {route, std::string("/api/v1/logout")}) {
      auto res = client_->Post(path.c_str(), headers, "", "text/plain");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 403) << path;
      EXPECT_THAT(res->body, HasSubstr("cross-origin request refused"));
      EXPECT_EQ(std::count(res->body.begin(), res->body.end(), '\n'), 0);
      EXPECT_FALSE(res->has_header("Set-Cookie"));
    }
  }
  EXPECT_EQ(Get(absl::StrCat("/api/v1/experiments/", id), viewer_)->status,
            200);

  // From the dashboard itself, as someone else: the owner rule still holds.
  auto other = client_->Post(
      route.c_str(),
      {{"Origin", own},
       {"Authorization", "Bearer " + Token("bob", v1::ROLE_USER)}},
      "", "text/plain");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 403);
  EXPECT_THAT(other->body, Not(HasSubstr("cross-origin")));
  // The owner's dashboard (cookie, own Origin) may.
  auto same = client_->Post(
      route.c_str(), {{"Origin", own}, {"Cookie", cookie}}, "", "text/plain");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 200) << same->body;
  EXPECT_THAT(same->body, HasSubstr("\"trials\":\"2\""));
  EXPECT_EQ(Get(absl::StrCat("/api/v1/experiments/", id), viewer_)->status,
            404);
}

// Issue 41: the dashboard's actions are the RPCs' calls with the caller:
// the owner pauses, resumes, reprioritises and cancels from the dashboard's
// own origin (cookie), each answer the stored experiment.
TEST_F(HttpTest, TheOwnerPausesResumesReprioritisesAndCancels) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1, 2}));
  ASSERT_NE(id, 0);
  const std::string own = "http://" + coordinator_->http_address();
  const httplib::Headers dashboard = {{"Origin", own},
                                      {"Cookie", "prism_token=" + alice_}};
  const std::string e = absl::StrCat("/api/v1/experiments/", id);
  auto post = [&](const std::string& verb, const std::string& body = "") {
    return client_->Post((e + "/" + verb).c_str(), dashboard, body,
                         "application/json");
  };
  auto paused = post("pause");
  ASSERT_TRUE(paused);
  EXPECT_EQ(paused->status, 200) << paused->body;
  EXPECT_THAT(paused->body, HasSubstr("\"state\":\"EXPERIMENT_PAUSED\""));
  EXPECT_EQ(Stored(id).state(), v1::EXPERIMENT_PAUSED);
  EXPECT_EQ(post("resume")->status, 200);
  EXPECT_EQ(Stored(id).state(), v1::EXPERIMENT_ACTIVE);
  auto priority = post("priority", R"({"priority": 3})");
  EXPECT_EQ(priority->status, 200) << priority->body;
  EXPECT_EQ(Stored(id).priority(), 3);
  // A body that is not SetPriorityRequest JSON, or names another id: 400.
  auto garbled = post("priority", "three");
  EXPECT_EQ(garbled->status, 400);
  EXPECT_THAT(garbled->body, HasSubstr("not a SetPriorityRequest in JSON"));
  EXPECT_EQ(post("priority", R"({"id": "999", "priority": 1})")->status, 400);
  EXPECT_EQ(Stored(id).priority(), 3);
  auto cancelled = post("cancel");
  EXPECT_EQ(cancelled->status, 200) << cancelled->body;
  const v1::Experiment after = Stored(id);
  EXPECT_EQ(after.state(), v1::EXPERIMENT_CANCELLED);
  EXPECT_EQ(after.counts().cancelled(), 4);
  // Nothing ran: a cancelled experiment reads 0% done, not 100%.
  EXPECT_DOUBLE_EQ(after.progress(), 0.0);
  EXPECT_EQ(post("pause")->status, 400);  // finished: FAILED_PRECONDITION
}

// Another user's experiment: PERMISSION_DENIED (403) from every action,
// with nothing changed; a viewer may act on nothing.
TEST_F(HttpTest, ActionsOnAnotherUsersExperimentAre403AndChangeNothing) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  ASSERT_NE(id, 0);
  const std::string own = "http://" + coordinator_->http_address();
  const std::string bob = Token("bob", v1::ROLE_USER);
  const std::string e = absl::StrCat("/api/v1/experiments/", id);
  const v1::Experiment before = Stored(id);
  for (const std::string& token : {bob, viewer_}) {
    for (const auto& [verb, body] :
         std::vector<std::pair<std::string, std::string>>{
             {"pause", ""},
             {"cancel", ""},
             {"resume", ""},
             {"priority", R"({"priority": 5})"},
             {"delete", ""}}) {
      auto res =
          client_->Post((e + "/" + verb).c_str(),
                        {{"Origin", own}, {"Cookie", "prism_token=" + token}},
                        body, "application/json");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 403) << verb << ": " << res->body;
      EXPECT_THAT(res->body, Not(HasSubstr("cross-origin")));
    }
  }
  const v1::Experiment after = Stored(id);
  EXPECT_EQ(after.state(), before.state());
  EXPECT_EQ(after.priority(), before.priority());
  EXPECT_EQ(after.counts().queued(), before.counts().queued());
  // An admin may act on anyone's.
  auto admin =
      client_->Post((e + "/pause").c_str(),
                    {{"Origin", own},
                     {"Authorization", "Bearer " + std::string(kAdminToken)}},
                    "", "text/plain");
  EXPECT_EQ(admin->status, 200) << admin->body;
}

// Every state-changing route refuses a cross-origin request (a page
// elsewhere holding the user's cookie), and nothing changes: no experiment
// paused, cancelled, reprioritised or submitted.
TEST_F(HttpTest, EveryActionRefusesOtherOrigins) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  ASSERT_NE(id, 0);
  const std::string e = absl::StrCat("/api/v1/experiments/", id);
  std::string spec_text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(
      Spec({"1x2,4x4"}, {1}), &spec_text));
  for (const auto& [path, body] :
       std::vector<std::pair<std::string, std::string>>{
           {e + "/pause", ""},
           {e + "/resume", ""},
           {e + "/cancel", ""},
           {e + "/priority", R"({"priority": 4})"},
           {e + "/extend", R"({"addSeeds": 1})"},
           {"/api/v1/plan", spec_text},
           {"/api/v1/submit", spec_text}}) {
    for (const httplib::Headers& headers :
         std::vector<httplib::Headers>{{{"Cookie", "prism_token=" + alice_},
                                        {"Origin", "http://127.0.0.1:1"}},
                                       {{"Cookie", "prism_token=" + alice_},
                                        {"Sec-Fetch-Site", "cross-site"}},
                                       {{"Cookie", "prism_token=" + alice_}}}) {
      auto res = client_->Post(path.c_str(), headers, body, "text/plain");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 403) << path;
      EXPECT_THAT(res->body, HasSubstr("cross-origin request refused"));
    }
  }
  const v1::Experiment after = Stored(id);
  EXPECT_EQ(after.state(), v1::EXPERIMENT_ACTIVE);
  EXPECT_EQ(after.priority(), 0);
  // Neither the plan nor the submit stored an experiment.
  EXPECT_EQ(Get(absl::StrCat("/api/v1/experiments/", id + 1), viewer_)->status,
            404);
}

// The submit page's routes: /api/v1/plan is a dry run (nothing stored, the
// trials and headroom it would take), a spec that does not parse is 400
// with its line and column, and /api/v1/submit stores it.
TEST_F(HttpTest, PlanIsADryRunWithLineAndColumnErrorsAndSubmitStores) {
  const std::string own = "http://" + coordinator_->http_address();
  const httplib::Headers dashboard = {{"Origin", own},
                                      {"Cookie", "prism_token=" + alice_}};
  std::string spec_text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(
      Spec({"2x2,4x4"}, {1, 2}), &spec_text));
  auto plan = client_->Post("/api/v1/plan", dashboard, spec_text, "text/plain");
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->status, 200) << plan->body;
  v1::SubmitResponse planned;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(plan->body, &planned).ok());
  EXPECT_EQ(planned.experiment().id(), 0);
  EXPECT_EQ(planned.trials_created(), 4);
  EXPECT_EQ(planned.headroom().trials(), 4);
  EXPECT_THAT(Get("/api/v1/experiments", viewer_)->body,
              Not(HasSubstr("\"id\"")));

  auto bad = client_->Post(
      "/api/v1/plan", dashboard,
      "name: \"x\"\nmodel { preset: \"tiny\" }\nbogus: 1\n", "text/plain");
  EXPECT_EQ(bad->status, 400);
  EXPECT_THAT(bad->body, HasSubstr("spec_text:3:"));
  auto empty = client_->Post("/api/v1/submit", dashboard, "  ", "text/plain");
  EXPECT_EQ(empty->status, 400);
  EXPECT_THAT(empty->body, HasSubstr("it is empty"));
  EXPECT_THAT(Get("/api/v1/experiments", viewer_)->body,
              Not(HasSubstr("\"id\"")));

  auto submitted =
      client_->Post("/api/v1/submit", dashboard, spec_text, "text/plain");
  EXPECT_EQ(submitted->status, 200) << submitted->body;
  v1::SubmitResponse stored;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(submitted->body, &stored)
          .ok());
  ASSERT_GT(stored.experiment().id(), 0);
  const v1::Experiment e = Stored(stored.experiment().id());
  EXPECT_EQ(e.owner(), "alice");
  EXPECT_EQ(e.counts().total(), 4);
  // A viewer may not submit.
  EXPECT_EQ(client_
                ->Post("/api/v1/submit",
                       {{"Origin", own}, {"Cookie", "prism_token=" + viewer_}},
                       spec_text, "text/plain")
                ->status,
            403);
}

// POST .../extend is ExperimentService.Extend with the caller: the owner's
// dry run stores nothing, the real one queues the new seed's trials only;
// another user is refused (403) with nothing added; a body asking for two
// kinds of seeds at once is 400 naming the fields.
TEST_F(HttpTest, ExtendAddsSeedsForTheOwnerAndNoOneElse) {
  const int64_t id = Finished();
  ASSERT_EQ(Stored(id).state(), v1::EXPERIMENT_DONE);
  const std::string own = "http://" + coordinator_->http_address();
  const std::string route = absl::StrCat("/api/v1/experiments/", id, "/extend");
  auto post = [&](const std::string& token, const std::string& body) {
    return client_->Post(route.c_str(),
                         {{"Origin", own}, {"Cookie", "prism_token=" + token}},
                         body, "application/json");
  };
  auto bob = post(Token("bob", v1::ROLE_USER), R"({"addSeeds": 1})");
  EXPECT_EQ(bob->status, 403) << bob->body;
  EXPECT_EQ(Stored(id).counts().total(), 2);

  auto dry = post(alice_, R"({"addSeeds": 1, "dryRun": true})");
  ASSERT_EQ(dry->status, 200) << dry->body;
  v1::ExtendResponse planned;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(dry->body, &planned).ok());
  EXPECT_EQ(planned.trials_created(), 2);
  EXPECT_EQ(Stored(id).counts().total(), 2);
  EXPECT_EQ(Stored(id).state(), v1::EXPERIMENT_DONE);

  auto both = post(alice_, R"({"addSeeds": 1, "toSeeds": 3})");
  EXPECT_EQ(both->status, 400) << both->body;
  EXPECT_EQ(Stored(id).counts().total(), 2);

  auto added = post(alice_, R"({"addSeeds": 1})");
  ASSERT_EQ(added->status, 200) << added->body;
  v1::ExtendResponse response;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(added->body, &response).ok());
  EXPECT_EQ(response.trials_created(), 2);
  EXPECT_EQ(response.trials_reused(), 2);
  ASSERT_EQ(response.seeds_added_size(), 1);
  EXPECT_EQ(response.seeds_added(0), 2);
  const v1::Experiment after = Stored(id);
  EXPECT_EQ(after.counts().total(), 4);
  EXPECT_EQ(after.counts().completed(), 2);
  EXPECT_EQ(after.state(), v1::EXPERIMENT_ACTIVE);
}

// GET .../compare is ResultsService.Compare.
TEST_F(HttpTest, CompareEqualsTheRpc) {
  const int64_t id = Finished();
  v1::CompareRequest req;
  req.set_experiment_id(id);
  req.set_schedule_a("4x6");
  req.set_schedule_b("2x2,4x4");
  v1::CompareResponse rpc;
  auto ctx = Ctx(viewer_);
  ASSERT_TRUE(results_->Compare(ctx.get(), req, &rpc).ok());
  auto res = Get(
      absl::StrCat("/api/v1/experiments/", id, "/compare?a=4x6&b=2x2%2C4x4"),
      viewer_);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->body, Json(rpc));
  EXPECT_EQ(
      Get(absl::StrCat("/api/v1/experiments/", id, "/compare?a=4x6"), viewer_)
          ->status,
      400);
}

// A script (curl, no browser headers at all) deletes with its bearer token.
TEST_F(HttpTest, AScriptWithABearerTokenDeletesWithoutAnOrigin) {
  const int64_t id = Submit(alice_, Spec({"2x2,4x4"}, {1}));
  const std::string route = absl::StrCat("/api/v1/experiments/", id, "/delete");
  const httplib::Headers bearer = {{"Authorization", "Bearer " + alice_}};
  auto active = client_->Post(route.c_str(), bearer, "", "text/plain");
  ASSERT_TRUE(active);
  EXPECT_EQ(active->status, 400);
  EXPECT_THAT(active->body, HasSubstr("cancel it first"));
  v1::ExperimentRef ref;
  ref.set_id(id);
  v1::Experiment cancelled;
  auto ctx = Ctx(alice_);
  ASSERT_TRUE(experiments_->Cancel(ctx.get(), ref, &cancelled).ok());
  EXPECT_EQ(client_->Post(route.c_str(), bearer, "", "text/plain")->status,
            200);
  EXPECT_EQ(client_->Post(route.c_str(), bearer, "", "text/plain")->status,
            404);
  EXPECT_EQ(
      client_->Post("/api/v1/experiments/x/delete", bearer, "", "text/plain")
          ->status,
      400);
}

TEST_F(HttpTest, BadIdsAre400AndUnknownPathsAndIds404) {
  EXPECT_EQ(Get("/api/v1/experiments/abc", viewer_)->status, 400);
  EXPECT_EQ(Get("/api/v1/experiments/99", viewer_)->status, 404);
  EXPECT_EQ(Get("/api/v1/trials/99", viewer_)->status, 404);
  auto unknown = Get("/api/v1/nothing", viewer_);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_THAT(unknown->body, HasSubstr("\"error\""));
  // Routing comes first: an unknown path is 404 even without a token.
  EXPECT_EQ(Get("/api/v1/nothing", "")->status, 404);
  EXPECT_EQ(Get("/api/v1/experiments/7/logs", "")->status, 404);
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  const std::string e = "/api/v1/experiments/" + std::to_string(id);
  EXPECT_EQ(Get(e + "/rank?sort=sideways", viewer_)->status, 400);
  EXPECT_EQ(Get(e + "/rank?require=shiny", viewer_)->status, 400);
  EXPECT_EQ(Get(e + "/trials?state=sleeping", viewer_)->status, 400);
  EXPECT_EQ(Get(e + "/trials?page_size=x", viewer_)->status, 400);
}

TEST_F(HttpTest, MetricsParseAsPrometheusText) {
  Finished();
  auto res = Get("/metrics", viewer_);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const std::regex sample(
      R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?[0-9.eE+\-]+(Inf)?$)");
  const std::regex comment(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  int samples = 0;
  const std::vector<std::string> lines = absl::StrSplit(res->body, '\n');
  for (const std::string& line : lines) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      EXPECT_TRUE(std::regex_match(line, comment)) << line;
    } else {
      EXPECT_TRUE(std::regex_match(line, sample)) << line;
      ++samples;
    }
  }
  EXPECT_GT(samples, 10);
  EXPECT_THAT(res->body, HasSubstr("prism_trials{state=\"completed\"} 2"));
  EXPECT_THAT(res->body, HasSubstr("prism_workers{state=\"idle\"} 1"));
  EXPECT_THAT(res->body, HasSubstr("prism_queue_depth 0"));
  EXPECT_THAT(res->body, HasSubstr("prism_rpc_duration_seconds_count{method=\"/"
                                   "prism.v1.WorkerService/Complete\"} 2"));
}

TEST_F(HttpTest, MetricsNeedATokenAndHealthzDoesNot) {
  auto refused = client_->Get("/metrics");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  EXPECT_THAT(refused->body, HasSubstr("missing credentials"));
  EXPECT_THAT(refused->body, Not(HasSubstr("prism_")));
  httplib::Headers cookie = {{"Cookie", "prism_token=" + worker_token_}};
  EXPECT_EQ(client_->Get("/metrics", cookie)->status, 200);
  auto health = client_->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
}

TEST_F(HttpTest, RepeatedBadTokensFromAnAddressGet429) {
  for (int i = 0; i < kDefaultAuthMaxFailures; ++i) {
    EXPECT_EQ(Get("/api/v1/whoami", "prism_guess")->status, 401) << i;
  }
  // Now even a good token from this address waits for the window's end.
  auto limited = Get("/api/v1/whoami", viewer_);
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->status, 429);
  EXPECT_THAT(limited->body, HasSubstr("too many failed authentications"));
  EXPECT_EQ(Get("/metrics", viewer_)->status, 429);
  // gRPC calls from the same address count against it too.
  v1::WhoAmIResponse who;
  EXPECT_EQ(
      auth_->WhoAmI(Ctx(viewer_).get(), v1::WhoAmIRequest(), &who).error_code(),
      grpc::StatusCode::RESOURCE_EXHAUSTED);
  clock_.Advance(kDefaultAuthFailureWindowSeconds * 1000);
  EXPECT_EQ(Get("/api/v1/whoami", viewer_)->status, 200);
}

class HttpMetricsOpenTest : public HttpTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    HttpTest::Customize(o);
    o->metrics_open = true;
  }
};

TEST_F(HttpMetricsOpenTest, MetricsOpenServesThemWithoutAToken) {
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->body, HasSubstr("prism_queue_depth 0"));
  // The API still needs one.
  EXPECT_EQ(client_->Get("/api/v1/whoami")->status, 401);
}

TEST_F(HttpTest, EventStreamStartsWithTheExperiment) {
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  std::string received;
  httplib::Headers headers = {{"Authorization", "Bearer " + viewer_}};
  auto res =
      client_->Get(("/api/v1/events?experiment=" + std::to_string(id)).c_str(),
                   headers, [&](const char* data, size_t n) {
                     received.append(data, n);
                     return received.find("\n\n") == std::string::npos;
                   });
  EXPECT_THAT(received, HasSubstr("data: {\"unixMs\""));
  EXPECT_THAT(received, HasSubstr("\"experimentUpdated\":{\"id\":\"" +
                                  std::to_string(id) + "\""));
}

class HttpStreamLimitTest : public HttpTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    HttpTest::Customize(o);
    o->limits.max_event_streams = 2;
  }
};

TEST_F(HttpStreamLimitTest, StreamsPastTheCapAre429AndAClosedOneFreesItsSlot) {
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  const std::string address = coordinator_->http_address();
  RawStream first = OpenRawStream(address, viewer_, id);
  RawStream second = OpenRawStream(address, viewer_, id);
  ASSERT_EQ(first.status, 200) << first.text;
  ASSERT_EQ(second.status, 200) << second.text;
  EXPECT_THAT(first.text, HasSubstr("data: {"));

  RawStream refused = OpenRawStream(address, viewer_, id);
  EXPECT_EQ(refused.status, 429) << refused.text;
  EXPECT_THAT(refused.text,
              HasSubstr("{\"error\": \"open streams are 2; limit "
                        "--max-event-streams=2 (close one or retry later)"));
  refused.Close();
  // The API still answers while every stream slot is taken.
  EXPECT_EQ(Get("/api/v1/experiments/" + std::to_string(id), viewer_)->status,
            200);

  // A client leaving is noticed at the stream's next keep-alive writes, long
  // before this deadline (the old 15 s keep-alive would miss it).
  first.Close();
  RawStream third;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    third = OpenRawStream(address, viewer_, id);
    if (third.status == 200) break;
    third.Close();
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_EQ(third.status, 200) << third.text;
  third.Close();
  second.Close();
}

class HttpPerUserStreamLimitTest : public HttpTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    HttpTest::Customize(o);
    o->limits.max_event_streams_per_user = 1;
  }
};

TEST_F(HttpPerUserStreamLimitTest, OneViewerCannotTakeEveryStream) {
  const int64_t id = Submit(alice_, Spec({"4x6"}, {1}));
  const std::string address = coordinator_->http_address();
  RawStream mine = OpenRawStream(address, viewer_, id);
  ASSERT_EQ(mine.status, 200) << mine.text;
  RawStream second = OpenRawStream(address, viewer_, id);
  EXPECT_EQ(second.status, 429) << second.text;
  EXPECT_THAT(second.text, HasSubstr("user 'vera' has 1 open streams; limit "
                                     "--max-event-streams-per-user=1"));
  second.Close();
  // Another user still gets one.
  RawStream theirs = OpenRawStream(address, alice_, id);
  EXPECT_EQ(theirs.status, 200) << theirs.text;
  theirs.Close();
  mine.Close();
}

// SendRaw sends `request` on a fresh connection to the coordinator's HTTP
// port and returns the status line's code (0 when none came back).
int SendRaw(const std::string& http_address, const std::string& request) {
  const size_t colon = http_address.rfind(':');
  int port = 0;
  if (!absl::SimpleAtoi(http_address.substr(colon + 1), &port)) return 0;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int status = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) >= 0) {
    std::string text;
    pollfd p{fd, POLLIN, 0};
    while (text.find("\r\n") == std::string::npos && poll(&p, 1, 10000) > 0) {
      char buffer[1024];
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      text.append(buffer, static_cast<size_t>(n));
    }
    if (text.size() > 12) {
      EXPECT_TRUE(absl::SimpleAtoi(text.substr(9, 3), &status));
    }
  }
  close(fd);
  return status;
}

TEST_F(HttpTest, AnonymousHugeBodyIs413WithoutBeingRead) {
  // It announces 256 MiB and sends a little: the answer comes from the
  // headers alone (httplib discards what follows until its read timeout).
  const std::string request =
      "POST /api/v1/experiments HTTP/1.1\r\nHost: test\r\n"
      "Content-Length: 268435456\r\n\r\n" +
      std::string(4096, 'x');
  EXPECT_EQ(SendRaw(coordinator_->http_address(), request), 413);
  // The server is still serving.
  EXPECT_EQ(Get("/api/v1/whoami", viewer_)->status, 200);
}

TEST_F(HttpTest, ServesTheDashboardWithContentTypes) {
  auto index = client_->Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_THAT(index->get_header_value("Content-Type"), HasSubstr("text/html"));
  auto js = client_->Get("/static/js/main.js");
  EXPECT_EQ(js->status, 200);
  EXPECT_THAT(js->get_header_value("Content-Type"), HasSubstr("javascript"));
  EXPECT_EQ(client_->Get("/static/../../etc/passwd")->status, 404);
}

int Connect(const std::string& http_address) {
  int port = 0;
  if (!absl::SimpleAtoi(http_address.substr(http_address.rfind(':') + 1),
                        &port)) {
    return -1;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// ReadAnswers reads from `fd` until `count` HTTP status lines arrived, the
// peer closed, or 10 s passed; returns their codes.
std::vector<int> ReadAnswers(int fd, int count) {
  std::vector<int> codes;
  std::string text;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (static_cast<int>(codes.size()) < count && absl::Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buffer[4096];
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    size_t at;
    while ((at = text.find("HTTP/1.1 ")) != std::string::npos &&
           text.size() >= at + 12) {
      int code = 0;
      EXPECT_TRUE(absl::SimpleAtoi(text.substr(at + 9, 3), &code));
      codes.push_back(code);
      text.erase(0, at + 12);
    }
  }
  return codes;
}

// RssBytes is this process's resident set (the in-process coordinator's).
int64_t RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream in(line.substr(6));
      int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

// Flood sends `prefix`, then up to `bytes` of 'a' in 64 KiB writes; returns
// how many of those the server took before it closed the connection.
int64_t Flood(const std::string& http_address, const std::string& prefix,
              int64_t bytes) {
  static const std::string chunk(64 << 10, 'a');
  const int fd = Connect(http_address);
  if (fd < 0) return -1;
  int64_t sent = 0;
  if (send(fd, prefix.data(), prefix.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(prefix.size())) {
    while (sent < bytes) {
      const ssize_t n = send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += n;
    }
  }
  close(fd);
  return sent;
}

// Issue #32's attacks, without a token, from several connections at once:
// a request line that never ends, a GET announcing a 100 MB body, and a GET
// followed by 100 MB its head does not announce (once parsed as the next
// request line). Each connection is closed long before its bytes are sent,
// and the coordinator's memory stays where it was.
TEST_F(HttpTest, HostileBytesBeforeAuthenticationKeepMemoryBounded) {
  const std::string address = coordinator_->http_address();
  ASSERT_EQ(Get("/api/v1/whoami", viewer_)->status, 200);  // warm
  const int64_t before = RssBytes();
  std::atomic<int64_t> peak{before};
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      const int64_t now = RssBytes();
      int64_t seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  constexpr int64_t kLine = int64_t{150} << 20;
  constexpr int64_t kBody = 100'000'000;
  const std::vector<std::pair<std::string, int64_t>> attacks = {
      {"GET /", kLine},
      {"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n", kBody},
      {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", kBody},
  };
  std::vector<std::thread> clients;
  std::vector<int64_t> sent(12, 0);
  for (int i = 0; i < 12; ++i) {
    clients.emplace_back([&, i] {
      sent[i] = Flood(address, attacks[i % 3].first, attacks[i % 3].second);
    });
  }
  for (std::thread& t : clients) t.join();
  done = true;
  sampler.join();
  for (int i = 0; i < 12; ++i) {
    EXPECT_GE(sent[i], 0) << "attack " << i % 3;
    // Closed after the limit and the short drain, not after everything.
    EXPECT_LT(sent[i], int64_t{32} << 20) << "attack " << i % 3;
  }
  const int64_t growth = peak.load() - before;
  std::cout << "RSS before " << before / 1024 << " KiB, peak during the "
            << "attacks +" << growth / 1024 << " KiB\n";
  EXPECT_LT(growth, int64_t{8} << 20);
  EXPECT_EQ(Get("/api/v1/whoami", viewer_)->status, 200);
}

// What the bounded reader answers before closing, so a client can tell.
TEST_F(HttpTest, OversizedHeadsAndBodiesAreAnsweredThenClosed) {
  const std::string address = coordinator_->http_address();
  EXPECT_EQ(SendRaw(address, "GET /" + std::string(9000, 'a') + " HTTP/1.1"),
            414);
  std::string headers = "GET / HTTP/1.1\r\n";
  while (headers.size() < (70 << 10))
    headers += "X-A: " + std::string(1000, 'a') + "\r\n";
  EXPECT_EQ(SendRaw(address, headers), 431);
  EXPECT_EQ(SendRaw(address, "GET / HTTP/1.1\r\nContent-Length: 70000\r\n\r\n"),
            413);
  EXPECT_EQ(SendRaw(address,
                    "POST /api/v1/logout HTTP/1.1\r\nTransfer-Encoding: "
                    "chunked\r\n\r\n"),
            411);
}

// A GET's body is discarded, not parsed as the next request; pipelined
// requests are all answered.
TEST_F(HttpTest, UnreadBodiesAreDroppedAndPipelinedRequestsServed) {
  const int fd = Connect(coordinator_->http_address());
  ASSERT_GE(fd, 0);
  const std::string requests =
      "GET /healthz HTTP/1.1\r\nContent-Length: 23\r\n\r\n"
      "GET /nowhere HTTP/1.1\r\n"
      "GET /healthz HTTP/1.1\r\n\r\n";
  ASSERT_EQ(send(fd, requests.data(), requests.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(requests.size()));
  EXPECT_EQ(ReadAnswers(fd, 2), (std::vector<int>{200, 200}));
  close(fd);
}

class HttpEdgeLimitTest : public HttpTest {
 protected:
  void Customize(CoordinatorOptions* o) override {
    HttpTest::Customize(o);
    o->limits.http_max_connections_per_peer = 4;
    o->limits.http_header_timeout_ms = 300;
  }
};

TEST_F(HttpEdgeLimitTest, OnePeerHoldsAtMostItsConnections) {
  const std::string address = coordinator_->http_address();
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) {
    const int fd = Connect(address);
    ASSERT_GE(fd, 0);
    const std::string get = "GET /healthz HTTP/1.1\r\n\r\n";
    ASSERT_GT(send(fd, get.data(), get.size(), MSG_NOSIGNAL), 0);
    ASSERT_EQ(ReadAnswers(fd, 1), std::vector<int>{200});  // kept alive
    held.push_back(fd);
  }
  EXPECT_EQ(SendRaw(address, "GET /healthz HTTP/1.1\r\n\r\n"), 503);
  for (int fd : held) close(fd);
  // Closed connections give their places back (once the server notices).
  int status = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (status != 200 && absl::Now() < deadline) {
    status = SendRaw(address, "GET /healthz HTTP/1.1\r\n\r\n");
  }
  EXPECT_EQ(status, 200);
}

TEST_F(HttpEdgeLimitTest, SlowHeadIs408AfterTheHeaderTimeout) {
  const int fd = Connect(coordinator_->http_address());
  ASSERT_GE(fd, 0);
  const std::string start = "GET /healthz HTTP/1.1\r\nX-Slow: ";
  ASSERT_GT(send(fd, start.data(), start.size(), MSG_NOSIGNAL), 0);
  const absl::Time sent = absl::Now();
  EXPECT_EQ(ReadAnswers(fd, 1), std::vector<int>{408});
  EXPECT_LT(absl::Now() - sent, absl::Seconds(5));
  close(fd);
}

// A client that connected and sent nothing has seconds left of its header
// timeout; stopping the coordinator does not wait them out.
TEST_F(HttpTest, ShutdownDoesNotWaitForQuietConnections) {
  const int quiet = Connect(coordinator_->http_address());
  ASSERT_GE(quiet, 0);
  const int half = Connect(coordinator_->http_address());
  ASSERT_GE(half, 0);
  const std::string start = "GET /healthz HTTP/1.1\r\n";
  ASSERT_GT(send(half, start.data(), start.size(), MSG_NOSIGNAL), 0);
  // Both are being served (the healthz below shares their pool).
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
  const absl::Time begin = absl::Now();
  coordinator_->Shutdown();
  EXPECT_LT(absl::Now() - begin, absl::Seconds(3));
  close(quiet);
  close(half);
}

// Before the database opens (a start on a full disk): the probes answer on
// the coordinator's address, not ready with the cause, and Stop frees the
// port for the coordinator that takes over.
TEST(OpeningProbesTest, AnswerNotReadyWithTheCauseAndFreeThePort) {
  CoordinatorOptions options;
  options.db_path = "/tmp/no-such-dir/prism.db";
  options.http_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<OpeningProbes>> probes =
      OpeningProbes::Start(options);
  ASSERT_TRUE(probes.ok()) << probes.status();
  (*probes)->OpenFailed(
      storage::StorageFault::kIoError,
      absl::UnavailableError("cannot open database: disk I/O error"));
  const std::vector<std::string> host_port =
      absl::StrSplit((*probes)->http_address(), ':');
  ASSERT_EQ(host_port.size(), 2u);
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(host_port[1], &port));
  httplib::Client client(host_port[0], port);

  httplib::Result ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_THAT(ready->body,
              HasSubstr("not ready: database cannot be opened for writing"));
  EXPECT_THAT(ready->body, HasSubstr("io_error: cannot open database: disk"));
  httplib::Result alive = client.Get("/healthz");
  ASSERT_TRUE(alive);
  EXPECT_EQ(alive->status, 200);
  httplib::Result metrics = client.Get("/metrics");  // no token to check
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("prism_storage_ready 0\n"));
  EXPECT_THAT(metrics->body,
              HasSubstr("prism_storage_errors_total{fault=\"io_error\"} 1\n"));
  httplib::Result api = client.Get("/api/v1/experiments");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 503);
  EXPECT_THAT(api->body, HasSubstr("not serving yet: database cannot be"));

  // Stopped, nothing listens there (httplib binds with SO_REUSEPORT, so a
  // second bind would succeed even beside a live listener: connect instead).
  (*probes)->Stop();
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_NE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
      << "the probes still listen";
  EXPECT_EQ(errno, ECONNREFUSED);
  close(fd);
}

}  // namespace
}  // namespace prism::server::testing
