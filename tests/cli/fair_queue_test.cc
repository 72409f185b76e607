// The fair queue end to end (issue 33): a real coordinator and replay
// workers paced by --replay-speed, so trials take wall time in proportion to
// their steps and the queue's order over time is observed in seconds.
//   - one worker, alice's 360-trial grid and bob's 12 trials submitted just
//     after: bob's trials interleave with alice's from the first lease;
//   - three workers, three users with shares 1:2:3 and long backlogs: lease
//     counts follow the shares within 10%;
//   - a user arriving late against a long backlog is leased within one
//     trial's time.
// Lease order is read from each trial's first attempt (its lease time).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"
#include "tests/cli/replay_fixture.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kSteps = 40;
// The tiny preset's principled grid: 4 schedules and the baseline 4x6.
const char kBudget[] = R"pb(
  model { preset: "tiny" }
  budget { steps: 40 eval_every: 10 log_every: 5 }
  max_attempts: 1
)pb";
const char kPrinciples[] =
    "principles: [ PRINCIPLE_SMOOTH, PRINCIPLE_BASELINE, PRINCIPLE_POW2 ]\n";
const std::vector<std::string> kSchedules = {"4x6", "1x2,4x4", "2x2,4x4",
                                             "1x3,4x3", "2x3,4x3"};

// Fixture records every schedule on seeds 1..max_seed, one falling curve.
std::string Fixture(int max_seed) {
  std::vector<int64_t> seeds;
  for (int64_t seed = 1; seed <= max_seed; ++seed) seeds.push_back(seed);
  return TinyReplayFixture(kSchedules, seeds, [](int, int64_t, int64_t step) {
    return 5.0f - 0.01f * static_cast<float>(step);
  });
}

std::string Seeds(int n) {
  std::vector<int> seeds;
  for (int s = 1; s <= n; ++s) seeds.push_back(s);
  return absl::StrCat("seeds: [ ", absl::StrJoin(seeds, ", "), " ]\n");
}

// GridSpec: the 5-schedule grid on seeds 1..n (5n trials).
std::string GridSpec(const std::string& name, int seeds) {
  return absl::StrCat(kBudget, kPrinciples, Seeds(seeds), "name: \"", name,
                      "\"\n");
}

// ListSpec: `schedules` and the baseline on seeds 1..n.
std::string ListSpec(const std::string& name,
                     const std::vector<std::string>& schedules, int seeds) {
  std::string spec =
      absl::StrCat(kBudget, Seeds(seeds), "name: \"", name, "\"\n");
  for (const std::string& s : schedules) {
    absl::StrAppend(&spec, "schedules: \"", s, "\"\n");
  }
  return spec;
}

class FairQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartCoordinator().ok()) << cluster_.Logs();
    fixture_ = cluster_.dir() + "/grid.replay";
    WriteFile(fixture_, Fixture(72));
  }

  // TokenFor creates a user token for `user`.
  std::string TokenFor(const std::string& user) {
    CommandResult r =
        cluster_.Run({"token", "create", "--user", user, "--role", "user"});
    EXPECT_EQ(r.status, 0) << r.err;
    return std::string(absl::StripAsciiWhitespace(r.out));
  }

  // SubmitAs submits `spec` as the holder of `token`; returns the id.
  int64_t SubmitAs(const std::string& token, const std::string& spec) {
    static int counter = 0;
    const std::string path =
        absl::StrCat(cluster_.dir(), "/as-", ++counter, ".textproto");
    WriteFile(path, spec);
    CommandResult r =
        cluster_.Run({"submit", path, "--format", "json", "--coordinator",
                      cluster_.grpc_address(), "--token", token},
                     /*with_defaults=*/false);
    EXPECT_EQ(r.status, 0) << r.err;
    v1::SubmitResponse response;
    EXPECT_TRUE(
        google::protobuf::util::JsonStringToMessage(r.out, &response).ok())
        << r.out;
    return response.experiment().id();
  }

  void StartWorkers(int n, double steps_per_second) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(cluster_
                      .StartWorker({"--replay", fixture_, "--replay-speed",
                                    absl::StrCat(steps_per_second)})
                      .ok());
    }
  }

  v1::Experiment Get(int64_t id) {
    v1::GetExperimentRequest request;
    request.set_id(id);
    v1::Experiment e;
    absl::Status s =
        cluster_.client().Call(&v1::ExperimentService::Stub::Get,
                               cluster_.client().experiments(), request, &e);
    EXPECT_TRUE(s.ok()) << s;
    return e;
  }

  static int Leased(const v1::Experiment& e) {
    const v1::TrialCounts& c = e.counts();
    return c.leased() + c.running() + c.completed() + c.failed() + c.diverged();
  }

  // WaitUntil polls the experiments' states until `done` holds.
  template <typename Done>
  void WaitUntil(const std::vector<int64_t>& ids, Done done,
                 absl::Duration timeout = absl::Seconds(25)) {
    const absl::Time deadline = absl::Now() + timeout;
    std::vector<v1::Experiment> es;
    while (absl::Now() < deadline) {
      es.clear();
      for (int64_t id : ids) es.push_back(Get(id));
      if (done(es)) return;
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << "timed out; " << cluster_.Logs();
  }

  struct Lease {
    int64_t ms = 0;
    int64_t experiment = 0;
  };
  // Leases returns every leased trial of `ids` by its first lease time.
  std::vector<Lease> Leases(const std::vector<int64_t>& ids) {
    std::vector<Lease> leases;
    for (int64_t id : ids) {
      absl::StatusOr<std::vector<v1::Trial>> trials = cluster_.ListTrials(id);
      EXPECT_TRUE(trials.ok()) << trials.status();
      if (!trials.ok()) continue;
      for (const v1::Trial& t : *trials) {
        if (t.attempt() == 0) continue;
        absl::StatusOr<v1::GetTrialResponse> full = cluster_.GetTrial(t.id());
        EXPECT_TRUE(full.ok()) << full.status();
        if (!full.ok() || full->trial().attempts_size() == 0) continue;
        leases.push_back({full->trial().attempts(0).started_unix_ms(), id});
      }
    }
    std::sort(leases.begin(), leases.end(),
              [](const Lease& a, const Lease& b) { return a.ms < b.ms; });
    return leases;
  }

  void Cancel(int64_t id) {
    CommandResult r = cluster_.Run({"cancel", absl::StrCat(id)});
    EXPECT_EQ(r.status, 0) << r.err;
  }

  LocalCluster cluster_;
  std::string fixture_;
};

TEST_F(FairQueueTest, OneWorkerInterleavesASmallExperimentFromTheFirstLease) {
  const std::string alice = TokenFor("alice");
  const std::string bob = TokenFor("bob");
  const int64_t grid = SubmitAs(alice, GridSpec("alice grid", 72));
  const int64_t small =
      SubmitAs(bob, ListSpec("bob", {"1x2,4x4", "2x2,4x4", "1x3,4x3"}, 3));
  EXPECT_EQ(Get(grid).counts().queued(), 360);
  EXPECT_EQ(Get(small).counts().queued(), 12);
  // Before any worker: both wait, in order, and say why.
  const v1::Experiment first = Get(grid);
  const v1::Experiment second = Get(small);
  EXPECT_EQ(first.queue_position(), 1);
  EXPECT_THAT(first.queue_reason(), StartsWith("no workers:"));
  EXPECT_EQ(second.queue_position(), 2);
  EXPECT_THAT(second.queue_reason(), StartsWith("age:"));
  CommandResult status = cluster_.Run({"status"});
  EXPECT_EQ(status.status, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("no workers:"));
  // The default listing fits 100 columns; the reasons go below the table.
  EXPECT_THAT(status.out, HasSubstr("waiting: experiment"));
  for (absl::string_view line : absl::StrSplit(status.out, '\n')) {
    EXPECT_LE(line.size(), 100u) << line;
  }
  CommandResult wide = cluster_.Run({"status", "--wide"});
  EXPECT_EQ(wide.status, 0) << wide.err;
  EXPECT_THAT(wide.out, HasSubstr("reason"));

  StartWorkers(1, /*steps_per_second=*/400);
  WaitUntil({small}, [](const std::vector<v1::Experiment>& es) {
    return es[0].state() == v1::EXPERIMENT_DONE;
  });
  Cancel(grid);
  const std::vector<Lease> leases = Leases({grid, small});
  std::vector<int> positions;
  for (size_t i = 0; i < leases.size(); ++i) {
    if (leases[i].experiment == small) positions.push_back(i + 1);
  }
  RecordProperty("bob_positions", absl::StrJoin(positions, ","));
  std::cout << "bob's lease positions: " << absl::StrJoin(positions, ",")
            << " of " << leases.size() << " leases\n";
  ASSERT_EQ(positions.size(), 12u);
  EXPECT_EQ(positions.front(), 2);
  // Alternating, within a trial of it: bob's 12th lease by position 25.
  EXPECT_LE(positions.back(), 25);
}

