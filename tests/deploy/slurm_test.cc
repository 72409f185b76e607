// deploy/slurm/prism-workers.sbatch on a real one-node Slurm cluster: munged,
// slurmctld and slurmd (Debian 12's Slurm 22.05) in a temp dir with a minimal
// slurm.conf on free loopback ports, this host as the only node with the CPU
// count and memory `slurmd -C` reads off it, and a coordinator on loopback.
// The batch script is submitted unchanged, with the CPU overrides an operator
// would give on the command line (sbatch options beat #SBATCH lines) and in
// the environment (PRISM_DEVICE, PRISM_IDLE_EXIT_SECONDS): once by hand as
// an array, once by `prism coordinator --scale slurm` itself (the scaler,
// server/core/queue/scaler.h), job by job.
//
// No root needed: munged, slurmctld and slurmd all run as the test's own user
// (SlurmUser and SlurmdUser are that user, munged has a key of its own), and
// jobs submitted by that user run as it, so slurmd never has to switch
// users. Where the packages are missing or the daemons cannot start, the test
// skips and says why; PRISM_REQUIRE_SLURM=1 turns those skips into failures.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The hand-back case's recipe: the fault matrix's cadence (checkpoints every
// 20 steps) over enough steps (several seconds a trial on one core) that the
// test sees a trial mid-way whichever task runs it.
constexpr Recipe kLongRecipe{/*steps=*/120, /*log_every=*/5,
                             /*eval_every=*/10, /*checkpoint_every=*/20};

// CheckpointSteps returns the steps of the `msg=checkpoint` lines of a
// worker log, in order.
std::vector<int64_t> CheckpointSteps(const std::string& log) {
  std::vector<int64_t> steps;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StrContains(line, " msg=checkpoint ")) continue;
    for (absl::string_view field : absl::StrSplit(line, ' ')) {
      int64_t step;
      if (absl::ConsumePrefix(&field, "step=") &&
          absl::SimpleAtoi(field, &step)) {
        steps.push_back(step);
      }
    }
  }
  return steps;
}

// FreePort returns a loopback TCP port nobody listens on right now.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// RunTool runs `argv` to completion (up to a minute) with `env` added.
CommandResult RunTool(const std::vector<std::string>& argv,
                      const std::vector<std::string>& env,
                      const std::string& files) {
  cli::SpawnOptions spawn;
  spawn.argv = argv;
  spawn.env = env;
  spawn.stdout_path = files + ".out";
  spawn.stderr_path = files + ".err";
  return cli::RunToCompletion(spawn, absl::Seconds(60));
}

std::string Tail(const std::string& text, size_t lines) {
  std::vector<std::string> all = absl::StrSplit(text, '\n', absl::SkipEmpty());
  const size_t start = all.size() > lines ? all.size() - lines : 0;
  return absl::StrJoin(all.begin() + start, all.end(), "\n");
}

// SlurmCluster: munged, slurmctld and slurmd for one test, in `dir`.
class SlurmCluster {
 public:
  explicit SlurmCluster(std::string dir) : dir_(std::move(dir)) {}
  ~SlurmCluster() { Stop(); }

