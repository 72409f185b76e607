// Fuzzes ParseSchedule (scheduler/space/schedule.h) with arbitrary text. A
// parsed schedule must be within bounds and round-trip through its canonical
// form; a refusal must be InvalidArgument with a short message, however long
// the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "scheduler/space/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<prism::Schedule> schedule = prism::ParseSchedule(text);
  if (!schedule.ok()) {
    PRISM_FUZZ_CHECK(absl::IsInvalidArgument(schedule.status()));
    // Error messages quote at most 64 bytes of the input.
    PRISM_FUZZ_CHECK(schedule.status().message().size() < 512);
    return 0;
  }
  PRISM_FUZZ_CHECK(schedule->layers() >= 1);
  PRISM_FUZZ_CHECK(schedule->layers() <= prism::kMaxLayers);
  for (int heads : schedule->heads()) PRISM_FUZZ_CHECK(heads > 0);
  const std::string canonical = schedule->ToString();
  const absl::StatusOr<prism::Schedule> again = prism::ParseSchedule(canonical);
  PRISM_FUZZ_CHECK(again.ok());
  PRISM_FUZZ_CHECK(*again == *schedule);
  PRISM_FUZZ_CHECK(again->ToString() == canonical);
  return 0;
}
