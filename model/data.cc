#include "model/data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model/internal/files.h"

namespace prism::model {
namespace {

namespace fs = std::filesystem;

// The shard header is little-endian; every host we build for (x86-64, arm64)
// is too, so header fields and tokens are read in place.
int32_t HeaderField(const unsigned char* base, int index) {
  int32_t value;
  std::memcpy(&value, base + 4 * index, sizeof value);
  return value;
}

absl::Status ShardError(absl::string_view path, int64_t offset,
                        absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("token shard ", path, " at byte ", offset, ": ", what));
}

// SplitMix64's finalizer: a bijective 64-bit mix with full avalanche.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path));
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// CollectTextFiles expands the inputs into a sorted list of regular files.
absl::StatusOr<std::vector<std::string>> CollectTextFiles(
    const std::vector<std::string>& inputs, int64_t* skipped) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    const fs::file_status status = fs::status(input, ec);
    if (ec || !fs::exists(status)) {
      return absl::NotFoundError(absl::StrCat("input ", input, " not found"));
    }
    if (fs::is_regular_file(status)) {
      files.push_back(input);
      continue;
    }
    if (!fs::is_directory(status)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", input, " is not a file or directory"));
    }
    // Symlinks inside a directory are skipped: Debian's fortunes ships
    // `name.u8 -> name`, which would count every text twice.
    for (auto it = fs::recursive_directory_iterator(input, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_symlink(ec)) {
        ++*skipped;
        continue;
      }
      if (it->is_regular_file(ec)) files.push_back(it->path().string());
    }
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot list ", input, ": ", ec.message()));
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

}  // namespace

uint64_t MixBits(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = Mix(seed);
  x = Mix(x ^ a);
  x = Mix(x ^ (b * 0xd1b54a32d192ed03ULL));
  return Mix(x ^ (c * 0x8cb92ba72f3d8dd7ULL));
}

absl::StatusOr<int64_t> ValidateShard(absl::string_view name,
                                      absl::string_view bytes, int vocab_size) {
  const int64_t file_bytes = static_cast<int64_t>(bytes.size());
  if (file_bytes < kShardHeaderBytes) {
    return ShardError(
        name, file_bytes,
        absl::StrCat("truncated header (", file_bytes,
                     " bytes, the header alone is ", kShardHeaderBytes, ")"));
  }
  const auto* base = reinterpret_cast<const unsigned char*>(bytes.data());
  const int32_t magic = HeaderField(base, 0);
  if (magic != kShardMagic) {
    return ShardError(
        name, 0,
        absl::StrCat("bad magic ", magic, " (expected ", kShardMagic, ")"));
  }
  const int32_t version = HeaderField(base, 1);
  if (version != kShardVersion) {
    return ShardError(name, 4,
                      absl::StrCat("unsupported version ", version,
                                   " (expected ", kShardVersion, ")"));
  }
  const int32_t count = HeaderField(base, 2);
  if (count < 0) {
    return ShardError(name, 8, absl::StrCat("negative token count ", count));
  }
  const int64_t expected = kShardHeaderBytes + 2 * int64_t{count};
  if (file_bytes != expected) {
    return ShardError(
        name, std::min(file_bytes, expected),
        absl::StrCat(file_bytes < expected ? "truncated: " : "trailing bytes: ",
                     "the header says ", count, " tokens (", expected,
                     " bytes) but the file has ", file_bytes, " bytes"));
  }
  const unsigned char* tokens = base + kShardHeaderBytes;
  for (int64_t i = 0; i < count; ++i) {
    uint16_t token;
    std::memcpy(&token, tokens + 2 * i, sizeof token);
    if (token >= vocab_size) {
      return ShardError(
          name, kShardHeaderBytes + 2 * i,
          absl::StrCat("token id ", token, " is outside the vocabulary (size ",
                       vocab_size, ")"));
    }
  }
  return int64_t{count};
}

