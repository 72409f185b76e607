#include "cli/launcher.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace prism::cli {
namespace {

namespace fs = std::filesystem;

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::vector<std::string> Command(const std::vector<std::string>& prefix,
                                 const std::string& binary,
                                 const char* subcommand) {
  std::vector<std::string> argv = prefix;
  argv.push_back(binary);
  argv.push_back(subcommand);
  return argv;
}

}  // namespace

std::string LogTail(const std::string& path, int lines) {
  std::vector<std::string> all =
      absl::StrSplit(ReadWhole(path), '\n', absl::SkipWhitespace());
  const size_t start = all.size() > static_cast<size_t>(lines)
                           ? all.size() - static_cast<size_t>(lines)
                           : 0;
  return absl::StrJoin(all.begin() + start, all.end(), " | ");
}

absl::StatusOr<Endpoints> ReadReadyFile(const std::string& path) {
  google::protobuf::Struct ready;
  if (!google::protobuf::util::JsonStringToMessage(ReadWhole(path), &ready)
           .ok()) {
    return absl::InternalError(absl::StrCat("unreadable ready file ", path));
  }
  Endpoints endpoints;
  const auto& fields = ready.fields();
  if (auto it = fields.find("grpc"); it != fields.end()) {
    endpoints.grpc = it->second.string_value();
  }
  if (auto it = fields.find("http"); it != fields.end()) {
    endpoints.http = it->second.string_value();
  }
  if (endpoints.grpc.empty()) {
    return absl::InternalError(absl::StrCat("no grpc address in ", path));
  }
  return endpoints;
}

absl::StatusOr<LocalCoordinator> StartCoordinator(
    const CoordinatorLaunch& launch) {
  std::error_code ignored;
  fs::remove(launch.ready_file, ignored);
  SpawnOptions spawn;
  spawn.argv = Command(launch.prefix, launch.binary, "coordinator");
  spawn.argv.insert(spawn.argv.end(), launch.args.begin(), launch.args.end());
  spawn.argv.push_back("--ready-file");
  spawn.argv.push_back(launch.ready_file);
  spawn.env = launch.env;
  spawn.stdout_path = launch.log_path;
  spawn.stderr_path = launch.log_path;
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(spawn);
  if (!child.ok()) return child.status();

  absl::Status failed;
  const absl::Time deadline = absl::Now() + launch.timeout;
  while (failed.ok() && !fs::exists(launch.ready_file, ignored)) {
    if (!child->Running()) {
      failed = absl::InternalError(
          absl::StrCat("the coordinator exited during start-up: ",
                       LogTail(launch.log_path, 3)));
    } else if (absl::Now() > deadline) {
      failed = absl::DeadlineExceededError(absl::StrCat(
          "the coordinator was not ready within ",
          absl::FormatDuration(launch.timeout), "; see ", launch.log_path));
    } else if (launch.cancelled && launch.cancelled()) {
      failed = absl::CancelledError("interrupted");
    } else {
      // The coordinator writes its ready file once; a short poll of one
      // stat() is all the waiting costs.
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  absl::StatusOr<Endpoints> endpoints =
      failed.ok() ? ReadReadyFile(launch.ready_file) : failed;
  if (!endpoints.ok()) {
    child->Stop(launch.stop_grace);
    return endpoints.status();
  }
  return LocalCoordinator{*std::move(child), *std::move(endpoints)};
}

std::vector<std::string> WorkerArgv(const WorkerLaunch& launch) {
  std::vector<std::string> argv =
      Command(launch.prefix, launch.binary, "worker");
  for (const std::string& arg :
       {std::string("--coordinator"), launch.coordinator,
        std::string("--threads"), absl::StrCat(launch.threads),
        std::string("--attention"), launch.attention}) {
    argv.push_back(arg);
  }
  if (!launch.checkpoint_dir.empty()) {
    argv.push_back("--checkpoint-dir");
    argv.push_back(launch.checkpoint_dir);
  }
  argv.insert(argv.end(), launch.args.begin(), launch.args.end());
  return argv;
}

absl::StatusOr<int> WorkerPool::Start(const WorkerLaunch& launch) {
  SpawnOptions spawn;
  spawn.argv = WorkerArgv(launch);
  // The token travels in the environment, not argv, so ps cannot show it.
  spawn.env = {absl::StrCat("PRISM_TOKEN=", launch.token)};
  spawn.env.insert(spawn.env.end(), launch.env.begin(), launch.env.end());
  spawn.stdout_path = launch.log_path;
  spawn.stderr_path = launch.log_path;
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(spawn);
  if (!child.ok()) return child.status();
  workers_.push_back(*std::move(child));
  logs_.push_back(launch.log_path);
  return size() - 1;
}

int WorkerPool::Running() {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(),
                    [](Subprocess& w) { return w.Running(); }));
}

std::vector<int> WorkerPool::Stop(absl::Duration grace) {
  for (Subprocess& w : workers_) (void)w.Signal(SIGTERM);
  const absl::Time deadline = absl::Now() + grace;
  std::vector<int> statuses;
  for (Subprocess& w : workers_) {
    statuses.push_back(
        w.Stop(std::max(absl::ZeroDuration(), deadline - absl::Now())));
  }
  return statuses;
}

}  // namespace prism::cli
