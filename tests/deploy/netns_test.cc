// Several hosts on one machine: the coordinator and two workers each in a
// network namespace of their own (ip netns), joined by veth pairs to a
// bridge that also carries this test's address, so the experiment's every
// RPC crosses a network interface rather than loopback. The addresses are a
// private /24 that no interface here uses; the namespaces, veths and bridge
// are named after this process and removed when the test ends, pass or fail
// (and left-overs of a test that was killed are removed by the next one).
//
// Creating namespaces needs CAP_SYS_ADMIN and CAP_NET_ADMIN (root in a
// container that allows them); where `ip netns add` is refused or `ip` is
// missing the test skips and says why; PRISM_REQUIRE_NETNS=1 turns the skip
// into a failure. The launch flags live in LocalCluster's CoordinatorFlags
// and WorkerFlags (`args`), so options such as TLS are added there.
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kPrefix[] = "prism-it-";

// Hosts: `count` network namespaces on one bridge, host i at 10.213.N.(i+1)
// and the bridge (this process's side) at 10.213.N.254.
class Hosts {
 public:
  Hosts() : tag_(absl::StrCat(getpid())) {}
  ~Hosts() { Remove(tag_); }
  Hosts(const Hosts&) = delete;
  Hosts& operator=(const Hosts&) = delete;

  // Create builds them. Returns "" or why namespaces cannot be made here.
  std::string Create(int count) {
    ip_ = cli::FindProgram("ip");
    if (ip_.empty()) return "ip not found (Debian's iproute2)";
    RemoveLeftovers();
    // A /24 no interface here is on.
    const std::string addresses = Ip({"-4", "-o", "addr", "show"}).out;
    for (int n = getpid() % 200;; n = (n + 1) % 200) {
      subnet_ = absl::StrCat("10.213.", n, ".");
      if (!absl::StrContains(addresses, subnet_)) break;
    }
    std::string why = Step({"link", "add", Bridge(), "type", "bridge"});
    if (!why.empty()) return why;
    for (const std::vector<std::string>& step :
         {std::vector<std::string>{"addr", "add", Address(253) + "/24", "dev",
                                   Bridge()},
          std::vector<std::string>{"link", "set", Bridge(), "up"}}) {
      if (why = Step(step); !why.empty()) return why;
    }
    for (int i = 0; i < count; ++i) {
      const std::string ns = Namespace(i);
      const std::string outside = Outside(i);
      const std::string inside = absl::StrCat("pv", tag_, "n", i);
      for (const std::vector<std::string>& step :
           std::vector<std::vector<std::string>>{
               {"netns", "add", ns},
               {"link", "add", outside, "type", "veth", "peer", "name", inside},
               {"link", "set", inside, "netns", ns},
               {"link", "set", outside, "master", Bridge(), "up"},
               {"-n", ns, "addr", "add", Address(i) + "/24", "dev", inside},
               {"-n", ns, "link", "set", inside, "up"},
               {"-n", ns, "link", "set", "lo", "up"}}) {
        if (why = Step(step); !why.empty()) return why;
      }
    }
    return "";
  }

  // Partition cuts host i off the bridge (its bridge-side veth down):
  // packets to and from it are dropped, its sockets stay open. Heal brings
  // it back. "" or what ip said.
  std::string Partition(int i) const {
    return Step({"link", "set", Outside(i), "down"});
  }
  std::string Heal(int i) const {
    return Step({"link", "set", Outside(i), "up"});
  }

  // Address is host i's address (253: the bridge's, this process's).
  std::string Address(int i) const { return absl::StrCat(subnet_, i + 1); }
  // Prefix runs a command on host i.
  std::vector<std::string> Prefix(int i) const {
    return {ip_, "netns", "exec", Namespace(i)};
  }

 private:
  std::string Outside(int i) const { return absl::StrCat("pv", tag_, "h", i); }
  std::string Namespace(int i) const {
    return absl::StrCat(kPrefix, tag_, "-", i);
  }
  std::string Bridge() const { return absl::StrCat("pb", tag_); }

  CommandResult Ip(const std::vector<std::string>& args) const {
    static int counter = 0;
    cli::SpawnOptions spawn;
    spawn.argv = {ip_};
    spawn.argv.insert(spawn.argv.end(), args.begin(), args.end());
    const std::string files = absl::StrCat(dir_.path(), "/ip-", ++counter);
    spawn.stdout_path = files + ".out";
    spawn.stderr_path = files + ".err";
    return cli::RunToCompletion(spawn, absl::Seconds(30));
  }

  // Step runs `ip args...`; "" or what it said.
  std::string Step(const std::vector<std::string>& args) const {
    CommandResult r = Ip(args);
    if (r.status == 0) return "";
    return absl::StrCat("ip ", absl::StrJoin(args, " "), " failed: ", r.err);
  }

