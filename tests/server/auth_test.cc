#include "server/core/auth/auth.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/server/coordinator_fixture.h"
#include "tests/testing/scoped_umask.h"

namespace prism::server {
namespace {

using testing::FakeClock;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

TEST(AuthorizeTest, RolesGrantWhatTheyShould) {
  const Caller admin{"a", v1::ROLE_ADMIN};
  const Caller user{"u", v1::ROLE_USER};
  const Caller worker{"w", v1::ROLE_WORKER};
  const Caller viewer{"v", v1::ROLE_VIEWER};
  const Caller nobody{"n", v1::ROLE_UNSPECIFIED};
  for (const Caller& c : {admin, user, worker, viewer}) {
    EXPECT_TRUE(Authorize(c, Permission::kRead).ok()) << c.user;
  }
  EXPECT_FALSE(Authorize(nobody, Permission::kRead).ok());
  EXPECT_TRUE(Authorize(admin, Permission::kSubmit).ok());
  EXPECT_TRUE(Authorize(user, Permission::kSubmit).ok());
  EXPECT_FALSE(Authorize(worker, Permission::kSubmit).ok());
  EXPECT_FALSE(Authorize(viewer, Permission::kSubmit).ok());
  EXPECT_TRUE(Authorize(worker, Permission::kWork).ok());
  EXPECT_TRUE(Authorize(admin, Permission::kWork).ok());
  EXPECT_FALSE(Authorize(user, Permission::kWork).ok());
  EXPECT_TRUE(Authorize(admin, Permission::kAdmin).ok());
  EXPECT_FALSE(Authorize(user, Permission::kAdmin).ok());
  EXPECT_TRUE(AuthorizeOwner(user, "u").ok());
  EXPECT_TRUE(AuthorizeOwner(admin, "u").ok());
  absl::Status other = AuthorizeOwner(user, "someone");
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(other.message()), HasSubstr("someone"));
}

TEST(AuthTest, TokensAreRandomAndOnlyTheirHashIsStored) {
  absl::StatusOr<std::string> a = GenerateToken();
  absl::StatusOr<std::string> b = GenerateToken();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*storage::SqliteStore::Open(dir_.File("p.db")));
    auth_ = std::make_unique<AuthManager>(store_.get(), &clock_);
  }
  TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<storage::SqliteStore> store_;
  std::unique_ptr<AuthManager> auth_;
};

TEST_F(BootstrapTest, GeneratedTokenIsWrittenWithMode0600AndWorks) {
  const std::string file = dir_.File("admin.token");
  absl::StatusOr<BootstrapResult> r = auth_->Bootstrap({file, ""});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->created);
  EXPECT_FALSE(r->token_to_print.has_value());
  struct stat st;
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  std::string token;
  std::ifstream(file) >> token;
  absl::StatusOr<Caller> caller = auth_->Authenticate("Bearer " + token);
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_EQ(caller->role, v1::ROLE_ADMIN);
  // The database never holds the token itself.
  EXPECT_TRUE(absl::IsNotFound(store_->LookupToken(token).status()));
  // A second bootstrap on the same database does nothing.
  absl::StatusOr<BootstrapResult> again = auth_->Bootstrap({file, ""});
  EXPECT_FALSE(again->created);
}

// Issue #40: whatever the umask, the token file is 0600 (mkstemp's 0600
// alone passes through the umask: 0277 would leave it 0400).
TEST(BootstrapFileTest, GeneratedTokenFileIsPrivateUnderAnyUmask) {
  for (const mode_t mask : {mode_t{0}, mode_t{0277}}) {
    TempDir dir;
    std::unique_ptr<storage::SqliteStore> store =
        std::move(*storage::SqliteStore::Open(dir.File("p.db")));
    FakeClock clock;
    AuthManager auth(store.get(), &clock);
    const std::string file = dir.File("admin.token");
    {
      ::prism::testing::ScopedUmask umask(mask);
      absl::StatusOr<BootstrapResult> r = auth.Bootstrap({file, ""});
      ASSERT_TRUE(r.ok()) << r.status();
    }
    EXPECT_EQ(::prism::testing::ModeOf(file), 0600) << "umask " << mask;
  }
}

