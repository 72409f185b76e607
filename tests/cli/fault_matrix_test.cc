// The fault matrix: real coordinator and worker processes on loopback, each
// case killing, stopping or starving one of them inside a window where state
// is in flight (points sent but unacknowledged, a checkpoint half written, a
// lease committed but not delivered, a restart shorter than a lease). Every
// case ends the same way: the experiment finishes, every curve holds each
// step of its cadence exactly once, `prism db check` finds nothing, and a
// crashed trial's val curve is bitwise the uninterrupted run's (`prism train`
// with the same recipe): resume is exact on the CPU.
//
// Failpoints (base/failpoint.h) put the kill at the exact moment; the cases
// that need a small filesystem mount a tmpfs and skip, saying so, where
// mounting is not permitted.
#include <httplib.h>
#include <signal.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
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
#include "tests/testing/notify_socket.h"

namespace prism::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// ShortLease: a lost worker's trial goes back to the queue within seconds.
CoordinatorFlags ShortLease() {
  CoordinatorFlags flags;
  flags.lease_seconds = 3;
  flags.heartbeat_seconds = 1;
  return flags;
}

// LoggedValues returns, for every line of the log at `path` whose message is
// `msg`, the integer value of `key`, in order.
std::vector<int64_t> LoggedValues(const std::string& path,
                                  const std::string& msg,
                                  const std::string& key) {
  std::vector<int64_t> values;
  for (absl::string_view line : absl::StrSplit(ReadFile(path), '\n')) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    bool matches = false;
    for (absl::string_view f : fields) matches |= f == "msg=" + msg;
    if (!matches) continue;
    for (absl::string_view f : fields) {
      int64_t value;
      if (absl::ConsumePrefix(&f, key + "=") && absl::SimpleAtoi(f, &value)) {
        values.push_back(value);
      }
    }
  }
  return values;
}

std::string WorkerLog(const LocalCluster& cluster, int index) {
  return absl::StrCat(cluster.dir(), "/worker-", index, ".log");
}

// ExpectNothingLost checks every completed trial of the experiment: each
// step of its cadence once in both curves, and, for the named schedules,
// the val curve of the uninterrupted run; then `prism db check`.
void ExpectNothingLost(
    LocalCluster& cluster, int64_t id, const Recipe& r,
    const std::map<std::string, std::map<int64_t, float>>& references) {
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  std::vector<int64_t> train_steps = Range(r.log_every, r.steps, r.log_every);
  std::vector<int64_t> val_steps = Range(0, r.steps, r.eval_every);
  for (const v1::Trial& t : *trials) {
    if (t.state() != v1::TRIAL_COMPLETED) continue;
    absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(t.id());
    ASSERT_TRUE(trial.ok()) << trial.status();
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_TRAIN), train_steps)
        << "trial " << t.id() << " " << t.schedule();
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_VAL), val_steps)
        << "trial " << t.id() << " " << t.schedule();
    auto reference = references.find(t.schedule());
    if (reference == references.end()) continue;
    std::map<int64_t, float> got;
    for (const v1::LossPoint& p : trial->points()) {
      if (p.split() == v1::SPLIT_VAL) got[p.step()] = p.loss();
    }
    EXPECT_EQ(got, reference->second)
        << "trial " << t.id() << " " << t.schedule()
        << ": its val curve is not the uninterrupted run's";
    EXPECT_EQ(static_cast<float>(trial->trial().metrics().final_val_loss()),
              reference->second.rbegin()->second);
  }
  CommandResult check = cluster.CheckDb();
  EXPECT_EQ(check.status, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("every invariant holds"));
}

// Tmpfs mounts a small tmpfs at a fresh directory for one test, or says why
// it cannot.
class Tmpfs {
 public:
  Tmpfs(const std::string& dir, const std::string& size) : dir_(dir) {
    fs::create_directories(dir);
    const std::string options = absl::StrCat("size=", size);
    if (mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) == 0) {
      mounted_ = true;
    } else {
      error_ = std::strerror(errno);
    }
  }
  ~Tmpfs() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

 private:
  std::string dir_;
  bool mounted_ = false;
  std::string error_;
};

// DatabaseTmpfsSkip says why a full-database-disk case cannot run.
std::string DatabaseTmpfsSkip(const Tmpfs& disk) {
  return absl::StrCat("cannot mount a tmpfs here (", disk.error(),
                      "): the full database disk case needs one");
}

// FillDisk writes `path` until its filesystem is full.
void FillDisk(const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  const std::string chunk(64 * 1024, 'x');
  while (out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()))) {
    out.flush();
  }
}

