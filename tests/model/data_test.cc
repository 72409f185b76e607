#include "model/data.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace prism::model {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class DataTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.File(name); }
  void WriteBytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  std::string ReadBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Patch overwrites 4 bytes at `offset` with `value`.
  void Patch(const std::string& path, int64_t offset, int32_t value) {
    std::string bytes = ReadBytes(path);
    std::memcpy(bytes.data() + offset, &value, 4);
    WriteBytes(path, bytes);
  }

  ::prism::testing::TempDir dir_{"prism_data_test"};
};

std::vector<uint16_t> Ramp(int n, int modulo) {
  std::vector<uint16_t> tokens(n);
  for (int i = 0; i < n; ++i) tokens[i] = static_cast<uint16_t>(i % modulo);
  return tokens;
}

TEST_F(DataTest, ShardRoundTripsInLlmcLayout) {
  const std::vector<uint16_t> tokens = Ramp(1000, 250);
  ASSERT_TRUE(WriteShard(Path("a.bin"), tokens).ok());
  EXPECT_EQ(fs::file_size(Path("a.bin")), 1024u + 2 * 1000);
  absl::StatusOr<TokenShard> shard = TokenShard::Open(Path("a.bin"), 256);
  ASSERT_TRUE(shard.ok()) << shard.status();
  ASSERT_EQ(shard->size(), 1000);
  EXPECT_EQ(std::vector<uint16_t>(shard->tokens(), shard->tokens() + 1000),
            tokens);
  // No temp files left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), {}), 1);
}

TEST_F(DataTest, CorruptShardsNameTheFileAndOffset) {
  const std::string path = Path("bad.bin");
  ASSERT_TRUE(WriteShard(path, Ramp(100, 200)).ok());
  Patch(path, 0, 1234);
  absl::Status s = TokenShard::Open(path, 256).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path + " at byte 0: bad magic 1234"));

  ASSERT_TRUE(WriteShard(path, Ramp(100, 200)).ok());
  Patch(path, 4, 7);
  EXPECT_THAT(TokenShard::Open(path, 256).status().message(),
              HasSubstr("at byte 4: unsupported version 7"));

  ASSERT_TRUE(WriteShard(path, Ramp(100, 200)).ok());
  std::string bytes = ReadBytes(path);
  WriteBytes(path, bytes.substr(0, 1024 + 2 * 60));
  s = TokenShard::Open(path, 256).status();
  EXPECT_THAT(s.message(), HasSubstr("at byte 1144: truncated"));
  EXPECT_THAT(s.message(), HasSubstr("100 tokens"));

  WriteBytes(path, bytes.substr(0, 10));
  EXPECT_THAT(TokenShard::Open(path, 256).status().message(),
              HasSubstr("at byte 10: truncated header"));

  // Token 199 at index 99 is outside a vocabulary of 150; the first bad one
  // is 150 at index 150 % 200 = 150 -> byte 1024 + 2 * 150.
  ASSERT_TRUE(WriteShard(path, Ramp(300, 200)).ok());
  s = TokenShard::Open(path, 150).status();
  EXPECT_THAT(s.message(), HasSubstr("at byte 1324: token id 150"));

  EXPECT_EQ(TokenShard::Open(Path("missing.bin"), 256).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(DataTest, ValidateShardChecksBytesAsOpenDoesAndCountsTokens) {
  ASSERT_TRUE(WriteShard(Path("a.bin"), Ramp(300, 200)).ok());
  const std::string bytes = ReadBytes(Path("a.bin"));
  absl::StatusOr<int64_t> count = ValidateShard("a.bin", bytes, 256);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 300);
  absl::Status s = ValidateShard("a.bin", bytes, 150).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("a.bin at byte 1324: token id 150"));
  EXPECT_THAT(
      ValidateShard("a.bin", bytes.substr(0, 1023), 256).status().message(),
      HasSubstr("at byte 1023: truncated header"));
  EXPECT_THAT(ValidateShard("a.bin", bytes + "x", 256).status().message(),
              HasSubstr("trailing bytes"));
}

