// Fuzzes the spec path of Submit (server/core/experiments/spec.h): textproto ->
// ExperimentSpec
// -> validation -> planning into trials. A plan must be self-consistent and
// storable, and planning its resolved spec again must give the same resolved
// spec, trials and fingerprint (trials are reproduced from the resolved
// spec).
//
// Work per input is capped so the fuzzer explores validation rather than
// enumerating large legitimate grids: inputs over kMaxInputBytes are skipped
// and plans are limited to kMaxTrials trials.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "google/protobuf/util/message_differencer.h"
#include "scheduler/space/schedule.h"
#include "server/core/experiments/spec.h"

namespace {

constexpr size_t kMaxInputBytes = 4096;
constexpr int64_t kMaxTrials = 1000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace server = prism::server;
  if (size > kMaxInputBytes) return 0;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<prism::v1::ExperimentSpec> spec =
      server::ParseSpecText(text);
  if (!spec.ok()) {
    PRISM_FUZZ_CHECK(absl::IsInvalidArgument(spec.status()));
    return 0;
  }
  server::PlanOptions options;
  options.max_trials = kMaxTrials;
  const absl::StatusOr<server::ExperimentPlan> plan =
      server::PlanExperiment(*spec, options);
  if (!plan.ok()) {
    PRISM_FUZZ_CHECK(absl::IsInvalidArgument(plan.status()));
    return 0;
  }
  // The store keeps the resolved spec in the wire format: it must parse back.
  prism::v1::ExperimentSpec stored;
  PRISM_FUZZ_CHECK(stored.ParseFromString(plan->spec.SerializeAsString()));
  PRISM_FUZZ_CHECK(!plan->trials.empty());
  PRISM_FUZZ_CHECK(plan->config_fingerprint.size() == 64);
  PRISM_FUZZ_CHECK(plan->spec.budget().steps() > 0);
  PRISM_FUZZ_CHECK(plan->spec.max_attempts() > 0);
  int baselines = 0;
  for (const prism::storage::NewTrial& trial : plan->trials) {
    const absl::StatusOr<prism::Schedule> schedule =
        prism::ParseSchedule(trial.schedule);
    PRISM_FUZZ_CHECK(schedule.ok());
    PRISM_FUZZ_CHECK(schedule->ToString() == trial.schedule);
    PRISM_FUZZ_CHECK(schedule->layers() == plan->shape.layers);
    if (trial.is_baseline) {
      PRISM_FUZZ_CHECK(trial.schedule == plan->baseline);
      ++baselines;
    }
  }
  PRISM_FUZZ_CHECK(baselines == plan->spec.seeds_size());

  const absl::StatusOr<server::ExperimentPlan> again =
      server::PlanExperiment(plan->spec, options);
  PRISM_FUZZ_CHECK(again.ok());
  PRISM_FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(
      again->spec, plan->spec));
  PRISM_FUZZ_CHECK(again->config_fingerprint == plan->config_fingerprint);
  PRISM_FUZZ_CHECK(again->trials.size() == plan->trials.size());
  for (size_t i = 0; i < plan->trials.size(); ++i) {
    PRISM_FUZZ_CHECK(again->trials[i].schedule == plan->trials[i].schedule);
    PRISM_FUZZ_CHECK(again->trials[i].seed == plan->trials[i].seed);
  }
  return 0;
}
