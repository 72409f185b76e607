// deploy/slurm/prism-workers.sbatch on a real one-node Slurm cluster: munged,
// slurmctld and slurmd (Debian 12's Slurm 22.05) in a temp dir with a minimal
// slurm.conf on free loopback ports, this host as the only node with the CPU
// count and memory `slurmd -C` reads off it, and a coordinator on loopback.
// The batch script is submitted unchanged, with the CPU overrides an operator
// would give on the command line (sbatch options beat #SBATCH lines) and in
// the environment (PRISM_DEVICE, PRISM_IDLE_EXIT_SECONDS).
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
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The tiny recipe the fault matrix uses: checkpoints every 20 steps.
constexpr int64_t kSteps = 60;
constexpr int64_t kLogEvery = 5;
constexpr int64_t kEvalEvery = 10;

std::string Spec() {
  return absl::StrCat("name: \"slurm\"\nmodel { preset: \"tiny\" }\n",
                      "budget {\n  steps: ", kSteps,
                      "\n  batch_size: 4\n  eval_every: ", kEvalEvery,
                      "\n  eval_batches: 1\n  log_every: ", kLogEvery,
                      "\n  checkpoint_every: 20\n}\nseeds: 1\n",
                      "schedules: \"4x6\"\nschedules: \"2x2,4x4\"\n");
}

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

