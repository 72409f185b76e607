// `prism run`: the whole system on one machine in one command. It prepares
// the demo corpus, starts a coordinator and N workers as child processes on
// loopback, submits the preset's principled grid (plus the uniform baseline),
// shows progress, prints the ranking, and stops its children.
//
// Children never outlive the run: they get PR_SET_PDEATHSIG and their own
// process groups (cli/subprocess.h), every exit path stops them (workers
// first, so they hand back their trials, then the coordinator), and a
// Ctrl-C or SIGTERM lands here, not in them, so the order holds. Running it
// again on the same --data-dir continues an unfinished run of the same
// preset, grid and steps (trials resume from their checkpoints); with more
// --seeds it extends a finished one, training only the new seeds' trials
// (ExperimentService.Extend); with no more seeds it prints a finished one's
// results without training.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "base/private_files.h"
#include "base/status_macros.h"
#include "cli/client.h"
#include "cli/command.h"
#include "cli/launcher.h"
#include "cli/output.h"
#include "cli/signals.h"
#include "cli/subprocess.h"
#include "cli/views.h"
#include "fmt/format.h"
#include "model/data.h"
#include "model/trainer.h"
#include "scheduler/space/contrast.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/principles.h"
#include "scheduler/space/space.h"

namespace prism::cli {
namespace {

namespace fs = std::filesystem;

constexpr absl::Duration kCoordinatorStartTimeout = absl::Seconds(60);
constexpr absl::Duration kWorkerStopGrace = absl::Seconds(60);
constexpr absl::Duration kCoordinatorStopGrace = absl::Seconds(20);
constexpr absl::Duration kPollInterval = absl::Seconds(1);

struct RunOptions {
  std::string preset = "tiny";
  int workers = 2;
  int seeds = 1;
  int64_t steps = 0;
  int threads = 0;
  std::string attention = "auto";
  std::string data_dir = "./prism-data";
  bool keep_serving = false;
  std::string grid = "contrast";
  int d_model = 0;     // 0: the demo width for tiny's contrast grid, else
  int base_heads = 0;  //    the preset's
};

// The demo's width: tiny at d_model 96 with 6 heads has head dims 96, 48,
// 32, 24 and 16, so a schedule can break the power-of-two principle alone
// (every divisor of tiny's own 128 is a power of two). It also trains
// faster than 128, which pays for the contrast grid's extra trials.
constexpr int kDemoDModel = 96;
constexpr int kDemoBaseHeads = 6;
constexpr int kViolatorsPerPrinciple = 2;

// RunGrid is what prism run submits: the shape and, for the contrast grid,
// the explicit schedules (empty: the principled grid).
struct RunGrid {
  int d_model = 0;
  int base_heads = 0;
  std::vector<std::string> schedules;
  std::string description;  // for people: two lines, the model and the grid
};

absl::StatusOr<RunGrid> PlanGrid(const RunOptions& o, const ModelShape& shape) {
  RunGrid grid;
  const bool demo_width = o.grid == "contrast" && shape.name == "tiny" &&
                          o.d_model == 0 && o.base_heads == 0;
  grid.d_model = o.d_model > 0 ? o.d_model
                 : demo_width  ? kDemoDModel
                               : shape.d_model;
  grid.base_heads = o.base_heads > 0 ? o.base_heads
                    : demo_width     ? kDemoBaseHeads
                                     : shape.base_heads;
  const SpaceSpec space{.d_model = grid.d_model,
                        .layers = shape.layers,
                        .base_heads = grid.base_heads};
  if (absl::Status s = ValidateSpace(space); !s.ok()) return s;
  const std::string model =
      fmt::format("model {} at d_model {}, {} layers, {} heads", shape.name,
                  grid.d_model, shape.layers, grid.base_heads);
  if (o.grid == "principled") {
    grid.description = model +
                       "\nprism run: principled grid: every schedule holding "
                       "all three principles";
    return grid;
  }
  if (o.grid != "contrast") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--grid must be contrast or principled, got '", o.grid, "'"));
  }
  absl::StatusOr<ContrastSet> set =
      BuildContrastSet(space, kViolatorsPerPrinciple);
  if (!set.ok()) return set.status();
  for (const Schedule& s : set->All()) grid.schedules.push_back(s.ToString());
  std::vector<std::string> breaks, unbreakable;
  for (size_t i = 0; i < set->violators.size(); ++i) {
    const char* name = PrincipleName(kAllPrinciples[i]);
    if (set->violators[i].empty()) {
      unbreakable.push_back(name);
    } else {
      breaks.push_back(absl::StrCat(set->violators[i].size(), " ", name));
    }
  }
  grid.description = fmt::format(
      "{}\nprism run: contrast grid: {} hold every principle, {} break "
      "exactly one ({})",
      model, set->principled.size(),
      grid.schedules.size() - set->principled.size(),
      absl::StrJoin(breaks, ", "));
  if (!unbreakable.empty()) {
    absl::StrAppend(&grid.description, " (no schedule of this shape breaks ",
                    absl::StrJoin(unbreakable, " or "), " alone)");
  }
  return grid;
}

// Stopped is true once a stop signal arrived, waiting up to `d` for one.
bool Stopped(StopSignals& signals, absl::Duration d) {
  return signals.received() != 0 || signals.Wait(d) != 0;
}

// Local is everything the run started; its destructor is the last line of
// defence (Subprocess kills), Stop the orderly way.
struct Local {
  std::optional<LocalCoordinator> coordinator;
  WorkerPool workers;
  std::string coordinator_log;

