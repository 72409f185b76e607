#include "tests/cli/cluster.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

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
  CommandResult result;
  absl::StatusOr<cli::Subprocess> child = cli::Subprocess::Spawn(spawn);
  if (!child.ok()) {
    result.err = std::string(child.status().message());
    return result;
  }
  absl::StatusOr<int> status = child->Wait(absl::Seconds(120));
  result.status = status.ok() ? *status : -1;
  result.out = ReadFile(spawn.stdout_path);
  result.err = ReadFile(spawn.stderr_path);
  return result;
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
}

LocalCluster::~LocalCluster() {
  // Workers first, so none is left waiting on a dead coordinator; the
  // Subprocess destructors SIGKILL anything that ignores SIGTERM.
  for (cli::Subprocess& w : workers_) (void)w.Signal(SIGTERM);
  for (cli::Subprocess& w : workers_) w.Stop(absl::Seconds(20));
  if (coordinator_.has_value()) coordinator_->Stop(absl::Seconds(10));
}

absl::Status LocalCluster::StartCoordinator(
    const std::vector<std::string>& env) {
  ++coordinator_starts_;
  const std::string ready =
      absl::StrCat(dir(), "/ready-", coordinator_starts_, ".json");
  cli::SpawnOptions spawn;
  spawn.argv = {PrismBinary(),
                "coordinator",
                "--db",
                db_path_,
                "--listen",
                grpc_address_.empty() ? "127.0.0.1:0" : grpc_address_,
                "--http",
                "127.0.0.1:0",
                "--lease-seconds",
                absl::StrCat(flags_.lease_seconds),
                "--heartbeat-seconds",
                absl::StrCat(flags_.heartbeat_seconds),
                "--max-attempts",
                absl::StrCat(flags_.max_attempts),
                "--admin-token-file",
                dir() + "/admin.token",
                "--ready-file",
                ready};
  spawn.env = env;
  spawn.stdout_path = dir() + "/coordinator.log";
  spawn.stderr_path = dir() + "/coordinator.log";
  absl::StatusOr<cli::Subprocess> child = cli::Subprocess::Spawn(spawn);
  if (!child.ok()) return child.status();
  coordinator_.emplace(*std::move(child));

  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (!fs::exists(ready)) {
    if (!coordinator_->Running()) {
      return absl::InternalError(
          absl::StrCat("coordinator exited during start-up:\n",
                       Tail(dir() + "/coordinator.log", 20)));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError("coordinator not ready in 60 s");
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  google::protobuf::Struct endpoints;
  if (!google::protobuf::util::JsonStringToMessage(ReadFile(ready), &endpoints)
           .ok()) {
    return absl::InternalError(absl::StrCat("bad ready file ", ready));
  }
  grpc_address_ = endpoints.fields().at("grpc").string_value();
  http_address_ = endpoints.fields().at("http").string_value();
  admin_token_ =
      std::string(absl::StripAsciiWhitespace(ReadFile(dir() + "/admin.token")));
  if (admin_token_.empty()) return absl::InternalError("no admin token");
  if (client_ == nullptr) {
    client_ = std::make_unique<cli::RpcClient>(grpc_address_, admin_token_);
  }
  return absl::OkStatus();
}

void LocalCluster::KillCoordinator() {
  if (!coordinator_.has_value()) return;
  (void)coordinator_->Signal(SIGKILL);
  (void)coordinator_->Wait(absl::Seconds(30));
}

absl::StatusOr<int> LocalCluster::StartWorker(
    const std::vector<std::string>& extra) {
  WorkerFlags flags;
  flags.args = extra;
  return StartWorker(flags);
}

absl::StatusOr<int> LocalCluster::StartWorker(const WorkerFlags& flags) {
  const int index = static_cast<int>(workers_.size());
  cli::SpawnOptions spawn;
  spawn.argv = {
      PrismBinary(), "worker", "--coordinator", grpc_address_, "--threads", "1",
      // One kernel: tests compare curves bit for bit with `prism train`
      // runs, and auto's timed choice may differ between processes.
      "--attention", "fused", "--checkpoint-dir",
      flags.checkpoint_dir.empty() ? checkpoint_dir() : flags.checkpoint_dir};
  spawn.argv.insert(spawn.argv.end(), flags.args.begin(), flags.args.end());
  // The demo corpus is prepared once per build tree and shared (preparing
  // it is safe when processes race).
  spawn.env = {absl::StrCat("PRISM_TOKEN=", admin_token_), DataDirEnv()};
  spawn.env.insert(spawn.env.end(), flags.env.begin(), flags.env.end());
  spawn.stderr_path = absl::StrCat(dir(), "/worker-", index, ".log");
  spawn.stdout_path = spawn.stderr_path;
  absl::StatusOr<cli::Subprocess> child = cli::Subprocess::Spawn(spawn);
  if (!child.ok()) return child.status();
  workers_.push_back(*std::move(child));
  return index;
}

CommandResult LocalCluster::Run(const std::vector<std::string>& args,
                                bool with_defaults) const {
  static int counter = 0;
  std::vector<std::string> env;
  if (with_defaults) {
    env = {absl::StrCat("PRISM_COORDINATOR=", grpc_address_),
           absl::StrCat("PRISM_TOKEN=", admin_token_)};
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
  for (size_t i = 0; i < workers_.size(); ++i) {
    const std::string path = absl::StrCat(dir(), "/worker-", i, ".log");
    absl::StrAppend(&out, "--- worker-", i, ".log\n", Tail(path, 15), "\n");
  }
  return out;
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

}  // namespace prism::testing