  // Start starts the daemons and waits until the node is idle. Returns ""
  // or why Slurm cannot run here (the test skips with it).
  std::string Start() {
    for (const char* tool : {"munged", "mungekey", "slurmctld", "slurmd",
                             "sbatch", "squeue", "scancel", "sinfo"}) {
      std::string path = cli::FindProgram(tool);
      if (path.empty()) {
        return absl::StrCat(
            tool,
            " not found: install Debian's munge, slurmctld, slurmd and "
            "slurm-client (deploy/setup.sh does)");
      }
      tools_[tool] = path;
    }
    const passwd* user = getpwuid(geteuid());
    if (user == nullptr) return "the test's uid has no user name";
    user_ = user->pw_name;
    fs::create_directories(File("state"));
    fs::create_directories(File("spool"));

    // munged with a key of its own and its socket in the temp dir; --force
    // because the temp dir is not world-searchable.
    CommandResult key = RunTool(
        {tools_["mungekey"], "--create", "--keyfile", File("munge.key")}, {},
        File("mungekey"));
    if (key.status != 0) {
      return absl::StrCat("mungekey failed: ", key.err);
    }
    absl::Status started = Daemon(
        "munged", {tools_["munged"], "--foreground", "--force", "--key-file",
                   File("munge.key"), "--socket", File("munge.sock"),
                   "--pid-file", File("munged.pid"), "--seed-file",
                   File("munged.seed"), "--log-file", File("munged.log")});
    if (!started.ok()) return std::string(started.message());
    if (!WaitFor([&] { return fs::exists(File("munge.sock")); },
                 absl::Seconds(20))) {
      return absl::StrCat("munged did not create its socket:\n",
                          Tail(ReadFile(File("munged.stderr")), 10));
    }

    // This host as the node, with what slurmd reads off it.
    CommandResult probe =
        RunTool({tools_["slurmd"], "-C"}, {}, File("slurmd-probe"));
    std::string node_line;
    for (absl::string_view line : absl::StrSplit(probe.out, '\n')) {
      if (absl::StartsWith(line, "NodeName=")) node_line = std::string(line);
    }
    if (probe.status != 0 || node_line.empty()) {
      return absl::StrCat("slurmd -C failed: ", probe.err);
    }
    for (absl::string_view field : absl::StrSplit(node_line, ' ')) {
      if (absl::ConsumePrefix(&field, "NodeName=")) node_ = std::string(field);
      if (absl::ConsumePrefix(&field, "CPUs=")) {
        (void)absl::SimpleAtoi(field, &cpus_);
      }
      if (absl::ConsumePrefix(&field, "RealMemory=")) {
        (void)absl::SimpleAtoi(field, &memory_mb_);
      }
    }
    const int ctld_port = FreePort();
    int slurmd_port = FreePort();
    while (slurmd_port == ctld_port) slurmd_port = FreePort();
    WriteFile(
        File("slurm.conf"),
        absl::StrCat(
            "# Written by tests/deploy/slurm_test.cc\n", "ClusterName=prism\n",
            "SlurmctldHost=", node_, "(127.0.0.1)\n", "SlurmctldPort=",
            ctld_port, "\nSlurmdPort=", slurmd_port, "\nSlurmUser=", user_,
            "\nSlurmdUser=", user_, "\nAuthType=auth/munge\n",
            "CredType=cred/munge\n", "AuthInfo=socket=", File("munge.sock"),
            "\nStateSaveLocation=", File("state"), "\nSlurmdSpoolDir=",
            File("spool"), "\nSlurmctldPidFile=", File("slurmctld.pid"),
            "\nSlurmdPidFile=", File("slurmd.pid"), "\nSlurmctldLogFile=",
            File("slurmctld.log"), "\nSlurmdLogFile=", File("slurmd.log"),
            "\nProctrackType=proctrack/linuxproc\n", "TaskPlugin=task/none\n",
            "SelectType=select/cons_tres\n",
            "SelectTypeParameters=CR_Core_Memory\n", "MpiDefault=none\n",
            "SwitchType=switch/none\n",
            "JobAcctGatherType=jobacct_gather/none\n",
            "AccountingStorageType=accounting_storage/none\n",
            "ReturnToService=2\n", "KillWait=30\n", node_line,
            " NodeAddr=127.0.0.1 State=UNKNOWN\n",
            "PartitionName=prism Nodes=ALL Default=YES MaxTime=INFINITE "
            "State=UP\n"));
    started = Daemon("slurmctld", {tools_["slurmctld"], "-D", "-i", "-f",
                                   File("slurm.conf")});
    if (!started.ok()) return std::string(started.message());
    started = Daemon("slurmd", {tools_["slurmd"], "-D", "-N", node_, "-f",
                                File("slurm.conf")});
    if (!started.ok()) return std::string(started.message());
    std::string state;
    if (!WaitFor(
            [&] {
              for (auto& [name, daemon] : daemons_) {
                if (!daemon.Running()) return true;
              }
              state = std::string(absl::StripAsciiWhitespace(
                  Tool({"sinfo", "-h", "-n", node_, "-o", "%t"}).out));
              return state == "idle";
            },
            absl::Seconds(60)) ||
        state != "idle") {
      return absl::StrCat("the Slurm node did not come up idle (state \"",
                          state, "\"):\n", Logs());
    }
    return "";
  }

