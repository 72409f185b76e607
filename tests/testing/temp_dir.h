// TempDir: a fresh directory for a test, under $TMPDIR (or /tmp), removed
// with its content when it goes out of scope, unless $PRISM_KEEP_TEST_DIRS is
// set (to look at a failed test's files).
//
//   TempDir dir("prism_data_test");
//   WriteShard(dir.File("train.bin"), tokens);
//
// Thread-safety: not shared between threads.
#ifndef PRISM_TESTS_TESTING_TEMP_DIR_H_
#define PRISM_TESTS_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace prism::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "prism_test") {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
                          "/" + prefix + "_XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty() && std::getenv("PRISM_KEEP_TEST_DIRS") == nullptr) {
      std::filesystem::remove_all(path_, ignored);
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // path is the directory; empty when it could not be created.
  const std::string& path() const { return path_; }
  // File returns the path of `name` inside the directory.
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace prism::testing

#endif  // PRISM_TESTS_TESTING_TEMP_DIR_H_