// HttpGetAt returns the status and body of GET `path` on the HTTP server
// at `address`, with `token` (if any); status -1 (and the error) when it did
// not answer.
std::pair<int, std::string> HttpGetAt(const std::string& address,
                                      const std::string& path,
                                      const std::string& token = "") {
  const std::pair<std::string, std::string> host_port =
      absl::StrSplit(address, absl::MaxSplits(':', 1));
  int port = 0;
  if (!absl::SimpleAtoi(host_port.second, &port)) return {-1, "no port"};
  httplib::Client client(host_port.first, port);
  if (!token.empty()) client.set_bearer_token_auth(token);
  httplib::Result res = client.Get(path);
  if (!res) return {-1, httplib::to_string(res.error())};
  return {res->status, res->body};
}

// HttpGet is HttpGetAt on the coordinator's HTTP server with the admin
// token.
std::pair<int, std::string> HttpGet(const LocalCluster& cluster,
                                    const std::string& path) {
  return HttpGetAt(cluster.http_address(), path, cluster.admin_token());
}

// LoggedWord returns the value of `key` (up to the next space) on the first
// line of the log at `path` that contains `needle`, or "".
std::string LoggedWord(const std::string& path, const std::string& needle,
                       const std::string& key) {
  for (absl::string_view line : absl::StrSplit(ReadFile(path), '\n')) {
    if (!absl::StrContains(line, needle)) continue;
    const size_t at = line.find(" " + key + "=");
    if (at == absl::string_view::npos) return "";
    absl::string_view value = line.substr(at + key.size() + 2);
    return std::string(value.substr(0, value.find(' ')));
  }
  return "";
}

// WaitForReadyz polls /readyz until it answers `status` (wait on the state,
// not a sleep); returns its last body, or "" when it never did.
std::string WaitForReadyz(const LocalCluster& cluster, int status,
                          absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    auto [code, body] = HttpGet(cluster, "/readyz");
    if (code == status) return body.empty() ? "(empty)" : body;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return "";
}

// MetricValue returns the value of the /metrics sample named `sample`
// (with its labels), or -1 when it is absent.
double MetricValue(const LocalCluster& cluster, const std::string& sample) {
  auto [code, body] = HttpGet(cluster, "/metrics");
  if (code != 200) return -1;
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    double value;
    if (absl::ConsumePrefix(&line, sample + " ") &&
        absl::SimpleAtod(line, &value)) {
      return value;
    }
  }
  return -1;
}

std::string CoordinatorLog(const LocalCluster& cluster) {
  return ReadFile(cluster.dir() + "/coordinator.log");
}

// --- workers -----------------------------------------------------------

// StartOneTrial starts the coordinator (its environment `coordinator_env`,
// e.g. an armed failpoint), submits the baseline alone as experiment `name`
// and starts a first worker with `flags`; sets *id and *worker.
void StartOneTrial(LocalCluster& cluster, const std::string& name, int64_t* id,
                   int* worker, const WorkerFlags& flags = {},
                   const std::vector<std::string>& coordinator_env = {}) {
  ASSERT_TRUE(cluster.StartCoordinator(coordinator_env).ok()) << cluster.Logs();
  absl::StatusOr<int64_t> submitted =
      cluster.SubmitSpec(RecipeSpec(name, {"4x6"}));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  *id = *submitted;
  absl::StatusOr<int> started = cluster.StartWorker(flags);
  ASSERT_TRUE(started.ok()) << started.status();
  *worker = *started;
}

// ExpectKilledAtFailpoint waits for `process` to SIGKILL itself.
void ExpectKilledAtFailpoint(cli::Subprocess& process,
                             const LocalCluster& cluster) {
  absl::StatusOr<int> exited = process.Wait(absl::Minutes(2));
  ASSERT_TRUE(exited.ok()) << cluster.Logs();
  EXPECT_EQ(*exited, 128 + SIGKILL) << cluster.Logs();
}

// FinishWithAnotherWorker starts a fresh worker and waits for the end.
void FinishWithAnotherWorker(LocalCluster& cluster, int64_t id) {
  ASSERT_TRUE(cluster.StartWorker().ok());
  ASSERT_TRUE(cluster.WaitForExperiment(id, absl::Minutes(4)).ok());
}

