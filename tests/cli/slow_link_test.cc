// A slow, lossy link between a worker and the coordinator (issue 31). The
// kernel here has no sch_netem module (`tc qdisc add dev lo root netem`
// answers "Specified qdisc kind is unknown"), so the link is a userspace
// relay (tests/testing/delay_relay.h): 100 ms each way (200 ms round trip),
// and, standing in for 5% loss, 5% of the chunks stalled a further
// 200-1000 ms, as a TCP retransmission would. The same replay search runs
// through it and, beside it at the same time, through a plain relay; both
// must complete with every point stored once, and the slowdown is printed
// for bench/RESULTS.md.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"
#include "tests/cli/replay_fixture.h"
#include "tests/testing/delay_relay.h"

namespace prism::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char kBudget[] = R"pb(
  model { preset: "tiny" }
  budget { steps: 40 eval_every: 10 log_every: 5 }
  principles: [ PRINCIPLE_SMOOTH, PRINCIPLE_BASELINE, PRINCIPLE_POW2 ]
)pb";
// The schedules those principles allow on the tiny preset.
const std::vector<std::string> kSchedules = {"4x6", "1x2,4x4", "2x2,4x4",
                                             "1x3,4x3", "2x3,4x3"};
const std::vector<int64_t> kSeeds = {1, 2};

// Fixture records a made-up run of every schedule and seed, with the config
// a worker builds for kBudget.
std::string Fixture() {
  return TinyReplayFixture(
      kSchedules, kSeeds, [](int i, int64_t, int64_t step) {
        return static_cast<float>(5.0 - 0.02 * step - 0.01 * i);
      });
}

// Link is one cluster whose only worker reaches it through a relay.
struct Link {
  explicit Link(const DelayRelay::Options& options) {
    fixture = cluster.dir() + "/grid.replay";
    WriteFile(fixture, Fixture());
    started = cluster.StartCoordinator();
    if (!started.ok()) return;
    const std::vector<std::string> host_port =
        absl::StrSplit(cluster.grpc_address(), ':');
    int port = 0;
    if (host_port.size() != 2 || !absl::SimpleAtoi(host_port[1], &port)) {
      started = absl::InternalError(cluster.grpc_address());
      return;
    }
    relay = std::make_unique<DelayRelay>(host_port[0], port, options);
  }

  // Start submits the search and starts the worker through the relay.
  void Start() {
    absl::StatusOr<int64_t> submitted = cluster.SubmitSpec(
        absl::StrCat(kBudget, "name: \"link\"\nseeds: [ 1, 2 ]\n"));
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    id = *submitted;
    WorkerFlags flags;
    flags.coordinator = relay->address();
    flags.args = {"--replay", fixture};
    began = absl::Now();
    ASSERT_TRUE(cluster.StartWorker(flags).ok());
  }

  // Declared first so that it outlives the cluster: the worker stops (and
  // deregisters) through it.
  std::unique_ptr<DelayRelay> relay;
  LocalCluster cluster;
  std::string fixture;
  absl::Status started;
  int64_t id = 0;
  absl::Time began;
  std::optional<absl::Duration> took;
};

// ExpectEveryPointOnce checks every trial completed on its first attempt
// with each step of its cadence stored exactly once; then `prism db check`.
void ExpectEveryPointOnce(Link& link) {
  absl::StatusOr<std::vector<v1::Trial>> trials =
      link.cluster.ListTrials(link.id);
  ASSERT_TRUE(trials.ok()) << trials.status();
  ASSERT_EQ(trials->size(), kSchedules.size() * kSeeds.size());
  for (const v1::Trial& t : *trials) {
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.schedule();
    EXPECT_EQ(t.attempt(), 1) << t.schedule() << link.cluster.Logs();
    absl::StatusOr<v1::GetTrialResponse> full = link.cluster.GetTrial(t.id());
    ASSERT_TRUE(full.ok()) << full.status();
    EXPECT_THAT(StepsOf(*full, v1::SPLIT_VAL), ElementsAre(0, 10, 20, 30, 40))
        << t.schedule();
    EXPECT_THAT(StepsOf(*full, v1::SPLIT_TRAIN),
                ElementsAre(5, 10, 15, 20, 25, 30, 35, 40))
        << t.schedule();
  }
  CommandResult check = link.cluster.CheckDb();
  EXPECT_EQ(check.status, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("every invariant holds"));
}

TEST(SlowLinkTest, DelayedLossyLinkCompletesEveryPointOnceAndSlower) {
  DelayRelay::Options slow;
  slow.delay = absl::Milliseconds(100);
  slow.stall_fraction = 0.05;
  slow.stall_min = absl::Milliseconds(200);
  slow.stall_max = absl::Milliseconds(1000);
  Link plain_link(DelayRelay::Options{});
  Link slow_link(slow);
  ASSERT_TRUE(plain_link.started.ok()) << plain_link.started;
  ASSERT_TRUE(slow_link.started.ok()) << slow_link.started;
  ASSERT_GT(plain_link.relay->port(), 0);
  ASSERT_GT(slow_link.relay->port(), 0);
  // Side by side, so both see the same load on the host.
  ASSERT_NO_FATAL_FAILURE(plain_link.Start());
  ASSERT_NO_FATAL_FAILURE(slow_link.Start());

  const absl::Time deadline = absl::Now() + absl::Seconds(100);
  while ((!plain_link.took || !slow_link.took) && absl::Now() < deadline) {
    for (Link* link : {&plain_link, &slow_link}) {
      if (link->took) continue;
      absl::StatusOr<v1::Experiment> done =
          link->cluster.WaitForExperiment(link->id, absl::Milliseconds(100));
      if (done.ok()) link->took = absl::Now() - link->began;
    }
  }
  ASSERT_TRUE(plain_link.took.has_value()) << plain_link.cluster.Logs();
  ASSERT_TRUE(slow_link.took.has_value()) << slow_link.cluster.Logs();
  ExpectEveryPointOnce(plain_link);
  ExpectEveryPointOnce(slow_link);

  const DelayRelay::Stats stats = slow_link.relay->stats();
  EXPECT_GT(stats.stalled, 0) << "no chunk was stalled: the loss stand-in "
                                 "did nothing";
  EXPECT_GT(*slow_link.took, *plain_link.took);
  std::printf(
      "slow link: plain %.2f s, 100 ms each way + 5%% stalls %.2f s, "
      "ratio %.2f; %lld chunks, %lld stalled, %lld connections\n",
      absl::ToDoubleSeconds(*plain_link.took),
      absl::ToDoubleSeconds(*slow_link.took),
      absl::ToDoubleSeconds(*slow_link.took) /
          absl::ToDoubleSeconds(*plain_link.took),
      static_cast<long long>(stats.chunks),
      static_cast<long long>(stats.stalled),
      static_cast<long long>(stats.connections));
}

}  // namespace
}  // namespace prism::testing
