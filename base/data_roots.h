// Data roots: the directories a trial's data paths must lie in. A spec names
// token shards by path, and every worker that leases its trials opens them:
// without a bound a user could make the fleet read any file a worker can
// (`/etc/shadow`, a FIFO that blocks, `/dev/zero`). The coordinator refuses
// a spec whose paths resolve outside its --data-root directories, and each
// worker checks again against its own before opening anything.
//
//   absl::StatusOr<std::vector<std::string>> roots =
//       ResolveDataRoots({"/srv/shards"});
//   PRISM_RETURN_IF_ERROR(ConfineDataPath("/srv/shards/../x", *roots)
//                             .status());   // InvalidArgument
//
// Paths are made absolute against the current directory, then resolved:
// `.` and `..` folded and every symlink of the part that exists followed
// (std::filesystem::weakly_canonical), so neither `..` nor a link leads out.
//
// Thread-safety: pure functions (they read the filesystem).
#ifndef PRISM_BASE_DATA_ROOTS_H_
#define PRISM_BASE_DATA_ROOTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace prism {

// DefaultDataRoot is where the demo corpus lives: `<data dir>/corpus`, the
// data dir being $PRISM_DATA_DIR or ./prism-data (model::DefaultDataDir).
std::string DefaultDataRoot();

// ResolveDataRoots returns each root absolute and resolved, in order.
// InvalidArgument for an empty root or one that cannot be resolved.
absl::StatusOr<std::vector<std::string>> ResolveDataRoots(
    const std::vector<std::string>& roots);

// ConfineDataPath returns `path` resolved when it lies inside (or is) one of
// `roots` (as ResolveDataRoots returns them). InvalidArgument naming the
// path, what it resolved to and the roots otherwise, or for an empty path.
absl::StatusOr<std::string> ConfineDataPath(
    const std::string& path, const std::vector<std::string>& roots);

}  // namespace prism

#endif  // PRISM_BASE_DATA_ROOTS_H_