TEST_F(FairQueueTest, ThreeWorkersLeaseInProportionToShares) {
  const std::vector<std::pair<std::string, double>> users = {
      {"ann", 1}, {"ben", 2}, {"cat", 3}};
  std::vector<int64_t> ids;
  for (const auto& [user, share] : users) {
    const std::string token = TokenFor(user);
    CommandResult set =
        cluster_.Run({"user", "set", user, "--share", absl::StrCat(share)});
    ASSERT_EQ(set.status, 0) << set.err;
    ids.push_back(SubmitAs(token, GridSpec(user, 40)));
  }
  constexpr int kWindow = 120;
  StartWorkers(3, /*steps_per_second=*/400);
  WaitUntil(ids, [](const std::vector<v1::Experiment>& es) {
    int n = 0;
    for (const v1::Experiment& e : es) n += Leased(e);
    return n >= kWindow;
  });
  for (int64_t id : ids) Cancel(id);
  const std::vector<Lease> leases = Leases(ids);
  ASSERT_GE(leases.size(), static_cast<size_t>(kWindow));
  std::map<int64_t, int> counts;
  for (int i = 0; i < kWindow; ++i) ++counts[leases[i].experiment];
  std::string report;
  for (size_t u = 0; u < users.size(); ++u) {
    const double expected = kWindow * users[u].second / 6.0;
    const int got = counts[ids[u]];
    absl::StrAppend(&report, users[u].first, " share ", users[u].second, ": ",
                    got, " of ", kWindow, " (expected ", expected, "); ");
    EXPECT_LE(std::abs(got - expected), 0.1 * expected) << users[u].first;
  }
  RecordProperty("lease_counts", report);
  std::cout << "lease counts: " << report << "\n";
}

TEST_F(FairQueueTest, ALateUserIsLeasedWithinOneTrialsTime) {
  const std::string alice = TokenFor("alice");
  const std::string dave = TokenFor("dave");
  const int64_t grid = SubmitAs(alice, GridSpec("alice grid", 72));
  constexpr double kSpeed = 100;  // 40 steps: 0.4 s a trial
  StartWorkers(1, kSpeed);
  WaitUntil({grid}, [](const std::vector<v1::Experiment>& es) {
    return es[0].counts().completed() >= 5;
  });
  const int64_t late = SubmitAs(dave, ListSpec("dave", {"1x2,4x4"}, 2));
  WaitUntil({late}, [](const std::vector<v1::Experiment>& es) {
    return Leased(es[0]) >= 1;
  });
  const v1::Experiment e = Get(late);
  const std::vector<Lease> leases = Leases({late});
  ASSERT_FALSE(leases.empty());
  const int64_t waited_ms = leases.front().ms - e.created_unix_ms();
  const int64_t trial_ms = static_cast<int64_t>(kSteps / kSpeed * 1000);
  RecordProperty("late_first_lease_ms", static_cast<int>(waited_ms));
  std::cout << "late user's first lease after " << waited_ms
            << " ms (one trial: " << trial_ms << " ms)\n";
  // One trial's time, and the lease round trip (Complete, then Lease).
  EXPECT_LE(waited_ms, trial_ms + 150);
  Cancel(grid);
  Cancel(late);
}

