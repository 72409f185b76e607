// dashboard_fill: fills a running coordinator with one large finished
// experiment so the dashboard's page loads can be measured at scale
// (bench/dashboard_load.mjs drives it). It submits a random-strategy search
// over the 124M shape (12 layers, 12 heads: 12,376 schedules), then acts as a
// worker through the real WorkerService RPCs: Lease, then Complete with
// SYNTHETIC metrics and curves (a deterministic function of the schedule plus
// per-seed noise) instead of training. The numbers are load, not results.
//
//   dashboard_fill --coordinator 127.0.0.1:PORT --token-file admin.token
//       --schedules 2500 --seeds 4        (2,501 x 4 = 10,004 trials)
//
// With --asha the search is an ASHA one instead (rungs at steps 200, 400 and
// 600, eta 3): each leased trial completes at the task's stop_at_step, its
// curve resumed from resume_step, so the coordinator stops, promotes and
// resumes trials as it would with real workers (the dashboard's rung view
// at scale):
//
//   dashboard_fill --coordinator 127.0.0.1:PORT --token-file admin.token
//       --schedules 118 --seeds 2 --asha
//
// Prints the experiment id on the last line of stdout.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "prism/v1/prism.grpc.pb.h"

namespace prism::bench {
namespace {

struct Options {
  std::string coordinator = "127.0.0.1:50051";
  std::string token_file;
  int schedules = 2500;
  int seeds = 4;
  bool asha = false;
};

constexpr int64_t kSteps = 1000;
constexpr int kTrainEvery = 50;
constexpr int kValEvery = 200;
constexpr int64_t kAshaRungs[] = {200, 400, 600};

class Client {
 public:
  Client(const std::string& address, std::string token)
      : channel_(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials())),
        experiments_(v1::ExperimentService::NewStub(channel_)),
        workers_(v1::WorkerService::NewStub(channel_)),
        auth_(v1::AuthService::NewStub(channel_)),
        authorization_("Bearer " + std::move(token)) {}

  void UseToken(const std::string& token) {
    authorization_ = "Bearer " + token;
  }

  // Call makes one unary RPC with the bearer token; returns its status as an
  // absl::Status naming the method.
  template <typename Stub, typename Request, typename Response>
  absl::Status Call(const char* name,
                    grpc::Status (Stub::*method)(grpc::ClientContext*,
                                                 const Request&, Response*),
                    Stub* stub, const Request& request, Response* response) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", authorization_);
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(60));
    grpc::Status status = (stub->*method)(&context, request, response);
    if (status.ok()) return absl::OkStatus();
    return absl::UnknownError(
        absl::StrCat(name, ": ", status.error_message(), " (gRPC code ",
                     static_cast<int>(status.error_code()), ")"));
  }

  v1::ExperimentService::Stub* experiments() { return experiments_.get(); }
  v1::WorkerService::Stub* workers() { return workers_.get(); }
  v1::AuthService::Stub* auth() { return auth_.get(); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ExperimentService::Stub> experiments_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
  std::unique_ptr<v1::AuthService::Stub> auth_;
  std::string authorization_;
};

std::vector<int> ExpandSchedule(const std::string& text) {
  std::vector<int> heads;
  for (absl::string_view block : absl::StrSplit(text, ',')) {
    std::vector<std::string> parts = absl::StrSplit(block, 'x');
    if (parts.size() != 2) return {};
    for (int i = 0; i < std::stoi(parts[1]); ++i) {
      heads.push_back(std::stoi(parts[0]));
    }
  }
  return heads;
}

// SyntheticCompletion fills `request` with plausible metrics and curves for
// the leased trial: wider early heads lower the loss a little, more
// transitions raise it, and each seed adds noise.
// An ASHA task trains from resume_step to stop_at_step (0: the whole
// budget): only the points in between are sent.
void SyntheticCompletion(const v1::TrialTask& task,
                         v1::CompleteRequest* request) {
  const v1::Trial& trial = task.trial();
  const int64_t first = task.resume_step();
  const int64_t last = task.stop_at_step() > 0 ? task.stop_at_step() : kSteps;
  const std::vector<int> heads = ExpandSchedule(trial.schedule());
  const int layers = static_cast<int>(heads.size());
  int transitions = 0;
  double wide_early = 0;
  for (int l = 0; l < layers; ++l) {
    if (l + 1 < layers && heads[l] != heads[l + 1]) ++transitions;
    if (l < layers / 3) wide_early += 1.0 - heads[l] / 12.0;
  }
  std::mt19937_64 rng(static_cast<uint64_t>(trial.id()) * 7919 +
                      static_cast<uint64_t>(trial.seed()));
  std::normal_distribution<double> noise(0.0, 0.004);
  const double final_val =
      3.3748 - 0.006 * wide_early / 4.0 + 0.002 * transitions + noise(rng);
  const double tokens_per_second = 3.2e5 * (1.0 + noise(rng));

  v1::TrialMetrics* m = request->mutable_metrics();
  auto curve = [&](int64_t step) {
    return final_val + 7.5 * std::exp(-static_cast<double>(step) / 120.0);
  };
  m->set_final_val_loss(curve(last));
  m->set_min_val_loss(m->final_val_loss() - 0.002);
  m->set_final_train_loss(m->final_val_loss() - 0.03);
  m->set_steps(last);
  m->set_tokens_per_second(tokens_per_second);
  m->set_mfu(0.38);
  m->set_peak_matmul_flops(7.0e14);
  m->set_parameters(124'475'904);
  m->set_parameters_nanogpt(123'689'472);
  m->set_flops_per_token(850'000'000);
  m->set_wall_seconds(kSteps * 0.25);
  m->set_device("synthetic");
  for (double target : {4.0, 3.6, 3.4}) {
    v1::Milestone* milestone = m->add_milestones();
    milestone->set_target(target);
    milestone->set_step(static_cast<int64_t>(
        kSteps * (target - 3.0) / (target - 3.0 + (final_val - 3.2)) * 0.5));
  }
  for (int l = 0; l < layers; ++l) {
    // Wide early heads attend more locally; distance peaks mid-network.
    const double peak = 60.0 * std::sin(M_PI * (l + 0.5) / layers);
    m->add_attention_distance(peak * (0.6 + 0.4 * heads[l] / 12.0));
  }
  for (int64_t step = 0; step <= last; step += kTrainEvery) {
    if (step <= first && first > 0) continue;
    v1::LossPoint* p = request->add_points();
    p->set_split(v1::SPLIT_TRAIN);
    p->set_step(step);
    p->set_loss(static_cast<float>(curve(step) - 0.03 + noise(rng)));
    p->set_learning_rate(static_cast<float>(
        6e-4 * std::min(1.0, step / 50.0) *
        (0.1 + 0.45 * (1 + std::cos(M_PI * step / kSteps)))));
    p->set_tokens_per_second(tokens_per_second);
  }
  for (int64_t step = kValEvery; step <= last; step += kValEvery) {
    if (step <= first) continue;
    v1::LossPoint* p = request->add_points();
    p->set_split(v1::SPLIT_VAL);
    p->set_step(step);
    p->set_loss(static_cast<float>(curve(step)));
  }
}

