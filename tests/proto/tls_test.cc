#include "proto/tls.h"

#include <gmock/gmock.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>

#include "tests/testing/temp_dir.h"
#include "tests/testing/test_certs.h"

namespace prism {
namespace {

using ::prism::testing::MakeTestCerts;
using ::prism::testing::TempDir;
using ::prism::testing::TestCerts;
using ::testing::HasSubstr;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = MakeTestCerts(dir_.path());
    ASSERT_TRUE(certs_.ok) << certs_.error;
  }

  TlsPem Load(const TlsFiles& files) {
    absl::StatusOr<TlsPem> pem = LoadTlsFiles(files, "--tls-ca");
    EXPECT_TRUE(pem.ok()) << pem.status();
    return pem.ok() ? *pem : TlsPem{};
  }

  TlsFiles ServerFiles() const {
    TlsFiles files;
    files.cert = certs_.server_cert;
    files.key = certs_.server_key;
    return files;
  }

  TlsFiles ClientFiles(const std::string& ca) const {
    TlsFiles files;
    files.ca = ca;
    return files;
  }

  // Connects a channel with `client` to a server with `server` and returns
  // where the channel's first connection attempt ended: READY or
  // TRANSIENT_FAILURE.
  grpc_connectivity_state Connect(const TlsPem& server, const TlsPem& client) {
    grpc::ServerBuilder builder;
    // A server needs a service to start; the handshake needs no method.
    grpc::CallbackGenericService service;
    builder.RegisterCallbackGenericService(&service);
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", ServerCredentialsFor(server),
                             &port);
    std::unique_ptr<grpc::Server> s = builder.BuildAndStart();
    EXPECT_NE(port, 0);
    if (s == nullptr) return GRPC_CHANNEL_SHUTDOWN;
    std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port), ChannelCredentialsFor(client));
    grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
    const auto deadline =
        std::chrono::system_clock::now() + std::chrono::seconds(30);
    while (state == GRPC_CHANNEL_IDLE || state == GRPC_CHANNEL_CONNECTING) {
      if (!channel->WaitForStateChange(state, deadline)) break;
      state = channel->GetState(/*try_to_connect=*/true);
    }
    s->Shutdown();
    return state;
  }

  TempDir dir_{"prism_tls_test"};
  TestCerts certs_;
};

TEST_F(TlsTest, NoFilesIsInsecure) {
  const TlsPem pem = Load({});
  EXPECT_TRUE(pem.empty());
  EXPECT_EQ(Connect(pem, pem), GRPC_CHANNEL_READY);
}

TEST_F(TlsTest, LoadsMatchingCertificateAndKey) {
  const TlsPem pem = Load(ServerFiles());
  EXPECT_THAT(pem.cert, HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(pem.key, HasSubstr("PRIVATE KEY"));
  EXPECT_TRUE(pem.ca.empty());
}

TEST_F(TlsTest, CertificateWithoutKeyNamesTheFile) {
  TlsFiles files;
  files.cert = certs_.server_cert;
  absl::StatusOr<TlsPem> pem = LoadTlsFiles(files, "--tls-ca");
  ASSERT_TRUE(absl::IsInvalidArgument(pem.status())) << pem.status();
  EXPECT_EQ(pem.status().message(),
            "--tls-cert " + certs_.server_cert + " needs --tls-key");
  files = TlsFiles{};
  files.key = certs_.server_key;
  EXPECT_EQ(LoadTlsFiles(files, "--tls-ca").status().message(),
            "--tls-key " + certs_.server_key + " needs --tls-cert");
}

TEST_F(TlsTest, UnreadableFileNamesTheFlagAndFile) {
  TlsFiles files = ServerFiles();
  files.key = dir_.File("missing.key");
  absl::StatusOr<TlsPem> pem = LoadTlsFiles(files, "--tls-ca");
  ASSERT_TRUE(absl::IsInvalidArgument(pem.status()));
  EXPECT_EQ(
      pem.status().message(),
      "--tls-key " + files.key + ": cannot read it: No such file or directory");
  EXPECT_THAT(LoadTlsFiles(ClientFiles(dir_.path()), "--tls-client-ca")
                  .status()
                  .message(),
              HasSubstr("--tls-client-ca " + dir_.path() +
                        ": cannot read it: it is a directory"));
}

TEST_F(TlsTest, KeyOfAnotherCertificateIsRefused) {
  TlsFiles files = ServerFiles();
  files.key = certs_.other_key;
  absl::StatusOr<TlsPem> pem = LoadTlsFiles(files, "--tls-ca");
  ASSERT_TRUE(absl::IsInvalidArgument(pem.status()));
  EXPECT_EQ(pem.status().message(), "--tls-key " + certs_.other_key +
                                        ": is not the key of --tls-cert " +
                                        certs_.server_cert);
}

TEST_F(TlsTest, FileWithoutPemIsRefused) {
  const std::string junk = dir_.File("junk.pem");
  std::ofstream(junk) << "not a certificate\n";
  TlsFiles files = ServerFiles();
  files.cert = junk;
  EXPECT_EQ(LoadTlsFiles(files, "--tls-ca").status().message(),
            "--tls-cert " + junk + ": holds no PEM certificate");
  files = ServerFiles();
  files.key = junk;
  EXPECT_THAT(LoadTlsFiles(files, "--tls-ca").status().message(),
              HasSubstr("--tls-key " + junk + ": holds no PEM private key"));
  EXPECT_EQ(LoadTlsFiles(ClientFiles(junk), "--tls-ca").status().message(),
            "--tls-ca " + junk + ": holds no PEM certificate");
}

TEST_F(TlsTest, ClientWithTheCaConnects) {
  EXPECT_EQ(Connect(Load(ServerFiles()), Load(ClientFiles(certs_.ca))),
            GRPC_CHANNEL_READY);
}

TEST_F(TlsTest, PlaintextClientCannotConnectToTlsServer) {
  EXPECT_EQ(Connect(Load(ServerFiles()), TlsPem{}),
            GRPC_CHANNEL_TRANSIENT_FAILURE);
}

TEST_F(TlsTest, ClientWithAnotherCaCannotConnect) {
  EXPECT_EQ(Connect(Load(ServerFiles()), Load(ClientFiles(certs_.other_ca))),
            GRPC_CHANNEL_TRANSIENT_FAILURE);
}

TEST_F(TlsTest, MutualTlsClientWithCertificateConnects) {
  TlsFiles server = ServerFiles();
  server.ca = certs_.ca;
  TlsFiles client = ClientFiles(certs_.ca);
  client.cert = certs_.client_cert;
  client.key = certs_.client_key;
  EXPECT_EQ(Connect(Load(server), Load(client)), GRPC_CHANNEL_READY);
}

TEST_F(TlsTest, MutualTlsClientWithoutCertificateCannotConnect) {
  TlsFiles server = ServerFiles();
  server.ca = certs_.ca;
  EXPECT_EQ(Connect(Load(server), Load(ClientFiles(certs_.ca))),
            GRPC_CHANNEL_TRANSIENT_FAILURE);
}

}  // namespace
}  // namespace prism
