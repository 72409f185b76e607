// Token data: llm.c / modded-nanogpt token shards, the byte tokenizer, the
// demo corpus, and deterministic batch sampling. No torch here.
//
// A shard is a header of 256 little-endian int32 ([0] = 20240520 magic,
// [1] = 1 version, [2] = token count) followed by that many uint16 tokens; the
// file size must be exactly 1024 + 2 * tokens. Readers check every token
// against the vocabulary once, at open, so training never sees a bad id.
//
//   absl::StatusOr<CorpusFiles> corpus = EnsureDemoCorpus(DefaultDataDir());
//   absl::StatusOr<TokenDataset> data = TokenDataset::Open(
//       {corpus->train}, {corpus->val}, /*vocab_size=*/256, /*context=*/128);
//   const uint16_t* w = data->TrainWindow(/*seed=*/0, /*step=*/7,
//                                         /*micro=*/0, /*row=*/3);
//   // w[0..context] are context + 1 tokens: inputs w[0..T), targets w[1..T].
//
// Batches are a pure function of (seed, step, micro-step, row) through a
// counter-based hash, so a resumed run needs no data cursor beyond its step
// and every schedule sees the same data for a seed. Validation windows are
// fixed (evenly spaced over the val tokens) and independent of the seed, so
// every trial is scored on the same text.
//
// Thread-safety: TokenShard and TokenDataset are immutable after Open and
// safe to share between threads. The file functions are safe to call from
// several processes at once (they write a temp file and rename it).
#ifndef PRISM_MODEL_DATA_H_
#define PRISM_MODEL_DATA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism::model {

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr int kShardHeaderInts = 256;
inline constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;
inline constexpr int kByteVocabSize = 256;

// TokenShard is one shard file, memory-mapped read-only.
class TokenShard {
 public:
  // Open maps `path` and validates it. Returns NotFound when the file is
  // missing, InvalidArgument when it is not a regular file (a FIFO, a
  // device: opened without blocking, never read), DataLoss naming the file and
  // byte offset for a wrong magic or version, a size that disagrees with the
  // header, or the first token id
  // >= vocab_size.
  static absl::StatusOr<TokenShard> Open(const std::string& path,
                                         int vocab_size);

  TokenShard(TokenShard&& other) noexcept;
  TokenShard& operator=(TokenShard&& other) noexcept;
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;
  ~TokenShard();

  const std::string& path() const { return path_; }
  const uint16_t* tokens() const { return tokens_; }
  int64_t size() const { return size_; }

 private:
  TokenShard() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const uint16_t* tokens_ = nullptr;
  int64_t size_ = 0;
};

// ValidateShard checks the bytes of a whole shard file (`name` labels the
// errors) and returns its token count; TokenShard::Open runs it on the
// mapping. DataLoss naming `name` and the byte offset for a truncated header
// and the other errors listed for Open.
absl::StatusOr<int64_t> ValidateShard(absl::string_view name,
                                      absl::string_view bytes, int vocab_size);

// WriteShard writes `tokens` as a shard at `path` (temp file + rename, so a
// reader never sees a partial file). Returns InvalidArgument for more tokens
// than the int32 header can count, Internal for I/O errors.
absl::Status WriteShard(const std::string& path,
                        const std::vector<uint16_t>& tokens);

// ExpandShardPaths turns files and directories into a sorted list of shard
// files (a directory contributes its *.bin files, not recursively). Returns
// NotFound for a missing path or a directory without .bin files,
// InvalidArgument for a path that is neither a regular file nor a directory.
absl::StatusOr<std::vector<std::string>> ExpandShardPaths(
    const std::vector<std::string>& paths);

struct ShardLists {
  std::vector<std::string> train;
  std::vector<std::string> val;
};

// IsValShardName is whether a shard file found in a data directory, named
// `file_name` (without its directory), holds val tokens: its name contains
// "val" (llm.c's fineweb_val_000000.bin, `prism data prepare`'s
// val_000000.bin). The coordinator's bill (server/core/plan.cc) counts train
// tokens by the same rule.
bool IsValShardName(absl::string_view file_name);