TEST_F(FairQueueTest, PlanShowsWhereASpecLeavesItsUserAndSubmitsNothing) {
  const std::string carol = TokenFor("carol");
  const std::string path = cluster_.dir() + "/carol.textproto";
  WriteFile(path, ListSpec("carol", {"1x2,4x4"}, 2));
  const std::vector<std::string> as_carol = {
      "--coordinator", cluster_.grpc_address(), "--token", carol};
  std::vector<std::string> plan_args = {"plan", path};
  plan_args.insert(plan_args.end(), as_carol.begin(), as_carol.end());
  CommandResult plan = cluster_.Run(plan_args, /*with_defaults=*/false);
  ASSERT_EQ(plan.status, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("plan: 4 trials"));
  EXPECT_THAT(plan.out, HasSubstr("4 of 20000 trials per experiment"));
  EXPECT_THAT(plan.out, HasSubstr("your queued trials 4 of 20000"));
  EXPECT_THAT(plan.out, HasSubstr("your active experiments 1"));
  EXPECT_THAT(plan.out, HasSubstr("nothing submitted: prism submit"));
  for (absl::string_view line : absl::StrSplit(plan.out, '\n')) {
    EXPECT_LE(line.size(), 100u) << line;
  }
  CommandResult users = cluster_.Run({"user", "list", "--format", "csv"});
  ASSERT_EQ(users.status, 0) << users.err;
  // A plan stored nothing: carol has no queued trial, no experiment.
  EXPECT_THAT(users.out, HasSubstr("carol,1,0s,0s,0,0,0,"));
  // The submit says the same of what it queued.
  std::vector<std::string> submit_args = {"submit", path};
  submit_args.insert(submit_args.end(), as_carol.begin(), as_carol.end());
  CommandResult submitted = cluster_.Run(submit_args, /*with_defaults=*/false);
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_THAT(submitted.out, HasSubstr("submitted: 4 trials"));
  EXPECT_THAT(submitted.out, HasSubstr("your queued trials 4 of 20000"));
  // A spec over a limit: one line naming it, exit 2, before planning.
  std::string targets = "loss_targets: [";
  for (int i = 0; i < 33; ++i) absl::StrAppend(&targets, i ? ", " : "", 5 - i);
  std::string spec = ListSpec("carol", {"1x2,4x4"}, 1);
  spec.insert(spec.find("budget {") + 8, absl::StrCat(" ", targets, "] "));
  WriteFile(path, spec);
  CommandResult over = cluster_.Run(plan_args, /*with_defaults=*/false);
  EXPECT_EQ(over.status, 2);
  EXPECT_EQ(Lines(over.err), 1) << over.err;
  EXPECT_THAT(over.err, HasSubstr("budget.loss_targets' count is 33; limit "
                                  "--max-loss-targets=32"));
}

TEST_F(FairQueueTest, QuotasRefuseAtSubmitAndBadPolicyInputNamesTheFlag) {
  const std::string bob = TokenFor("bob");
  CommandResult set = cluster_.Run({"user", "set", "bob", "--max-queued", "10",
                                    "--max-running", "1", "--format", "json"});
  ASSERT_EQ(set.status, 0) << set.err;
  EXPECT_THAT(set.out, HasSubstr("\"maxQueued\": 10"));
  // 12 trials past a quota of 10 queued: refused, nothing stored.
  const std::string path = cluster_.dir() + "/bob.textproto";
  WriteFile(path, ListSpec("bob", {"1x2,4x4", "2x2,4x4", "1x3,4x3"}, 3));
  CommandResult refused =
      cluster_.Run({"submit", path, "--coordinator", cluster_.grpc_address(),
                    "--token", bob},
                   /*with_defaults=*/false);
  EXPECT_NE(refused.status, 0);
  EXPECT_EQ(Lines(refused.err), 1) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("quota max_queued=10"));
  CommandResult users = cluster_.Run({"user", "list", "--format", "csv"});
  ASSERT_EQ(users.status, 0) << users.err;
  // active 0; max_active is the default (marked *).
  EXPECT_THAT(users.out, HasSubstr("bob,1,0s,0s,0,0,0,1,10,20*"));

  // Bad input: one line naming the flag, exit 2.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"user", "set", "bob", "--share", "0"},
           {"user", "set", "bob", "--share", "-1"},
           {"user", "set", "bob", "--max-running", "-1"},
           {"user", "set", "bob", "--max-queued", "-2"}}) {
    CommandResult bad = cluster_.Run(args);
    EXPECT_EQ(bad.status, 2) << absl::StrJoin(args, " ");
    EXPECT_EQ(Lines(bad.err), 1) << bad.err;
    EXPECT_THAT(bad.err, HasSubstr(args[3])) << bad.err;
  }
  // Above the coordinator's limits: the server names the field.
  CommandResult huge =
      cluster_.Run({"user", "set", "bob", "--max-queued", "2000000000"});
  EXPECT_EQ(huge.status, 2);
  EXPECT_THAT(huge.err, HasSubstr("max_queued is 2000000000; above"));
  v1::SetUserPolicyRequest request;
  request.set_user("bob");
  request.set_share(0);
  v1::UserPolicy policy;
  absl::Status s =
      cluster_.client().Call(&v1::ExperimentService::Stub::SetUserPolicy,
                             cluster_.client().experiments(), request, &policy);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), StartsWith("share must be above 0"));
  // A half-life of 0 is refused at start.
  CommandResult zero = cluster_.Run(
      {"coordinator", "--db", cluster_.dir() + "/other.db", "--listen",
       "127.0.0.1:0", "--http", "127.0.0.1:0", "--fair-share-half-life", "0"},
      /*with_defaults=*/false);
  EXPECT_EQ(zero.status, 2);
  EXPECT_THAT(zero.err, HasSubstr("--fair-share-half-life"));
}

}  // namespace
}  // namespace prism::testing