absl::StatusOr<TokenShard> TokenShard::Open(const std::string& path,
                                            int vocab_size) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
  // below with anything else that is not a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("token shard ", path, " not found"));
    }
    return absl::NotFoundError(absl::StrCat("cannot open token shard ", path,
                                            ": ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return absl::InternalError(absl::StrCat("cannot stat ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("token shard ", path, " is not a regular file"));
  }
  const int64_t file_bytes = st.st_size;
  if (file_bytes < kShardHeaderBytes) {
    ::close(fd);
    return ShardError(
        path, file_bytes,
        absl::StrCat("truncated header (", file_bytes,
                     " bytes, the header alone is ", kShardHeaderBytes, ")"));
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(file_bytes), PROT_READ,
                     MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    return absl::InternalError(
        absl::StrCat("cannot map ", path, ": ", std::strerror(errno)));
  }
  TokenShard shard;
  shard.path_ = path;
  shard.map_ = map;
  shard.map_bytes_ = static_cast<size_t>(file_bytes);
  absl::StatusOr<int64_t> count =
      ValidateShard(path,
                    absl::string_view(static_cast<const char*>(map),
                                      static_cast<size_t>(file_bytes)),
                    vocab_size);
  if (!count.ok()) return count.status();
  shard.tokens_ = reinterpret_cast<const uint16_t*>(
      static_cast<const unsigned char*>(map) + kShardHeaderBytes);
  shard.size_ = *count;
  return shard;
}

TokenShard::TokenShard(TokenShard&& other) noexcept {
  *this = std::move(other);
}

TokenShard& TokenShard::operator=(TokenShard&& other) noexcept {
  if (this != &other) {
    if (map_ != nullptr) ::munmap(map_, map_bytes_);
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
    tokens_ = std::exchange(other.tokens_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

TokenShard::~TokenShard() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

absl::Status WriteShard(const std::string& path,
                        const std::vector<uint16_t>& tokens) {
  if (tokens.size() > static_cast<size_t>(INT32_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", path, ": ", tokens.size(),
                     " tokens do not fit the int32 header"));
  }
  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = static_cast<int32_t>(tokens.size());
  return internal::WriteFileAtomically(
      path, {{header, sizeof header},
             {tokens.data(), tokens.size() * sizeof(uint16_t)}});
}

absl::StatusOr<std::vector<std::string>> ExpandShardPaths(
    const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      // increment(ec) rather than a range-for: listing errors must not throw.
      for (auto it = fs::directory_iterator(path, ec);
           !ec && it != fs::directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".bin") {
          found.push_back(it->path().string());
        }
      }
      if (found.empty()) {
        return absl::NotFoundError(
            absl::StrCat("data directory ", path, " has no .bin shards"));
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(path, ec)) {
      files.push_back(path);
    } else if (fs::exists(path, ec)) {
      // A FIFO would block the trainer, a device never end.
      return absl::InvalidArgumentError(
          absl::StrCat("data path ", path,
                       " is neither a regular file nor a directory of shards"));
    } else {
      return absl::NotFoundError(
          absl::StrCat("data path ", path, " not found"));
    }
  }
  return files;
}

bool IsValShardName(absl::string_view file_name) {
  return absl::StrContains(file_name, "val");
}

absl::StatusOr<ShardLists> SplitShardPaths(
    const std::vector<std::string>& paths) {
  ShardLists lists;
  for (const std::string& path : paths) {
    absl::StatusOr<std::vector<std::string>> files = ExpandShardPaths({path});
    if (!files.ok()) return files.status();
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      lists.train.push_back(path);
      continue;
    }
    for (const std::string& file : *files) {
      const bool val = IsValShardName(fs::path(file).filename().string());
      (val ? lists.val : lists.train).push_back(file);
    }
  }
  return lists;
}

std::vector<uint16_t> ByteTokenize(absl::string_view text) {
  std::vector<uint16_t> tokens(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    tokens[i] = static_cast<unsigned char>(text[i]);
  }
  return tokens;
}