TEST_F(BootstrapTest, ExistingFileOrEnvProvidesTheToken) {
  const std::string file = dir_.File("given.token");
  std::ofstream(file) << "prism_from_file\n";
  ASSERT_TRUE(auth_->Bootstrap({file, "prism_from_env"}).ok());
  EXPECT_TRUE(auth_->AuthenticateToken("prism_from_file").ok());
  EXPECT_FALSE(auth_->AuthenticateToken("prism_from_env").ok());

  TempDir other;
  auto store = std::move(*storage::SqliteStore::Open(other.File("p.db")));
  AuthManager auth(store.get(), &clock_);
  absl::StatusOr<BootstrapResult> r = auth.Bootstrap({"", "prism_from_env"});
  EXPECT_EQ(r->source, "env");
  EXPECT_TRUE(auth.AuthenticateToken("prism_from_env").ok());
}

TEST_F(BootstrapTest, WithoutFileOrEnvTheTokenIsHandedBackToPrintOnce) {
  absl::StatusOr<BootstrapResult> r = auth_->Bootstrap({"", ""});
  ASSERT_TRUE(r->token_to_print.has_value());
  EXPECT_TRUE(auth_->AuthenticateToken(*r->token_to_print).ok());
}

// TokenLifecycleTest: an AuthManager over a real store with the first admin
// token, a fake clock and a one-minute last-use interval.
class TokenLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*storage::SqliteStore::Open(dir_.File("p.db")));
    Reset(AuthOptions());
  }
  void Reset(AuthOptions options) {
    auth_ = std::make_unique<AuthManager>(store_.get(), &clock_, options);
    if (*store_->CountTokens() == 0) {
      ASSERT_TRUE(auth_->Bootstrap({"", "prism_admin"}).ok());
    }
  }
  absl::StatusOr<v1::CreateTokenResponse> Create(const std::string& user,
                                                 v1::Role role,
                                                 int64_t expires_in = 0) {
    v1::CreateTokenRequest req;
    req.set_user(user);
    req.set_role(role);
    req.set_expires_in_seconds(expires_in);
    return auth_->CreateToken(admin_, req);
  }
  absl::StatusOr<v1::RevokeTokenResponse> Revoke(const Caller& caller,
                                                 const std::string& id) {
    v1::RevokeTokenRequest req;
    req.set_id(id);
    return auth_->RevokeToken(caller, req);
  }
  // Listed returns the admin's view of the token `id`.
  v1::TokenInfo Listed(const std::string& id) {
    absl::StatusOr<v1::ListTokensResponse> list = auth_->ListTokens(admin_);
    EXPECT_TRUE(list.ok()) << list.status();
    for (const v1::TokenInfo& t : list->tokens()) {
      if (t.id() == id) return t;
    }
    ADD_FAILURE() << "token " << id << " not listed";
    return v1::TokenInfo();
  }

  const Caller admin_{"admin", v1::ROLE_ADMIN};
  const std::string admin_id_ = storage::TokenIdOf(Sha256Hex("prism_admin"));
  TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<storage::SqliteStore> store_;
  std::unique_ptr<AuthManager> auth_;
};

