// `prism run` as a user runs it: the whole grid on loopback ends with the
// ranking, and neither success nor Ctrl-C leaves a child process behind.
#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"
#include "tests/testing/scoped_umask.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// ProcessesMentioning returns the pids whose command line contains `text`.
std::vector<int> ProcessesMentioning(const std::string& text) {
  std::vector<int> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    const int pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(text) != std::string::npos) pids.push_back(pid);
  }
  closedir(proc);
  return pids;
}

// Spawn runs `argv` with its output in `dir`/`name`.out and .err.
cli::Subprocess Spawn(const std::string& dir, const std::string& name,
                      std::vector<std::string> argv) {
  cli::SpawnOptions spawn;
  spawn.argv = std::move(argv);
  spawn.stdout_path = absl::StrCat(dir, "/", name, ".out");
  spawn.stderr_path = absl::StrCat(dir, "/", name, ".err");
  absl::StatusOr<cli::Subprocess> run = cli::Subprocess::Spawn(spawn);
  EXPECT_TRUE(run.ok()) << run.status();
  return *std::move(run);
}

cli::Subprocess StartRun(const std::string& dir,
                         const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {PrismBinary(), "run",       "--data-dir",
                                   dir + "/data", "--workers", "2"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return Spawn(dir, "run", std::move(argv));
}

// TrialsTrained counts the trials the run's workers started training, over
// every run on the data dir (their logs are appended to).
int TrialsTrained(const std::string& dir) {
  int n = 0;
  for (const char* log :
       {"/data/logs/worker-1.log", "/data/logs/worker-2.log"}) {
    const std::string text = ReadFile(dir + log);
    for (size_t at = text.find("msg=train_start"); at != std::string::npos;
         at = text.find("msg=train_start", at + 1)) {
      ++n;
    }
  }
  return n;
}

bool WaitForText(const std::string& path, const std::string& text,
                 absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (ReadFile(path).find(text) != std::string::npos) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

TEST(RunCommandTest, TrainsTheGridPrintsTheRankingAndLeavesNoChildren) {
  const TempDir temp("prism_run");
  const std::string& dir = temp.path();
  // Under a umask that takes nothing away, what the run writes is private
  // all the same (issue #40; checked at the end).
  cli::Subprocess run = [&] {
    ScopedUmask open_to_all(0);
    return StartRun(dir, {"--steps", "10", "--attention", "masked"});
  }();
  absl::StatusOr<int> status = run.Wait(absl::Minutes(6));
  ASSERT_TRUE(status.ok()) << ReadFile(dir + "/run.err");
  const std::string out = ReadFile(dir + "/run.out");
  EXPECT_EQ(*status, 0) << ReadFile(dir + "/run.err");
  // The contrast grid on the demo width (d_model 96, 6 heads): the two
  // schedules holding every principle, and ones breaking exactly one.
  for (const char* schedule : {"6x6", "3x3,6x3", "3x2,6x4", "2x2,6x4",
                               "4x2,6x4", "3x1,6x5", "3x4,6x2"}) {
    EXPECT_THAT(out, HasSubstr(schedule));
  }
  EXPECT_THAT(out, HasSubstr("7/7 trials completed"));
  EXPECT_THAT(ReadFile(dir + "/run.err"),
              HasSubstr("model tiny at d_model 96, 6 layers, 6 heads"));
  // Where the dashboard is, and where its sign-in token is.
  EXPECT_THAT(ReadFile(dir + "/run.err"),
              HasSubstr("prism run: dashboard http://127.0.0.1:"));
  EXPECT_THAT(ReadFile(dir + "/run.err"),
              HasSubstr(absl::StrCat("/ (sign in with the token in ", dir,
                                     "/data/admin.token)")));
  // One seed: no intervals and no verdicts, and the ranking says so instead
  // of blank cells or a finding.
  EXPECT_THAT(out, HasSubstr("needs seeds"));
  EXPECT_THAT(out, HasSubstr("verdicts: 0 better, 0 worse, 0 inconclusive, "
                             "6 need seeds"));
  // ... but every principle's effect is estimated, in the table and in the
  // summary (one seed per schedule is enough for the regression).
  EXPECT_THAT(out, Not(HasSubstr("not estimable")));
  EXPECT_THAT(out, HasSubstr("principles (effect of violating, 95% CI, p): "
                             "smooth "));
  // The ranking and its summary fit 100 columns (the commands to paste,
  // the next step's and the look-again ones, hold this test's long temp
  // paths).
  for (absl::string_view line :
       absl::StrSplit(out.substr(0, out.find("dashboard stopped")), '\n')) {
    if (absl::StrContains(line, " run --seeds ")) continue;
    EXPECT_LE(line.size(), 100u) << line;
  }
  EXPECT_THAT(out, HasSubstr("best-set: needs 2 paired seeds per schedule"));
  EXPECT_THAT(out, HasSubstr("prism run --seeds 3"));
  // How to look again once the coordinator is gone: the same database.
  EXPECT_THAT(out, HasSubstr(absl::StrCat("prism coordinator --db ", dir,
                                          "/data/prism.db")));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("prism results 1 "
                                          "--token-file ",
                                          dir, "/data/admin.token")));
  EXPECT_TRUE(ProcessesMentioning(dir + "/data").empty());
  // --attention reached every worker and every trial trained with it; each
  // worker may use every core (a trial left alone keeps them all busy).
  const std::string cores = absl::StrCat(
      "threads=", std::max(1u, std::thread::hardware_concurrency()));
  for (const char* log :
       {"/data/logs/worker-1.log", "/data/logs/worker-2.log"}) {
    const std::string text = ReadFile(dir + log);
    EXPECT_THAT(text, HasSubstr("attention=masked")) << text;
    EXPECT_THAT(text, HasSubstr(cores)) << text;
    EXPECT_THAT(text, Not(HasSubstr("attention=fused"))) << text;
  }
  for (const char* sub :
       {"/data", "/data/logs", "/data/run", "/data/checkpoints"}) {
    EXPECT_EQ(ModeOf(dir + sub), 0700) << sub;
  }
  for (const char* file : {"/data/prism.db", "/data/prism.db.lock",
                           "/data/admin.token", "/data/run/lock"}) {
    EXPECT_EQ(ModeOf(dir + file), 0600) << file;
  }
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           dir + "/data/checkpoints")) {
    EXPECT_EQ(ModeOf(entry.path().string()), entry.is_directory() ? 0700 : 0600)
        << entry.path();
  }
}