absl::Status Run(const Options& o) {
  std::ifstream file(o.token_file);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string admin_token(absl::StripAsciiWhitespace(buffer.str()));
  if (admin_token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no token in --token-file ", o.token_file));
  }
  Client client(o.coordinator, admin_token);

  v1::SubmitRequest submit;
  v1::ExperimentSpec* spec = submit.mutable_spec();
  spec->set_name(absl::StrCat("dashboard-bench-", o.asha ? "asha-" : "",
                              o.schedules, "x", o.seeds));
  spec->mutable_model()->set_preset("124m");
  spec->mutable_budget()->set_steps(kSteps);
  if (o.asha) {
    spec->set_strategy(v1::STRATEGY_ASHA);
    spec->mutable_budget()->set_eval_every(kValEvery);
    for (int64_t rung : kAshaRungs) spec->mutable_asha()->add_rungs(rung);
  } else {
    spec->set_strategy(v1::STRATEGY_RANDOM);
  }
  spec->set_samples(o.schedules);
  spec->set_sample_seed(7);
  for (int s = 1; s <= o.seeds; ++s) spec->add_seeds(s);
  v1::SubmitResponse submitted;
  absl::Status status =
      client.Call("Submit", &v1::ExperimentService::Stub::Submit,
                  client.experiments(), submit, &submitted);
  if (!status.ok()) return status;
  const int64_t experiment_id = submitted.experiment().id();
  std::cerr << "experiment " << experiment_id << ": "
            << submitted.trials_created() << " trials\n";

  v1::CreateTokenRequest create;
  create.set_user("dashboard-bench");
  create.set_role(v1::ROLE_WORKER);
  v1::CreateTokenResponse worker_token;
  status = client.Call("CreateToken", &v1::AuthService::Stub::CreateToken,
                       client.auth(), create, &worker_token);
  if (!status.ok()) return status;
  client.UseToken(worker_token.token());

  v1::RegisterRequest register_request;
  register_request.set_host("dashboard-bench");
  register_request.set_device("synthetic");
  register_request.set_threads(1);
  v1::RegisterResponse registered;
  status = client.Call("Register", &v1::WorkerService::Stub::Register,
                       client.workers(), register_request, &registered);
  if (!status.ok()) return status;

  const auto start = std::chrono::steady_clock::now();
  int completed = 0;
  for (;;) {
    v1::LeaseRequest lease;
    lease.set_worker_id(registered.worker_id());
    v1::LeaseResponse leased;
    status = client.Call("Lease", &v1::WorkerService::Stub::Lease,
                         client.workers(), lease, &leased);
    if (!status.ok()) return status;
    if (!leased.has_task()) break;
    v1::CompleteRequest complete;
    complete.set_worker_id(registered.worker_id());
    complete.set_trial_id(leased.task().trial().id());
    complete.set_attempt(leased.task().trial().attempt());
    SyntheticCompletion(leased.task(), &complete);
    v1::CompleteResponse done;
    status = client.Call("Complete", &v1::WorkerService::Stub::Complete,
                         client.workers(), complete, &done);
    if (!status.ok()) return status;
    if (++completed % 1000 == 0) std::cerr << completed << " completed\n";
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::cerr << completed << " trials completed in " << seconds << " s ("
            << completed / seconds << " lease+complete/s)\n";
  std::cout << experiment_id << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace prism::bench

int main(int argc, char** argv) {
  prism::bench::Options o;
  CLI::App app{
      "Fill a coordinator with one large synthetic finished experiment"};
  app.add_option("--coordinator", o.coordinator, "HOST:PORT of the gRPC API");
  app.add_option("--token-file", o.token_file, "Admin token file")->required();
  app.add_option("--schedules", o.schedules, "Sampled schedules")
      ->check(CLI::Range(1, 12375));
  app.add_option("--seeds", o.seeds, "Seeds per schedule")
      ->check(CLI::Range(1, 64));
  app.add_flag("--asha", o.asha,
               "An ASHA search (rungs at 200, 400, 600 steps) instead of "
               "random");
  CLI11_PARSE(app, argc, argv);
  absl::Status status = prism::bench::Run(o);
  if (!status.ok()) {
    std::cerr << "dashboard_fill: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
