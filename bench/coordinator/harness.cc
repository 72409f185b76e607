// The harness shared by the coordinator_bench scenarios (harness.h).
#include "bench/coordinator/harness.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "prism/v1/prism.grpc.pb.h"
#include "scheduler/space/schedule.h"
#include "scheduler/space/space.h"
#include "server/coordinator.h"
#include "storage/sqlite_store.h"

namespace prism::bench {

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(
      v.size() - 1, static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5));
  return v[i];
}

std::string Summary(const std::vector<double>& ms) {
  return fmt::format(
      "p50 {:.3f} ms  p90 {:.3f} ms  p99 {:.3f} ms  max {:.3f} ms  (n={})",
      Percentile(ms, 50), Percentile(ms, 90), Percentile(ms, 99),
      Percentile(ms, 100), ms.size());
}

std::unique_ptr<server::Coordinator> StartCoordinator(
    const std::string& db, const std::string& durability) {
  server::CoordinatorOptions options;
  options.db_path = db;
  options.admin_token_env = kAdminToken;
  options.lease_seconds = 600;
  options.heartbeat_seconds = 60;
  options.limits.max_trials_per_experiment = 1'000'000;
  options.durability = durability;
  absl::StatusOr<std::unique_ptr<server::Coordinator>> c =
      server::Coordinator::Create(options);
  if (!c.ok()) {
    std::cerr << "coordinator_bench: " << c.status() << "\n";
    std::exit(1);
  }
  absl::Status started = (*c)->Start();
  if (!started.ok()) {
    std::cerr << "coordinator_bench: " << started << "\n";
    std::exit(1);
  }
  return std::move(*c);
}

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("authorization", "Bearer " + token);
  return ctx;
}

std::unique_ptr<grpc::ClientContext> SetupCtx(const std::string& token) {
  std::unique_ptr<grpc::ClientContext> ctx = Ctx(token);
  ctx->set_wait_for_ready(true);
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(1));
  return ctx;
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address, int id) {
  grpc::ChannelArguments args;
  args.SetInt("prism.bench.channel", id);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

std::string Token(server::Coordinator* c, const std::string& user,
                  v1::Role role) {
  v1::CreateTokenRequest req;
  req.set_user(user);
  req.set_role(role);
  return c->auth()
      ->CreateToken(server::Caller{"admin", v1::ROLE_ADMIN}, req)
      ->token();
}

int64_t SubmitTiny(server::Coordinator* c, const std::string& user, int seeds,
                   const v1::Budget& budget) {
  v1::SubmitRequest req;
  req.mutable_spec()->mutable_model()->set_preset("tiny");
  *req.mutable_spec()->mutable_budget() = budget;
  for (int s = 1; s <= seeds; ++s) req.mutable_spec()->add_seeds(s);
  absl::StatusOr<v1::SubmitResponse> r =
      c->experiments()->Submit(server::Caller{user, v1::ROLE_USER}, req);
  if (!r.ok()) {
    std::cerr << "coordinator_bench: " << r.status() << "\n";
    std::exit(1);
  }
  return r->experiment().id();
}

int64_t SubmitIngestExperiment(server::Coordinator* c, int workers) {
  v1::Budget budget;
  budget.set_steps(kIngestSteps);
  budget.set_log_every(1);
  budget.set_eval_every(static_cast<int32_t>(kIngestSteps));
  return SubmitTiny(c, "alice", (workers + 20) / 21, budget);
}

int64_t StoredPoints(server::Coordinator* c, int64_t trial_id) {
  absl::StatusOr<std::vector<v1::LossPoint>> points =
      c->store()->GetPoints(trial_id);
  return points.ok() ? static_cast<int64_t>(points->size()) : 0;
}

int64_t BuildRankDb(const std::string& db, int trials, int points,
                    int val_every) {
  constexpr int64_t kFarFuture = 1'000'000'000'000'000;
  absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store =
      storage::SqliteStore::Open(db);
  const int seeds = 2;
  const int64_t steps = points - points / val_every;
  const int eval_every = std::max(1, val_every - 1);
  storage::NewExperiment e;
  e.name = "rank bench";
  e.owner = "alice";
  e.spec.set_name("rank bench");
  e.spec.mutable_model()->set_preset("124m");
  e.spec.mutable_model()->set_d_model(768);
  e.spec.mutable_model()->set_layers(12);
  e.spec.mutable_model()->set_base_heads(12);
  e.spec.set_min_run(2);
  e.spec.set_max_run(4);
  e.spec.mutable_budget()->set_steps(steps);
  e.spec.mutable_budget()->set_log_every(1);
  e.spec.mutable_budget()->set_eval_every(eval_every);
  e.spec.add_seeds(1);
  e.spec.add_seeds(2);
  e.max_attempts = 3;
  e.total_steps = steps;
  e.config_fingerprint = "bench";
  SpaceSpec space{768, 12, 12, PrincipleSet::None(), 2, 4};
  absl::StatusOr<ScheduleEnumerator> en = ScheduleEnumerator::Create(space);
  const std::string baseline = Schedule::Uniform(12, 12).ToString();
  std::vector<std::string> schedules = {baseline};
  while (static_cast<int>(schedules.size()) < trials / seeds && en->Next()) {
    const std::string s = Schedule(en->heads()).ToString();
    if (s != baseline) schedules.push_back(s);
  }
  for (int seed = 1; seed <= seeds; ++seed) {
    for (const std::string& s : schedules)
      e.trials.push_back({s, seed, s == baseline});
  }
  const int64_t id = (*store)->CreateExperiment(e)->id;
  v1::Worker w;
  w.set_id("bench");
  (void)(*store)->UpsertWorker(w, 0, /*take_over=*/false);
  const Clock::time_point t0 = Clock::now();
  for (int t = 0; t < static_cast<int>(e.trials.size()); ++t) {
    absl::StatusOr<std::optional<v1::Trial>> trial =
        (*store)->LeaseNextTrial(id, "bench", 1, kFarFuture);
    const double quality = 0.01 * ((*trial)->id() % 97);
    storage::ReportWrite report;
    report.ref = storage::AttemptRef{(*trial)->id(), 1, "bench"};
    report.lease_deadline_ms = kFarFuture;
    double val = 0;
    for (int64_t s = 0; s <= steps; ++s) {
      const double loss = 3.0 + quality + 5.0 / static_cast<double>(s + 1);
      v1::LossPoint p;
      p.set_step(s);
      p.set_loss(static_cast<float>(loss));
      if (s > 0) {
        p.set_split(v1::SPLIT_TRAIN);
        report.points.push_back(p);
      }
      if (s % eval_every == 0 || s == steps) {
        p.set_split(v1::SPLIT_VAL);
        report.points.push_back(p);
        val = loss;
      }
    }
    (void)(*store)->WriteReports({&report});
    v1::TrialMetrics m;
    m.set_final_val_loss(val);
    m.set_min_val_loss(val);
    m.set_tokens_per_second(10000 + (*trial)->id() % 13);
    m.set_steps(steps);
    for (int l = 0; l < 12; ++l) m.add_attention_distance(10.0 + l + quality);
    (void)(*store)->CompleteTrial(report.ref, m, {}, 2);
    if ((t + 1) % 1000 == 0) {
      std::cerr << fmt::format("  built {} trials ({:.0f} s)\n", t + 1,
                               Seconds(Clock::now() - t0));
    }
  }
  return id;
}

}  // namespace prism::bench
