// The authorization matrix: every RPC and every HTTP route against every kind
// of caller {no token, bad token, viewer, worker, owner, other user, admin},
// with the expected code per cell, from one table (Rows() for the RPCs,
// kRoutes for HTTP). Each cell runs on a fresh in-process coordinator (gRPC
// and HTTP on loopback) holding an experiment owned by "alice" (the owner
// column), a worker registered by the worker token, a trial it has leased
// and a worker of another worker user. The coverage tests fail when the
// proto gains a method, or http_api.h an API route, without a row here.
#include <httplib.h>

#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/data_roots.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "server/http/http_api.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server::testing {
namespace {

// The callers, in the table's column order.
enum CallerKind { kNone, kBad, kViewer, kWorker, kOwner, kOther, kAdmin };
constexpr int kCallers = 7;
constexpr std::array<const char*, kCallers> kCallerNames = {
    "none", "bad", "viewer", "worker", "owner", "other", "admin"};

// An expected outcome: an exact code, or kAllowed (any code but
// UNAUTHENTICATED and PERMISSION_DENIED, for a call whose non-auth answer
// depends on state the matrix does not pin down).
constexpr int kAllowed = -1;
using Expect = std::array<int, kCallers>;

constexpr int OK = grpc::StatusCode::OK;
constexpr int UNAUTH = grpc::StatusCode::UNAUTHENTICATED;
constexpr int DENIED = grpc::StatusCode::PERMISSION_DENIED;
constexpr int INVALID = grpc::StatusCode::INVALID_ARGUMENT;
constexpr int NOT_FOUND = grpc::StatusCode::NOT_FOUND;
constexpr int PRECONDITION = grpc::StatusCode::FAILED_PRECONDITION;

// The rules of server/core/auth/auth.h, as rows of expected codes.
constexpr Expect kReadRule = {UNAUTH, UNAUTH, OK, OK, OK, OK, OK};
constexpr Expect kSubmitRule = {UNAUTH, UNAUTH, DENIED, DENIED, OK, OK, OK};
constexpr Expect kOwnerRule = {UNAUTH, UNAUTH, DENIED, DENIED, OK, DENIED, OK};
constexpr Expect kWorkRule = {UNAUTH, UNAUTH, DENIED, DENIED,
                              DENIED, DENIED, OK};
constexpr Expect kAdminRule = {UNAUTH, UNAUTH, DENIED, DENIED,
                               DENIED, DENIED, OK};
// A worker RPC naming a worker registered by another worker user: only an
// admin may (it takes the worker over). The admin's call then gets `admin`:
// FAILED_PRECONDITION where it names a trial the worker does not hold.
constexpr Expect ForeignWorkerRule(int admin) {
  return {UNAUTH, UNAUTH, DENIED, DENIED, DENIED, DENIED, admin};
}
// HTTP: the same in status codes; the dashboard, /healthz and /readyz are
// public, /metrics needs a token unless --metrics-open.
constexpr Expect kHttpRead = {401, 401, 200, 200, 200, 200, 200};
constexpr Expect kHttpPublic = {200, 200, 200, 200, 200, 200, 200};

// WorkRule is kWorkRule with the worker column set: the worker that owns the
// registration gets `worker`.
constexpr Expect WorkRule(int worker) {
  Expect e = kWorkRule;
  e[kWorker] = worker;
  return e;
}

// The world each cell runs in.
struct World {
  int64_t experiment = 0;
  std::string worker_id;          // registered by the worker token ("farm")
  std::string foreign_worker_id;  // registered by another worker ("farm2")
  v1::Trial trial;                // leased by worker_id
  std::string owner_token_id;     // the id of the owner's token
};

// Access to the fixture's protected members for the row callables.
class Matrix;
using Call = std::function<int(Matrix&, const World&, const std::string&)>;

struct Row {
  std::string name;  // "Service.Method", or "Service.Method (variant)"
  Call call;
  Expect expect;
};

class Matrix : public CoordinatorTest {
 public:
  using CoordinatorTest::Ctx;
  using CoordinatorTest::Point;
  using CoordinatorTest::Spec;
  v1::ExperimentService::Stub& experiments() { return *experiments_; }
  v1::WorkerService::Stub& workers() { return *workers_; }
  v1::ResultsService::Stub& results() { return *results_; }
  v1::ScheduleService::Stub& schedules() { return *schedules_; }
  v1::AuthService::Stub& auth() { return *auth_; }