  void Stop() {
    workers.Stop(kWorkerStopGrace);
    if (coordinator.has_value()) {
      coordinator->process.Stop(kCoordinatorStopGrace);
    }
  }
};

absl::Status StartLocalCoordinator(const fs::path& data, StopSignals& signals,
                                   Local& local) {
  local.coordinator_log = (data / "logs" / "coordinator.log").string();
  CoordinatorLaunch launch;
  launch.binary = SelfExecutable();
  launch.args = {"--db", (data / "prism.db").string(), "--listen",
                 "127.0.0.1:0", "--http", "127.0.0.1:0", "--admin-token-file",
                 (data / "admin.token").string(),
                 // The demo corpus under this run's data dir, whatever
                 // $PRISM_DATA_DIR says.
                 "--data-root", (data / "corpus").string()};
  launch.log_path = local.coordinator_log;
  launch.ready_file = (data / "run" / "coordinator.ready.json").string();
  launch.timeout = kCoordinatorStartTimeout;
  launch.stop_grace = kCoordinatorStopGrace;
  launch.cancelled = [&signals] {
    return Stopped(signals, absl::Milliseconds(50));
  };
  absl::StatusOr<LocalCoordinator> started = StartCoordinator(launch);
  if (!started.ok()) return started.status();
  local.coordinator.emplace(*std::move(started));
  return absl::OkStatus();
}

absl::Status StartWorkers(const RunOptions& o, const fs::path& data,
                          const std::string& token, Local& local) {
  const int cores =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Every worker gets every core by default: while as many trials as
  // workers train, the OS shares the cores among them; when fewer remain
  // (the last trial of an odd grid), those left still use every core
  // instead of leaving cores idle. A trial's shard count (one per thread)
  // is then the same whichever worker runs it and whatever runs beside it,
  // so reruns reproduce the same losses.
  WorkerLaunch launch;
  launch.binary = SelfExecutable();
  launch.coordinator = local.coordinator->endpoints.grpc;
  launch.token = token;
  launch.threads = o.threads > 0 ? o.threads : cores;
  launch.attention = o.attention;
  launch.checkpoint_dir = (data / "checkpoints").string();
  launch.args = {"--data-root", (data / "corpus").string()};
  for (int i = 0; i < o.workers; ++i) {
    launch.log_path =
        (data / "logs" / absl::StrCat("worker-", i + 1, ".log")).string();
    absl::StatusOr<int> started = local.workers.Start(launch);
    if (!started.ok()) return started.status();
  }
  return absl::OkStatus();
}

// RunName names the run's experiment: the same for every seed count, so a
// run with more seeds extends it (ExperimentService.Extend) rather than
// submitting another.
std::string RunName(const RunOptions& o, int64_t steps) {
  return fmt::format("prism run: {}, {} grid, {} steps", o.preset, o.grid,
                     steps);
}

// LegacyRunName is what prism run named a run before seeds could be added;
// an unfinished one of those still continues.
std::string LegacyRunName(const RunOptions& o, int64_t steps) {
  return fmt::format("prism run: {}, {} grid, {} seed(s), {} steps", o.preset,
                     o.grid, o.seeds, steps);
}

// FindRun returns the newest experiment of this data dir named `name` (or
// `legacy`, while unfinished) that was not cancelled, with its spec; nullopt
// when there is none.
absl::StatusOr<std::optional<v1::Experiment>> FindRun(
    RpcClient& client, const std::string& name, const std::string& legacy) {
  v1::ListExperimentsRequest list;
  v1::ListExperimentsResponse page;
  int64_t found = 0;
  do {
    absl::Status status = client.Call(&v1::ExperimentService::Stub::List,
                                      client.experiments(), list, &page);
    if (!status.ok()) return status;
    for (const v1::Experiment& e : page.experiments()) {
      const bool unfinished = e.state() == v1::EXPERIMENT_ACTIVE ||
                              e.state() == v1::EXPERIMENT_PAUSED;
      if ((e.name() == name && e.state() != v1::EXPERIMENT_CANCELLED) ||
          (e.name() == legacy && unfinished)) {
        found = std::max(found, e.id());
      }
    }
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());
  if (found == 0) return std::optional<v1::Experiment>();
  v1::GetExperimentRequest get;
  get.set_id(found);
  v1::Experiment e;
  absl::Status status = client.Call(&v1::ExperimentService::Stub::Get,
                                    client.experiments(), get, &e);
  if (!status.ok()) return status;
  return std::optional<v1::Experiment>(std::move(e));
}

// ExtendRun trains experiment `id` on `seeds` seeds in all, reusing every
// trial it has.
absl::Status ExtendRun(RpcClient& client, int64_t id, int seeds) {
  v1::ExtendRequest request;
  request.set_id(id);
  request.set_to_seeds(seeds);
  v1::ExtendResponse response;
  absl::Status status = client.Call(&v1::ExperimentService::Stub::Extend,
                                    client.experiments(), request, &response);
  if (!status.ok()) return status;
  std::cerr << "prism run: experiment " << id << " to " << seeds
            << " seed(s): " << ExtensionLine(response, /*dry_run=*/false)
            << "\n";
  return absl::OkStatus();
}

// RunExperiment is the experiment a run shows and whether it trains first.
struct RunExperiment {
  int64_t id = 0;
  bool train = true;
};

// FindOrSubmit continues this data dir's unfinished run of the same spec,
// extends a finished one to more seeds, shows a finished one with as many
// seeds without training it again, or submits a new experiment.
absl::StatusOr<RunExperiment> FindOrSubmit(RpcClient& client,
                                           const v1::ExperimentSpec& spec,
                                           const std::string& legacy_name) {
  absl::StatusOr<std::optional<v1::Experiment>> found =
      FindRun(client, spec.name(), legacy_name);
  if (!found.ok()) return found.status();
  const int seeds = spec.seeds_size();
  if (found->has_value()) {
    const v1::Experiment& e = **found;
    const bool more = seeds > e.spec().seeds_size();
    if (e.state() == v1::EXPERIMENT_DONE && !more) {
      std::cerr << "prism run: experiment " << e.id() << " (" << e.name()
                << ") already ran on " << e.spec().seeds_size()
                << " seed(s); its results, without training again\n";
      return RunExperiment{e.id(), /*train=*/false};
    }
    if (e.state() != v1::EXPERIMENT_DONE) {
      v1::ExperimentRef ref;
      ref.set_id(e.id());
      v1::Experiment resumed;
      absl::Status status = client.Call(&v1::ExperimentService::Stub::Resume,
                                        client.experiments(), ref, &resumed);
      // Resuming an experiment that is already active is harmless either
      // way.
      (void)status;
      std::cerr << "prism run: continuing experiment " << e.id() << " ("
                << e.name() << ")\n";
    }
    if (more) {
      if (absl::Status s = ExtendRun(client, e.id(), seeds); !s.ok()) return s;
    }
    return RunExperiment{e.id(), /*train=*/true};
  }
  v1::SubmitRequest request;
  *request.mutable_spec() = spec;
  v1::SubmitResponse response;
  absl::Status status = client.Call(&v1::ExperimentService::Stub::Submit,
                                    client.experiments(), request, &response);
  if (!status.ok()) return status;
  std::cerr << "prism run: experiment " << response.experiment().id() << ": "
            << response.trials_created() << " trials (" << spec.name() << ")\n";
  return RunExperiment{response.experiment().id(), /*train=*/true};
}

// TerminalWidth returns stderr's width in columns when it is a terminal,
// else 0.
int TerminalWidth() {
  winsize size;
  if (!IsTerminal(STDERR_FILENO) ||
      ioctl(STDERR_FILENO, TIOCGWINSZ, &size) != 0) {
    return 0;
  }
  return size.ws_col;
}

bool Finished(v1::ExperimentState state) {
  return state == v1::EXPERIMENT_DONE || state == v1::EXPERIMENT_CANCELLED;
}

// LatestLoss returns the newest train and val losses of a trial's curve.
std::string LatestLosses(RpcClient& client, const v1::Trial& trial) {
  v1::GetTrialRequest request;
  request.set_trial_id(trial.id());
  v1::GetTrialResponse response;
  if (!client
           .Call(&v1::ResultsService::Stub::GetTrial, client.results(), request,
                 &response, absl::Seconds(5))
           .ok()) {
    return "";
  }
  const v1::LossPoint* train = nullptr;
  const v1::LossPoint* val = nullptr;
  for (const v1::LossPoint& p : response.points()) {
    const v1::LossPoint*& latest = p.split() == v1::SPLIT_VAL ? val : train;
    if (latest == nullptr || p.step() >= latest->step()) latest = &p;
  }
  std::string out;
  if (train != nullptr) out += fmt::format(" loss {:.3f}", train->loss());
  if (val != nullptr) out += fmt::format(" val {:.3f}", val->loss());
  return out;
}

// Follow shows progress until the experiment ends. Returns OK when it
// ended, Cancelled on a stop signal, Internal when the children died.
absl::Status Follow(RpcClient& client, int64_t id, StopSignals& signals,
                    Local& local) {
  std::optional<Progress> progress;
  while (true) {
    if (Stopped(signals, kPollInterval)) {
      return absl::CancelledError("interrupted");
    }
    if (!local.coordinator->process.Running()) {
      return absl::InternalError(absl::StrCat(
          "the coordinator exited: ", LogTail(local.coordinator_log, 3)));
    }
    if (local.workers.Running() == 0) {
      return absl::InternalError(
          "every worker exited; see the logs under <data-dir>/logs");
    }
    v1::ListTrialsRequest list;
    list.set_experiment_id(id);
    v1::ListTrialsResponse trials;
    int64_t done_steps = 0, total_steps = 0;
    int finished = 0, total = 0;
    std::vector<std::string> running;
    do {
      absl::Status status =
          client.Call(&v1::ExperimentService::Stub::ListTrials,
                      client.experiments(), list, &trials);
      if (!status.ok()) break;
      for (const v1::Trial& t : trials.trials()) {
        ++total;
        total_steps += t.total_steps();
        const bool over =
            t.state() == v1::TRIAL_COMPLETED || t.state() == v1::TRIAL_FAILED ||
            t.state() == v1::TRIAL_DIVERGED || t.state() == v1::TRIAL_CANCELLED;
        finished += over ? 1 : 0;
        done_steps +=
            over ? t.total_steps() : std::min(t.last_step(), t.total_steps());
        if (t.state() == v1::TRIAL_RUNNING) {
          running.push_back(fmt::format("{} s{}{}", t.schedule(), t.last_step(),
                                        LatestLosses(client, t)));
        }
      }
      list.set_page_token(trials.next_page_token());
    } while (!list.page_token().empty());
    if (!progress.has_value() && total_steps > 0) {
      progress.emplace("steps", total_steps, std::chrono::seconds(5));
    }
    std::string suffix = fmt::format("| trials {}/{}{}{}", finished, total,
                                     running.empty() ? "" : " | ",
                                     absl::StrJoin(running, " | "));
    // A redrawn bar must fit on one terminal line.
    if (const int width = TerminalWidth(); width > 0) {
      const size_t room = static_cast<size_t>(std::max(20, width - 64));
      if (suffix.size() > room) suffix = suffix.substr(0, room - 3) + "...";
    }
    if (progress.has_value()) progress->Update(done_steps, suffix);

    v1::GetExperimentRequest get;
    get.set_id(id);
    v1::Experiment experiment;
    if (client
            .Call(&v1::ExperimentService::Stub::Get, client.experiments(), get,
                  &experiment)
            .ok() &&
        Finished(experiment.state())) {
      if (progress.has_value()) {
        progress->Finish(fmt::format("| trials {}/{}", finished, total));
      }
      return absl::OkStatus();
    }
  }
}

int PrintResults(RpcClient& client, int64_t id, const SeedsCommand& more) {
  v1::RankRequest request;
  request.set_experiment_id(id);
  v1::RankResponse response;
  absl::Status status = client.Call(&v1::ResultsService::Stub::Rank,
                                    client.results(), request, &response);
  if (!status.ok()) return ReportError("run", status);
  const v1::TrialCounts& c = response.experiment().counts();
  std::cout << "\nexperiment " << id << ": " << c.completed() << "/"
            << c.total() << " trials completed";
  if (c.failed() + c.diverged() > 0) {
    std::cout << ", " << c.failed() << " failed, " << c.diverged()
              << " diverged";
  }
  std::cout << "\n\n";
  RankingView view;
  view.more_seeds = more;
  PrintRanking(response, Format::kText, std::cout, view);
  return kExitOk;
}

// ShellWord quotes `text` for a POSIX shell when it holds anything but
// letters, digits and "/._-+:=,".
std::string ShellWord(const std::string& text) {
  if (!text.empty() &&
      text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                             "VWXYZ0123456789/._-+:=,") == std::string::npos) {
    return text;
  }
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "'\\''"}}), "'");
}