  // Stop cancels every job (signalling the batch shells too), waits for the
  // queue to drain, then stops the daemons.
  void Stop() {
    if (daemons_.count("slurmctld") > 0 && daemons_.at("slurmctld").Running()) {
      (void)Tool({"scancel", "--full", "--user", user_});
      WaitFor([&] { return QueueEmpty(); }, absl::Seconds(60));
    }
    for (const char* name : {"slurmd", "slurmctld", "munged"}) {
      auto it = daemons_.find(name);
      if (it != daemons_.end()) it->second.Stop(absl::Seconds(20));
    }
    daemons_.clear();
  }

  // Env is what Slurm's clients need.
  std::vector<std::string> Env() const {
    return {absl::StrCat("SLURM_CONF=", File("slurm.conf"))};
  }

  // Tool runs one of Slurm's clients against this cluster.
  CommandResult Tool(std::vector<std::string> argv,
                     const std::vector<std::string>& env = {}) {
    static int counter = 0;
    argv[0] = tools_.at(argv[0]);
    std::vector<std::string> all = Env();
    all.insert(all.end(), env.begin(), env.end());
    return RunTool(argv, all, File(absl::StrCat("tool-", ++counter)));
  }

  // States returns "<job id> <state>" for every job in the queue.
  std::vector<std::string> Queue() {
    CommandResult r = Tool({"squeue", "-h", "-r", "-o", "%i %t"});
    return absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  }
  bool QueueEmpty() {
    CommandResult r = Tool({"squeue", "-h", "-r", "-o", "%i %t"});
    return r.status == 0 && absl::StripAsciiWhitespace(r.out).empty();
  }

  int cpus() const { return cpus_; }
  int64_t memory_mb() const { return memory_mb_; }
  std::string File(const std::string& name) const {
    return absl::StrCat(dir_, "/", name);
  }

  std::string Logs() const {
    std::string out;
    for (const char* name : {"munged.stderr", "slurmctld.stderr",
                             "slurmctld.log", "slurmd.stderr", "slurmd.log"}) {
      absl::StrAppend(&out, "--- ", name, "\n", Tail(ReadFile(File(name)), 10),
                      "\n");
    }
    return out;
  }

  // WaitFor polls `done` every 100 ms until it holds or `timeout` passed.
  template <typename F>
  static bool WaitFor(F done, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!done()) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(100));
    }
    return true;
  }

 private:
  absl::Status Daemon(const std::string& name,
                      const std::vector<std::string>& argv) {
    cli::SpawnOptions spawn;
    spawn.argv = argv;
    spawn.env = Env();
    spawn.stdout_path = File(name + ".stderr");
    spawn.stderr_path = spawn.stdout_path;
    absl::StatusOr<cli::Subprocess> child = cli::Subprocess::Spawn(spawn);
    if (!child.ok()) return child.status();
    daemons_.emplace(name, *std::move(child));
    return absl::OkStatus();
  }

  std::string dir_;
  std::map<std::string, std::string> tools_;
  std::string user_;
  std::string node_;
  int cpus_ = 0;
  int64_t memory_mb_ = 0;
  std::map<std::string, cli::Subprocess> daemons_;
};

// Unavailable skips, or fails where PRISM_REQUIRE_SLURM is set.
#define SLURM_UNAVAILABLE(why)                                         \
  do {                                                                 \
    if (std::getenv("PRISM_REQUIRE_SLURM") != nullptr) {               \
      FAIL() << "Slurm required (PRISM_REQUIRE_SLURM) but: " << (why); \
    }                                                                  \
    GTEST_SKIP() << "Slurm cannot run here: " << (why);                \
  } while (0)

// SlurmTest: the daemons in a temp dir of their own, which outlive the
// test's LocalCluster (declared in the test body, so stopped first: no
// coordinator is left submitting while Stop drains the queue).
class SlurmTest : public ::testing::Test {
 protected:
  // StartSlurm starts the daemons. Returns "" or why Slurm cannot run the
  // test here.
  std::string StartSlurm() {
    std::string why = slurm_.Start();
    // Two jobs of one core each must run at once.
    if (why.empty() && slurm_.cpus() < 2) {
      why = absl::StrCat("the node has ", slurm_.cpus(),
                         " CPU; the test runs two 1-CPU jobs");
    }
    return why;
  }

  // CpuOptions are the sbatch overrides that run the batch script on this
  // CPU-only node, as deploy/README.md tells operators.
  std::vector<std::string> CpuOptions(const LocalCluster& cluster) const {
    return {"--gres=none", "--cpus-per-task=1",
            absl::StrCat(
                "--mem=", std::min<int64_t>(1024, slurm_.memory_mb() / 4), "M"),
            absl::StrCat("--chdir=", cluster.dir())};
  }

