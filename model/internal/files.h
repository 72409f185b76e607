// Atomic file writes shared by model/'s writers (private to model/).
//
// Thread-safety: safe from any thread or process; each call uses its own
// uniquely named temp file.
#ifndef PRISM_MODEL_INTERNAL_FILES_H_
#define PRISM_MODEL_INTERNAL_FILES_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace prism::model::internal {

// UniqueTempPath returns a sibling of `path` that no other writer will pick.
std::string UniqueTempPath(const std::string& path);

// WriteFileAtomically writes the parts, in order, to a temp file beside
// `path` (creating parent directories), syncs it and renames it over `path`:
// readers see the old file or the whole new one, never a partial one.
// Returns Internal naming the file on I/O errors.
absl::Status WriteFileAtomically(
    const std::string& path,
    const std::vector<std::pair<const void*, size_t>>& parts);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_FILES_H_
