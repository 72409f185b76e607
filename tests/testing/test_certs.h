// TestCerts: certificates for TLS tests, made by deploy/tls/make-certs.sh
// (the script deploy/README.md tells operators to run) with the openssl CLI:
// a CA, a server certificate for 127.0.0.1 and localhost, a client
// certificate for mutual TLS, and a second, unrelated CA in other/.
//
//   TempDir dir("prism_tls_test");
//   TestCerts certs = MakeTestCerts(dir.path());
//   ASSERT_TRUE(certs.ok) << certs.error;
//
// Needs PRISM_SOURCE_DIR (every prism_add_test target has it).
#ifndef PRISM_TESTS_TESTING_TEST_CERTS_H_
#define PRISM_TESTS_TESTING_TEST_CERTS_H_

#include <cstdlib>
#include <string>
#include <vector>

namespace prism::testing {

struct TestCerts {
  bool ok = false;
  std::string error;
  std::string ca;  // PEM files
  std::string server_cert;
  std::string server_key;
  std::string client_cert;
  std::string client_key;
  std::string other_ca;   // a CA that signed none of the above
  std::string other_key;  // a key that belongs to no certificate above
};

// MakeTestCerts writes them to `dir`; the server certificate also names
// every one of `names` (host names or IPv4 addresses).
inline TestCerts MakeTestCerts(const std::string& dir,
                               const std::vector<std::string>& names = {}) {
  const std::string script =
      "'" + std::string(PRISM_SOURCE_DIR) + "/deploy/tls/make-certs.sh'";
  std::string command = script + " '" + dir + "'";
  for (const std::string& name : names) command += " '" + name + "'";
  command += " >/dev/null && " + script + " '" + dir + "/other' >/dev/null";
  TestCerts certs;
  if (std::system(command.c_str()) != 0) {
    certs.error = "failed: " + command;
    return certs;
  }
  certs.ok = true;
  certs.ca = dir + "/ca.pem";
  certs.server_cert = dir + "/server.pem";
  certs.server_key = dir + "/server.key";
  certs.client_cert = dir + "/client.pem";
  certs.client_key = dir + "/client.key";
  certs.other_ca = dir + "/other/ca.pem";
  certs.other_key = dir + "/other/server.key";
  return certs;
}

}  // namespace prism::testing

#endif  // PRISM_TESTS_TESTING_TEST_CERTS_H_