TEST(FaultMatrixTest, WorkerKilledWhileTrainingResumesFromItsCheckpoint) {
  LocalCluster cluster(ShortLease());
  int64_t id;
  int first;
  ASSERT_NO_FATAL_FAILURE(StartOneTrial(cluster, "worker kill", &id, &first));

  // Between two checkpoints, with points in flight.
  absl::StatusOr<v1::Trial> running =
      WaitForStep(cluster, id, 25, absl::Minutes(2));
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_TRUE(cluster.worker(first).Signal(SIGKILL).ok());
  ASSERT_TRUE(cluster.worker(first).Wait(absl::Seconds(10)).ok());
  ASSERT_NO_FATAL_FAILURE(FinishWithAnotherWorker(cluster, id));

  absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(running->id());
  ASSERT_TRUE(trial.ok()) << trial.status();
  ASSERT_EQ(trial->trial().attempts_size(), 2) << cluster.Logs();
  const v1::TrialAttempt& resumed = trial->trial().attempts(1);
  EXPECT_EQ(resumed.outcome(), v1::TRIAL_COMPLETED);
  // The second attempt started from the last checkpoint the killed worker
  // wrote (the kill may land between its rename and its log line), as it
  // logged and told the coordinator.
  const std::vector<int64_t> loaded =
      LoggedValues(WorkerLog(cluster, 1), "train_start", "resumed_from_step");
  ASSERT_EQ(loaded.size(), 1u) << cluster.Logs();
  EXPECT_EQ(resumed.resumed_from_step(), loaded[0]);
  EXPECT_GT(resumed.resumed_from_step(), 0);
  EXPECT_EQ(resumed.resumed_from_step() % 20, 0);
  const std::vector<int64_t> written =
      LoggedValues(WorkerLog(cluster, 0), "checkpoint", "step");
  ASSERT_FALSE(written.empty()) << cluster.Logs();
  EXPECT_GE(resumed.resumed_from_step(), written.back());
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

TEST(FaultMatrixTest, WorkerKilledWhileWritingACheckpointResumesFromTheLast) {
  LocalCluster cluster(ShortLease());
  // Dies with the step-40 checkpoint written to its temp file, not renamed.
  WorkerFlags dying;
  dying.env = {"PRISM_FAILPOINTS=checkpoint.temp_written@2"};
  int64_t id;
  int first;
  ASSERT_NO_FATAL_FAILURE(
      StartOneTrial(cluster, "checkpoint kill", &id, &first, dying));
  ASSERT_NO_FATAL_FAILURE(
      ExpectKilledAtFailpoint(cluster.worker(first), cluster));
  ASSERT_NO_FATAL_FAILURE(FinishWithAnotherWorker(cluster, id));

  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(id);
  ASSERT_TRUE(trials.ok());
  absl::StatusOr<v1::GetTrialResponse> trial =
      cluster.GetTrial(trials->at(0).id());
  ASSERT_TRUE(trial.ok());
  ASSERT_EQ(trial->trial().attempts_size(), 2) << cluster.Logs();
  // The half-written step-40 file is ignored; the step-20 one is intact.
  EXPECT_EQ(trial->trial().attempts(1).resumed_from_step(), 20);
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

TEST(FaultMatrixTest, WorkerKilledBetweenAReportAndItsAckLosesNothing) {
  LocalCluster cluster(ShortLease());
  // The coordinator stored the third report; the worker never saw the ack.
  WorkerFlags dying;
  dying.env = {"PRISM_FAILPOINTS=worker.report_sent@3"};
  int64_t id;
  int first;
  ASSERT_NO_FATAL_FAILURE(
      StartOneTrial(cluster, "ack kill", &id, &first, dying));
  ASSERT_NO_FATAL_FAILURE(
      ExpectKilledAtFailpoint(cluster.worker(first), cluster));
  ASSERT_NO_FATAL_FAILURE(FinishWithAnotherWorker(cluster, id));
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

TEST(FaultMatrixTest, StoppedWorkerPastItsLeaseIsRefusedAndNothingDoubles) {
  LocalCluster cluster(ShortLease());
  int64_t id;
  int first;
  ASSERT_NO_FATAL_FAILURE(StartOneTrial(cluster, "sigstop", &id, &first));
  absl::StatusOr<v1::Trial> running =
      WaitForStep(cluster, id, 25, absl::Minutes(2));
  ASSERT_TRUE(running.ok()) << running.status();

  // Frozen past its lease: another worker takes the trial over...
  ASSERT_TRUE(cluster.worker(first).Signal(SIGSTOP).ok());
  ASSERT_TRUE(cluster.StartWorker().ok());
  ASSERT_TRUE(
      WaitForAttempt(cluster, running->id(), 2, 45, absl::Minutes(2)).ok());
  // ...and the first one wakes up with stale reports and a stale lease.
  ASSERT_TRUE(cluster.worker(first).Signal(SIGCONT).ok());
  ASSERT_TRUE(cluster.WaitForExperiment(id, absl::Minutes(4)).ok());

  absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(running->id());
  ASSERT_TRUE(trial.ok());
  EXPECT_EQ(trial->trial().attempts_size(), 2) << cluster.Logs();
  EXPECT_EQ(trial->trial().attempts(1).outcome(), v1::TRIAL_COMPLETED);
  // The woken worker learns it lost the trial (a refused report or a
  // heartbeat that says stop) and stops.
  EXPECT_TRUE(WaitForLog(WorkerLog(cluster, 0), "msg=trial_superseded",
                         absl::Seconds(30)))
      << cluster.Logs();
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

TEST(FaultMatrixTest, SigtermedWorkerHandsItsTrialBackForAnotherToResume) {
  LocalCluster cluster(ShortLease());
  int64_t id;
  int first;
  ASSERT_NO_FATAL_FAILURE(StartOneTrial(cluster, "sigterm", &id, &first));
  absl::StatusOr<v1::Trial> running =
      WaitForStep(cluster, id, 25, absl::Minutes(2));
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_TRUE(cluster.worker(first).Signal(SIGTERM).ok());
  absl::StatusOr<int> exited = cluster.worker(first).Wait(absl::Minutes(1));
  ASSERT_TRUE(exited.ok());
  EXPECT_EQ(*exited, 0) << cluster.Logs();
  ASSERT_NO_FATAL_FAILURE(FinishWithAnotherWorker(cluster, id));
  absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(running->id());
  ASSERT_TRUE(trial.ok());
  ASSERT_EQ(trial->trial().attempts_size(), 2) << cluster.Logs();
  // Handed back, not failed: it used up no attempt.
  EXPECT_EQ(trial->trial().attempts(0).outcome(), v1::TRIAL_QUEUED);
  // It checkpointed where it stopped, and the next worker started there.
  const std::vector<int64_t> written =
      LoggedValues(WorkerLog(cluster, 0), "checkpoint", "step");
  ASSERT_FALSE(written.empty());
  EXPECT_GE(written.back(), 25);
  EXPECT_EQ(trial->trial().attempts(1).resumed_from_step(), written.back());
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

TEST(FaultMatrixTest, FullCheckpointDiskFailsThatTrialAndNoOther) {
  LocalCluster cluster;
  const std::string small = cluster.dir() + "/small-checkpoints";
  Tmpfs disk(small, "1m");
  if (!disk.mounted()) {
    GTEST_SKIP() << "cannot mount a tmpfs here (" << disk.error()
                 << "): the full checkpoint disk case needs one";
  }
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(
      RecipeSpec("full disk", {"4x6", "2x3,4x3"}, {}, /*max_attempts=*/1));
  ASSERT_TRUE(id.ok()) << id.status();
  WorkerFlags starved;
  starved.checkpoint_dir = small;
  absl::StatusOr<int> first = cluster.StartWorker(starved);
  ASSERT_TRUE(first.ok());
  // It fails its trial at the first checkpoint and stops leasing.
  absl::StatusOr<int> exited = cluster.worker(*first).Wait(absl::Minutes(2));
  ASSERT_TRUE(exited.ok()) << cluster.Logs();
  EXPECT_EQ(*exited, 1) << cluster.Logs();
  EXPECT_THAT(ReadFile(WorkerLog(cluster, 0)),
              HasSubstr("No space left on device"));

  ASSERT_TRUE(cluster.StartWorker().ok());
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->counts().failed(), 1) << cluster.Logs();
  EXPECT_EQ(done->counts().completed(), 1) << cluster.Logs();
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok());
  for (const v1::Trial& t : *trials) {
    if (t.state() != v1::TRIAL_FAILED) continue;
    EXPECT_THAT(t.error(), HasSubstr("No space left on device"));
    EXPECT_THAT(t.error(), HasSubstr(small));
  }
  ExpectNothingLost(cluster, *id, {}, {});
}

// --- the coordinator ---------------------------------------------------

// RestartAfterDeath waits for the coordinator to die at its failpoint and
// starts it again, unarmed, on the same port and database.
void RestartAfterDeath(LocalCluster& cluster) {
  ASSERT_NO_FATAL_FAILURE(
      ExpectKilledAtFailpoint(cluster.coordinator(), cluster));
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
}

TEST(FaultMatrixTest, CoordinatorKilledDuringSubmitKeepsTheWholeExperiment) {
  LocalCluster cluster(ShortLease());
  ASSERT_TRUE(
      cluster.StartCoordinator({"PRISM_FAILPOINTS=submit.committed"}).ok())
      << cluster.Logs();
  Recipe short_recipe;
  short_recipe.steps = 20;
  // Committed, but the answer never left: the client sees an error.
  EXPECT_FALSE(cluster
                   .SubmitSpec(RecipeSpec("submit kill", {"4x6", "2x3,4x3"},
                                          short_recipe))
                   .ok());
  ASSERT_NO_FATAL_FAILURE(RestartAfterDeath(cluster));
  // All of it or nothing: here all of it, queued.
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(1);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), 2u);
  for (const v1::Trial& t : *trials) EXPECT_EQ(t.state(), v1::TRIAL_QUEUED);
  ASSERT_TRUE(cluster.StartWorker().ok());
  ASSERT_TRUE(cluster.WaitForExperiment(1, absl::Minutes(4)).ok());
  ExpectNothingLost(cluster, 1, short_recipe, {});
}

TEST(FaultMatrixTest, CoordinatorKilledDuringLeaseDeliversTheTaskAgain) {
  // What is tested is the re-delivery, not how fast a worker reconnects
  // (CoordinatorRestartsShorterThanALeaseSupersedeNoWorker is about that):
  // a lease long enough that a loaded CI host cannot outlast its grace
  // (a 3 s lease's 5 s grace was outlasted once, the worker's gRPC
  // connection attempts timing out while the host was saturated).
  CoordinatorFlags flags = ShortLease();
  flags.lease_seconds = 10;
  LocalCluster cluster(flags);
  int64_t id;
  int worker;
  ASSERT_NO_FATAL_FAILURE(StartOneTrial(cluster, "lease kill", &id, &worker, {},
                                        {"PRISM_FAILPOINTS=lease.committed"}));
  ASSERT_NO_FATAL_FAILURE(RestartAfterDeath(cluster));
  ASSERT_TRUE(cluster.WaitForExperiment(id, absl::Minutes(4)).ok())
      << cluster.Logs();
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(id);
  ASSERT_TRUE(trials.ok());
  EXPECT_EQ(trials->at(0).state(), v1::TRIAL_COMPLETED);
  // The lease the worker never heard of was delivered again, not waited
  // out and counted as a failed attempt.
  EXPECT_EQ(trials->at(0).attempt(), 1) << cluster.Logs();
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

// KillCoordinatorAt runs one trial on a coordinator (lease 30 s: its
// restart must supersede nobody) that SIGKILLs itself at `failpoint`, starts
// it again, and checks the trial finished in its first attempt.
void KillCoordinatorAt(LocalCluster& cluster, const std::string& failpoint,
                       int64_t* id) {
  int worker;
  ASSERT_NO_FATAL_FAILURE(
      StartOneTrial(cluster, failpoint, id, &worker, {},
                    {absl::StrCat("PRISM_FAILPOINTS=", failpoint)}));
  ASSERT_NO_FATAL_FAILURE(RestartAfterDeath(cluster));
  ASSERT_TRUE(cluster.WaitForExperiment(*id, absl::Minutes(4)).ok());
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok());
  EXPECT_EQ(trials->at(0).attempt(), 1) << cluster.Logs();
}

TEST(FaultMatrixTest, CoordinatorKilledDuringIngestLosesNoAcknowledgedPoint) {
  LocalCluster cluster;
  int64_t id;
  ASSERT_NO_FATAL_FAILURE(
      KillCoordinatorAt(cluster, "ingest.committed@2", &id));
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

TEST(FaultMatrixTest, CoordinatorKilledDuringCompleteFinishesTheSameAttempt) {
  LocalCluster cluster;
  int64_t id;
  ASSERT_NO_FATAL_FAILURE(
      KillCoordinatorAt(cluster, "complete.committed", &id));
  // The worker's retried Complete was answered, not refused.
  EXPECT_TRUE(WaitForLog(WorkerLog(cluster, 0), "msg=trial_completed",
                         absl::Seconds(30)))
      << cluster.Logs();
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

// The scenario a user reported: a coordinator SIGKILLed and restarted in
// less than a lease, then upgraded in place (SIGTERM, start again), while
// two workers train. No worker may be superseded, and no point lost.
TEST(FaultMatrixTest, CoordinatorRestartsShorterThanALeaseSupersedeNoWorker) {
  CoordinatorFlags flags;
  flags.lease_seconds = 8;
  flags.heartbeat_seconds = 2;
  LocalCluster cluster(flags);
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  Recipe recipe;
  recipe.steps = 100;
  recipe.eval_every = 25;
  absl::StatusOr<int64_t> id =
      cluster.SubmitSpec(RecipeSpec("restarts", {"4x6", "2x3,4x3"}, recipe));
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(cluster.StartWorker().ok());
  ASSERT_TRUE(cluster.StartWorker().ok());

  ASSERT_TRUE(WaitForStep(cluster, *id, 30, absl::Minutes(2)).ok());
  cluster.KillCoordinator();
  // Down for a while (the workers keep training and buffering), but for
  // less than a lease.
  absl::SleepFor(absl::Seconds(2));
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();

  ASSERT_TRUE(WaitForStep(cluster, *id, 65, absl::Minutes(2)).ok());
  ASSERT_TRUE(cluster.coordinator().Signal(SIGTERM).ok());
  absl::StatusOr<int> stopped = cluster.coordinator().Wait(absl::Minutes(1));
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(*stopped, 0) << cluster.Logs();
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();

  ASSERT_TRUE(cluster.WaitForExperiment(*id, absl::Minutes(5)).ok());
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(*id);
  ASSERT_TRUE(trials.ok());
  for (const v1::Trial& t : *trials) {
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.schedule();
    EXPECT_EQ(t.attempt(), 1) << t.schedule() << " was superseded\n"
                              << cluster.Logs();
  }
  for (int w = 0; w < 2; ++w) {
    EXPECT_THAT(ReadFile(WorkerLog(cluster, w)),
                ::testing::Not(HasSubstr("msg=trial_superseded")))
        << cluster.Logs();
  }
  ExpectNothingLost(cluster, *id, recipe,
                    {{"4x6", Reference(cluster, "4x6", recipe)},
                     {"2x3,4x3", Reference(cluster, "2x3,4x3", recipe)}});
}

TEST(FaultMatrixTest, FullDatabaseDiskAnswersUnavailableAndRecovers) {
  const TempDir holder("prism_dbdisk");
  const std::string mount_dir = holder.File("db");
  Tmpfs disk(mount_dir, "16m");
  if (!disk.mounted()) GTEST_SKIP() << DatabaseTmpfsSkip(disk);
  CoordinatorFlags flags;
  flags.db_path = mount_dir + "/prism.db";
  LocalCluster cluster(flags);
  int64_t id;
  int worker;
  ASSERT_NO_FATAL_FAILURE(StartOneTrial(cluster, "full db", &id, &worker));
  ASSERT_TRUE(WaitForStep(cluster, id, 10, absl::Minutes(2)).ok());

  // Fill the disk. SQLite reuses the room its WAL already has, so keep
  // submitting experiments (each adds pages the database must grow by) until
  // a write is refused: that is the moment the disk is really full.
  const std::string filler = mount_dir + "/filler";
  FillDisk(filler);
  std::string flood = RecipeSpec("flood", {"4x6"});
  for (int seed = 2; seed <= 200; ++seed) {
    absl::StrAppend(&flood, "seeds: ", seed, "\n");
  }
  absl::Status refused;
  std::vector<int64_t> flooded;
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  while (refused.ok() && absl::Now() < deadline) {
    v1::SubmitRequest request;
    request.set_spec_text(flood);
    v1::SubmitResponse response;
    refused = cluster.client().Call(&v1::ExperimentService::Stub::Submit,
                                    cluster.client().experiments(), request,
                                    &response);
    if (refused.ok()) flooded.push_back(response.experiment().id());
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("full")) << refused;

  // What the operator sees. Small writes (a heartbeat) may still fit in the
  // WAL's room and succeed between failures, so each check waits for the
  // state while the flood keeps failing.
  std::string not_ready;
  std::string status_out;
  const absl::Time seen_by = absl::Now() + absl::Minutes(1);
  while ((not_ready.empty() || status_out.empty()) && absl::Now() < seen_by) {
    v1::SubmitRequest request;
    request.set_spec_text(flood);
    v1::SubmitResponse response;
    if (cluster.client()
            .Call(&v1::ExperimentService::Stub::Submit,
                  cluster.client().experiments(), request, &response)
            .ok()) {
      flooded.push_back(response.experiment().id());
    }
    auto [code, body] = HttpGet(cluster, "/readyz");
    if (code == 503) not_ready = body;
    CommandResult status = cluster.Run({"status"});
    if (absl::StrContains(status.out, "storage writes failing")) {
      status_out = status.out;
    }
  }
  EXPECT_THAT(not_ready, HasSubstr("disk_full")) << cluster.Logs();
  EXPECT_THAT(not_ready, HasSubstr("database or disk is full"));
  EXPECT_THAT(status_out, HasSubstr("coordinator: storage writes failing"));
  EXPECT_THAT(status_out, HasSubstr("free space"));
  EXPECT_EQ(HttpGet(cluster, "/healthz").first, 200);  // alive all along
  EXPECT_GE(
      MetricValue(cluster, "prism_storage_errors_total{fault=\"disk_full\"}"),
      1);
  EXPECT_GE(MetricValue(cluster, "prism_db_filesystem_free_bytes"), 0);
  const std::string log = CoordinatorLog(cluster);
  EXPECT_THAT(log, HasSubstr("level=error msg=\"storage writes failing\" "
                             "fault=disk_full"));
  EXPECT_THAT(log, HasSubstr("action="));

  // Space returns: the coordinator takes writes again, the worker's
  // buffered points with them.
  fs::remove(filler);
  EXPECT_EQ(WaitForReadyz(cluster, 200, absl::Minutes(1)), "ok\n")
      << cluster.Logs();
  for (int64_t flood_id : flooded) {
    v1::ExperimentRef ref;
    ref.set_id(flood_id);
    v1::Experiment cancelled;
    ASSERT_TRUE(cluster.client()
                    .Call(&v1::ExperimentService::Stub::Cancel,
                          cluster.client().experiments(), ref, &cancelled)
                    .ok());
  }
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->counts().failed(), 0) << cluster.Logs();
  EXPECT_EQ(done->counts().completed(), 1) << cluster.Logs();
  EXPECT_THAT(CoordinatorLog(cluster),
              HasSubstr("msg=\"storage writes succeed again\""));
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

TEST(FaultMatrixTest, CoordinatorStartedOnAFullDiskWaitsAndRecovers) {
  const TempDir holder("prism_fullstart");
  const std::string mount_dir = holder.File("db");
  Tmpfs disk(mount_dir, "16m");
  if (!disk.mounted()) GTEST_SKIP() << DatabaseTmpfsSkip(disk);
  CoordinatorFlags flags;
  flags.db_path = mount_dir + "/prism.db";
  flags.lease_seconds = 4;
  flags.heartbeat_seconds = 1;
  LocalCluster cluster(flags);
  int64_t id;
  int worker;
  ASSERT_NO_FATAL_FAILURE(StartOneTrial(cluster, "full start", &id, &worker));
  ASSERT_TRUE(WaitForStep(cluster, id, 10, absl::Minutes(2)).ok());

  // Stopped cleanly (its WAL and shared-memory files removed), the disk
  // filled while it is down, started again: SQLite cannot even open the
  // file (no room for its shared-memory index), so it waits, saying why
  // once, and answers the HTTP probes meanwhile: not ready, with the cause.
  ASSERT_TRUE(cluster.coordinator().Signal(SIGTERM).ok());
  ASSERT_TRUE(cluster.coordinator().Wait(absl::Minutes(1)).ok());
  const std::string filler = mount_dir + "/filler";
  FillDisk(filler);
  const std::string log_path = cluster.dir() + "/coordinator.log";
  constexpr char kWaiting[] = "msg=\"cannot open the database; retrying";
  // The start blocks until it serves, so the probes are read and the disk
  // freed from a thread (the coordinator must be started from this one: it
  // is killed when the thread that started it ends).
  bool said_why = false;
  std::string waiting_http;
  std::string not_ready;
  int healthz = 0;
  int api = 0;
  std::string metrics;
  std::thread freer([&] {
    said_why = WaitForLog(log_path, kWaiting, absl::Seconds(30));
    waiting_http = LoggedWord(log_path, kWaiting, "http");
    // Wait on the state: the probe answers 503 naming the open.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (said_why && absl::Now() < deadline) {
      auto [code, body] = HttpGetAt(waiting_http, "/readyz");
      if (code == 503) {
        not_ready = body;
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    healthz = HttpGetAt(waiting_http, "/healthz").first;
    api = HttpGetAt(waiting_http, "/api/v1/experiments").first;
    metrics = HttpGetAt(waiting_http, "/metrics").second;
    fs::remove(filler);
  });
  // Nobody touches it but the disk: it opens and serves by itself. As
  // systemd would see it (Type=notify): STATUS= naming the failed open,
  // then ready, and READY=1 only once it serves.
  NotifySocket manager(cluster.dir() + "/notify.sock");
  ASSERT_TRUE(manager.ok());
  absl::Status started =
      cluster.StartCoordinator({"NOTIFY_SOCKET=" + manager.path()});
  freer.join();
  ASSERT_TRUE(started.ok()) << started << cluster.Logs();
  EXPECT_TRUE(said_why) << cluster.Logs();
  EXPECT_THAT(ReadFile(log_path),
              HasSubstr("level=error msg=\"cannot open the database"));
  EXPECT_THAT(not_ready,
              HasSubstr("not ready: database cannot be opened for writing"))
      << cluster.Logs();
  EXPECT_THAT(not_ready,
              ::testing::AnyOf(HasSubstr("disk_full"), HasSubstr("io_error")));
  // SQLite reports the full disk at open as an I/O error; the free space
  // beside it says which.
  EXPECT_THAT(not_ready, HasSubstr("(0 bytes free on " + mount_dir + ")"));
  EXPECT_EQ(healthz, 200);
  EXPECT_EQ(api, 503);
  EXPECT_THAT(metrics, HasSubstr("prism_storage_ready 0"));
  // The coordinator took over the port the probes answered on.
  EXPECT_EQ(cluster.http_address(), waiting_http);
  EXPECT_EQ(WaitForReadyz(cluster, 200, absl::Minutes(1)), "ok\n")
      << cluster.Logs();
  EXPECT_THAT(ReadFile(log_path),
              HasSubstr("msg=\"database opened after waiting for the disk\""));
  const std::vector<std::string> notified =
      manager.ReceiveUntil("READY=1", absl::Seconds(30));
  ASSERT_FALSE(notified.empty());
  EXPECT_THAT(notified.front(),
              HasSubstr("STATUS=not ready: database cannot be opened for "
                        "writing"));
  EXPECT_EQ(notified.back(), "READY=1");
  EXPECT_THAT(notified, ::testing::Contains("STATUS=ready"));
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->counts().failed(), 0) << cluster.Logs();
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(id);
  ASSERT_TRUE(trials.ok());
  for (const v1::Trial& t : *trials) {
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.schedule();
  }
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

TEST(FaultMatrixTest, StalledCommitsLongerThanALeaseExpireNoLease) {
  // Every commit that starts while the file exists waits 5 s (the lease is
  // 3 s, heartbeats every 1 s): heartbeats queue behind the disk.
  LocalCluster cluster(ShortLease());
  const std::string stall = cluster.dir() + "/slow-commit";
  int64_t id;
  int worker;
  ASSERT_NO_FATAL_FAILURE(
      StartOneTrial(cluster, "slow disk", &id, &worker, {},
                    {absl::StrCat("PRISM_STALLS=storage.commit=", stall)}));
  ASSERT_TRUE(WaitForStep(cluster, id, 10, absl::Minutes(2)).ok());
  WriteFile(stall, "5000");
  ASSERT_TRUE(WaitForLog(cluster.dir() + "/coordinator.log",
                         "msg=\"storage commits stalled\"", absl::Seconds(30)))
      << cluster.Logs();
  fs::remove(stall);
  EXPECT_TRUE(WaitForLog(cluster.dir() + "/coordinator.log",
                         "msg=\"extended live leases after a storage "
                         "disruption\"",
                         absl::Seconds(30)))
      << cluster.Logs();
  // Ready throughout: a slow disk still takes writes.
  EXPECT_EQ(HttpGet(cluster, "/readyz").first, 200);

  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(id);
  ASSERT_TRUE(trials.ok());
  for (const v1::Trial& t : *trials) {
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.schedule();
    EXPECT_EQ(t.attempt(), 1) << t.schedule() << " lost its lease\n"
                              << cluster.Logs();
  }
  EXPECT_THAT(CoordinatorLog(cluster),
              ::testing::Not(HasSubstr("msg=\"lease expired\"")));
  const std::string worker_log = ReadFile(WorkerLog(cluster, worker));
  EXPECT_THAT(worker_log, ::testing::Not(HasSubstr("heartbeat_failed")));
  EXPECT_THAT(worker_log, ::testing::Not(HasSubstr("trial_superseded")));
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

TEST(FaultMatrixTest, DatabaseTurnedReadOnlyMidRunRecoversByItself) {
  // A tmpfs cannot be remounted read-only while SQLite holds the file open
  // for writing (the kernel answers EBUSY), so the fault point fails every
  // write transaction with SQLITE_READONLY while the file exists, as a
  // read-only database would.
  LocalCluster cluster(ShortLease());
  const std::string fault = cluster.dir() + "/write-fault";
  int64_t id;
  int worker;
  ASSERT_NO_FATAL_FAILURE(
      StartOneTrial(cluster, "read-only db", &id, &worker, {},
                    {absl::StrCat("PRISM_FAULTS=storage.write=", fault)}));
  ASSERT_TRUE(WaitForStep(cluster, id, 10, absl::Minutes(2)).ok());
  WriteFile(fault, "read_only");

  const std::string not_ready = WaitForReadyz(cluster, 503, absl::Seconds(30));
  EXPECT_THAT(not_ready, HasSubstr("read_only")) << cluster.Logs();
  EXPECT_THAT(not_ready, HasSubstr("readonly database"));
  EXPECT_GE(
      MetricValue(cluster, "prism_storage_errors_total{fault=\"read_only\"}"),
      1);
  EXPECT_EQ(MetricValue(cluster, "prism_storage_ready"), 0);
  EXPECT_EQ(HttpGet(cluster, "/healthz").first, 200);
  // Let it last past a lease, so an expiry would have happened if the
  // coordinator expired leases it could not renew.
  ASSERT_TRUE(WaitForLog(WorkerLog(cluster, worker), "readonly database",
                         absl::Seconds(30)))
      << cluster.Logs();
  absl::SleepFor(absl::Seconds(4));  // the lease (3 s) must pass unrenewed
  fs::remove(fault);

  EXPECT_EQ(WaitForReadyz(cluster, 200, absl::Minutes(1)), "ok\n")
      << cluster.Logs();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->counts().failed(), 0) << cluster.Logs();
  EXPECT_EQ(done->counts().completed(), 1) << cluster.Logs();
  const std::string log = CoordinatorLog(cluster);
  EXPECT_THAT(log, HasSubstr("level=error msg=\"storage writes failing\" "
                             "fault=read_only"));
  EXPECT_THAT(log, HasSubstr("msg=\"storage writes succeed again\" "
                             "after=read_only"));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("msg=\"lease expired\"")));
  ExpectNothingLost(cluster, id, {}, {{"4x6", Reference(cluster, "4x6")}});
}

}  // namespace
}  // namespace prism::testing