TEST(RunCommandTest, ThreeSeedsGiveEveryScheduleAVerdict) {
  const TempDir temp("prism_run_seeds");
  const std::string& dir = temp.path();
  cli::Subprocess run =
      StartRun(dir, {"--seeds", "3", "--steps", "10", "--attention", "masked",
                     "--grid", "principled"});
  absl::StatusOr<int> status = run.Wait(absl::Minutes(10));
  ASSERT_TRUE(status.ok()) << ReadFile(dir + "/run.err");
  EXPECT_EQ(*status, 0) << ReadFile(dir + "/run.err");
  const std::string out = ReadFile(dir + "/run.out");
  EXPECT_THAT(out, HasSubstr("15/15 trials completed"));
  // Every ranked schedule but the baseline has 3 paired seeds and one of
  // the three verdict words, never needs seeds.
  int ranked = 0;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    const std::vector<absl::string_view> cells =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    // rank, schedule, sbp, delta ("base" for the baseline), ...
    if (cells.size() < 4 || cells[0].empty() ||
        !absl::ascii_isdigit(cells[0][0]) || cells[3] == "base" ||
        !absl::StrContains(line, "3/3")) {
      continue;  // not a row of a non-baseline schedule
    }
    ++ranked;
    EXPECT_THAT(line, Not(HasSubstr("needs seeds"))) << line;
    EXPECT_TRUE(absl::StrContains(line, " better ") ||
                absl::StrContains(line, " worse ") ||
                absl::StrContains(line, " inconclusive "))
        << line;
  }
  EXPECT_EQ(ranked, 4) << out;
  // The explanations are wrapped at 100 columns.
  EXPECT_THAT(absl::StrReplaceAll(out, {{"\n  ", " "}}),
              HasSubstr("Benjamini-Hochberg (FDR) at 0.05 over 4 "
                        "schedule(s)"));
  EXPECT_THAT(out, HasSubstr("best-set (95% confidence, Hsu's MCB)"));
  EXPECT_TRUE(ProcessesMentioning(dir + "/data").empty());
}