// ShellPath shows `path` for a command line typed where prism run was
// started: relative when it lies below the working directory
// (build/cli/prism), else absolute.
std::string ShellPath(const fs::path& path) {
  std::error_code error;
  const fs::path cwd = fs::current_path(error);
  fs::path shown = path.lexically_normal();
  if (!error) {
    const fs::path relative = shown.lexically_relative(cwd);
    if (!relative.empty() && *relative.begin() != "..") shown = relative;
  }
  return ShellWord(shown.string());
}

// RunAgain is the command that runs this run again on `seeds` seeds (the
// flags that name its experiment, and its data dir): it extends the
// experiment, training only the new seeds' trials.
std::string RunAgain(const RunOptions& o, const fs::path& data, int seeds) {
  std::string command =
      absl::StrCat(ShellPath(SelfExecutable()), " run --seeds ", seeds);
  if (o.preset != RunOptions{}.preset) {
    absl::StrAppend(&command, " --preset ", ShellWord(o.preset));
  }
  if (o.grid != RunOptions{}.grid) {
    absl::StrAppend(&command, " --grid ", ShellWord(o.grid));
  }
  if (o.steps > 0) absl::StrAppend(&command, " --steps ", o.steps);
  if (o.d_model > 0) absl::StrAppend(&command, " --d-model ", o.d_model);
  if (o.base_heads > 0) {
    absl::StrAppend(&command, " --base-heads ", o.base_heads);
  }
  if (o.data_dir != RunOptions{}.data_dir) {
    absl::StrAppend(&command, " --data-dir ", ShellPath(data));
  }
  return command;
}