  // HttpGet returns the status of GET `path` as `token` (0 on a transport
  // error). An event stream is closed once its headers arrive.
  int HttpGet(const std::string& path, const std::string& token, bool cookie) {
    httplib::Client client("http://" + coordinator_->http_address());
    client.set_read_timeout(10, 0);
    httplib::Headers headers;
    if (!token.empty() && cookie) {
      headers.emplace("Cookie", "prism_token=" + token);
    } else if (!token.empty()) {
      headers.emplace("Authorization", "Bearer " + token);
    }
    int status = 0;
    httplib::Result r = client.Get(
        path, headers,
        [&status](const httplib::Response& res) {
          status = res.status;
          return status == 200 ? false : true;  // stop a stream at once
        },
        [](const char*, size_t) { return true; });
    return status;
  }

 protected:
  void Customize(CoordinatorOptions* o) override {
    const std::string web = dir_.File("web");
    std::filesystem::create_directories(web + "/static/js");
    std::ofstream(web + "/index.html") << "<!doctype html><title>p</title>";
    std::ofstream(web + "/static/js/main.js") << "export {};";
    o->web_root = web;
  }
};

// Variant rows are named "Service.Method (what differs)".
std::string MethodOf(const std::string& row_name) {
  return row_name.substr(0, row_name.find(" ("));
}

// WithForeignWorkerRows appends, for each WorkerService row that names a
// worker (all but ListWorkers), the same call naming another worker user's
// worker, and a Register of a new worker.
std::vector<Row> WithForeignWorkerRows(std::vector<Row> rows) {
  const size_t n = rows.size();
  for (size_t i = 0; i < n; ++i) {
    const std::string name = rows[i].name;
    if (!absl::StartsWith(name, "WorkerService.") ||
        name == "WorkerService.ListWorkers") {
      continue;
    }
    Call call = [inner = rows[i].call](Matrix& m, const World& w,
                                       const std::string& token) {
      World foreign = w;
      foreign.worker_id = w.foreign_worker_id;
      return inner(m, foreign, token);
    };
    const bool names_held_trial =
        name == "WorkerService.Report" || name == "WorkerService.Complete" ||
        name == "WorkerService.Fail" || name == "WorkerService.Start";
    rows.push_back(
        {name + " (another worker user's worker)", std::move(call),
         ForeignWorkerRule(
             names_held_trial ? grpc::StatusCode::FAILED_PRECONDITION : OK)});
  }
  Call reg;
  for (const Row& row : rows) {
    if (row.name == "WorkerService.Register") reg = row.call;
  }
  rows.push_back(
      {"WorkerService.Register (new worker)",
       [inner = reg](Matrix& m, const World& w, const std::string& token) {
         World fresh = w;
         fresh.worker_id.clear();
         return inner(m, fresh, token);
       },
       WorkRule(OK)});
  return rows;
}

#define PRISM_UNARY(STUB, METHOD, REQ_TYPE, RESP_TYPE, FILL)  \
  [](Matrix& m, const World& w, const std::string& token) {   \
    REQ_TYPE req;                                             \
    FILL;                                                     \
    (void)w;                                                  \
    RESP_TYPE resp;                                           \
    auto ctx = Matrix::Ctx(token);                            \
    return static_cast<int>(                                  \
        m.STUB().METHOD(ctx.get(), req, &resp).error_code()); \
  }

const std::vector<Row>& Rows() {
  static auto* rows = new std::vector<Row>(WithForeignWorkerRows({
      // ScheduleService: read.
      {"ScheduleService.Count",
       PRISM_UNARY(schedules, Count, v1::CountSchedulesRequest,
                   v1::CountSchedulesResponse, {}),
       {UNAUTH, UNAUTH, INVALID, INVALID, INVALID, INVALID, INVALID}},
      {"ScheduleService.List",
       PRISM_UNARY(schedules, List, v1::ListSchedulesRequest,
                   v1::ListSchedulesResponse, {}),
       {UNAUTH, UNAUTH, INVALID, INVALID, INVALID, INVALID, INVALID}},
      {"ScheduleService.Check",
       PRISM_UNARY(schedules, Check, v1::CheckScheduleRequest,
                   v1::CheckScheduleResponse,
                   {
                     req.set_d_model(64);
                     req.set_base_heads(4);
                     req.set_schedule("4x4");
                   }),
       kReadRule},
      // ExperimentService.
      {"ExperimentService.Submit",
       PRISM_UNARY(experiments, Submit, v1::SubmitRequest, v1::SubmitResponse,
                   { *req.mutable_spec() = Matrix::Spec({"2x2,4x4"}, {2}); }),
       kSubmitRule},
      {"ExperimentService.Get",
       PRISM_UNARY(experiments, Get, v1::GetExperimentRequest, v1::Experiment,
                   { req.set_id(w.experiment); }),
       kReadRule},
      {"ExperimentService.List",
       PRISM_UNARY(experiments, List, v1::ListExperimentsRequest,
                   v1::ListExperimentsResponse, {}),
       kReadRule},
      {"ExperimentService.Cancel",
       PRISM_UNARY(experiments, Cancel, v1::ExperimentRef, v1::Experiment,
                   { req.set_id(w.experiment); }),
       kOwnerRule},
      {"ExperimentService.Pause",
       PRISM_UNARY(experiments, Pause, v1::ExperimentRef, v1::Experiment,
                   { req.set_id(w.experiment); }),
       kOwnerRule},
      {"ExperimentService.Resume",
       PRISM_UNARY(experiments, Resume, v1::ExperimentRef, v1::Experiment,
                   { req.set_id(w.experiment); }),
       kOwnerRule},
      {"ExperimentService.SetPriority",
       PRISM_UNARY(experiments, SetPriority, v1::SetPriorityRequest,
                   v1::Experiment,
                   {
                     req.set_id(w.experiment);
                     req.set_priority(5);
                   }),
       kOwnerRule},
      {"ExperimentService.Extend",
       PRISM_UNARY(experiments, Extend, v1::ExtendRequest, v1::ExtendResponse,
                   {
                     req.set_id(w.experiment);
                     req.set_add_seeds(1);
                   }),
       kOwnerRule},
      // The world's experiment is active: whoever may delete it learns it
      // must be cancelled first.
      {"ExperimentService.Delete",
       PRISM_UNARY(experiments, Delete, v1::ExperimentRef,
                   v1::DeleteExperimentResponse,
                   { req.set_id(w.experiment); }),
       {UNAUTH, UNAUTH, DENIED, DENIED, PRECONDITION, DENIED, PRECONDITION}},
      {"ExperimentService.ListTrials",
       PRISM_UNARY(experiments, ListTrials, v1::ListTrialsRequest,
                   v1::ListTrialsResponse,
                   { req.set_experiment_id(w.experiment); }),
       kReadRule},
      {"ExperimentService.SetUserPolicy",
       PRISM_UNARY(experiments, SetUserPolicy, v1::SetUserPolicyRequest,
                   v1::UserPolicy,
                   {
                     req.set_user("carol");
                     req.set_share(2);
                   }),
       kAdminRule},
      {"ExperimentService.ListUsers",
       PRISM_UNARY(experiments, ListUsers, v1::ListUsersRequest,
                   v1::ListUsersResponse, {}),
       kReadRule},
      // WorkerService: the worker role (and admin); the registration belongs
      // to the worker token's user.
      {"WorkerService.Register",
       PRISM_UNARY(workers, Register, v1::RegisterRequest, v1::RegisterResponse,
                   {
                     req.set_worker_id(w.worker_id);
                     req.set_host("h");
                     req.set_device("cpu");
                     req.set_threads(1);
                   }),
       WorkRule(OK)},
      {"WorkerService.Lease",
       PRISM_UNARY(workers, Lease, v1::LeaseRequest, v1::LeaseResponse,
                   { req.set_worker_id(w.worker_id); }),
       WorkRule(OK)},
      {"WorkerService.Heartbeat",
       PRISM_UNARY(workers, Heartbeat, v1::HeartbeatRequest,
                   v1::HeartbeatResponse,
                   {
                     req.set_worker_id(w.worker_id);
                     req.set_trial_id(w.trial.id());
                     req.set_attempt(w.trial.attempt());
                   }),
       WorkRule(OK)},
      {"WorkerService.Report",
       PRISM_UNARY(workers, Report, v1::ReportRequest, v1::ReportResponse,
                   {
                     req.set_worker_id(w.worker_id);
                     req.set_trial_id(w.trial.id());
                     req.set_attempt(w.trial.attempt());
                     *req.add_points() =
                         Matrix::Point(v1::SPLIT_TRAIN, 1, 3.0f);
                   }),
       WorkRule(OK)},
      {"WorkerService.Complete",
       PRISM_UNARY(workers, Complete, v1::CompleteRequest, v1::CompleteResponse,
                   {
                     req.set_worker_id(w.worker_id);
                     req.set_trial_id(w.trial.id());
                     req.set_attempt(w.trial.attempt());
                     req.mutable_metrics()->set_final_val_loss(3.0);
                     req.mutable_metrics()->set_min_val_loss(3.0);
                     req.mutable_metrics()->set_steps(100);
                   }),
       WorkRule(OK)},
      {"WorkerService.Fail",
       PRISM_UNARY(workers, Fail, v1::FailRequest, v1::FailResponse,
                   {
                     req.set_worker_id(w.worker_id);
                     req.set_trial_id(w.trial.id());
                     req.set_attempt(w.trial.attempt());
                     req.set_message("boom");
                   }),
       WorkRule(OK)},
      {"WorkerService.ListWorkers",
       PRISM_UNARY(workers, ListWorkers, v1::ListWorkersRequest,
                   v1::ListWorkersResponse, {}),
       kReadRule},
      {"WorkerService.Start",
       PRISM_UNARY(workers, Start, v1::StartRequest, v1::StartResponse,
                   {
                     req.set_worker_id(w.worker_id);
                     req.set_trial_id(w.trial.id());
                     req.set_attempt(w.trial.attempt());
                   }),
       WorkRule(OK)},
      {"WorkerService.Deregister",
       PRISM_UNARY(workers, Deregister, v1::DeregisterRequest,
                   v1::DeregisterResponse, { req.set_worker_id(w.worker_id); }),
       WorkRule(OK)},
      // ResultsService: read.
      {"ResultsService.Rank",
       PRISM_UNARY(results, Rank, v1::RankRequest, v1::RankResponse,
                   { req.set_experiment_id(w.experiment); }),
       kReadRule},
      {"ResultsService.GetTrial",
       PRISM_UNARY(results, GetTrial, v1::GetTrialRequest, v1::GetTrialResponse,
                   { req.set_trial_id(w.trial.id()); }),
       kReadRule},
      {"ResultsService.Compare",
       PRISM_UNARY(results, Compare, v1::CompareRequest, v1::CompareResponse,
                   {
                     req.set_experiment_id(w.experiment);
                     req.set_schedule_a("4x4");
                     req.set_schedule_b("2x2,4x4");
                   }),
       {UNAUTH, UNAUTH, NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND}},
      // Read; the world's experiment has too few finished schedules.
      {"ResultsService.Suggest",
       PRISM_UNARY(results, Suggest, v1::SuggestRequest, v1::SuggestResponse,
                   {
                     req.set_experiment_id(w.experiment);
                     req.set_n(3);
                   }),
       {UNAUTH, UNAUTH, PRECONDITION, PRECONDITION, PRECONDITION, PRECONDITION,
        PRECONDITION}},
      // Read; the world's experiment is not a ladder's.
      {"ResultsService.LadderTransfer",
       PRISM_UNARY(results, LadderTransfer, v1::LadderTransferRequest,
                   v1::LadderTransferResponse,
                   { req.set_experiment_id(w.experiment); }),
       {UNAUTH, UNAUTH, PRECONDITION, PRECONDITION, PRECONDITION, PRECONDITION,
        PRECONDITION}},
      {"ResultsService.Watch",
       [](Matrix& m, const World& w, const std::string& token) {
         v1::WatchRequest req;
         req.set_experiment_id(w.experiment);
         auto ctx = Matrix::Ctx(token);
         auto reader = m.results().Watch(ctx.get(), req);
         v1::WatchResponse first;
         if (reader->Read(&first)) {
           ctx->TryCancel();
           reader->Finish();
           return static_cast<int>(grpc::StatusCode::OK);
         }
         return static_cast<int>(reader->Finish().error_code());
       },
       kReadRule},
      // AuthService.
      {"AuthService.CreateToken",
       PRISM_UNARY(auth, CreateToken, v1::CreateTokenRequest,
                   v1::CreateTokenResponse,
                   {
                     req.set_user("carol");
                     req.set_role(v1::ROLE_VIEWER);
                   }),
       kAdminRule},
      {"AuthService.WhoAmI",
       PRISM_UNARY(auth, WhoAmI, v1::WhoAmIRequest, v1::WhoAmIResponse, {}),
       kReadRule},
      // Everyone lists (their own); revoking another user's token reads
      // as unknown unless the caller is an admin; the one admin token is
      // the last usable one.
      {"AuthService.ListTokens",
       PRISM_UNARY(auth, ListTokens, v1::ListTokensRequest,
                   v1::ListTokensResponse, {}),
       kReadRule},
      {"AuthService.RevokeToken (unknown id)",
       PRISM_UNARY(auth, RevokeToken, v1::RevokeTokenRequest,
                   v1::RevokeTokenResponse, { req.set_id("000000000000"); }),
       {UNAUTH, UNAUTH, NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND,
        NOT_FOUND}},
      {"AuthService.RevokeToken (the owner's token)",
       PRISM_UNARY(auth, RevokeToken, v1::RevokeTokenRequest,
                   v1::RevokeTokenResponse,
                   { req.set_id(w.owner_token_id); }),
       {UNAUTH, UNAUTH, NOT_FOUND, NOT_FOUND, OK, NOT_FOUND, OK}},
      {"AuthService.RevokeToken (the caller's own token)",
       PRISM_UNARY(auth, RevokeToken, v1::RevokeTokenRequest,
                   v1::RevokeTokenResponse,
                   { req.set_id(storage::TokenIdOf(Sha256Hex(token))); }),
       {UNAUTH, UNAUTH, OK, OK, OK, OK, PRECONDITION}},
  }));
  // Hostile input from callers allowed to make the call (issue #32): a
  // data path outside the coordinator's data roots, steps outside the
  // trial's 100-step budget. Past authentication each is INVALID_ARGUMENT.
  static constexpr Expect kInvalidWork = {UNAUTH, UNAUTH, DENIED, INVALID,
                                          DENIED, DENIED, INVALID};
  static const bool hostile_rows_added = [] {
    rows->push_back(
        {"ExperimentService.Submit (data path outside the data roots)",
         PRISM_UNARY(experiments, Submit, v1::SubmitRequest, v1::SubmitResponse,
                     {
                       *req.mutable_spec() = Matrix::Spec({"2x2,4x4"}, {2});
                       req.mutable_spec()->mutable_data()->add_train(
                           "/etc/shadow");
                     }),
         {UNAUTH, UNAUTH, DENIED, DENIED, INVALID, INVALID, INVALID}});
    rows->push_back(
        {"ExperimentService.Submit (data path escaping by ..)",
         PRISM_UNARY(experiments, Submit, v1::SubmitRequest, v1::SubmitResponse,
                     {
                       *req.mutable_spec() = Matrix::Spec({"2x2,4x4"}, {2});
                       req.mutable_spec()->mutable_data()->add_val(
                           DefaultDataRoot() + "/../../etc/passwd");
                     }),
         {UNAUTH, UNAUTH, DENIED, DENIED, INVALID, INVALID, INVALID}});
    rows->push_back(
        {"WorkerService.Report (step beyond the budget)",
         PRISM_UNARY(workers, Report, v1::ReportRequest, v1::ReportResponse,
                     {
                       req.set_worker_id(w.worker_id);
                       req.set_trial_id(w.trial.id());
                       req.set_attempt(w.trial.attempt());
                       *req.add_points() = Matrix::Point(
                           v1::SPLIT_VAL, std::numeric_limits<int64_t>::max(),
                           3.0f);
                     }),
         kInvalidWork});
    rows->push_back({"WorkerService.Heartbeat (step beyond the budget)",
                     PRISM_UNARY(workers, Heartbeat, v1::HeartbeatRequest,
                                 v1::HeartbeatResponse,
                                 {
                                   req.set_worker_id(w.worker_id);
                                   req.set_trial_id(w.trial.id());
                                   req.set_attempt(w.trial.attempt());
                                   req.set_step(101);
                                 }),
                     kInvalidWork});
    rows->push_back({"WorkerService.Complete (steps: -1)",
                     PRISM_UNARY(workers, Complete, v1::CompleteRequest,
                                 v1::CompleteResponse,
                                 {
                                   req.set_worker_id(w.worker_id);
                                   req.set_trial_id(w.trial.id());
                                   req.set_attempt(w.trial.attempt());
                                   req.mutable_metrics()->set_final_val_loss(
                                       3.0);
                                   req.mutable_metrics()->set_min_val_loss(3.0);
                                   req.mutable_metrics()->set_steps(-1);
                                 }),
                     kInvalidWork});
    rows->push_back({"WorkerService.Complete (fewer steps than the budget)",
                     PRISM_UNARY(workers, Complete, v1::CompleteRequest,
                                 v1::CompleteResponse,
                                 {
                                   req.set_worker_id(w.worker_id);
                                   req.set_trial_id(w.trial.id());
                                   req.set_attempt(w.trial.attempt());
                                   req.mutable_metrics()->set_final_val_loss(
                                       3.0);
                                   req.mutable_metrics()->set_min_val_loss(3.0);
                                   req.mutable_metrics()->set_steps(40);
                                 }),
                     kInvalidWork});
    return true;
  }();
  (void)hostile_rows_added;
  return *rows;
}

// The HTTP routes: the API routes (http_api.h's ApiRequest, one each) and
// the public ones. {E} and {T} are the world's experiment and trial.
struct Route {
  const char* path;
  Expect expect;
  bool cookie = false;  // the token as the prism_token cookie, not a header
};
// Suggest answers 400 (FAILED_PRECONDITION) to whoever may read: the
// world's experiment has too few finished schedules.
// So does the ladder route: the world's experiment is not a ladder's.
constexpr Expect kHttpSuggest = {401, 401, 400, 400, 400, 400, 400};
// Compare answers 404 (NOT_FOUND) to whoever may read: the world's trials
// have not finished, so neither schedule has a final loss.
constexpr Expect kHttpCompare = {401, 401, 404, 404, 404, 404, 404};
constexpr std::array<Route, 19> kRoutes = {{
    {"/api/v1/whoami", kHttpRead},
    {"/api/v1/experiments", kHttpRead},
    {"/api/v1/experiments/{E}", kHttpRead},
    {"/api/v1/experiments/{E}/rank", kHttpRead},
    {"/api/v1/experiments/{E}/trials", kHttpRead},
    {"/api/v1/trials/{T}", kHttpRead},
    {"/api/v1/workers", kHttpRead},
    {"/api/v1/experiments/{E}/suggest", kHttpSuggest},
    {"/api/v1/experiments/{E}/ladder", kHttpSuggest},
    {"/api/v1/experiments/{E}/compare?a=4x6&b=2x2,4x4", kHttpCompare},
    {"/api/v1/events?experiment={E}", kHttpRead},
    {"/api/v1/whoami", kHttpRead, /*cookie=*/true},
    {"/api/v1/events?experiment={E}", kHttpRead, /*cookie=*/true},
    {"/metrics", kHttpRead},
    {"/metrics", kHttpRead, /*cookie=*/true},
    {"/healthz", kHttpPublic},
    {"/readyz", kHttpPublic},
    {"/", kHttpPublic},
    {"/static/js/main.js", kHttpPublic},
}};
constexpr int kApiRoutes = 11;
static_assert(std::variant_size_v<ApiRequest> == kApiRoutes,
              "http_api.h has a new API route: add it to kRoutes");

std::string Fill(std::string path, const World& w) {
  for (const auto& [key, value] : {std::pair<std::string, std::string>{
                                       "{E}", std::to_string(w.experiment)},
                                   std::pair<std::string, std::string>{
                                       "{T}", std::to_string(w.trial.id())}}) {
    for (size_t at = path.find(key); at != std::string::npos;
         at = path.find(key)) {
      path.replace(at, key.size(), value);
    }
  }
  return path;
}

// A cell: one row (an RPC row index, or kRpcRows + a route index) and one
// caller.
struct Cell {
  int row;
  int caller;
};
void PrintTo(const Cell& cell, std::ostream* os) {
  *os << "{row " << cell.row << ", caller " << kCallerNames[cell.caller] << "}";
}

class AuthzMatrixTest : public Matrix,
                        public ::testing::WithParamInterface<Cell> {
 protected:
  void SetUp() override {
    Matrix::SetUp();
    tokens_[kNone] = "";
    tokens_[kBad] = "prism_" + std::string(64, '0');
    tokens_[kViewer] = Token("vera", v1::ROLE_VIEWER);
    tokens_[kWorker] = Token("farm", v1::ROLE_WORKER);
    tokens_[kOwner] = Token("alice", v1::ROLE_USER);
    tokens_[kOther] = Token("bob", v1::ROLE_USER);
    tokens_[kAdmin] = kAdminToken;
    world_.owner_token_id = storage::TokenIdOf(Sha256Hex(tokens_[kOwner]));
    world_.experiment = Submit(tokens_[kOwner], Spec({"2x2,4x4"}, {1}));
    ASSERT_NE(world_.experiment, 0);
    world_.worker_id = Register(tokens_[kWorker]);
    world_.foreign_worker_id = Register(Token("farm2", v1::ROLE_WORKER));
    world_.trial = Lease(tokens_[kWorker], world_.worker_id).trial();
    ASSERT_NE(world_.trial.id(), 0);
  }

  std::array<std::string, kCallers> tokens_;
  World world_;
};

int RpcRows() { return static_cast<int>(Rows().size()); }

std::string CellName(const ::testing::TestParamInfo<Cell>& info) {
  std::string name = info.param.row < RpcRows()
                         ? Rows()[info.param.row].name
                         : kRoutes[info.param.row - RpcRows()].path;
  name = absl::StrCat(name, "_", kCallerNames[info.param.caller]);
  if (info.param.row >= RpcRows() &&
      kRoutes[info.param.row - RpcRows()].cookie) {
    name += "_cookie";
  }
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return absl::StrCat(info.index, "_", name);
}

std::vector<Cell> AllCells() {
  std::vector<Cell> cells;
  const int rows = RpcRows() + static_cast<int>(kRoutes.size());
  for (int row = 0; row < rows; ++row) {
    for (int caller = 0; caller < kCallers; ++caller) {
      cells.push_back({row, caller});
    }
  }
  return cells;
}

TEST_P(AuthzMatrixTest, CallerGetsTheExpectedCode) {
  const Cell cell = GetParam();
  const std::string& token = tokens_[cell.caller];
  int expected;
  int got;
  std::string what;
  if (cell.row < RpcRows()) {
    const Row& row = Rows()[cell.row];
    expected = row.expect[cell.caller];
    got = row.call(*this, world_, token);
    what = row.name;
  } else {
    const Route& route = kRoutes[cell.row - RpcRows()];
    expected = route.expect[cell.caller];
    what = Fill(route.path, world_);
    got = HttpGet(what, token, route.cookie);
    if (route.cookie) what += " (cookie)";
  }
  SCOPED_TRACE(absl::StrCat(what, " as ", kCallerNames[cell.caller]));
  if (expected == kAllowed) {
    EXPECT_NE(got, UNAUTH);
    EXPECT_NE(got, DENIED);
    EXPECT_NE(got, 401);
    EXPECT_NE(got, 403);
  } else {
    EXPECT_EQ(got, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, AuthzMatrixTest,
                         ::testing::ValuesIn(AllCells()), CellName);

// Every method of every service in prism.proto has a row, and every row
// names a method.
TEST(AuthzMatrixCoverageTest, EveryRpcHasARow) {
  const google::protobuf::FileDescriptor* file =
      v1::Experiment::descriptor()->file();
  std::set<std::string> methods;
  for (int s = 0; s < file->service_count(); ++s) {
    const google::protobuf::ServiceDescriptor* service = file->service(s);
    for (int m = 0; m < service->method_count(); ++m) {
      methods.insert(
          absl::StrCat(service->name(), ".", service->method(m)->name()));
    }
  }
  std::set<std::string> rows;
  std::set<std::string> names;
  for (const Row& row : Rows()) {
    EXPECT_TRUE(names.insert(row.name).second) << "two rows " << row.name;
    rows.insert(MethodOf(row.name));
  }
  for (const std::string& m : methods) {
    EXPECT_TRUE(rows.count(m) == 1) << m << " has no row in the authz matrix";
  }
  for (const std::string& r : rows) {
    EXPECT_TRUE(methods.count(r) == 1) << r << " is no RPC in prism.proto";
  }
}

// Every API route's path parses to a distinct ApiRequest alternative, so the
// table covers each of them.
TEST(AuthzMatrixCoverageTest, EveryApiRouteHasARow) {
  std::set<size_t> kinds;
  for (const Route& route : kRoutes) {
    const std::string path = route.path;
    if (!absl::StartsWith(path, "/api/v1/")) continue;
    World w;
    w.experiment = 7;
    w.trial.set_id(9);
    const std::string filled = Fill(path, w);
    const size_t q = filled.find('?');
    ApiParams params;
    if (q != std::string::npos) {
      for (absl::string_view pair : absl::StrSplit(filled.substr(q + 1), '&')) {
        const size_t eq = pair.find('=');
        params.emplace(std::string(pair.substr(0, eq)),
                       std::string(pair.substr(eq + 1)));
      }
    }
    absl::StatusOr<ApiRequest> r = ParseApiRequest(filled.substr(0, q), params);
    ASSERT_TRUE(r.ok()) << path << ": " << r.status();
    kinds.insert(r->index());
  }
  EXPECT_EQ(kinds.size(), std::variant_size_v<ApiRequest>);
}

}  // namespace
}  // namespace prism::server::testing