std::string DefaultDataDir() {
  const char* dir = std::getenv("PRISM_DATA_DIR");
  return dir != nullptr && dir[0] != '\0' ? dir : "./prism-data";
}

absl::StatusOr<PrepareResult> PrepareTextCorpus(const PrepareOptions& options) {
  if (!(options.val_fraction > 0.0 && options.val_fraction <= 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "val fraction must be in (0, 0.5], got ", options.val_fraction));
  }
  if (options.inputs.empty()) {
    return absl::InvalidArgumentError("no input files or directories given");
  }
  PrepareResult result;
  absl::StatusOr<std::vector<std::string>> files =
      CollectTextFiles(options.inputs, &result.files_skipped);
  if (!files.ok()) return files.status();

  std::string text;
  for (const std::string& file : *files) {
    absl::StatusOr<std::string> content = ReadWholeFile(file);
    if (!content.ok()) return content.status();
    // A NUL byte means a binary file (e.g. fortune's .dat index), not text.
    if (content->find('\0') != std::string::npos) {
      ++result.files_skipped;
      continue;
    }
    ++result.files_read;
    text += *content;
    if (!text.empty() && text.back() != '\n') text += '\n';
  }

  // Chunks of ~4 KiB cut at line ends; every period-th chunk is val.
  constexpr size_t kChunkBytes = 4096;
  const int64_t period =
      std::max<int64_t>(2, std::llround(1.0 / options.val_fraction));
  std::vector<uint16_t> train;
  std::vector<uint16_t> val;
  train.reserve(text.size());
  size_t start = 0;
  for (int64_t chunk = 0; start < text.size(); ++chunk) {
    size_t end = text.find('\n', std::min(text.size(), start + kChunkBytes));
    end = end == std::string::npos ? text.size() : end + 1;
    std::vector<uint16_t>& out = chunk % period == period - 1 ? val : train;
    for (size_t i = start; i < end; ++i) {
      out.push_back(static_cast<unsigned char>(text[i]));
    }
    start = end;
  }
  if (train.empty() || val.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not enough text to split into train and val: ", text.size(),
        " bytes from ", result.files_read, " files (need at least ",
        period * kChunkBytes, ")"));
  }
  result.files.train =
      (fs::path(options.out_dir) / "train_000000.bin").string();
  result.files.val = (fs::path(options.out_dir) / "val_000000.bin").string();
  result.train_tokens = static_cast<int64_t>(train.size());
  result.val_tokens = static_cast<int64_t>(val.size());
  if (absl::Status s = WriteShard(result.files.val, val); !s.ok()) return s;
  if (absl::Status s = WriteShard(result.files.train, train); !s.ok()) return s;
  return result;
}

absl::StatusOr<CorpusFiles> EnsureDemoCorpus(const std::string& data_dir) {
  const fs::path dir = fs::path(data_dir) / "corpus" / "fortunes";
  CorpusFiles files{(dir / "train_000000.bin").string(),
                    (dir / "val_000000.bin").string()};
  if (TokenShard::Open(files.train, kByteVocabSize).ok() &&
      TokenShard::Open(files.val, kByteVocabSize).ok()) {
    return files;
  }
  std::error_code ec;
  if (!fs::is_directory(kFortunesDir, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the demo corpus needs Debian's fortunes package (", kFortunesDir,
        " is missing); install it or pass token shards with --data"));
  }
  PrepareOptions options;
  options.inputs = {kFortunesDir};
  options.out_dir = dir.string();
  absl::StatusOr<PrepareResult> prepared = PrepareTextCorpus(options);
  if (!prepared.ok()) return prepared.status();
  return prepared->files;
}