TEST_F(DataTest, ExpandShardPathsListsDirectoriesSorted) {
  fs::create_directories(Path("shards"));
  ASSERT_TRUE(WriteShard(Path("shards/b.bin"), Ramp(10, 5)).ok());
  ASSERT_TRUE(WriteShard(Path("shards/a.bin"), Ramp(10, 5)).ok());
  WriteBytes(Path("shards/notes.txt"), "x");
  absl::StatusOr<std::vector<std::string>> files =
      ExpandShardPaths({Path("shards")});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::vector<std::string>{Path("shards/a.bin"),
                                              Path("shards/b.bin")}));
  EXPECT_EQ(ExpandShardPaths({Path("nope")}).status().code(),
            absl::StatusCode::kNotFound);
  fs::create_directories(Path("empty"));
  EXPECT_THAT(ExpandShardPaths({Path("empty")}).status().message(),
              HasSubstr("has no .bin shards"));
}

TEST(ShardNameTest, ValShardsAreTheFilesNamedVal) {
  EXPECT_TRUE(IsValShardName("fineweb_val_000000.bin"));
  EXPECT_TRUE(IsValShardName("val_000000.bin"));
  EXPECT_FALSE(IsValShardName("fineweb_train_000001.bin"));
  EXPECT_FALSE(IsValShardName("train_000000.bin"));
}

TEST_F(DataTest, SplitShardPathsSendsADirectorysValNamedShardsToVal) {
  fs::create_directories(Path("shards"));
  ASSERT_TRUE(WriteShard(Path("shards/train_000001.bin"), Ramp(10, 5)).ok());
  ASSERT_TRUE(WriteShard(Path("shards/train_000000.bin"), Ramp(10, 5)).ok());
  ASSERT_TRUE(WriteShard(Path("shards/val_000000.bin"), Ramp(10, 5)).ok());
  // A file named directly is train, whatever its name.
  ASSERT_TRUE(WriteShard(Path("val_extra.bin"), Ramp(10, 5)).ok());
  absl::StatusOr<ShardLists> lists =
      SplitShardPaths({Path("shards"), Path("val_extra.bin")});
  ASSERT_TRUE(lists.ok()) << lists.status();
  EXPECT_EQ(lists->train,
            (std::vector<std::string>{Path("shards/train_000000.bin"),
                                      Path("shards/train_000001.bin"),
                                      Path("val_extra.bin")}));
  EXPECT_EQ(lists->val,
            (std::vector<std::string>{Path("shards/val_000000.bin")}));
}

TEST_F(DataTest, TrainWindowsArePureFunctionsOfTheirCoordinates) {
  ASSERT_TRUE(WriteShard(Path("t.bin"), Ramp(5000, 256)).ok());
  ASSERT_TRUE(WriteShard(Path("v.bin"), Ramp(800, 256)).ok());
  absl::StatusOr<TokenDataset> a =
      TokenDataset::Open({Path("t.bin")}, {Path("v.bin")}, 256, 64);
  absl::StatusOr<TokenDataset> b =
      TokenDataset::Open({Path("t.bin")}, {Path("v.bin")}, 256, 64);
  ASSERT_TRUE(a.ok() && b.ok());
  std::set<const uint16_t*> starts;
  for (int step = 0; step < 50; ++step) {
    for (int row = 0; row < 4; ++row) {
      const uint16_t* w = a->TrainWindow(9, step, 0, row);
      EXPECT_EQ(w - a->TrainWindow(9, step, 0, row), 0);
      // Same offset in another dataset object over the same file.
      EXPECT_EQ(w[0], b->TrainWindow(9, step, 0, row)[0]);
      starts.insert(w);
    }
  }
  EXPECT_GT(starts.size(), 150u);  // spread, not stuck
  EXPECT_NE(a->TrainWindow(9, 3, 0, 0), a->TrainWindow(10, 3, 0, 0));
  EXPECT_NE(a->TrainWindow(9, 3, 0, 0), a->TrainWindow(9, 3, 1, 0));
  // Val windows: fixed, evenly spaced, the last one ends at the last token.
  EXPECT_EQ(a->ValWindow(0, 4)[0], 0);
  EXPECT_EQ(a->ValWindow(3, 4)[64], Ramp(800, 256)[799]);
}

