#include "base/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/scoped_umask.h"
#include "tests/testing/temp_dir.h"

namespace prism {
namespace {

using testing::ModeOf;
using testing::ScopedUmask;
using testing::TempDir;

TEST(CreatePrivateDirectoriesTest, CreatesEveryMissingLevel0700UnderAnyUmask) {
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  for (const mode_t mask : {mode_t{0}, mode_t{0277}}) {
    const std::string base = dir.File(mask == 0 ? "open" : "narrow");
    ScopedUmask umask(mask);
    ASSERT_TRUE(CreatePrivateDirectories(base + "/a/b/").ok());
    EXPECT_EQ(ModeOf(base), 0700) << "umask " << mask;
    EXPECT_EQ(ModeOf(base + "/a"), 0700) << "umask " << mask;
    EXPECT_EQ(ModeOf(base + "/a/b"), 0700) << "umask " << mask;
  }
  // What existed keeps its mode; a second call is a no-op.
  EXPECT_EQ(ModeOf(dir.path()), 0755);
  EXPECT_TRUE(CreatePrivateDirectories(dir.File("open/a/b")).ok());
}

TEST(CreatePrivateDirectoriesTest, AFileInTheWayIsAnErrorNamingIt) {
  TempDir dir;
  std::ofstream(dir.File("file")) << "x";
  const absl::Status status = CreatePrivateDirectories(dir.File("file/sub"));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(dir.File("file")), absl::string_view::npos)
      << status;
}

TEST(SetPrivateModeTest, OverridesTheUmask) {
  TempDir dir;
  const std::string path = dir.File("f");
  ScopedUmask umask(0277);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT, kPrivateFileMode);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ModeOf(path), 0400);  // what open(2) alone leaves
  EXPECT_TRUE(SetPrivateMode(fd, path).ok());
  close(fd);
  EXPECT_EQ(ModeOf(path), 0600);
}

TEST(TightenToPrivateTest, TightensOnlyFilesOpenToOthers) {
  TempDir dir;
  const std::string path = dir.File("db");
  std::ofstream(path) << "x";
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  absl::StatusOr<std::optional<mode_t>> was = TightenToPrivate(path);
  ASSERT_TRUE(was.ok()) << was.status();
  EXPECT_EQ(*was, std::optional<mode_t>(0644));
  EXPECT_EQ(ModeOf(path), 0600);

  // Already private, owner-only read, absent, or a directory: nothing to do.
  EXPECT_EQ(*TightenToPrivate(path), std::nullopt);
  ASSERT_EQ(chmod(path.c_str(), 0400), 0);
  EXPECT_EQ(*TightenToPrivate(path), std::nullopt);
  EXPECT_EQ(ModeOf(path), 0400);
  EXPECT_EQ(*TightenToPrivate(dir.File("missing")), std::nullopt);
  EXPECT_EQ(*TightenToPrivate(dir.path()), std::nullopt);
}

}  // namespace
}  // namespace prism