  // JobEnv is the environment the batch script reads (sbatch passes the
  // submitter's on), beside PRISM_COORDINATOR.
  std::vector<std::string> JobEnv(const LocalCluster& cluster,
                                  int idle_exit_seconds) const {
    std::vector<std::string> env = slurm_.Env();
    for (std::string var :
         {absl::StrCat("PRISM_TOKEN_FILE=", cluster.dir(), "/worker.token"),
          absl::StrCat("PRISM_CHECKPOINTS=", cluster.checkpoint_dir()),
          absl::StrCat("PRISM_BIN=", PrismBinary()),
          std::string("PRISM_DEVICE=cpu"),
          // The workers' kernel, as the reference's (the job's environment
          // reaches `prism worker`).
          std::string("PRISM_ATTENTION=fused"),
          absl::StrCat("PRISM_IDLE_EXIT_SECONDS=", idle_exit_seconds),
          DataDirEnv()}) {
      env.push_back(std::move(var));
    }
    return env;
  }

  // WriteWorkerToken writes a worker token to <dir>/worker.token.
  static void WriteWorkerToken(LocalCluster& cluster) {
    CommandResult token = cluster.Run(
        {"token", "create", "--user", "slurm-workers", "--role", "worker"});
    ASSERT_EQ(token.status, 0) << token.err;
    WriteFile(cluster.dir() + "/worker.token", token.out);
  }

  TempDir slurm_dir_{"prism_slurm"};
  SlurmCluster slurm_{slurm_dir_.path()};
};