  // Remove deletes the namespaces and bridge named after `tag` (a pid);
  // deleting a namespace deletes the veth pair it holds one end of.
  void Remove(const std::string& tag) const {
    if (ip_.empty()) return;
    for (const std::string& ns : Namespaces()) {
      if (absl::StartsWith(ns, absl::StrCat(kPrefix, tag, "-"))) {
        (void)Ip({"netns", "del", ns});
      }
    }
    (void)Ip({"link", "del", absl::StrCat("pb", tag)});
  }

  // RemoveLeftovers removes what tests that were killed left behind.
  void RemoveLeftovers() const {
    std::set<std::string> dead;
    for (const std::string& ns : Namespaces()) {
      absl::string_view rest(ns);
      if (!absl::ConsumePrefix(&rest, kPrefix)) continue;
      const std::string pid(rest.substr(0, rest.find('-')));
      int number = 0;
      // A zombie is dead too: its command line reads empty.
      if (absl::SimpleAtoi(pid, &number) &&
          ReadFile(absl::StrCat("/proc/", number, "/cmdline")).empty()) {
        dead.insert(pid);
      }
    }
    for (const std::string& pid : dead) Remove(pid);
  }

  std::vector<std::string> Namespaces() const {
    std::vector<std::string> names;
    for (absl::string_view line :
         absl::StrSplit(Ip({"netns", "list"}).out, '\n', absl::SkipEmpty())) {
      names.emplace_back(line.substr(0, line.find(' ')));
    }
    return names;
  }

  const std::string tag_;
  TempDir dir_{"prism_netns"};
  std::string ip_;
  std::string subnet_;
};

// NetworkNamespace returns the network namespace of a process.
std::string NetworkNamespace(pid_t pid) {
  std::error_code ec;
  return fs::read_symlink(absl::StrCat("/proc/", pid, "/ns/net"), ec).string();
}

// PRISM_CREATE_HOSTS_OR_SKIP creates `count` hosts, or skips the test
// naming why namespaces cannot be made here (PRISM_REQUIRE_NETNS=1: fails).
#define PRISM_CREATE_HOSTS_OR_SKIP(hosts, count)                          \
  if (const std::string why = (hosts).Create(count); !why.empty()) {      \
    if (std::getenv("PRISM_REQUIRE_NETNS") != nullptr) {                  \
      FAIL() << "network namespaces required (PRISM_REQUIRE_NETNS) but: " \
             << why;                                                      \
    }                                                                     \
    GTEST_SKIP() << "network namespaces are not permitted here: " << why; \
  }

TEST(NetnsTest, ACoordinatorAndTwoWorkersOnThreeHostsFinishAnExperiment) {
  Hosts hosts;
  PRISM_CREATE_HOSTS_OR_SKIP(hosts, 3);
  // With TLS, as a coordinator beyond loopback serves: the workers and
  // this process verify its certificate for the address they dial.
  CoordinatorFlags flags;
  flags.listen_host = hosts.Address(0);
  flags.prefix = hosts.Prefix(0);
  flags.tls = true;
  flags.tls_names = {hosts.Address(0)};
  LocalCluster cluster(flags);
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  EXPECT_EQ(cluster.grpc_address().rfind(hosts.Address(0) + ":", 0), 0u)
      << cluster.grpc_address();
  for (int host : {1, 2}) {
    WorkerFlags worker;
    worker.prefix = hosts.Prefix(host);
    ASSERT_TRUE(cluster.StartWorker(worker).ok());
  }
  absl::StatusOr<int64_t> id =
      cluster.SubmitSpec(RecipeSpec("three hosts", {"4x6", "2x2,4x4"}));
  ASSERT_TRUE(id.ok()) << id.status() << cluster.Logs();
  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(*id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(done->counts().completed(), 2) << cluster.Logs();

  // Three namespaces, none of them this process's: nothing went over
  // loopback.
  const std::set<std::string> namespaces = {
      NetworkNamespace(getpid()), NetworkNamespace(cluster.coordinator().pid()),
      NetworkNamespace(cluster.worker(0).pid()),
      NetworkNamespace(cluster.worker(1).pid())};
  EXPECT_EQ(namespaces.size(), 4u);
  // Both workers reached the coordinator and registered.
  v1::ListWorkersRequest request;
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(cluster.client()
                  .Call(&v1::WorkerService::Stub::ListWorkers,
                        cluster.client().workers(), request, &workers)
                  .ok());
  EXPECT_EQ(workers.workers_size(), 2) << workers.ShortDebugString();
}

// PartitionFlags: the coordinator on host 0, with TLS as beyond loopback,
// a lease of `lease_seconds` and heartbeats every second.
CoordinatorFlags PartitionFlags(const Hosts& hosts, int lease_seconds) {
  CoordinatorFlags flags;
  flags.listen_host = hosts.Address(0);
  flags.prefix = hosts.Prefix(0);
  flags.tls = true;
  flags.tls_names = {hosts.Address(0)};
  flags.lease_seconds = lease_seconds;
  flags.heartbeat_seconds = 1;
  return flags;
}

// ExpectEveryPointOnce: each completed trial holds each step of the
// recipe's cadence exactly once in both curves, and `prism db check` finds
// every invariant holding.
void ExpectEveryPointOnce(LocalCluster& cluster, int64_t id) {
  const Recipe r;
  absl::StatusOr<std::vector<v1::Trial>> trials = cluster.ListTrials(id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  for (const v1::Trial& t : *trials) {
    ASSERT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.ShortDebugString();
    absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(t.id());
    ASSERT_TRUE(trial.ok()) << trial.status();
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_TRAIN),
              Range(r.log_every, r.steps, r.log_every));
    EXPECT_EQ(StepsOf(*trial, v1::SPLIT_VAL), Range(0, r.steps, r.eval_every));
  }
  const CommandResult check = cluster.CheckDb();
  EXPECT_EQ(check.status, 0) << check.out << check.err;
  EXPECT_THAT(check.out, ::testing::HasSubstr("every invariant holds"));
}

