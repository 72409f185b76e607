// TLS with real processes on loopback: a coordinator with --tls-cert and
// --tls-key (and --tls-client-ca for mutual TLS), the CLI and workers with
// and without the CA or a client certificate, the dashboard over HTTPS, and
// the coordinator's refusal of bad TLS flags.
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// RunBare runs `prism args...` against the cluster's coordinator with the
// admin token on the command line and `env`: no TLS settings but its own.
CommandResult RunBare(const LocalCluster& cluster,
                      const std::vector<std::string>& args,
                      const std::vector<std::string>& env) {
  std::vector<std::string> full = args;
  full.insert(full.end(), {"--coordinator", cluster.grpc_address(), "--token",
                           cluster.admin_token()});
  static int counter = 0;
  return RunPrism(full, env, absl::StrCat(cluster.dir(), "/bare-", ++counter));
}

TEST(TlsClusterTest, TheCliNeedsTheCaToReachATlsCoordinator) {
  CoordinatorFlags flags;
  flags.tls = true;
  LocalCluster cluster(flags);
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  EXPECT_THAT(ReadFile(cluster.dir() + "/coordinator.log"),
              HasSubstr("tls=on"));

  CommandResult plain = RunBare(cluster, {"workers"}, {});
  EXPECT_EQ(plain.status, 1) << plain.err;
  EXPECT_EQ(Lines(plain.err), 1) << plain.err;
  EXPECT_THAT(plain.err,
              StartsWith("prism workers: cannot reach coordinator at " +
                         cluster.grpc_address()));
  EXPECT_THAT(plain.err, HasSubstr("--tls-ca or PRISM_TLS_CA"));

  CommandResult other =
      RunBare(cluster, {"workers", "--tls-ca", cluster.certs().other_ca}, {});
  EXPECT_EQ(other.status, 1) << other.err;
  EXPECT_EQ(Lines(other.err), 1) << other.err;
  EXPECT_THAT(other.err,
              StartsWith("prism workers: TLS handshake with coordinator at " +
                         cluster.grpc_address() +
                         " failed: certificate verify failed (does --tls-ca"));

  CommandResult flag =
      RunBare(cluster, {"workers", "--tls-ca", cluster.certs().ca}, {});
  EXPECT_EQ(flag.status, 0) << flag.err;
  CommandResult env = RunBare(cluster, {"workers"}, cluster.TlsEnv());
  EXPECT_EQ(env.status, 0) << env.err;
}

TEST(TlsClusterTest, MutualTlsRefusesAWorkerWithoutAClientCertificate) {
  CoordinatorFlags flags;
  flags.mutual_tls = true;
  LocalCluster cluster(flags);
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();

  WorkerFlags without;
  without.client_cert = false;
  ASSERT_TRUE(cluster.StartWorker(without).ok());
  EXPECT_TRUE(WaitForLog(cluster.dir() + "/worker-0.log", "register_failed"))
      << cluster.Logs();
  CommandResult cli =
      RunBare(cluster, {"workers"}, cluster.TlsEnv(/*client_cert=*/false));
  EXPECT_EQ(cli.status, 1) << cli.err;
  EXPECT_EQ(Lines(cli.err), 1) << cli.err;
  EXPECT_THAT(cli.err, HasSubstr(" over TLS (is it running? does it want a "
                                 "client certificate: --tls-cert"));

  ASSERT_TRUE(cluster.StartWorker().ok());
  EXPECT_TRUE(WaitForLog(cluster.dir() + "/worker-1.log", "msg=registered"))
      << cluster.Logs();
  EXPECT_THAT(ReadFile(cluster.dir() + "/worker-0.log"),
              Not(HasSubstr("msg=registered")));
  CommandResult workers = cluster.Run({"workers", "--format", "json"});
  ASSERT_EQ(workers.status, 0) << workers.err;
  EXPECT_EQ(workers.out.find("\"id\"", workers.out.find("\"id\"") + 1),
            std::string::npos)
      << "one worker registered, not two: " << workers.out;
}