// LookAgain says how to see this run's results once prism run stopped its
// coordinator: serve the same database on the default ports, which are
// prism results' defaults too, with the run's admin token. It names this
// very binary, which need not be on PATH.
std::string LookAgain(const fs::path& data, int64_t experiment_id) {
  const std::string prism = ShellPath(SelfExecutable());
  return absl::StrCat(
      "dashboard stopped (prism run --keep-serving keeps it up). To look "
      "again, in two shells:\n  ",
      prism, " coordinator --db ", ShellPath(data / "prism.db"),
      "    # dashboard http://127.0.0.1:8080/\n  ", prism, " results ",
      experiment_id, " --token-file ", ShellPath(data / "admin.token"), "\n");
}

// LockDataDir creates the data dir and its private sub-directories and
// takes the run's lock on it: InvalidArgument when a directory cannot be
// made, FailedPrecondition while another prism run holds it.
absl::Status LockDataDir(const fs::path& data) {
  // The data dir holds the database, the admin token and checkpoints:
  // what prism run creates there is private (base/private_files.h).
  for (const char* sub : {"", "logs", "run", "checkpoints"}) {
    if (absl::Status s = CreatePrivateDirectories((data / sub).string());
        !s.ok()) {
      return absl::InvalidArgumentError(s.message());
    }
  }
  // One run per data dir: two coordinators must not share a database. The
  // descriptor stays open, holding the lock, until the process ends.
  const int lock_fd = open((data / "run" / "lock").c_str(),
                           O_RDWR | O_CREAT | O_CLOEXEC, kPrivateFileMode);
  if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("another prism run is using ", data.string()));
  }
  return absl::OkStatus();
}

