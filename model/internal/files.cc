#include "model/internal/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace prism::model::internal {

namespace fs = std::filesystem;

std::string UniqueTempPath(const std::string& path) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrCat(path, ".tmp.", getpid(), ".", rng());
}

absl::Status WriteFileAtomically(
    const std::string& path,
    const std::vector<std::pair<const void*, size_t>>& parts) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", parent.string(), ": ", ec.message()));
  }
  const std::string temp = UniqueTempPath(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create ", temp, ": ", std::strerror(errno)));
  }
  for (const auto& [data, bytes] : parts) {
    const char* p = static_cast<const char*>(data);
    size_t left = bytes;
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string error = std::strerror(errno);
        ::close(fd);
        ::unlink(temp.c_str());
        return absl::InternalError(
            absl::StrCat("cannot write ", temp, ": ", error));
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot flush ", temp, ": ", std::strerror(errno)));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string error = std::strerror(errno);
    ::unlink(temp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot rename ", temp, " to ", path, ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace prism::model::internal