TEST_F(DataTest, HeldOutTailIsNeverTrainedOn) {
  ASSERT_TRUE(WriteShard(Path("t.bin"), Ramp(2000, 256)).ok());
  absl::StatusOr<TokenDataset> data =
      TokenDataset::Open({Path("t.bin")}, {}, 256, 16);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->val_tokens(), 100);  // 5%
  EXPECT_EQ(data->train_tokens(), 1900);
  // Val starts right after the last train token of the same mapping.
  const uint16_t* val = data->ValWindow(0, 1);
  EXPECT_EQ(val[0], 1900 % 256);
  for (int step = 0; step < 500; ++step) {
    const uint16_t* w = data->TrainWindow(1, step, 0, 0);
    EXPECT_LE(w + 17, val);
    EXPECT_GE(w, val - 1900);
  }
  // Too small to split.
  ASSERT_TRUE(WriteShard(Path("small.bin"), Ramp(20, 256)).ok());
  EXPECT_THAT(
      TokenDataset::Open({Path("small.bin")}, {}, 256, 16).status().message(),
      HasSubstr("too few to hold out a val split"));
}

TEST_F(DataTest, PrepareSkipsSymlinksAndBinaryFilesAndSplitsEvenly) {
  fs::create_directories(Path("text/sub"));
  std::string text;
  for (int i = 0; i < 3000; ++i)
    text += "line number " + std::to_string(i) + "\n";
  WriteBytes(Path("text/a"), text);
  WriteBytes(Path("text/sub/b"), text);
  WriteBytes(Path("text/a.dat"), std::string("\x01\x00\x02", 3));
  fs::create_symlink(Path("text/a"), Path("text/a.u8"));
  PrepareOptions options;
  options.inputs = {Path("text")};
  options.out_dir = Path("out");
  options.val_fraction = 0.1;
  absl::StatusOr<PrepareResult> result = PrepareTextCorpus(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->files_read, 2);
  EXPECT_EQ(result->files_skipped, 2);  // the symlink and the binary file
  EXPECT_EQ(result->train_tokens + result->val_tokens,
            static_cast<int64_t>(2 * text.size()));
  EXPECT_NEAR(static_cast<double>(result->val_tokens) /
                  (result->train_tokens + result->val_tokens),
              0.1, 0.03);
  absl::StatusOr<TokenShard> val = TokenShard::Open(result->files.val, 256);
  ASSERT_TRUE(val.ok());
  EXPECT_EQ(val->size(), result->val_tokens);

  options.val_fraction = 0.9;
  EXPECT_EQ(PrepareTextCorpus(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.val_fraction = 0.1;
  options.inputs = {Path("missing")};
  EXPECT_EQ(PrepareTextCorpus(options).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(DataTest, DemoCorpusIsPreparedOnceEvenWhenProcessesRace) {
  if (!fs::is_directory(kFortunesDir)) {
    GTEST_SKIP() << "Debian's fortunes package is not installed";
  }
  std::vector<absl::StatusOr<CorpusFiles>> results(3);
  std::vector<std::thread> racers;
  for (auto& r : results) {
    racers.emplace_back([&r, this] { r = EnsureDemoCorpus(dir_.path()); });
  }
  for (std::thread& t : racers) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->train, Path("corpus/fortunes/train_000000.bin"));
  }
  absl::StatusOr<TokenShard> train = TokenShard::Open(results[0]->train, 256);
  absl::StatusOr<TokenShard> val = TokenShard::Open(results[0]->val, 256);
  ASSERT_TRUE(train.ok() && val.ok());
  EXPECT_GT(train->size(), 2000000);  // ~2.6 MB of fortunes, .u8 links skipped
  EXPECT_LT(train->size(), 3000000);
  EXPECT_GT(val->size(), 50000);
  // Only the two shards remain: every racer's temp file was renamed away.
  EXPECT_EQ(std::distance(fs::directory_iterator(Path("corpus/fortunes")), {}),
            2);
}

TEST(DataDirTest, DefaultDataDirFollowsTheEnvironment) {
  setenv("PRISM_DATA_DIR", "/srv/prism", 1);
  EXPECT_EQ(DefaultDataDir(), "/srv/prism");
  setenv("PRISM_DATA_DIR", "", 1);
  EXPECT_EQ(DefaultDataDir(), "./prism-data");
  unsetenv("PRISM_DATA_DIR");
  EXPECT_EQ(DefaultDataDir(), "./prism-data");
}

}  // namespace
}  // namespace prism::model