TEST_F(TokenLifecycleTest, AnExpiredTokenIsRefusedSayingSo) {
  absl::StatusOr<v1::CreateTokenResponse> t =
      Create("bob", v1::ROLE_USER, /*expires_in=*/3600);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->expires_unix_ms(), clock_.NowMs() + 3'600'000);
  EXPECT_EQ(t->id(), storage::TokenIdOf(Sha256Hex(t->token())));
  EXPECT_TRUE(auth_->AuthenticateToken(t->token()).ok());
  clock_.Advance(3'600'000 - 1);
  EXPECT_TRUE(auth_->AuthenticateToken(t->token()).ok());  // cached now
  clock_.Advance(1);
  absl::StatusOr<Caller> expired = auth_->AuthenticateToken(t->token());
  EXPECT_TRUE(absl::IsUnauthenticated(expired.status())) << expired.status();
  EXPECT_THAT(expired.status().message(), HasSubstr("token expired"));
  EXPECT_THAT(expired.status().message(), HasSubstr(t->id()));
  // An unknown token reads differently.
  absl::StatusOr<Caller> unknown = auth_->AuthenticateToken("prism_nope");
  EXPECT_TRUE(absl::IsUnauthenticated(unknown.status()));
  EXPECT_THAT(unknown.status().message(), Not(HasSubstr("expired")));
  // A fresh manager (a restarted coordinator) reads the expiry back.
  Reset(AuthOptions());
  EXPECT_THAT(auth_->AuthenticateToken(t->token()).status().message(),
              HasSubstr("token expired"));
}

TEST_F(TokenLifecycleTest, TheMaxLifetimeIsTheDefaultAndTheCap) {
  AuthOptions options;
  options.max_lifetime_seconds = 86400;
  Reset(options);
  absl::StatusOr<v1::CreateTokenResponse> by_default =
      Create("bob", v1::ROLE_USER);
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  EXPECT_EQ(by_default->expires_unix_ms(), clock_.NowMs() + 86'400'000);
  EXPECT_TRUE(Create("bob", v1::ROLE_USER, 86400).ok());
  absl::StatusOr<v1::CreateTokenResponse> too_long =
      Create("bob", v1::ROLE_USER, 86401);
  EXPECT_TRUE(absl::IsInvalidArgument(too_long.status()));
  EXPECT_THAT(too_long.status().message(), HasSubstr("--token-max-lifetime"));
  EXPECT_TRUE(
      absl::IsInvalidArgument(Create("bob", v1::ROLE_USER, -1).status()));
  // Without a maximum a token made without a lifetime never expires.
  Reset(AuthOptions());
  EXPECT_EQ(Create("bob", v1::ROLE_USER)->expires_unix_ms(), 0);
}

TEST_F(TokenLifecycleTest, RevokingRefusesTheCachedTokenOnItsNextUse) {
  absl::StatusOr<v1::CreateTokenResponse> t = Create("bob", v1::ROLE_USER);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(auth_->AuthenticateToken(t->token()).ok());  // now cached
  clock_.Advance(5000);
  absl::StatusOr<v1::RevokeTokenResponse> r = Revoke(admin_, t->id());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->token().revoked_unix_ms(), clock_.NowMs());
  absl::StatusOr<Caller> refused = auth_->AuthenticateToken(t->token());
  EXPECT_TRUE(absl::IsUnauthenticated(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("revoked"));
  // Revoking again changes nothing.
  clock_.Advance(5000);
  EXPECT_EQ(Revoke(admin_, t->id())->token().revoked_unix_ms(),
            r->token().revoked_unix_ms());
  EXPECT_EQ(Listed(t->id()).revoked_unix_ms(), r->token().revoked_unix_ms());
}