// Reference trains the recipe without interruption through `prism train`
// and returns its val curve, step -> loss.
std::map<int64_t, float> Reference(const LocalCluster& cluster,
                                   const std::string& schedule) {
  CommandResult run = RunPrism({"train",
                                "--preset",
                                "tiny",
                                "--schedule",
                                schedule,
                                "--seed",
                                "1",
                                "--steps",
                                absl::StrCat(kSteps),
                                "--batch-size",
                                "4",
                                "--eval-every",
                                absl::StrCat(kEvalEvery),
                                "--eval-batches",
                                "1",
                                "--log-every",
                                absl::StrCat(kLogEvery),
                                "--threads",
                                "1",
                                "--attention",
                                "fused",
                                "--format",
                                "json"},
                               {DataDirEnv()}, cluster.dir() + "/reference");
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

// FindProgram returns the absolute path of `name` on PATH (or in the sbin
// directories, which a non-root PATH may lack), or "".
std::string FindProgram(const std::string& name) {
  std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  absl::StrAppend(&path, ":/usr/sbin:/sbin:/usr/local/sbin");
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
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
  fs::remove(spawn.stdout_path);
  fs::remove(spawn.stderr_path);
  CommandResult result;
  absl::StatusOr<cli::Subprocess> child = cli::Subprocess::Spawn(spawn);
  if (!child.ok()) {
    result.err = std::string(child.status().message());
    return result;
  }
  absl::StatusOr<int> status = child->Wait(absl::Seconds(60));
  result.status = status.ok() ? *status : -1;
  result.out = ReadFile(spawn.stdout_path);
  result.err = ReadFile(spawn.stderr_path);
  return result;
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
      std::string path = FindProgram(tool);
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
      for (const std::string& job : jobs_) {
        (void)Tool({"scancel", "--full", job});
      }
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

  // Submitted records a job for Stop to cancel.
  void Submitted(const std::string& job) { jobs_.push_back(job); }

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
  std::vector<std::string> jobs_;
};

// Unavailable skips, or fails where PRISM_REQUIRE_SLURM is set.
#define SLURM_UNAVAILABLE(why)                                         \
  do {                                                                 \
    if (std::getenv("PRISM_REQUIRE_SLURM") != nullptr) {               \
      FAIL() << "Slurm required (PRISM_REQUIRE_SLURM) but: " << (why); \
    }                                                                  \
    GTEST_SKIP() << "Slurm cannot run here: " << (why);                \
  } while (0)

TEST(SlurmTest, BatchArrayWorkersFinishAnExperimentAndATermedOneHandsBack) {
  LocalCluster cluster([] {
    CoordinatorFlags flags;
    flags.lease_seconds = 5;
    flags.heartbeat_seconds = 1;
    return flags;
  }());
  SlurmCluster slurm(cluster.dir());
  const std::string why = slurm.Start();
  if (!why.empty()) SLURM_UNAVAILABLE(why);
  // Two array tasks of one core each must run at once.
  if (slurm.cpus() < 2) {
    SLURM_UNAVAILABLE(absl::StrCat("the node has ", slurm.cpus(),
                                   " CPU; the test runs two 1-CPU tasks"));
  }

  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  CommandResult token = cluster.Run(
      {"token", "create", "--user", "slurm-workers", "--role", "worker"});
  ASSERT_EQ(token.status, 0) << token.err;
  WriteFile(cluster.dir() + "/worker.token", token.out);
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(Spec());
  ASSERT_TRUE(id.ok()) << id.status();

  // The script as it is in the repo; CPU overrides on the command line and
  // in the environment, as deploy/README.md tells operators.
  const int64_t mem_mb = std::min<int64_t>(1024, slurm.memory_mb() / 4);
  CommandResult submitted = slurm.Tool(
      {"sbatch", "--parsable", "--array=0-1", "--gres=none",
       "--cpus-per-task=1", absl::StrCat("--mem=", mem_mb, "M"),
       absl::StrCat("--output=", cluster.dir(), "/slurm-%A_%a.log"),
       absl::StrCat("--chdir=", cluster.dir()),
       std::string(PRISM_SOURCE_DIR) + "/deploy/slurm/prism-workers.sbatch"},
      {absl::StrCat("PRISM_COORDINATOR=", cluster.grpc_address()),
       absl::StrCat("PRISM_TOKEN_FILE=", cluster.dir(), "/worker.token"),
       absl::StrCat("PRISM_CHECKPOINTS=", cluster.checkpoint_dir()),
       absl::StrCat("PRISM_BIN=", PrismBinary()), "PRISM_DEVICE=cpu",
       // The workers' kernel, as the reference's (the job's environment
       // reaches `prism worker`).
       "PRISM_ATTENTION=fused", "PRISM_IDLE_EXIT_SECONDS=20", DataDirEnv()});
  ASSERT_EQ(submitted.status, 0) << submitted.err << slurm.Logs();
  const std::string job(absl::StripAsciiWhitespace(submitted.out));
  slurm.Submitted(job);
  auto job_log = [&](int task) {
    return ReadFile(
        absl::StrCat(cluster.dir(), "/slurm-", job, "_", task, ".log"));
  };
  auto logs = [&] {
    return absl::StrCat(cluster.Logs(), "--- array task 0\n",
                        Tail(job_log(0), 15), "\n--- array task 1\n",
                        Tail(job_log(1), 15), "\n", slurm.Logs());
  };

  // Task 0's worker holds a trial (its log names the lease) that is past
  // step 10 of 60: TERM task 0 the way Slurm does before a time limit or on
  // preemption.
  int64_t held = 0;
  ASSERT_TRUE(SlurmCluster::WaitFor(
      [&] {
        if (held == 0) {
          for (absl::string_view line : absl::StrSplit(job_log(0), '\n')) {
            if (!absl::StrContains(line, " msg=lease ")) continue;
            for (absl::string_view field : absl::StrSplit(line, ' ')) {
              if (absl::ConsumePrefix(&field, "trial=")) {
                (void)absl::SimpleAtoi(field, &held);
              }
            }
            break;
          }
          if (held == 0) return false;
        }
        absl::StatusOr<v1::GetTrialResponse> t = cluster.GetTrial(held);
        return t.ok() && t->trial().state() == v1::TRIAL_RUNNING &&
               t->trial().last_step() >= 10;
      },
      absl::Minutes(2)))
      << logs();
  EXPECT_THAT(slurm.Queue(),
              ::testing::UnorderedElementsAre(job + "_0 R", job + "_1 R"));
  CommandResult term =
      slurm.Tool({"scancel", "--signal=TERM", absl::StrCat(job, "_0")});
  ASSERT_EQ(term.status, 0) << term.err;

  // Task 0's worker checkpoints, hands its trial back and exits 0, ending
  // its array task; task 1 (busy with the other trial, or idle for less
  // than its 20 s) resumes that one and exits once the queue stayed empty.
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Minutes(3));
  ASSERT_TRUE(done.ok()) << done.status() << logs();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE);
  ASSERT_TRUE(SlurmCluster::WaitFor([&] { return slurm.QueueEmpty(); },
                                    absl::Minutes(1)))
      << logs();
  EXPECT_THAT(job_log(0), HasSubstr("msg=exit"));
  EXPECT_THAT(job_log(1), HasSubstr("msg=exit"));

  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 2u);
  int handed_back = 0;
  for (const v1::Trial& t : *trials) {
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.ShortDebugString();
    absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(t.id());
    ASSERT_TRUE(trial.ok()) << trial.status();
    // No gap and nothing twice: every step of the cadence once.
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_TRAIN),
              Range(kLogEvery, kSteps, kLogEvery))
        << t.schedule();
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_VAL), Range(0, kSteps, kEvalEvery))
        << t.schedule();
    if (t.id() == held) {
      ASSERT_EQ(trial->trial().attempts_size(), 2) << logs();
      ++handed_back;
      // Handed back, not failed (it used up no attempt), and the next
      // attempt, in the other array task, resumed from the checkpoint that
      // task 0 wrote on TERM.
      EXPECT_EQ(trial->trial().attempts(0).outcome(), v1::TRIAL_QUEUED)
          << logs();
      const std::vector<int64_t> written = CheckpointSteps(job_log(0));
      ASSERT_FALSE(written.empty()) << logs();
      EXPECT_GT(written.back(), 0);
      EXPECT_EQ(trial->trial().attempts(1).resumed_from_step(), written.back())
          << logs();
      EXPECT_THAT(job_log(0), HasSubstr("msg=trial_handed_back"));
      // Resume is exact on the CPU: the val curve is the uninterrupted
      // run's, bit for bit.
      std::map<int64_t, float> got;
      for (const v1::LossPoint& p : trial->points()) {
        if (p.split() == v1::SPLIT_VAL) got[p.step()] = p.loss();
      }
      EXPECT_EQ(got, Reference(cluster, t.schedule())) << t.schedule();
    } else {
      EXPECT_EQ(trial->trial().attempts_size(), 1) << logs();
    }
  }
  EXPECT_EQ(handed_back, 1) << logs();
  // Task 0 ended on the TERM, having completed nothing.
  EXPECT_THAT(job_log(0), HasSubstr("trials_completed=0"));
  CommandResult check = cluster.CheckDb();
  EXPECT_EQ(check.status, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("every invariant holds"));
}

}  // namespace
}  // namespace prism::testing