TEST(TlsClusterTest, TheDashboardServesHttpsOnlyWithASecureCookie) {
  CoordinatorFlags flags;
  flags.tls = true;
  LocalCluster cluster(flags);
  ASSERT_TRUE(cluster.StartCoordinator().ok()) << cluster.Logs();
  const std::vector<std::string> http =
      absl::StrSplit(cluster.http_address(), ':');
  ASSERT_EQ(http.size(), 2u);
  const int port = std::stoi(http[1]);
  const std::string token = cluster.admin_token();

  httplib::SSLClient client(http[0], port);
  client.set_ca_cert_path(cluster.certs().ca.c_str());
  client.enable_server_certificate_verification(true);
  httplib::Result whoami =
      client.Get("/api/v1/whoami", {{"Authorization", "Bearer " + token}});
  ASSERT_TRUE(whoami) << httplib::to_string(whoami.error());
  EXPECT_EQ(whoami->status, 200) << whoami->body;
  const std::string cookie = whoami->get_header_value("Set-Cookie");
  EXPECT_THAT(cookie, StartsWith("prism_token=" + token + ";"));
  EXPECT_THAT(cookie, HasSubstr("; Secure"));
  EXPECT_THAT(cookie, HasSubstr("; HttpOnly"));
  EXPECT_THAT(cookie, HasSubstr("; SameSite=Strict"));

  httplib::Result by_cookie =
      client.Get("/api/v1/workers", {{"Cookie", "prism_token=" + token}});
  ASSERT_TRUE(by_cookie) << httplib::to_string(by_cookie.error());
  EXPECT_EQ(by_cookie->status, 200) << by_cookie->body;
  EXPECT_TRUE(by_cookie->get_header_value("Set-Cookie").empty());

  httplib::Result logout = client.Post(
      "/api/v1/logout",
      {{"Origin", "https://" + http[0] + ":" + std::to_string(port)}}, "",
      "text/plain");
  ASSERT_TRUE(logout) << httplib::to_string(logout.error());
  EXPECT_EQ(logout->status, 204);
  EXPECT_THAT(logout->get_header_value("Set-Cookie"),
              StartsWith("prism_token=; Max-Age=0; Path=/; Secure; HttpOnly"));

  httplib::SSLClient stranger(http[0], port);
  stranger.set_ca_cert_path(cluster.certs().other_ca.c_str());
  stranger.enable_server_certificate_verification(true);
  EXPECT_FALSE(stranger.Get("/metrics"));

  httplib::Client plain(http[0], port);
  plain.set_connection_timeout(10);
  plain.set_read_timeout(10);
  httplib::Result answer = plain.Get("/metrics");
  EXPECT_FALSE(answer && answer->status == 200)
      << "plain HTTP was answered: " << answer->body;
}

TEST(TlsClusterTest, PlaintextBeyondLoopbackIsWarnedAbout) {
  CoordinatorFlags flags;
  flags.listen_host = "0.0.0.0";
  LocalCluster open(flags);
  ASSERT_TRUE(open.StartCoordinator().ok()) << open.Logs();
  EXPECT_THAT(ReadFile(open.dir() + "/coordinator.log"),
              HasSubstr("serving without TLS on a non-loopback address"));

  LocalCluster loopback;
  ASSERT_TRUE(loopback.StartCoordinator().ok()) << loopback.Logs();
  EXPECT_THAT(ReadFile(loopback.dir() + "/coordinator.log"),
              Not(HasSubstr("serving without TLS")));

  flags.tls = true;
  LocalCluster secured(flags);
  ASSERT_TRUE(secured.StartCoordinator().ok()) << secured.Logs();
  EXPECT_THAT(ReadFile(secured.dir() + "/coordinator.log"),
              Not(HasSubstr("serving without TLS")));
}

TEST(TlsClusterTest, BadTlsFlagsExitTwoWithOneLineNamingTheFile) {
  TempDir dir("prism_tls_flags");
  const TestCerts certs = MakeTestCerts(dir.File("tls"));
  ASSERT_TRUE(certs.ok) << certs.error;
  const std::string db = dir.File("prism.db");
  const std::string missing = dir.File("missing.pem");
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"--tls-cert", certs.server_cert},
       "--tls-cert " + certs.server_cert + " needs --tls-key"},
      {{"--tls-cert", certs.server_cert, "--tls-key", missing},
       "--tls-key " + missing + ": cannot read it: No such file or directory"},
      {{"--tls-cert", certs.server_cert, "--tls-key", certs.other_key},
       "--tls-key " + certs.other_key + ": is not the key of --tls-cert " +
           certs.server_cert},
      {{"--tls-client-ca", certs.ca},
       "--tls-client-ca " + certs.ca + " needs --tls-cert and --tls-key"},
      {{"--tls-cert", certs.server_cert, "--tls-key", certs.server_key,
        "--tls-client-ca", missing},
       "--tls-client-ca " + missing + ": cannot read it"},
  };
  int n = 0;
  for (const Case& c : cases) {
    std::vector<std::string> args = {"coordinator", "--db",        db,
                                     "--listen",    "127.0.0.1:0", "--http",
                                     "127.0.0.1:0"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CommandResult r =
        RunPrism(args, {}, absl::StrCat(dir.path(), "/run-", ++n));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_THAT(r.err, StartsWith("prism coordinator: " + c.error)) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db)) << "a bad flag opened the db";

  CommandResult worker = RunPrism({"worker", "--coordinator", "127.0.0.1:1",
                                   "--token", "x", "--tls-ca", missing},
                                  {}, dir.File("worker"));
  EXPECT_EQ(worker.status, 2) << worker.err;
  EXPECT_EQ(Lines(worker.err), 1) << worker.err;
  EXPECT_THAT(worker.err, HasSubstr("prism worker: --tls-ca " + missing));
}

}  // namespace
}  // namespace prism::testing