TEST_F(SlurmTest, BatchArrayWorkersFinishAnExperimentAndATermedOneHandsBack) {
  const std::string why = StartSlurm();
  if (!why.empty()) SLURM_UNAVAILABLE(why);
  LocalCluster cluster([] {
    CoordinatorFlags flags;
    flags.lease_seconds = 5;
    flags.heartbeat_seconds = 1;
    return flags;
  }());
  SlurmCluster& slurm = slurm_;
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  WriteWorkerToken(cluster);
  absl::StatusOr<int64_t> id =
      cluster.SubmitSpec(RecipeSpec("slurm", {"4x6", "2x2,4x4"}, kLongRecipe));
  ASSERT_TRUE(id.ok()) << id.status();

  // The script as it is in the repo; CPU overrides on the command line and
  // in the environment.
  std::vector<std::string> sbatch = {
      "sbatch", "--parsable", "--array=0-1",
      absl::StrCat("--output=", cluster.dir(), "/slurm-%A_%a.log")};
  for (const std::string& option : CpuOptions(cluster)) {
    sbatch.push_back(option);
  }
  sbatch.push_back(std::string(PRISM_SOURCE_DIR) +
                   "/deploy/slurm/prism-workers.sbatch");
  std::vector<std::string> env = JobEnv(cluster, /*idle_exit_seconds=*/20);
  env.push_back(absl::StrCat("PRISM_COORDINATOR=", cluster.grpc_address()));
  CommandResult submitted = slurm.Tool(sbatch, env);
  ASSERT_EQ(submitted.status, 0) << submitted.err << slurm.Logs();
  const std::string job(absl::StripAsciiWhitespace(submitted.out));
  auto job_log = [&](int task) {
    return ReadFile(
        absl::StrCat(cluster.dir(), "/slurm-", job, "_", task, ".log"));
  };
  auto logs = [&] {
    return absl::StrCat(cluster.Logs(), "--- array task 0\n",
                        Tail(job_log(0), 15), "\n--- array task 1\n",
                        Tail(job_log(1), 15), "\n", slurm.Logs());
  };

  // Whichever array task holds a trial first (its log's last lease line
  // names it, and the coordinator has it RUNNING past step 10 with at least
  // a quarter of the trial still to go) is TERMed the way Slurm does before
  // a time limit or on preemption. Which task that is, and whether the other
  // has registered yet, is up to the host: a loaded one can delay either
  // task's first Register by a backoff while the other takes both trials.
  int64_t held = 0;
  int termed = -1;
  auto last_lease = [&](int task) {
    int64_t trial = 0;
    for (absl::string_view line : absl::StrSplit(job_log(task), '\n')) {
      if (!absl::StrContains(line, " msg=lease ")) continue;
      for (absl::string_view field : absl::StrSplit(line, ' ')) {
        if (absl::ConsumePrefix(&field, "trial=")) {
          (void)absl::SimpleAtoi(field, &trial);
        }
      }
    }
    return trial;
  };
  ASSERT_TRUE(SlurmCluster::WaitFor(
      [&] {
        for (int task : {0, 1}) {
          const int64_t trial = last_lease(task);
          if (trial == 0) continue;
          absl::StatusOr<v1::GetTrialResponse> t = cluster.GetTrial(trial);
          if (t.ok() && t->trial().state() == v1::TRIAL_RUNNING &&
              t->trial().last_step() >= 10 &&
              t->trial().last_step() <= kLongRecipe.steps * 3 / 4) {
            held = trial;
            termed = task;
            return true;
          }
        }
        return false;
      },
      absl::Minutes(2)))
      << logs();
  const int other = 1 - termed;
  EXPECT_THAT(slurm.Queue(),
              ::testing::UnorderedElementsAre(job + "_0 R", job + "_1 R"));
  CommandResult term =
      slurm.Tool({"scancel", "--signal=TERM", absl::StrCat(job, "_", termed)});
  ASSERT_EQ(term.status, 0) << term.err;

  // The TERMed worker checkpoints, hands its trial back and exits 0, ending
  // its array task; the other (busy with the other trial, or idle for less
  // than its 20 s) resumes that one and exits once the queue stayed empty.
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Minutes(3));
  ASSERT_TRUE(done.ok()) << done.status() << logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE);
  ASSERT_TRUE(SlurmCluster::WaitFor([&] { return slurm.QueueEmpty(); },
                                    absl::Minutes(1)))
      << logs();
  EXPECT_THAT(job_log(termed), HasSubstr("msg=exit"));
  EXPECT_THAT(job_log(other), HasSubstr("msg=exit"));

  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 2u);
  int handed_back = 0;
  for (const v1::Trial& t : *trials) {
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.ShortDebugString();
    absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(t.id());
    ASSERT_TRUE(trial.ok()) << trial.status();
    // No gap and nothing twice: every step of the cadence once.
    EXPECT_EQ(
        StepsOf(*trial, v1::SPLIT_TRAIN),
        Range(kLongRecipe.log_every, kLongRecipe.steps, kLongRecipe.log_every))
        << t.schedule();
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_VAL),
              Range(0, kLongRecipe.steps, kLongRecipe.eval_every))
        << t.schedule();
    if (t.id() == held) {
      ASSERT_EQ(trial->trial().attempts_size(), 2) << logs();
      ++handed_back;
      // Handed back, not failed (it used up no attempt), and the next
      // attempt, in the other array task, resumed from the checkpoint that
      // the TERMed task wrote on TERM.
      EXPECT_EQ(trial->trial().attempts(0).outcome(), v1::TRIAL_QUEUED)
          << logs();
      const std::vector<int64_t> written = CheckpointSteps(job_log(termed));
      ASSERT_FALSE(written.empty()) << logs();
      EXPECT_GT(written.back(), 0);
      EXPECT_EQ(trial->trial().attempts(1).resumed_from_step(), written.back())
          << logs();
      EXPECT_THAT(job_log(termed), HasSubstr("msg=trial_handed_back"));
      // Resume is exact on the CPU: the val curve is the uninterrupted
      // run's, bit for bit.
      std::map<int64_t, float> got;
      for (const v1::LossPoint& p : trial->points()) {
        if (p.split() == v1::SPLIT_VAL) got[p.step()] = p.loss();
      }
      EXPECT_EQ(got, Reference(cluster, t.schedule(), kLongRecipe))
          << t.schedule();
    } else {
      EXPECT_EQ(trial->trial().attempts_size(), 1) << logs();
    }
  }
  EXPECT_EQ(handed_back, 1) << logs();
  // The TERMed task ended on the TERM with its one trial handed back, not
  // completed there.
  EXPECT_THAT(job_log(termed), HasSubstr("trials_interrupted=1"));
  CommandResult check = cluster.CheckDb();
  EXPECT_EQ(check.status, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("every invariant holds"));
}