// RunSpec is the run's experiment: the grid's schedules (or the principles'
// when it lists none) on the demo corpus, `steps` steps, seeds 1..o.seeds.
v1::ExperimentSpec RunSpec(const RunOptions& o, const ModelShape& preset,
                           const RunGrid& grid,
                           const model::CorpusFiles& corpus, int64_t steps) {
  v1::ExperimentSpec spec;
  spec.set_name(RunName(o, steps));
  spec.mutable_model()->set_preset(preset.name);
  spec.mutable_model()->set_d_model(grid.d_model);
  spec.mutable_model()->set_base_heads(grid.base_heads);
  for (const std::string& schedule : grid.schedules) {
    spec.add_schedules(schedule);
  }
  spec.mutable_data()->add_train(corpus.train);
  spec.mutable_data()->add_val(corpus.val);
  spec.mutable_budget()->set_steps(steps);
  if (grid.schedules.empty()) {
    for (v1::Principle p :
         {v1::PRINCIPLE_SMOOTH, v1::PRINCIPLE_BASELINE, v1::PRINCIPLE_POW2}) {
      spec.add_principles(p);
    }
  }
  // No max_attempts: a trial handed back by a Ctrl-C is released, which
  // uses up none of the coordinator's default attempts.
  for (int seed = 1; seed <= o.seeds; ++seed) spec.add_seeds(seed);
  return spec;
}

