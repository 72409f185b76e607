#include "base/private_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace prism {
namespace {

absl::Status FileError(int error, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  if (error == EACCES || error == EPERM) {
    return absl::PermissionDeniedError(message);
  }
  if (error == ENOSPC || error == EDQUOT) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::UnavailableError(message);
}

}  // namespace

absl::Status CreatePrivateDirectories(const std::string& dir) {
  std::filesystem::path partial;
  for (const std::filesystem::path& part : std::filesystem::path(dir)) {
    partial /= part;
    if (part.empty()) continue;  // the "" after a trailing slash
    if (mkdir(partial.c_str(), kPrivateDirMode) == 0) {
      // mkdir's mode passes through the umask; a umask of 0200 would leave
      // a directory its owner cannot write.
      if (chmod(partial.c_str(), kPrivateDirMode) != 0) {
        return FileError(
            errno, absl::StrCat("cannot set the mode of ", partial.string()));
      }
      continue;
    }
    const int error = errno;
    struct stat st;
    if (error == EEXIST && stat(partial.c_str(), &st) == 0 &&
        S_ISDIR(st.st_mode)) {
      continue;
    }
    return FileError(error, absl::StrCat("cannot create ", partial.string()));
  }
  return absl::OkStatus();
}

absl::Status SetPrivateMode(int fd, const std::string& path) {
  if (fchmod(fd, kPrivateFileMode) != 0) {
    return FileError(errno, absl::StrCat("cannot set the mode of ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<mode_t>> TightenToPrivate(
    const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_uid != geteuid() || (st.st_mode & 077) == 0) {
    return std::nullopt;
  }
  const mode_t was = st.st_mode & 07777;
  if (chmod(path.c_str(), kPrivateFileMode) != 0) {
    return FileError(errno, absl::StrCat("cannot set the mode of ", path));
  }
  return was;
}

}  // namespace prism
