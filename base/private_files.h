// Private files: what Prism writes that holds secrets or work (the database
// and its -wal and -shm, backups, model checkpoints, token files) is
// readable and writable by its owner only, whatever the umask: files mode
// 0600 (kPrivateFileMode), the directories Prism creates for them 0700
// (kPrivateDirMode). A directory that already exists is left as it is: its
// mode is the operator's choice.
//
//   PRISM_RETURN_IF_ERROR(CreatePrivateDirectories("/data/checkpoints/t1"));
//   const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, kPrivateFileMode);
//   if (fd < 0) ...;
//   PRISM_RETURN_IF_ERROR(SetPrivateMode(fd, path));
//
// Thread-safety: functions over the filesystem, safe from any thread.
#ifndef PRISM_BASE_PRIVATE_FILES_H_
#define PRISM_BASE_PRIVATE_FILES_H_

#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace prism {

inline constexpr mode_t kPrivateFileMode = 0600;
inline constexpr mode_t kPrivateDirMode = 0700;

// CreatePrivateDirectories creates `dir` and its missing parents with mode
// kPrivateDirMode. OK when `dir` is a directory afterwards (existing ones
// keep their mode); otherwise PermissionDenied (EACCES, EPERM),
// ResourceExhausted (ENOSPC, EDQUOT: the disk, not the caller) or
// Unavailable, naming the directory and the reason.
absl::Status CreatePrivateDirectories(const std::string& dir);

// SetPrivateMode sets the mode of the file open as `fd` (at `path`, for the
// message) to kPrivateFileMode: open(2) with that mode may still come out
// narrower under an unusual umask. Unavailable naming `path` on failure.
absl::Status SetPrivateMode(int fd, const std::string& path);

// TightenToPrivate sets `path` to kPrivateFileMode when it is a regular file
// of this user's that its group or others may use, and returns the mode it
// had; nullopt when there was nothing to do (no such file, not a regular
// file, not ours, already private). Unavailable naming `path` when the
// change fails.
absl::StatusOr<std::optional<mode_t>> TightenToPrivate(const std::string& path);

}  // namespace prism

#endif  // PRISM_BASE_PRIVATE_FILES_H_