// TrainOnHost starts the coordinator, submits the baseline alone as
// experiment `name`, starts a worker on host `host` and waits until its
// trial runs at `step`; returns the experiment id and that trial.
std::pair<int64_t, v1::Trial> TrainOnHost(const Hosts& hosts,
                                          LocalCluster& cluster,
                                          const std::string& name, int host,
                                          int64_t step) {
  EXPECT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  absl::StatusOr<int64_t> id = cluster.SubmitSpec(RecipeSpec(name, {"4x6"}));
  EXPECT_TRUE(id.ok()) << id.status() << cluster.Logs();
  if (!id.ok()) return {0, {}};
  WorkerFlags worker;
  worker.prefix = hosts.Prefix(host);
  EXPECT_TRUE(cluster.StartWorker(worker).ok());
  absl::StatusOr<v1::Trial> running =
      WaitForStep(cluster, *id, step, absl::Minutes(2));
  EXPECT_TRUE(running.ok()) << running.status();
  return {*id, running.ok() ? *running : v1::Trial()};
}

// A worker cut off for less than a lease (3 s of 10) keeps its trial: the
// same attempt finishes once the link is back, nothing lost or doubled.
TEST(NetnsTest, PartitionShorterThanALeaseKeepsTheAttempt) {
  Hosts hosts;
  PRISM_CREATE_HOSTS_OR_SKIP(hosts, 2);
  LocalCluster cluster(PartitionFlags(hosts, /*lease_seconds=*/10));
  const auto [id, running] =
      TrainOnHost(hosts, cluster, "short partition", /*host=*/1, /*step=*/15);
  ASSERT_GT(running.id(), 0);

  ASSERT_EQ(hosts.Partition(1), "");
  // The fault's length is the point of the test, not a wait for a state.
  absl::SleepFor(absl::Seconds(3));
  ASSERT_EQ(hosts.Heal(1), "");

  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(running.id());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->trial().attempts_size(), 1) << cluster.Logs();
  ExpectEveryPointOnce(cluster, id);
}

// A worker cut off for longer than a lease (3 s) loses its trial to another
// worker, which resumes it from the checkpoint; when the link comes back,
// the first worker's reports for the old attempt are refused and it stops:
// one attempt live at a time, nothing lost or doubled.
TEST(NetnsTest, PartitionLongerThanALeaseMovesTheTrialAndRefusesTheOld) {
  Hosts hosts;
  PRISM_CREATE_HOSTS_OR_SKIP(hosts, 3);
  LocalCluster cluster(PartitionFlags(hosts, /*lease_seconds=*/3));
  const auto [id, running] =
      TrainOnHost(hosts, cluster, "long partition", /*host=*/1, /*step=*/25);
  ASSERT_GT(running.id(), 0);

  ASSERT_EQ(hosts.Partition(1), "");
  WorkerFlags second;
  second.prefix = hosts.Prefix(2);
  ASSERT_TRUE(cluster.StartWorker(second).ok());
  // The second worker runs attempt 2 while the first is still cut off.
  const absl::Status moved =
      WaitForAttempt(cluster, running.id(), 2, 45, absl::Minutes(2));
  ASSERT_TRUE(moved.ok()) << moved;
  ASSERT_EQ(hosts.Heal(1), "");

  absl::StatusOr<v1::Experiment> done =
      cluster.WaitForExperiment(id, absl::Minutes(4));
  ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
  absl::StatusOr<v1::GetTrialResponse> trial = cluster.GetTrial(running.id());
  ASSERT_TRUE(trial.ok()) << trial.status();
  ASSERT_EQ(trial->trial().attempts_size(), 2) << cluster.Logs();
  EXPECT_EQ(trial->trial().attempts(1).outcome(), v1::TRIAL_COMPLETED);
  // The first worker, back on the network, learns its attempt was
  // superseded (a refused report or a heartbeat that says stop).
  EXPECT_TRUE(WaitForLog(absl::StrCat(cluster.dir(), "/worker-0.log"),
                         "msg=trial_superseded"))
      << cluster.Logs();
  ExpectEveryPointOnce(cluster, id);
}

}  // namespace
}  // namespace prism::testing
