// The `prism coordinator` process contract that `prism run` and the
// integration tests rely on: the readiness line on stdout, the ready file,
// the admin token file (mode 0600), a clean exit on SIGTERM, and exit 2 with
// one line for bad flags; and what calls to made-up methods cost it.
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server::testing {
namespace {

// A sanitizer build (make test-asan) keeps freed memory in quarantine, so the
// coordinator's RSS says nothing about what it holds on to.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PRISM_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PRISM_SANITIZER_MALLOC 1
#endif
#endif

using ::testing::HasSubstr;
using ::testing::Not;

const char kPrism[] = PRISM_BINARY_DIR "/cli/prism";
const char kUnknownMethods[] =
    PRISM_BINARY_DIR "/tests/server/grpc_unknown_methods";

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of the child's stdout
};

Child Spawn(const std::vector<std::string>& args, const std::string& err) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(e, 2);
    close(fds[0]);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(kPrism));
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(kPrism, argv.data());
    _exit(127);
  }
  close(fds[1]);
  return Child{pid, fds[0]};
}

std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
  return line;
}

int WaitExit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// RssBytes is process `pid`'s resident set (VmRSS), or -1.
int64_t RssBytes(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream in(line.substr(6));
      int64_t kb = -1;
      in >> kb;  // "  123456 kB"
      return kb < 0 ? -1 : kb * 1024;
    }
  }
  return -1;
}

// CallUnknownMethods runs tests/server/grpc_unknown_methods against
// `grpc` (another process, so that its memory is not the coordinator's)
// and returns what it printed: "CODE COUNT" lines.
std::string CallUnknownMethods(const std::string& grpc, int calls,
                               const std::string& out) {
  const std::string command =
      absl::StrCat(kUnknownMethods, " ", grpc, " 4 ", calls, " 2048 > ", out);
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return Slurp(out);
}

TEST(CoordinatorProcessTest, PrintsReadinessWritesReadyFileAndStopsOnSigterm) {
  TempDir dir;
  const std::string ready = dir.File("ready.json");
  const std::string token_file = dir.File("admin.token");
  Child child = Spawn({"coordinator", "--db", dir.File("p.db"), "--listen",
                       "127.0.0.1:0", "--http", "127.0.0.1:0",
                       "--admin-token-file", token_file, "--ready-file", ready},
                      dir.File("err.log"));
  const std::string line = ReadLine(child.out);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      line, m,
      std::regex(R"(prism coordinator: ready grpc=(127\.0\.0\.1:\d+) )"
                 R"(http=(127\.0\.0\.1:\d+))")))
      << line << "\n"
      << Slurp(dir.File("err.log"));
  EXPECT_EQ(Slurp(ready), "{\"grpc\":\"" + m[1].str() + "\",\"http\":\"" +
                              m[2].str() + "\"}\n");
  struct stat st;
  ASSERT_EQ(stat(token_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  EXPECT_EQ(Slurp(token_file).rfind("prism_", 0), 0u);

  ASSERT_EQ(kill(child.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(child.pid), 0);
  close(child.out);
  const std::string log = Slurp(dir.File("err.log"));
  EXPECT_THAT(log, HasSubstr("level=info msg=\"coordinator stopped\""));
  EXPECT_THAT(log, HasSubstr("msg=stopping signal=SIGTERM"));
}

TEST(CoordinatorProcessTest, BadFlagsExitTwoWithOneLine) {
  TempDir dir;
  Child child =
      Spawn({"coordinator", "--db", dir.File("p.db"), "--listen", "nonsense"},
            dir.File("err.log"));
  EXPECT_EQ(WaitExit(child.pid), 2);
  close(child.out);
  const std::string err = Slurp(dir.File("err.log"));
  EXPECT_THAT(err, HasSubstr("prism coordinator: address 'nonsense'"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);

  Child missing = Spawn({"coordinator"}, dir.File("err2.log"));
  EXPECT_EQ(WaitExit(missing.pid), 2);
  close(missing.out);
  EXPECT_THAT(Slurp(dir.File("err2.log")), HasSubstr("--db"));
}

// Issue #40: made-up method names used to add /metrics series that were
// never removed (10,000 calls took /metrics from 21 KB to 596 MB). Every
// call without a token to a method nobody serves now counts under one
// label: 10,000 of them, with 2 KiB names, leave /metrics within 16 KiB of
// its size and the coordinator's RSS within 32 MiB of where it was (they
// used to add 45 MiB and 379 MB; bench/unknown_methods.py).
TEST(CoordinatorProcessTest, UnknownMethodsWithoutATokenCostABoundedAmount) {
  TempDir dir;
  Child child =
      Spawn({"coordinator", "--db", dir.File("p.db"), "--listen", "127.0.0.1:0",
             "--http", "127.0.0.1:0", "--admin-token-file",
             dir.File("admin.token"), "--metrics-open"},
            dir.File("err.log"));
  // A failed assertion below must not leave the coordinator running.
  struct StopOnExit {
    Child* child;
    ~StopOnExit() {
      if (child->pid > 0 && kill(child->pid, SIGKILL) == 0) {
        WaitExit(child->pid);
      }
      close(child->out);
    }
  } stop_on_exit{&child};
  const std::string line = ReadLine(child.out);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(
      line, m,
      std::regex(R"(prism coordinator: ready grpc=(127\.0\.0\.1:\d+) )"
                 R"(http=127\.0\.0\.1:(\d+))")))
      << line << "\n"
      << Slurp(dir.File("err.log"));
  const std::string grpc = m[1].str();
  httplib::Client http("127.0.0.1", std::stoi(m[2].str()));
  auto metrics_bytes = [&http]() -> int64_t {
    httplib::Result res = http.Get("/metrics");
    if (!res || res->status != 200) return -1;
    return static_cast<int64_t>(res->body.size());
  };

  // A first few calls open the connections and the "unknown" series.
  EXPECT_EQ(CallUnknownMethods(grpc, 100, dir.File("warm.out")), "12 100\n");
  const int64_t metrics_before = metrics_bytes();
  const int64_t rss_before = RssBytes(child.pid);
  ASSERT_GT(metrics_before, 0);
  ASSERT_GT(rss_before, 0);

  // Every one of them is UNIMPLEMENTED (12).
  EXPECT_EQ(CallUnknownMethods(grpc, 10'000, dir.File("flood.out")),
            "12 10000\n");
  const int64_t metrics_after = metrics_bytes();
  const int64_t rss_after = RssBytes(child.pid);
  std::cout << "after 10,000 unknown-method calls: /metrics " << metrics_before
            << " -> " << metrics_after << " bytes, RSS " << rss_before / 1024
            << " -> " << rss_after / 1024 << " KiB\n";
  EXPECT_LT(metrics_after - metrics_before, int64_t{16} << 10);
#ifndef PRISM_SANITIZER_MALLOC
  EXPECT_LT(rss_after - rss_before, int64_t{32} << 20);
#endif
  httplib::Result text = http.Get("/metrics");
  ASSERT_TRUE(text);
  EXPECT_THAT(text->body,
              HasSubstr("prism_rpc_requests_total{method=\"unknown\","
                        "code=\"UNIMPLEMENTED\"} 10100\n"));
  EXPECT_THAT(text->body, Not(HasSubstr("made.up")));

  ASSERT_EQ(kill(child.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(child.pid), 0);
  child.pid = -1;
}

}  // namespace
}  // namespace prism::server::testing
