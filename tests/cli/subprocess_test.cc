#include "cli/subprocess.h"

#include <signal.h>

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/child_lines.h"

namespace prism::cli {
namespace {

using ::prism::testing::ChildLines;

// SpawnTermCounter starts a shell child that exits with the number of
// SIGTERMs it received: it says "ready" once its trap is set and "term" each
// time the trap ran, waits for the first, then gives a second half a second
// to arrive. Returns once the child is ready.
Subprocess SpawnTermCounter(ChildLines* lines) {
  const std::string fifo = "'" + lines->path() + "'";
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c",
            "n=0; trap 'n=$((n+1)); echo term > " + fifo + "' TERM; " +
                "echo ready > " + fifo +
                "; while [ $n -eq 0 ]; do sleep 0.05; done; sleep 0.5; "
                "exit $n"};
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(o);
  EXPECT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(lines->Next(absl::Seconds(10)), "ready");
  return *std::move(child);
}

TEST(SubprocessTest, StopAfterAnExplicitSigtermDoesNotSendASecond) {
  ChildLines lines;
  Subprocess child = SpawnTermCounter(&lines);
  ASSERT_TRUE(child.Signal(SIGTERM).ok());
  // The child handled it, so a second SIGTERM from Stop would count apart.
  ASSERT_EQ(lines.Next(absl::Seconds(10)), "term");
  EXPECT_EQ(child.Stop(absl::Seconds(10)), 1);
}

TEST(SubprocessTest, StopSendsSigtermThenWaits) {
  ChildLines lines;
  Subprocess child = SpawnTermCounter(&lines);
  EXPECT_EQ(child.Stop(absl::Seconds(10)), 1);
  EXPECT_EQ(lines.Next(absl::Seconds(10)), "term");
}

TEST(SubprocessTest, StopKillsAChildThatOutlivesTheGrace) {
  ChildLines lines;
  SpawnOptions o;
  // exec: sleep inherits the ignored SIGTERM, and SIGKILL leaves no orphan
  // holding the test's output open for 30 s.
  o.argv = {"/bin/sh", "-c",
            "trap '' TERM; echo ready > '" + lines.path() + "'; exec sleep 30"};
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(o);
  ASSERT_TRUE(child.ok()) << child.status();
  // Once the child ignores SIGTERM: before, SIGTERM itself would end it.
  ASSERT_EQ(lines.Next(absl::Seconds(10)), "ready");
  EXPECT_EQ(child->Stop(absl::Milliseconds(200)), 128 + SIGKILL);
}

// Shell runs `script` with its outputs in `dir`.
SpawnOptions Shell(const ::prism::testing::TempDir& dir,
                   const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.stdout_path = dir.File("out");
  o.stderr_path = dir.File("err");
  return o;
}

TEST(SubprocessTest, RunToCompletionReturnsTheStatusAndBothOutputs) {
  ::prism::testing::TempDir dir("prism_run_to_completion");
  const SpawnOptions o = Shell(dir, "echo out; echo err >&2; exit 3");
  for (int run = 0; run < 2; ++run) {  // the files are emptied each time
    CommandOutput r = RunToCompletion(o, absl::Seconds(30));
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.out, "out\n");
    EXPECT_EQ(r.err, "err\n");
  }
}

TEST(SubprocessTest, RunToCompletionKillsACommandThatOutlivesItsTimeout) {
  ::prism::testing::TempDir dir("prism_run_to_completion");
  CommandOutput r =
      RunToCompletion(Shell(dir, "exec sleep 30"), absl::Milliseconds(100));
  EXPECT_EQ(r.status, -1);
  EXPECT_NE(r.err.find("did not end within"), std::string::npos) << r.err;
}

TEST(SubprocessTest, FindProgramSearchesThePathAndSbin) {
  EXPECT_EQ(FindProgram("sh").front(), '/');
  EXPECT_EQ(FindProgram("no-such-program-here"), "");
}

}  // namespace
}  // namespace prism::cli
