#include "server/auth.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/server/coordinator_fixture.h"

namespace prism::server {
namespace {

using testing::FakeClock;
using ::testing::HasSubstr;
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