// StartRunWorkers creates the workers' token and starts o.workers workers.
absl::Status StartRunWorkers(RpcClient& client, const RunOptions& o,
                             const fs::path& data, Local& local) {
  v1::CreateTokenRequest request;
  request.set_user("prism-run-worker");
  request.set_role(v1::ROLE_WORKER);
  v1::CreateTokenResponse worker_token;
  PRISM_RETURN_IF_ERROR(client.Call(&v1::AuthService::Stub::CreateToken,
                                    client.auth(), request, &worker_token));
  return StartWorkers(o, data, worker_token.token(), local);
}

// Conclude prints the results (then serves on with --keep-serving, else
// says how to look again), or that the run was interrupted, or the error;
// returns the exit status.
int Conclude(const absl::Status& status, const RunOptions& o,
             const fs::path& data, const Endpoints& endpoints,
             RpcClient* client, int64_t experiment_id, StopSignals& signals,
             Local& local) {
  if (status.code() == absl::StatusCode::kCancelled) {
    std::cerr << "\nprism run: interrupted; stopping workers (trials are "
                 "checkpointed; run the same command again to continue)\n";
    return 128 + signals.received();
  }
  if (!status.ok()) return ReportError("run", status);
  const int exit_status =
      PrintResults(*client, experiment_id,
                   [&o, &data](int n) { return RunAgain(o, data, n); });
  if (o.keep_serving && exit_status == kExitOk) {
    std::cout << "\ndashboard http://" << endpoints.http
              << "/ (serving; Ctrl-C stops)\n"
              << ShellPath(SelfExecutable()) << " results " << experiment_id
              << " --coordinator " << endpoints.grpc << " --token-file "
              << ShellPath(data / "admin.token") << "\n";
    std::cout.flush();
    while (!Stopped(signals, absl::Seconds(1)) &&
           local.coordinator->process.Running()) {
    }
  } else {
    std::cout << "\n" << LookAgain(data, experiment_id);
  }
  return exit_status;
}