// NextRun returns the `prism run` command the ranking's next line names,
// split into arguments; empty when there is none.
std::vector<std::string> NextRun(const std::string& out) {
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (absl::StartsWith(line, "  ") && absl::StrContains(line, " run ")) {
      return absl::StrSplit(line, ' ', absl::SkipEmpty());
    }
  }
  return {};
}

// "never pay twice" (issue 41): the next line's `prism run --seeds 3` on the
// same data dir extends the finished run, training only the new seeds'
// trials; running it once more trains nothing and prints the results.
TEST(RunCommandTest, MoreSeedsTrainOnlyTheNewSeedsAndARerunOnlyPrints) {
  const TempDir temp("prism_run_more");
  const std::string& dir = temp.path();
  const std::vector<std::string> local = {"--workers", "2", "--attention",
                                          "masked"};
  {
    cli::Subprocess run = StartRun(dir, {"--steps", "10", "--attention",
                                         "masked", "--grid", "principled"});
    absl::StatusOr<int> status = run.Wait(absl::Minutes(10));
    ASSERT_TRUE(status.ok()) << ReadFile(dir + "/run.err");
    ASSERT_EQ(*status, 0) << ReadFile(dir + "/run.err");
  }
  const std::string first = ReadFile(dir + "/run.out");
  EXPECT_THAT(first, HasSubstr("5/5 trials completed"));
  EXPECT_EQ(TrialsTrained(dir), 5);
  std::vector<std::string> next = NextRun(first);
  ASSERT_FALSE(next.empty()) << first;
  EXPECT_EQ(next[0], PrismBinary());
  EXPECT_THAT(absl::StrJoin(next, " "),
              HasSubstr(absl::StrCat(" run --seeds 3 --grid principled --steps "
                                     "10 --data-dir ",
                                     dir, "/data")));
  next.insert(next.end(), local.begin(), local.end());
  {
    cli::Subprocess run = Spawn(dir, "more", next);
    absl::StatusOr<int> status = run.Wait(absl::Minutes(10));
    ASSERT_TRUE(status.ok()) << ReadFile(dir + "/more.err");
    ASSERT_EQ(*status, 0) << ReadFile(dir + "/more.err");
  }
  EXPECT_THAT(ReadFile(dir + "/more.err"),
              HasSubstr("prism run: experiment 1 to 3 seed(s): queued 10 "
                        "trials (seeds 2, 3 on 5 schedules); reused 5 "
                        "finished trials"));
  EXPECT_THAT(ReadFile(dir + "/more.out"), HasSubstr("15/15 trials completed"));
  EXPECT_EQ(TrialsTrained(dir), 15);  // the 10 new ones only

  // The same command again: nothing to train, the results all the same.
  {
    cli::Subprocess run = Spawn(dir, "again", next);
    absl::StatusOr<int> status = run.Wait(absl::Minutes(2));
    ASSERT_TRUE(status.ok()) << ReadFile(dir + "/again.err");
    ASSERT_EQ(*status, 0) << ReadFile(dir + "/again.err");
  }
  EXPECT_THAT(ReadFile(dir + "/again.err"),
              HasSubstr("already ran on 3 seed(s); its results, without "
                        "training again"));
  EXPECT_THAT(ReadFile(dir + "/again.err"), HasSubstr(", 0 worker(s);"));
  EXPECT_THAT(ReadFile(dir + "/again.out"),
              HasSubstr("15/15 trials completed"));
  EXPECT_EQ(TrialsTrained(dir), 15);
  EXPECT_TRUE(ProcessesMentioning(dir + "/data").empty());
}