absl::StatusOr<TokenDataset> TokenDataset::Open(
    const std::vector<std::string>& train_paths,
    const std::vector<std::string>& val_paths, int vocab_size, int context) {
  if (context <= 0) {
    return absl::InvalidArgumentError("context must be positive");
  }
  if (train_paths.empty()) {
    return absl::InvalidArgumentError("no train shards given");
  }
  absl::StatusOr<ShardLists> split = SplitShardPaths(train_paths);
  if (!split.ok()) return split.status();
  if (split->train.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no train shards among ", train_paths.front(),
                     train_paths.size() > 1 ? " ..." : ""));
  }
  const std::vector<std::string>* train_files = &split->train;
  absl::StatusOr<std::vector<std::string>> val_files =
      val_paths.empty() ? split->val : ExpandShardPaths(val_paths);
  if (!val_files.ok()) return val_files.status();

  TokenDataset data;
  data.context_ = context;
  auto open = [&](const std::string& path)
      -> absl::StatusOr<std::shared_ptr<TokenShard>> {
    absl::StatusOr<TokenShard> shard = TokenShard::Open(path, vocab_size);
    if (!shard.ok()) return shard.status();
    data.files_.push_back(std::make_shared<TokenShard>(*std::move(shard)));
    return data.files_.back();
  };
  for (const std::string& path : *train_files) {
    absl::StatusOr<std::shared_ptr<TokenShard>> shard = open(path);
    if (!shard.ok()) return shard.status();
    data.train_.push_back({(*shard)->tokens(), (*shard)->size()});
  }
  const int64_t window = int64_t{context} + 1;
  if (val_files->empty()) {
    // Hold out the tail of the last train shard.
    Span& last = data.train_.back();
    const int64_t held_out = std::max(last.size / 20, window);
    if (last.size - held_out < window) {
      return absl::InvalidArgumentError(
          absl::StrCat("train shard ", train_files->back(), " has ", last.size,
                       " tokens, too few to hold out a val split for context ",
                       context, "; pass val shards"));
    }
    last.size -= held_out;
    data.val_ = last.tokens + last.size;
    data.val_size_ = held_out;
  } else {
    if (val_files->size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("give one val shard (got ", val_files->size(), ")"));
    }
    absl::StatusOr<std::shared_ptr<TokenShard>> shard =
        open(val_files->front());
    if (!shard.ok()) return shard.status();
    data.val_ = (*shard)->tokens();
    data.val_size_ = (*shard)->size();
    if (data.val_size_ < window) {
      return absl::InvalidArgumentError(absl::StrCat(
          "val shard ", val_files->front(), " has ", data.val_size_,
          " tokens, fewer than context + 1 = ", window));
    }
  }
  for (const Span& span : data.train_) {
    data.train_tokens_ += span.size;
    data.train_windows_ += std::max<int64_t>(0, span.size - context);
    data.window_ends_.push_back(data.train_windows_);
  }
  if (data.train_windows_ == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no train shard has more than context + 1 = ", window, " tokens"));
  }
  return data;
}

const uint16_t* TokenDataset::TrainWindow(uint64_t seed, int64_t step,
                                          int micro, int row) const {
  const uint64_t u =
      MixBits(seed, static_cast<uint64_t>(step), static_cast<uint64_t>(micro),
              static_cast<uint64_t>(row)) %
      static_cast<uint64_t>(train_windows_);
  const auto it = std::upper_bound(window_ends_.begin(), window_ends_.end(),
                                   static_cast<int64_t>(u));
  const size_t span = static_cast<size_t>(it - window_ends_.begin());
  const int64_t first = span == 0 ? 0 : window_ends_[span - 1];
  return train_[span].tokens + (static_cast<int64_t>(u) - first);
}

const uint16_t* TokenDataset::ValWindow(int64_t k, int64_t count) const {
  const int64_t windows = val_size_ - context_;  // valid start positions
  const int64_t start = count <= 1 ? 0 : (k * (windows - 1)) / (count - 1);
  return val_ + start;
}

}  // namespace prism::model
