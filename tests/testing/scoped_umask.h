// ScopedUmask: sets the process's umask for the rest of a scope and puts the
// old one back, so a test can check what files come out as under any umask.
//
//   ScopedUmask open_to_all(0);
//   SaveCheckpoint(dir, checkpoint);  // still 0600
//
// Thread-safety: the umask is process-wide; use it where no other thread
// creates files.
#ifndef PRISM_TESTS_TESTING_SCOPED_UMASK_H_
#define PRISM_TESTS_TESTING_SCOPED_UMASK_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace prism::testing {

class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(umask(mask)) {}
  ~ScopedUmask() { umask(old_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  const mode_t old_;
};

// ModeOf returns the permission bits of `path` (following links), or -1.
inline int ModeOf(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

}  // namespace prism::testing

#endif  // PRISM_TESTS_TESTING_SCOPED_UMASK_H_