TEST(RunCommandTest, UnknownAttentionKernelIsUsageError) {
  const TempDir temp("prism_run");
  const std::string& dir = temp.path();
  cli::Subprocess run = StartRun(dir, {"--attention", "flash"});
  absl::StatusOr<int> status = run.Wait(absl::Seconds(30));
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 2);
  EXPECT_THAT(ReadFile(dir + "/run.err"), HasSubstr("attention 'flash'"));
}

TEST(RunCommandTest, InterruptStopsEverythingAndRunAgainContinues) {
  const TempDir temp("prism_run");
  const std::string& dir = temp.path();
  {
    cli::Subprocess run = StartRun(dir, {"--steps", "5000"});
    ASSERT_TRUE(WaitForText(dir + "/data/logs/worker-1.log", "train_start",
                            absl::Minutes(2)))
        << ReadFile(dir + "/run.err");
    ASSERT_TRUE(run.Signal(SIGINT).ok());
    absl::StatusOr<int> status = run.Wait(absl::Minutes(2));
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(*status, 128 + SIGINT);
    EXPECT_THAT(ReadFile(dir + "/run.err"), HasSubstr("interrupted"));
    // The workers stopped cleanly: checkpoint, flush, hand the trial back.
    const std::string worker_log = ReadFile(dir + "/data/logs/worker-1.log");
    EXPECT_THAT(worker_log, HasSubstr("msg=shutdown_requested"));
    EXPECT_THAT(worker_log, HasSubstr("msg=trial_handed_back"));
    // Each worker that got going ran to its own end (one SIGTERM each: a
    // second means "exit now") and said goodbye to the coordinator. One
    // still starting up (no "start" line) just ends: it held nothing.
    for (const char* log :
         {"/data/logs/worker-1.log", "/data/logs/worker-2.log"}) {
      const std::string text = ReadFile(dir + log);
      if (text.find("msg=start ") == std::string::npos) continue;
      EXPECT_THAT(text, HasSubstr("msg=exit ")) << text;
      EXPECT_THAT(text, Not(HasSubstr("deregister_failed"))) << text;
    }
    EXPECT_TRUE(ProcessesMentioning(dir + "/data").empty());
  }
  {
    cli::Subprocess run = StartRun(dir, {"--steps", "5000"});
    ASSERT_TRUE(WaitForText(dir + "/run.err", "continuing experiment 1",
                            absl::Minutes(1)))
        << ReadFile(dir + "/run.err");
    ASSERT_TRUE(run.Signal(SIGTERM).ok());
    absl::StatusOr<int> status = run.Wait(absl::Minutes(2));
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(*status, 128 + SIGTERM);
    EXPECT_TRUE(ProcessesMentioning(dir + "/data").empty());
  }
}

TEST(RunCommandTest, UnknownGridIsUsageError) {
  const TempDir temp("prism_run_grid");
  const std::string& dir = temp.path();
  cli::Subprocess run = StartRun(dir, {"--grid", "everything"});
  absl::StatusOr<int> status = run.Wait(absl::Minutes(1));
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 2);
  const std::string err = ReadFile(dir + "/run.err");
  EXPECT_THAT(err, HasSubstr("--grid must be contrast or principled"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(RunCommandTest, UnknownPresetIsUsageError) {
  const TempDir temp("prism_run");
  const std::string& dir = temp.path();
  cli::Subprocess run = StartRun(dir, {"--preset", "enormous"});
  absl::StatusOr<int> status = run.Wait(absl::Seconds(30));
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 2);
  EXPECT_THAT(ReadFile(dir + "/run.err"), HasSubstr("enormous"));
}

}  // namespace
}  // namespace prism::testing