TEST_F(TokenLifecycleTest, UsersSeeAndRevokeOnlyTheirOwnTokens) {
  absl::StatusOr<v1::CreateTokenResponse> bob = Create("bob", v1::ROLE_USER);
  absl::StatusOr<v1::CreateTokenResponse> bob2 = Create("bob", v1::ROLE_VIEWER);
  absl::StatusOr<v1::CreateTokenResponse> carol =
      Create("carol", v1::ROLE_USER);
  ASSERT_TRUE(bob.ok() && bob2.ok() && carol.ok());
  const Caller as_bob{"bob", v1::ROLE_USER};
  absl::StatusOr<v1::ListTokensResponse> mine = auth_->ListTokens(as_bob);
  ASSERT_TRUE(mine.ok()) << mine.status();
  ASSERT_EQ(mine->tokens_size(), 2);
  EXPECT_EQ(mine->tokens(0).id(), bob->id());
  EXPECT_EQ(mine->tokens(1).id(), bob2->id());
  EXPECT_EQ(auth_->ListTokens(admin_)->tokens_size(), 4);

  // Another user's token reads as unknown, not as forbidden.
  absl::StatusOr<v1::RevokeTokenResponse> theirs = Revoke(as_bob, carol->id());
  EXPECT_TRUE(absl::IsNotFound(theirs.status())) << theirs.status();
  EXPECT_TRUE(auth_->AuthenticateToken(carol->token()).ok());
  EXPECT_TRUE(Revoke(as_bob, bob2->id()).ok());
  EXPECT_FALSE(auth_->AuthenticateToken(bob2->token()).ok());
  EXPECT_TRUE(auth_->AuthenticateToken(bob->token()).ok());

  EXPECT_TRUE(absl::IsNotFound(Revoke(admin_, "0123456789ab").status()));
  for (const char* bad :
       {"", "abc", "0123456789AB", "0123456789abc", "0123456789ag"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(Revoke(admin_, bad).status())) << bad;
  }
}

TEST_F(TokenLifecycleTest, TheLastUsableAdminTokenCannotBeRevoked) {
  absl::StatusOr<v1::RevokeTokenResponse> last = Revoke(admin_, admin_id_);
  EXPECT_TRUE(absl::IsFailedPrecondition(last.status())) << last.status();
  EXPECT_THAT(last.status().message(), HasSubstr("last usable admin token"));
  // An admin token that has expired does not count as another one.
  absl::StatusOr<v1::CreateTokenResponse> brief =
      Create("root", v1::ROLE_ADMIN, /*expires_in=*/60);
  ASSERT_TRUE(brief.ok());
  clock_.Advance(60'000);
  EXPECT_TRUE(absl::IsFailedPrecondition(Revoke(admin_, admin_id_).status()));
  // A second usable one does.
  absl::StatusOr<v1::CreateTokenResponse> second =
      Create("root", v1::ROLE_ADMIN);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(Revoke(admin_, admin_id_).ok());
  EXPECT_FALSE(auth_->AuthenticateToken("prism_admin").ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(
      Revoke(Caller{"root", v1::ROLE_ADMIN}, second->id()).status()));
  EXPECT_TRUE(auth_->AuthenticateToken(second->token()).ok());
}

TEST_F(TokenLifecycleTest, LastUseMovesAtMostOncePerIntervalAndIsFlushed) {
  absl::StatusOr<v1::CreateTokenResponse> t = Create("bob", v1::ROLE_USER);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(Listed(t->id()).last_used_unix_ms(), 0);
  const int64_t first = clock_.NowMs();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(auth_->AuthenticateToken(t->token()).ok());
  }
  // Nothing is written until a flush.
  EXPECT_EQ(store_->ListTokens("bob")->at(0).last_used_unix_ms(), 0);
  ASSERT_TRUE(auth_->FlushLastUsed().ok());
  EXPECT_EQ(store_->ListTokens("bob")->at(0).last_used_unix_ms(), first);
  // Uses within the interval are not recorded...
  clock_.Advance(kDefaultLastUsedIntervalMs - 1);
  ASSERT_TRUE(auth_->AuthenticateToken(t->token()).ok());
  EXPECT_EQ(Listed(t->id()).last_used_unix_ms(), first);
  // ...the first one after it is, and ListTokens flushes it.
  clock_.Advance(1);
  ASSERT_TRUE(auth_->AuthenticateToken(t->token()).ok());
  EXPECT_EQ(Listed(t->id()).last_used_unix_ms(),
            first + kDefaultLastUsedIntervalMs);
}

