// `prism token create --expires-in / list / revoke` against a real
// coordinator: ids instead of secrets, expiry shown, a revoked token refused
// on its next call, and bad ids and the last admin token refused with one
// line and exit status 2.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cluster.h"

namespace prism::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// IdOf returns the id `prism token create` printed on stderr
// ("token <id> for ...").
std::string IdOf(const CommandResult& created) {
  const size_t at = created.err.find("token ");
  if (at == std::string::npos) return "";
  return created.err.substr(at + 6, 12);
}

class TokenCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const absl::Status started = cluster_.StartCoordinator();
    ASSERT_TRUE(started.ok()) << started << cluster_.Logs();
  }

  CommandResult RunAs(const std::string& token, std::vector<std::string> args) {
    args.insert(args.end(),
                {"--coordinator", cluster_.grpc_address(), "--token", token});
    return cluster_.Run(args, /*with_defaults=*/false);
  }

  LocalCluster cluster_;
};

TEST_F(TokenCommandsTest, CreateListRevokeAndTheRevokedTokenIsRefused) {
  CommandResult created =
      cluster_.Run({"token", "create", "--user", "ann", "--role", "user",
                    "--expires-in", "12h"});
  ASSERT_EQ(created.status, 0) << created.err;
  const std::string token(absl::StripAsciiWhitespace(created.out));
  ASSERT_THAT(token, StartsWith("prism_"));
  EXPECT_THAT(created.err, HasSubstr("expires 20"));
  const std::string id = IdOf(created);
  ASSERT_EQ(id.size(), 12u) << created.err;
  ASSERT_EQ(RunAs(token, {"whoami"}).status, 0);

  // The admin's table lists both tokens, never a secret.
  CommandResult table = cluster_.Run({"token", "list"});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("last_used"));
  EXPECT_THAT(table.out, HasSubstr(id));
  EXPECT_THAT(table.out, HasSubstr("ann"));
  EXPECT_THAT(table.out, HasSubstr("active"));
  EXPECT_THAT(table.out, Not(HasSubstr("prism_")));
  CommandResult csv = cluster_.Run({"token", "list", "--format", "csv"});
  ASSERT_EQ(csv.status, 0) << csv.err;
  const std::vector<std::string> rows =
      absl::StrSplit(csv.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(rows.size(), 3u) << csv.out;  // header, admin, ann
  EXPECT_EQ(rows[0], "id,user,role,state,created,expires,last_used,revoked");
  EXPECT_THAT(rows[2], StartsWith(id + ",ann,user,active,"));
  // Ann sees only her own.
  CommandResult own = RunAs(token, {"token", "list", "--format", "json"});
  ASSERT_EQ(own.status, 0) << own.err;
  EXPECT_THAT(own.out, HasSubstr("\"id\": \"" + id + "\""));
  EXPECT_THAT(own.out, HasSubstr("\"expiresUnixMs\""));
  EXPECT_THAT(own.out, Not(HasSubstr("\"user\": \"admin\"")));

  CommandResult revoked = cluster_.Run({"token", "revoke", id});
  ASSERT_EQ(revoked.status, 0) << revoked.err;
  EXPECT_THAT(revoked.out, HasSubstr("revoked token " + id + " of ann"));
  CommandResult refused = RunAs(token, {"whoami"});
  EXPECT_EQ(refused.status, 2);
  EXPECT_EQ(Lines(refused.err), 1) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("token revoked"));
  CommandResult listed = cluster_.Run({"token", "list"});
  EXPECT_THAT(listed.out, HasSubstr("revoked"));
}

TEST_F(TokenCommandsTest, BadIdsAndTheLastAdminTokenAreRefusedWithExit2) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"token", "revoke", "nothex"},
        std::vector<std::string>{"token", "revoke", "0123456789ab"}}) {
    CommandResult r = cluster_.Run(args);
    EXPECT_EQ(r.status, 2) << args[2] << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
  }
  CommandResult list = cluster_.Run({"token", "list", "--format", "csv"});
  ASSERT_EQ(list.status, 0) << list.err;
  const std::vector<std::string> rows =
      absl::StrSplit(list.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(rows.size(), 2u) << list.out;
  const std::string admin_id = rows[1].substr(0, 12);
  CommandResult last = cluster_.Run({"token", "revoke", admin_id});
  EXPECT_EQ(last.status, 2) << last.err;
  EXPECT_THAT(last.err, HasSubstr("last usable admin token"));
  EXPECT_EQ(cluster_.Run({"whoami"}).status, 0);

  CommandResult bad_lifetime =
      cluster_.Run({"token", "create", "--user", "x", "--role", "user",
                    "--expires-in", "soon"});
  EXPECT_EQ(bad_lifetime.status, 2);
  EXPECT_EQ(Lines(bad_lifetime.err), 1) << bad_lifetime.err;
}

TEST(CoordinatorAuthFlagsTest, BadValuesAreRefusedNamingTheFlag) {
  TempDir dir;
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{
           {"--token-max-lifetime", "forever"},
           {"--auth-failure-window", "0"},
           {"--auth-max-failures", "-1"},
           {"--auth-max-peers", "0"}}) {
    CommandResult r =
        RunPrism({"coordinator", "--db", dir.File("p.db"), "--listen",
                  "127.0.0.1:0", "--http", "127.0.0.1:0", flag + "=" + value},
                 {}, dir.File("run"));
    EXPECT_EQ(r.status, 2) << flag << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace prism::testing
