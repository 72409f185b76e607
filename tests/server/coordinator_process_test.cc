// The `prism coordinator` process contract that `prism run` and the
// integration tests rely on: the readiness line on stdout, the ready file,
// the admin token file (mode 0600), a clean exit on SIGTERM, and exit 2 with
// one line for bad flags.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server::testing {
namespace {

using ::testing::HasSubstr;

const char kPrism[] = PRISM_BINARY_DIR "/cli/prism";

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

}  // namespace
}  // namespace prism::server::testing
