#include "base/data_roots.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace prism {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> Resolve(const std::string& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (!ec) absolute = fs::weakly_canonical(absolute, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve ", path, ": ", ec.message()));
  }
  std::string resolved = absolute.lexically_normal().string();
  while (resolved.size() > 1 && resolved.back() == '/') resolved.pop_back();
  return resolved;
}

bool Inside(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || absl::StartsWith(path, absl::StrCat(root, "/"));
}

}  // namespace

std::string DefaultDataRoot() {
  const char* dir = std::getenv("PRISM_DATA_DIR");
  const std::string data_dir =
      dir != nullptr && dir[0] != '\0' ? dir : "./prism-data";
  return (fs::path(data_dir) / "corpus").string();
}

absl::StatusOr<std::vector<std::string>> ResolveDataRoots(
    const std::vector<std::string>& roots) {
  std::vector<std::string> resolved;
  for (const std::string& root : roots) {
    if (root.empty()) {
      return absl::InvalidArgumentError("--data-root: empty path");
    }
    absl::StatusOr<std::string> r = Resolve(root);
    if (!r.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--data-root: ", r.status().message()));
    }
    resolved.push_back(*std::move(r));
  }
  return resolved;
}

absl::StatusOr<std::string> ConfineDataPath(
    const std::string& path, const std::vector<std::string>& roots) {
  if (path.empty()) return absl::InvalidArgumentError("empty data path");
  absl::StatusOr<std::string> resolved = Resolve(path);
  if (!resolved.ok()) return resolved.status();
  for (const std::string& root : roots) {
    if (Inside(*resolved, root)) return resolved;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "data path ", path,
      *resolved == path ? "" : absl::StrCat(" (resolved: ", *resolved, ")"),
      " is outside the data roots: ",
      roots.empty() ? "(none)" : absl::StrJoin(roots, ", "), " (--data-root)"));
}

}  // namespace prism