// SplitShardPaths sorts files and directories into train and val shards: in
// a directory, *.bin files for which IsValShardName holds are val and the
// rest train; files named directly are train. Returns ExpandShardPaths'
// errors.
absl::StatusOr<ShardLists> SplitShardPaths(
    const std::vector<std::string>& paths);

// ByteTokenize maps text to the byte vocabulary (one token per byte).
std::vector<uint16_t> ByteTokenize(absl::string_view text);

// DefaultDataDir is $PRISM_DATA_DIR, or "./prism-data" when unset or empty.
std::string DefaultDataDir();

struct CorpusFiles {
  std::string train;
  std::string val;
};

// PrepareOptions says what `prism data prepare` tokenizes.
struct PrepareOptions {
  // Text files or directories (walked recursively; symlinks inside
  // directories and files containing NUL bytes, such as fortune's .dat
  // indexes, are skipped).
  std::vector<std::string> inputs;
  std::string out_dir;
  // Every round(1/val_fraction)-th ~4 KiB chunk of text (cut at a line end)
  // goes to the val shard, so val covers every input evenly.
  double val_fraction = 0.05;
};

struct PrepareResult {
  CorpusFiles files;
  int64_t files_read = 0;
  int64_t files_skipped = 0;
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
};

// PrepareTextCorpus byte-tokenizes the inputs into <out_dir>/train_000000.bin
// and <out_dir>/val_000000.bin. Returns InvalidArgument for a val_fraction
// outside (0, 0.5] or no usable text, NotFound for a missing input, Internal
// for I/O errors.
absl::StatusOr<PrepareResult> PrepareTextCorpus(const PrepareOptions& options);

// kFortunesDir is where Debian's `fortunes` package keeps its text.
inline constexpr char kFortunesDir[] = "/usr/share/games/fortunes";

// EnsureDemoCorpus returns the demo corpus shards under
// <data_dir>/corpus/fortunes/, preparing them from kFortunesDir first when
// they are missing. Safe when several processes race. Returns
// FailedPrecondition when the fortunes package is not installed.
absl::StatusOr<CorpusFiles> EnsureDemoCorpus(const std::string& data_dir);

// TokenDataset holds the train and val shards of one run and hands out
// windows of context + 1 tokens.
class TokenDataset {
 public:
  // Open validates every shard. Train directories are split as
  // SplitShardPaths does; with empty val_paths their val shard is used, or
  // else the last 5% of the last train shard is held out as val (and never
  // trained on). Returns the shard errors above, or InvalidArgument when a
  // split has fewer than context + 1 tokens.
  static absl::StatusOr<TokenDataset> Open(
      const std::vector<std::string>& train_paths,
      const std::vector<std::string>& val_paths, int vocab_size, int context);

  int context() const { return context_; }
  int64_t train_tokens() const { return train_tokens_; }
  int64_t val_tokens() const { return val_size_; }

  // TrainWindow returns context + 1 tokens for (seed, step, micro, row): a
  // window start drawn uniformly over every train shard by a counter-based
  // hash, so the batch is a pure function of its coordinates.
  const uint16_t* TrainWindow(uint64_t seed, int64_t step, int micro,
                              int row) const;

  // ValWindow returns the k-th of `count` fixed val windows, evenly spaced
  // over the val tokens (the same for every seed and schedule).
  const uint16_t* ValWindow(int64_t k, int64_t count) const;

 private:
  struct Span {
    const uint16_t* tokens = nullptr;
    int64_t size = 0;
  };
  TokenDataset() = default;

  std::vector<std::shared_ptr<TokenShard>> files_;  // keeps the mappings
  std::vector<Span> train_;
  std::vector<int64_t> window_ends_;  // prefix sums of windows per span
  int64_t train_windows_ = 0;
  int64_t train_tokens_ = 0;
  const uint16_t* val_ = nullptr;
  int64_t val_size_ = 0;
  int context_ = 0;
};

// MixBits is the counter-based hash behind batch sampling (SplitMix64's
// finalizer over the combined coordinates); exposed for tests.
uint64_t MixBits(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);

}  // namespace prism::model

#endif  // PRISM_MODEL_DATA_H_
