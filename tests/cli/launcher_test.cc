// The launcher with a stand-in for `prism`: a shell script that records its
// command line and token, writes the coordinator's ready file, and hands
// back (exits 0) on SIGTERM, saying each step through a FIFO.
#include "cli/launcher.h"

#include <signal.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/child_lines.h"
#include "tests/testing/temp_dir.h"

namespace prism::cli {
namespace {

using ::prism::testing::ChildLines;
using ::prism::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The stand-in: `coordinator` writes its ready file (its last argument)
// unless FAKE_EXIT (then it fails like a bad database) or FAKE_NO_READY;
// FAKE_IGNORE_TERM makes it outlive any grace.
constexpr char kFakePrism[] = R"sh(#!/bin/sh
if [ "$1" = coordinator ]; then
  for a; do last=$a; done
  if [ -n "$FAKE_EXIT" ]; then echo "cannot open the database" >&2; exit 2; fi
  if [ -z "$FAKE_NO_READY" ]; then
    printf '{"grpc":"10.0.0.1:5","http":"10.0.0.1:6"}' > "$last"
  fi
fi
echo "$* token=$PRISM_TOKEN" >> "$FAKE_ARGS"
if [ -n "$FAKE_IGNORE_TERM" ]; then
  trap '' TERM
  echo ready > "$FAKE_LINES"
  exec sleep 30
fi
trap 'kill $pid; echo handed back > "$FAKE_LINES"; exit 0' TERM
sleep 30 &
pid=$!
echo ready > "$FAKE_LINES"
wait $pid
)sh";

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = dir_.File("prism");
    std::FILE* f = std::fopen(fake_.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(kFakePrism, f);
    std::fclose(f);
    ASSERT_EQ(chmod(fake_.c_str(), 0755), 0);
  }

  std::vector<std::string> Env() const {
    return {absl::StrCat("FAKE_ARGS=", dir_.File("args")),
            absl::StrCat("FAKE_LINES=", lines_.path())};
  }

  std::vector<std::string> Args() const {
    std::FILE* f = std::fopen(dir_.File("args").c_str(), "r");
    std::string text;
    char buffer[4096];
    size_t n;
    while (f != nullptr && (n = std::fread(buffer, 1, sizeof buffer, f)) > 0) {
      text.append(buffer, n);
    }
    if (f != nullptr) std::fclose(f);
    return absl::StrSplit(text, '\n', absl::SkipEmpty());
  }

  WorkerLaunch Worker() const {
    WorkerLaunch w;
    w.binary = fake_;
    w.coordinator = "10.0.0.1:5";
    w.token = "secret";
    w.threads = 3;
    w.attention = "fused";
    w.checkpoint_dir = "/ckpt";
    w.args = {"--max-trials", "1"};
    w.env = Env();
    w.log_path = dir_.File("worker.log");
    return w;
  }

  CoordinatorLaunch Coordinator() const {
    CoordinatorLaunch c;
    c.binary = fake_;
    c.args = {"--db", "x.db"};
    c.env = Env();
    c.log_path = dir_.File("coordinator.log");
    c.ready_file = dir_.File("ready.json");
    c.stop_grace = absl::Seconds(10);
    return c;
  }

  TempDir dir_{"prism_launcher_test"};
  ChildLines lines_;
  std::string fake_;
};

TEST_F(LauncherTest, WorkersShareOneCommandLineAndGetTheTokenByEnvironment) {
  WorkerPool pool;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<int> index = pool.Start(Worker());
    ASSERT_TRUE(index.ok()) << index.status();
    EXPECT_EQ(*index, i);
    ASSERT_EQ(lines_.Next(absl::Seconds(10)), "ready");
  }
  EXPECT_EQ(pool.Running(), 2);
  const std::string line =
      "worker --coordinator 10.0.0.1:5 --threads 3 --attention fused "
      "--checkpoint-dir /ckpt --max-trials 1 token=secret";
  EXPECT_THAT(Args(), ElementsAre(line, line));
  // Both hand back on the one SIGTERM and exit 0.
  EXPECT_THAT(pool.Stop(absl::Seconds(10)), ElementsAre(0, 0));
  EXPECT_EQ(lines_.Next(absl::Seconds(10)), "handed back");
  EXPECT_EQ(lines_.Next(absl::Seconds(10)), "handed back");
  EXPECT_EQ(pool.Running(), 0);
}

TEST_F(LauncherTest, StopKillsAWorkerThatOutlivesTheGrace) {
  WorkerPool pool;
  WorkerLaunch w = Worker();
  w.env.push_back("FAKE_IGNORE_TERM=1");
  ASSERT_TRUE(pool.Start(w).ok());
  ASSERT_EQ(lines_.Next(absl::Seconds(10)), "ready");
  EXPECT_THAT(pool.Stop(absl::Milliseconds(200)), ElementsAre(128 + SIGKILL));
}

TEST_F(LauncherTest, APrefixRunsTheWorkerThroughAnotherProgram) {
  WorkerLaunch w = Worker();
  w.prefix = {"ip", "netns", "exec", "host1"};
  w.checkpoint_dir = "";
  w.args = {};
  EXPECT_THAT(WorkerArgv(w),
              ElementsAre("ip", "netns", "exec", "host1", fake_, "worker",
                          "--coordinator", "10.0.0.1:5", "--threads", "3",
                          "--attention", "fused"));
}

TEST_F(LauncherTest, StartCoordinatorReturnsTheReadyFilesEndpoints) {
  absl::StatusOr<LocalCoordinator> c = StartCoordinator(Coordinator());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->endpoints.grpc, "10.0.0.1:5");
  EXPECT_EQ(c->endpoints.http, "10.0.0.1:6");
  ASSERT_EQ(lines_.Next(absl::Seconds(10)), "ready");
  EXPECT_THAT(Args(),
              ElementsAre(absl::StrCat("coordinator --db x.db "
                                       "--ready-file ",
                                       dir_.File("ready.json"), " token=")));
  EXPECT_EQ(c->process.Stop(absl::Seconds(10)), 0);
}

TEST_F(LauncherTest, StartCoordinatorSaysWhyItExitedDuringStartUp) {
  CoordinatorLaunch launch = Coordinator();
  launch.env.push_back("FAKE_EXIT=1");
  absl::StatusOr<LocalCoordinator> c = StartCoordinator(launch);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(c.status().message(), HasSubstr("exited during start-up"));
  EXPECT_THAT(c.status().message(), HasSubstr("cannot open the database"));
}

TEST_F(LauncherTest, StartCoordinatorGivesUpWhenCancelledAndStopsIt) {
  CoordinatorLaunch launch = Coordinator();
  launch.env.push_back("FAKE_NO_READY=1");
  // Cancelled once the stand-in is up, as a Ctrl-C during start-up.
  launch.cancelled = [this] {
    return lines_.Next(absl::Seconds(10)) == "ready";
  };
  absl::StatusOr<LocalCoordinator> c = StartCoordinator(launch);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(lines_.Next(absl::Seconds(10)), "handed back");
}

}  // namespace
}  // namespace prism::cli
