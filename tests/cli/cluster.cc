#include "tests/cli/cluster.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace prism::testing {

namespace fs = std::filesystem;

std::string PrismBinary() {
  const char* other = std::getenv("PRISM_TEST_BINARY");
  if (other != nullptr && *other != '\0') return other;
  return std::string(PRISM_BINARY_DIR) + "/cli/prism";
}

std::string DataDirEnv() {
  return absl::StrCat("PRISM_DATA_DIR=", PRISM_BINARY_DIR,
                      "/tests/cli/prism-data");
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

namespace {

std::string Tail(const std::string& path, int lines) {
  std::vector<std::string> all =
      absl::StrSplit(ReadFile(path), '\n', absl::SkipEmpty());
  const size_t start =
      all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0;
  return absl::StrJoin(all.begin() + start, all.end(), "\n");
}

// RunBinary runs `binary` with `args` the way RunPrism says.
CommandResult RunBinary(const std::string& binary,
                        const std::vector<std::string>& args,
                        const std::vector<std::string>& env,
                        const std::string& files) {
  cli::SpawnOptions spawn;
  spawn.argv = {binary};
  spawn.argv.insert(spawn.argv.end(), args.begin(), args.end());
  spawn.env = env;
  spawn.stdout_path = files + ".out";
  spawn.stderr_path = files + ".err";
  return cli::RunToCompletion(spawn, absl::Seconds(120));
}

}  // namespace

CommandResult RunPrism(const std::vector<std::string>& args,
                       const std::vector<std::string>& env,
                       const std::string& files) {
  return RunBinary(PrismBinary(), args, env, files);
}

LocalCluster::LocalCluster(CoordinatorFlags flags)
    : flags_(flags),
      db_path_(flags_.db_path.empty() ? temp_.File("prism.db")
                                      : flags_.db_path) {
  fs::create_directories(checkpoint_dir());
  if (flags_.tls || flags_.mutual_tls) {
    certs_ = MakeTestCerts(temp_.File("tls"), flags_.tls_names);
    EXPECT_TRUE(certs_.ok) << certs_.error;
    flags_.args.insert(flags_.args.end(), {"--tls-cert", certs_.server_cert,
                                           "--tls-key", certs_.server_key});
    if (flags_.mutual_tls) {
      flags_.args.insert(flags_.args.end(), {"--tls-client-ca", certs_.ca});
    }
  }
}

std::vector<std::string> LocalCluster::TlsEnv(bool client_cert) const {
  if (!certs_.ok) return {};
  std::vector<std::string> env = {absl::StrCat("PRISM_TLS_CA=", certs_.ca)};
  if (flags_.mutual_tls && client_cert) {
    env.push_back(absl::StrCat("PRISM_TLS_CERT=", certs_.client_cert));
    env.push_back(absl::StrCat("PRISM_TLS_KEY=", certs_.client_key));
  }
  return env;
}

LocalCluster::~LocalCluster() {
  // Workers first, so none is left waiting on a dead coordinator; the
  // Subprocess destructors SIGKILL anything that ignores SIGTERM.
  workers_.Stop(absl::Seconds(20));
  if (coordinator_.has_value()) coordinator_->process.Stop(absl::Seconds(10));
}

absl::Status LocalCluster::StartCoordinator(
    const std::vector<std::string>& env) {
  ++coordinator_starts_;
  cli::CoordinatorLaunch launch;
  launch.prefix = flags_.prefix;
  launch.binary = PrismBinary();
  launch.args = {
      "--db",
      db_path_,
      "--listen",
      grpc_address_.empty() ? flags_.listen_host + ":0" : grpc_address_,
      "--http",
      flags_.listen_host + ":0",
      "--lease-seconds",
      absl::StrCat(flags_.lease_seconds),
      "--heartbeat-seconds",
      absl::StrCat(flags_.heartbeat_seconds),
      "--max-attempts",
      absl::StrCat(flags_.max_attempts),
      "--admin-token-file",
      dir() + "/admin.token"};
  launch.args.insert(launch.args.end(), flags_.args.begin(), flags_.args.end());
  launch.env = env;
  launch.log_path = dir() + "/coordinator.log";
  launch.ready_file =
      absl::StrCat(dir(), "/ready-", coordinator_starts_, ".json");
  launch.stop_grace = absl::Seconds(10);
  coordinator_.reset();
  absl::StatusOr<cli::LocalCoordinator> started = cli::StartCoordinator(launch);
  if (!started.ok()) {
    return absl::Status(started.status().code(),
                        absl::StrCat(started.status().message(), "\n",
                                     Tail(launch.log_path, 20)));
  }
  coordinator_.emplace(*std::move(started));
  grpc_address_ = coordinator_->endpoints.grpc;
  http_address_ = coordinator_->endpoints.http;
  admin_token_ =
      std::string(absl::StripAsciiWhitespace(ReadFile(dir() + "/admin.token")));
  if (admin_token_.empty()) return absl::InternalError("no admin token");
  if (client_ == nullptr) {
    TlsFiles files;
    if (certs_.ok) files.ca = certs_.ca;
    if (flags_.mutual_tls) {
      files.cert = certs_.client_cert;
      files.key = certs_.client_key;
    }
    absl::StatusOr<TlsPem> tls = LoadTlsFiles(files, "--tls-ca");
    if (!tls.ok()) return tls.status();
    client_ =
        std::make_unique<cli::RpcClient>(grpc_address_, admin_token_, *tls);
  }
  return absl::OkStatus();
}

void LocalCluster::KillCoordinator() {
  if (!coordinator_.has_value()) return;
  (void)coordinator_->process.Signal(SIGKILL);
  (void)coordinator_->process.Wait(absl::Seconds(30));
}

absl::StatusOr<int> LocalCluster::StartWorker(
    const std::vector<std::string>& extra) {
  WorkerFlags flags;
  flags.args = extra;
  return StartWorker(flags);
}

absl::StatusOr<int> LocalCluster::StartWorker(const WorkerFlags& flags) {
  cli::WorkerLaunch launch;
  launch.prefix = flags.prefix;
  launch.binary = PrismBinary();
  launch.coordinator =
      flags.coordinator.empty() ? grpc_address_ : flags.coordinator;
  launch.token = admin_token_;
  launch.threads = 1;
  // One kernel: tests compare curves bit for bit with `prism train` runs,
  // and auto's timed choice may differ between processes.
  launch.attention = "fused";
  launch.checkpoint_dir =
      flags.checkpoint_dir.empty() ? checkpoint_dir() : flags.checkpoint_dir;
  launch.args = flags.args;
  // The demo corpus is prepared once per build tree and shared (preparing
  // it is safe when processes race).
  launch.env = TlsEnv(flags.client_cert);
  launch.env.push_back(DataDirEnv());
  launch.env.insert(launch.env.end(), flags.env.begin(), flags.env.end());
  launch.log_path = absl::StrCat(dir(), "/worker-", workers_.size(), ".log");
  return workers_.Start(launch);
}

CommandResult LocalCluster::Run(const std::vector<std::string>& args,
                                bool with_defaults) const {
  static int counter = 0;
  std::vector<std::string> env;
  if (with_defaults) {
    env = TlsEnv();
    env.push_back(absl::StrCat("PRISM_COORDINATOR=", grpc_address_));
    env.push_back(absl::StrCat("PRISM_TOKEN=", admin_token_));
  }
  return RunPrism(args, env, absl::StrCat(dir(), "/cmd-", ++counter));
}

CommandResult LocalCluster::CheckDb() const {
  // Always this build's checker, whichever binary runs the cluster.
  static int counter = 0;
  return RunBinary(std::string(PRISM_BINARY_DIR) + "/cli/prism",
                   {"db", "check", "--db", db_path_}, {},
                   absl::StrCat(dir(), "/db-check-", ++counter));
}

cli::RpcClient& LocalCluster::client() { return *client_; }

absl::StatusOr<int64_t> LocalCluster::SubmitSpec(const std::string& spec_text) {
  static int counter = 0;
  const std::string path =
      absl::StrCat(dir(), "/spec-", ++counter, ".textproto");
  WriteFile(path, spec_text);
  CommandResult r = Run({"submit", path, "--format", "json"});
  if (r.status != 0) {
    return absl::InternalError(
        absl::StrCat("prism submit exited ", r.status, ": ", r.err));
  }
  v1::SubmitResponse response;
  if (!google::protobuf::util::JsonStringToMessage(r.out, &response).ok()) {
    return absl::InternalError(
        absl::StrCat("unparsable submit output: ", r.out));
  }
  return response.experiment().id();
}

absl::StatusOr<v1::Experiment> LocalCluster::WaitForExperiment(
    int64_t id, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  v1::Experiment experiment;
  while (absl::Now() < deadline) {
    v1::GetExperimentRequest request;
    request.set_id(id);
    absl::Status status =
        client_->Call(&v1::ExperimentService::Stub::Get, client_->experiments(),
                      request, &experiment, absl::Seconds(5));
    if (status.ok() && (experiment.state() == v1::EXPERIMENT_DONE ||
                        experiment.state() == v1::EXPERIMENT_CANCELLED)) {
      return experiment;
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "experiment ", id, " not done in ", absl::FormatDuration(timeout),
      "; last counts: ", experiment.counts().ShortDebugString(), "\n", Logs()));
}

absl::StatusOr<std::vector<v1::Trial>> LocalCluster::ListTrials(
    int64_t experiment_id) {
  std::vector<v1::Trial> trials;
  v1::ListTrialsRequest request;
  request.set_experiment_id(experiment_id);
  do {
    v1::ListTrialsResponse page;
    absl::Status status =
        client_->Call(&v1::ExperimentService::Stub::ListTrials,
                      client_->experiments(), request, &page);
    if (!status.ok()) return status;
    trials.insert(trials.end(), page.trials().begin(), page.trials().end());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  return trials;
}

absl::StatusOr<v1::GetTrialResponse> LocalCluster::GetTrial(int64_t trial_id) {
  v1::GetTrialRequest request;
  request.set_trial_id(trial_id);
  v1::GetTrialResponse response;
  absl::Status status = client_->Call(&v1::ResultsService::Stub::GetTrial,
                                      client_->results(), request, &response);
  if (!status.ok()) return status;
  return response;
}

std::string LocalCluster::Logs() const {
  std::string out = absl::StrCat("--- coordinator.log\n",
                                 Tail(dir() + "/coordinator.log", 15), "\n");
  for (int i = 0; i < workers_.size(); ++i) {
    absl::StrAppend(&out, "--- worker-", i, ".log\n",
                    Tail(workers_.log_path(i), 15), "\n");
  }
  return out;
}

std::string RecipeSpec(const std::string& name,
                       const std::vector<std::string>& schedules,
                       const Recipe& r, int max_attempts) {
  std::string spec = absl::StrCat(
      "name: \"", name,
      "\"\nmodel { preset: \"tiny\" }\nbudget {\n  steps: ", r.steps,
      "\n  batch_size: 4\n  eval_every: ", r.eval_every,
      "\n  eval_batches: 1\n  log_every: ", r.log_every,
      "\n  checkpoint_every: ", r.checkpoint_every, "\n}\nseeds: 1\n");
  for (const std::string& s : schedules) {
    absl::StrAppend(&spec, "schedules: \"", s, "\"\n");
  }
  if (max_attempts > 0) absl::StrAppend(&spec, "max_attempts: ", max_attempts);
  return spec;
}

std::map<int64_t, float> Reference(const LocalCluster& cluster,
                                   const std::string& schedule,
                                   const Recipe& r) {
  static int counter = 0;
  CommandResult run = RunPrism(
      {"train",
       "--preset",
       "tiny",
       "--schedule",
       schedule,
       "--seed",
       "1",
       "--steps",
       absl::StrCat(r.steps),
       "--batch-size",
       "4",
       "--eval-every",
       absl::StrCat(r.eval_every),
       "--eval-batches",
       "1",
       "--log-every",
       absl::StrCat(r.log_every),
       "--threads",
       "1",
       "--attention",
       "fused",
       "--format",
       "json"},
      {DataDirEnv()}, absl::StrCat(cluster.dir(), "/reference-", ++counter));
  std::map<int64_t, float> curve;
  v1::GetTrialResponse response;
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(
      google::protobuf::util::JsonStringToMessage(run.out, &response).ok())
      << run.out;
  for (const v1::LossPoint& p : response.points()) {
    if (p.split() == v1::SPLIT_VAL) curve[p.step()] = p.loss();
  }
  return curve;
}

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

std::vector<int64_t> StepsOf(const v1::GetTrialResponse& trial,
                             v1::Split split) {
  std::vector<int64_t> steps;
  for (const v1::LossPoint& p : trial.points()) {
    if (p.split() == split) steps.push_back(p.step());
  }
  return steps;
}

std::vector<int64_t> Range(int64_t from, int64_t to, int64_t every) {
  std::vector<int64_t> out;
  for (int64_t s = from; s <= to; s += every) out.push_back(s);
  return out;
}

absl::StatusOr<v1::Trial> WaitForStep(LocalCluster& cluster, int64_t id,
                                      int64_t step, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(id);
    if (trials.ok()) {
      for (const v1::Trial& t : *trials) {
        if (t.last_step() >= step && t.state() == v1::TRIAL_RUNNING) return t;
      }
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no trial reached step ", step, "\n", cluster.Logs()));
}

absl::Status WaitForAttempt(LocalCluster& cluster, int64_t trial_id,
                            int attempt, int64_t step, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    absl::StatusOr<v1::GetTrialResponse> t = cluster.GetTrial(trial_id);
    if (t.ok() && t->trial().attempt() >= attempt &&
        (t->trial().last_step() >= step ||
         t->trial().state() == v1::TRIAL_COMPLETED)) {
      return absl::OkStatus();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("trial ", trial_id, " never ran attempt ", attempt,
                   " past step ", step, "\n", cluster.Logs()));
}

bool WaitForLog(const std::string& path, const std::string& needle,
                absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!absl::StrContains(ReadFile(path), needle)) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return true;
}

}  // namespace prism::testing
