// Data roots: paths resolve (`..`, symlinks) before they are held to the
// roots, and the refusal names the path and the roots.
#include "base/data_roots.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class DataRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/prism_roots_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/root/shards");
    std::ofstream(dir_ + "/root/shards/train_000.bin") << "x";
    std::ofstream(dir_ + "/secret") << "s";
    fs::create_symlink(dir_ + "/secret", dir_ + "/root/shards/leak.bin");
    fs::create_directory_symlink(dir_, dir_ + "/root/up");
    absl::StatusOr<std::vector<std::string>> roots =
        ResolveDataRoots({dir_ + "/root/"});
    ASSERT_TRUE(roots.ok()) << roots.status();
    roots_ = *roots;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
  std::vector<std::string> roots_;
};

TEST_F(DataRootsTest, RootsResolveWithoutTrailingSlash) {
  EXPECT_EQ(roots_, std::vector<std::string>{dir_ + "/root"});
  EXPECT_FALSE(ResolveDataRoots({""}).ok());
}

TEST_F(DataRootsTest, PathsInsideAreResolved) {
  absl::StatusOr<std::string> file =
      ConfineDataPath(dir_ + "/root/shards/./train_000.bin", roots_);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file, dir_ + "/root/shards/train_000.bin");
  EXPECT_TRUE(ConfineDataPath(dir_ + "/root/shards", roots_).ok());
  EXPECT_TRUE(ConfineDataPath(dir_ + "/root", roots_).ok());
  // Not there yet (a mount the coordinator lacks): judged by its name.
  EXPECT_TRUE(ConfineDataPath(dir_ + "/root/later/x.bin", roots_).ok());
}

TEST_F(DataRootsTest, DotDotSymlinksAndNeighboursAreOutside) {
  for (const std::string& path :
       {std::string("/etc/shadow"), dir_ + "/root/../secret",
        dir_ + "/root/shards/leak.bin", dir_ + "/root/up/secret",
        dir_ + "/rootless/x.bin", std::string("relative/../../x")}) {
    absl::StatusOr<std::string> r = ConfineDataPath(path, roots_);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(path));
    EXPECT_THAT(std::string(r.status().message()),
                HasSubstr("is outside the data roots: " + dir_ + "/root"));
  }
  EXPECT_FALSE(ConfineDataPath("", roots_).ok());
  EXPECT_FALSE(ConfineDataPath(dir_ + "/root/x", {}).ok());
}

TEST_F(DataRootsTest, DefaultRootIsTheDemoCorpusUnderTheDataDir) {
  setenv("PRISM_DATA_DIR", "/srv/prism", 1);
  EXPECT_EQ(DefaultDataRoot(), "/srv/prism/corpus");
  unsetenv("PRISM_DATA_DIR");
  EXPECT_EQ(DefaultDataRoot(), "./prism-data/corpus");
}

}  // namespace
}  // namespace prism
