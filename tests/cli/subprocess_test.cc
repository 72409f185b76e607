#include "cli/subprocess.h"

#include <signal.h>

#include <filesystem>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace prism::cli {
namespace {

// A shell child that exits with the number of SIGTERMs it received: it waits
// for the first, then gives a second half a second to arrive.
Subprocess SpawnTermCounter(const std::string& ready) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c",
            "n=0; trap 'n=$((n+1))' TERM; : > " + ready +
                "; while [ $n -eq 0 ]; do sleep 0.05; done; sleep 0.5; "
                "exit $n"};
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(o);
  EXPECT_TRUE(child.ok()) << child.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!std::filesystem::exists(ready) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  return *std::move(child);
}

std::string ReadyFile(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string(name) + std::to_string(getpid())))
      .string();
}

TEST(SubprocessTest, StopAfterAnExplicitSigtermDoesNotSendASecond) {
  const std::string ready = ReadyFile("prism_subprocess_once_");
  Subprocess child = SpawnTermCounter(ready);
  ASSERT_TRUE(child.Signal(SIGTERM).ok());
  absl::SleepFor(absl::Milliseconds(200));  // the child has handled it
  EXPECT_EQ(child.Stop(absl::Seconds(10)), 1);
  std::filesystem::remove(ready);
}

TEST(SubprocessTest, StopSendsSigtermThenWaits) {
  const std::string ready = ReadyFile("prism_subprocess_stop_");
  Subprocess child = SpawnTermCounter(ready);
  EXPECT_EQ(child.Stop(absl::Seconds(10)), 1);
  std::filesystem::remove(ready);
}

TEST(SubprocessTest, StopKillsAChildThatOutlivesTheGrace) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "trap '' TERM; sleep 30"};
  absl::StatusOr<Subprocess> child = Subprocess::Spawn(o);
  ASSERT_TRUE(child.ok()) << child.status();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(child->Stop(absl::Milliseconds(200)), 128 + SIGKILL);
}

}  // namespace
}  // namespace prism::cli