// Lines counts the lines of `log` that contain `text`.
int Lines(const std::string& log, const std::string& text) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    n += absl::StrContains(line, text) ? 1 : 0;
  }
  return n;
}

TEST_F(SlurmTest, ScalerRunsFourTrialsOnTwoJobsAndCancelsThemOnceIdle) {
  const std::string why = StartSlurm();
  if (!why.empty()) SLURM_UNAVAILABLE(why);
  // The coordinator submits the unchanged default script (found in the
  // source tree) with the CPU overrides; the workers' own idle exit is far
  // off, so the jobs end only because the scaler cancels them.
  CoordinatorFlags flags;
  flags.lease_seconds = 5;
  flags.heartbeat_seconds = 1;
  flags.args = {"--scale",
                "slurm",
                "--max-workers",
                "2",
                "--scale-interval-seconds",
                "1",
                "--scale-idle-seconds",
                "3"};
  LocalCluster cluster(flags);
  for (const std::string& option : CpuOptions(cluster)) {
    cluster.AddCoordinatorArgs({absl::StrCat("--slurm-sbatch-arg=", option)});
  }
  cluster.AddCoordinatorArgs({absl::StrCat(
      "--slurm-sbatch-arg=--output=", cluster.dir(), "/job-%j.log")});
  const std::vector<std::string> env =
      JobEnv(cluster, /*idle_exit_seconds=*/600);
  ASSERT_TRUE(cluster.StartCoordinator(env).ok()) << cluster.Logs();
  WriteWorkerToken(cluster);
  const Recipe recipe{/*steps=*/20, /*log_every=*/5, /*eval_every=*/10,
                      /*checkpoint_every=*/10};
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(
      RecipeSpec("scaled", {"4x6", "2x2,4x4", "1x2,4x4", "2x3,4x3"}, recipe));
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string log_path = cluster.dir() + "/coordinator.log";
  auto logs = [&] {
    std::string out = cluster.Logs();
    for (const auto& entry : fs::directory_iterator(cluster.dir())) {
      const std::string name = entry.path().filename().string();
      if (absl::StartsWith(name, "job-")) {
        absl::StrAppend(&out, "--- ", name, "\n",
                        Tail(ReadFile(entry.path().string()), 10), "\n");
      }
    }
    return absl::StrCat(out, slurm_.Logs());
  };

  // The most jobs the queue ever held, and how many run now.
  size_t most = 0;
  auto running = [&] {
    const std::vector<std::string> queue = slurm_.Queue();
    most = std::max(most, queue.size());
    return Lines(absl::StrJoin(queue, "\n"), " R");
  };
  // Both jobs run while trials wait: a coordinator restart now must find
  // the two, not submit more.
  ASSERT_TRUE(
      SlurmCluster::WaitFor([&] { return running() == 2; }, absl::Minutes(2)))
      << logs();
  cluster.coordinator().Stop(absl::Seconds(20));
  ASSERT_TRUE(cluster.StartCoordinator(env).ok()) << cluster.Logs();

  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status() << logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(done->counts().completed(), 4) << logs();
  // Idle with nothing waiting: cancelled, and the queue drains.
  ASSERT_TRUE(SlurmCluster::WaitFor(
      [&] { return running() == 0 && slurm_.QueueEmpty(); }, absl::Minutes(1)))
      << logs();
  EXPECT_LE(most, 2u);
  const std::string log = ReadFile(log_path);
  EXPECT_EQ(Lines(log, "msg=\"submitted worker job\""), 2) << logs();
  EXPECT_EQ(Lines(log, "msg=\"cancelled worker job\""), 2) << logs();
  EXPECT_EQ(Lines(log, "msg=\"scaler adopted worker job\""), 0) << logs();
  // The only workers were the two jobs', registered as slurm-<job id>.
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(cluster.client()
                  .Call(&v1::WorkerService::Stub::ListWorkers,
                        cluster.client().workers(), v1::ListWorkersRequest(),
                        &workers)
                  .ok());
  EXPECT_EQ(workers.workers_size(), 2) << workers.ShortDebugString();
  for (const v1::Worker& w : workers.workers()) {
    EXPECT_TRUE(absl::StartsWith(w.id(), "slurm-")) << w.id();
  }
  CommandResult check = cluster.CheckDb();
  EXPECT_EQ(check.status, 0) << check.out << check.err;
}

}  // namespace
}  // namespace prism::testing