TEST_F(TokenLifecycleTest, FailuresFromAPeerAreThrottledNotOtherPeers) {
  AuthOptions options;
  options.throttle.max_failures = 3;
  options.throttle.window_ms = 60'000;
  Reset(options);
  // No token at all is not a guess: it does not count.
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(
        absl::IsUnauthenticated(auth_->Authenticate("", "10.0.0.7").status()));
  }
  EXPECT_TRUE(auth_->Authenticate("Bearer prism_admin", "10.0.0.7").ok());
  EXPECT_TRUE(absl::IsUnauthenticated(
      auth_->Authenticate("Bearer prism_guess1", "10.0.0.7").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(
      auth_->Authenticate("Basic Zm9v", "10.0.0.7").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(
      auth_->AuthenticateToken("prism_guess2", "10.0.0.7").status()));
  // Three failures: even the right token is refused from that peer now.
  absl::StatusOr<Caller> refused =
      auth_->Authenticate("Bearer prism_admin", "10.0.0.7");
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_TRUE(auth_->Authenticate("Bearer prism_admin", "10.0.0.8").ok());
  EXPECT_TRUE(auth_->Authenticate("Bearer prism_admin").ok());
  clock_.Advance(60'000);
  EXPECT_TRUE(auth_->Authenticate("Bearer prism_admin", "10.0.0.7").ok());
}

TEST_F(BootstrapTest, MalformedAuthorizationIsUnauthenticated) {
  EXPECT_TRUE(absl::IsUnauthenticated(auth_->Authenticate("").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(auth_->Authenticate("Token x").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(auth_->Authenticate("Bearer ").status()));
  EXPECT_TRUE(
      absl::IsUnauthenticated(auth_->Authenticate("Bearer nope").status()));
}

TEST_F(BootstrapTest, BlankEnvTokenIsRefusedAndStoresNothing) {
  absl::StatusOr<BootstrapResult> r = auth_->Bootstrap({"", " \t\n "});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("PRISM_ADMIN_TOKEN is set but "
                                              "blank"));
  EXPECT_EQ(*store_->CountTokens(), 0);
  // Nobody is locked out: the hash of "" was not stored.
  EXPECT_FALSE(auth_->AuthenticateToken(" ").ok());
}

TEST_F(BootstrapTest, OverlongTokenIsRefused) {
  absl::StatusOr<BootstrapResult> r =
      auth_->Bootstrap({"", std::string(2000, 'x')});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("2000 bytes; limit 1024"));
  EXPECT_EQ(*store_->CountTokens(), 0);
  EXPECT_TRUE(absl::IsUnauthenticated(
      auth_->AuthenticateToken(std::string(2000, 'x')).status()));
}

TEST_F(BootstrapTest, TokenFileThatIsASymlinkIsNotWrittenThrough) {
  // A dangling link: writing through it would create the target.
  const std::string target = dir_.File("elsewhere.token");
  const std::string link = dir_.File("admin.token");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  absl::StatusOr<BootstrapResult> r = auth_->Bootstrap({link, ""});
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("is a symbolic link"));
  struct stat st;
  EXPECT_NE(lstat(target.c_str(), &st), 0);
  EXPECT_EQ(*store_->CountTokens(), 0);
  // No temp file is left beside it either.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    entries += e.path().filename().string().rfind("admin.token", 0) == 0;
  }
  EXPECT_EQ(entries, 1);  // the link itself
}

TEST_F(BootstrapTest, GeneratedTokenReplacesAStaleTempFileSafely) {
  // A temp name an attacker could guess is not used: a link planted at the
  // old fixed name is left alone.
  const std::string file = dir_.File("admin.token");
  const std::string victim = dir_.File("victim");
  std::ofstream(victim) << "keep me\n";
  ASSERT_EQ(symlink(victim.c_str(), (file + ".tmp").c_str()), 0);
  ASSERT_TRUE(auth_->Bootstrap({file, ""}).ok());
  std::string content;
  std::getline(std::ifstream(victim), content);
  EXPECT_EQ(content, "keep me");
  struct stat st;
  ASSERT_EQ(lstat(file.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600);
}

}  // namespace
}  // namespace prism::server