int Run(const RunOptions& o) {
  absl::StatusOr<ModelShape> preset = FindPreset(o.preset);
  if (!preset.ok()) return ReportError("run", preset.status());
  absl::StatusOr<RunGrid> grid = PlanGrid(o, *preset);
  if (!grid.ok()) return ReportError("run", grid.status());
  // Checked before anything starts; the workers get the name on their
  // command line and parse it at their own edge.
  if (absl::StatusOr<model::AttentionMode> attention =
          model::ParseAttentionMode(o.attention);
      !attention.ok()) {
    return ReportError("run", attention.status());
  }
  StopSignals signals;

  std::error_code error;
  const fs::path data = fs::absolute(o.data_dir, error).lexically_normal();
  if (absl::Status s = LockDataDir(data); !s.ok()) {
    return ReportError("run", s);
  }

  std::cerr << "prism run: " << grid->description << "\n";
  std::cerr << "prism run: preparing the demo corpus under " << data.string()
            << "\n";
  absl::StatusOr<model::CorpusFiles> corpus =
      model::EnsureDemoCorpus(data.string());
  if (!corpus.ok()) return ReportError("run", corpus.status());

  Local local;
  absl::Status status = StartLocalCoordinator(data, signals, local);
  const Endpoints endpoints = local.coordinator.has_value()
                                  ? local.coordinator->endpoints
                                  : Endpoints{};
  absl::StatusOr<std::string> admin_token;
  std::unique_ptr<RpcClient> client;
  int64_t experiment_id = 0;
  if (status.ok()) {
    admin_token = ReadTextFile((data / "admin.token").string());
    status = admin_token.status();
  }
  if (status.ok()) {
    std::cerr << "prism run: dashboard http://" << endpoints.http
              << "/ (sign in with the token in "
              << ShellPath(data / "admin.token") << ")\n";
    client = std::make_unique<RpcClient>(
        endpoints.grpc, std::string(absl::StripAsciiWhitespace(*admin_token)));
  }
  RunExperiment run;
  if (status.ok()) {
    const int64_t steps = o.steps > 0 ? o.steps : preset->steps;
    absl::StatusOr<RunExperiment> found =
        FindOrSubmit(*client, RunSpec(o, *preset, *grid, *corpus, steps),
                     LegacyRunName(o, steps));
    status = found.status();
    if (found.ok()) {
      run = *found;
      experiment_id = run.id;
    }
  }
  if (status.ok() && run.train) {
    status = StartRunWorkers(*client, o, data, local);
  }
  std::cerr << "prism run: coordinator " << endpoints.grpc << ", "
            << local.workers.size() << " worker(s); logs in "
            << (data / "logs").string() << "\n";
  if (status.ok() && run.train) {
    status = Follow(*client, experiment_id, signals, local);
  }

  const int exit_status = Conclude(status, o, data, endpoints, client.get(),
                                   experiment_id, signals, local);
  local.Stop();
  return exit_status;
}

}  // namespace

void RegisterRunCommands(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a whole search locally: coordinator + workers on loopback, a "
      "grid that contrasts the design principles plus the baseline, then the "
      "ranking");
  auto o = std::make_shared<RunOptions>();
  cmd->add_option("--preset", o->preset, "Model preset")->capture_default_str();
  cmd->add_option("--workers", o->workers, "Local worker processes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seeds", o->seeds,
                  "Seeds per schedule (1..N); more than a finished run on "
                  "this --data-dir had trains only the new seeds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--steps", o->steps,
                  "Training steps per trial (default: the preset's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", o->threads,
                  "Threads per worker (default: all cores, shared by the "
                  "workers, so a trial left alone uses every core)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--attention", o->attention,
                  "Attention kernel for the workers: auto (timed per trial), "
                  "fused, masked or sdpa")
      ->capture_default_str();
  cmd->add_option("--data-dir", o->data_dir,
                  "Database, token, corpus, checkpoints and logs")
      ->capture_default_str();
  cmd->add_option("--grid", o->grid,
                  "contrast: the schedules holding all three principles plus "
                  "a few that each break one, so every principle's effect is "
                  "estimable; principled: only the former")
      ->capture_default_str();
  cmd->add_option("--d-model", o->d_model,
                  "Model width (default: 96 for tiny's contrast grid, where "
                  "head dims 48 and 24 can break pow2; else the preset's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--base-heads", o->base_heads,
                  "Baseline heads (default: 6 for tiny's contrast grid, else "
                  "the preset's)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--keep-serving", o->keep_serving,
                "Keep the coordinator, dashboard and workers up afterwards");
  cmd->callback([o, action] { *action = [o] { return Run(*o); }; });
}

}  // namespace prism::cli
