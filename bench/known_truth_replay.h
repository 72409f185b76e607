// Known-truth replay fixtures: a scheduler/simulate/known_truth.h experiment
// written as a replay fixture (worker/replay_launcher.h), so a whole search
// runs through the real coordinator and `prism worker --replay` workers on
// curves whose answer is known. The end-to-end verdict test and the search
// benchmarks use it; bench/known_truth_fixture writes one to disk.
//
//   KnownTruth truth = *GenerateKnownTruth(spec);
//   absl::StatusOr<std::string> text =
//       KnownTruthReplay(truth, KnownTruthSpecText(truth));
//
// Thread-safety: pure functions.
#ifndef PRISM_BENCH_KNOWN_TRUTH_REPLAY_H_
#define PRISM_BENCH_KNOWN_TRUTH_REPLAY_H_

#include <string>

#include "absl/status/statusor.h"
#include "scheduler/simulate/known_truth.h"

namespace prism::bench {

// KnownTruthSpecText returns an ExperimentSpec textproto whose grid is the
// truth's space (a "tiny" model at its d_model, layers and base heads,
// context 32) with its steps and eval_every, on seeds 1..truth.spec.seeds.
std::string KnownTruthSpecText(const KnownTruth& truth);

// KnownTruthReplay returns the fixture text for every trial of `truth`,
// with the trainer config a worker builds for that trial of `spec_text`'s
// experiment (so the replay launcher accepts it); val points as generated,
// train points 0.05 above them, 5000 tokens/s. InvalidArgument when the spec
// does not parse or plan.
absl::StatusOr<std::string> KnownTruthReplay(const KnownTruth& truth,
                                             const std::string& spec_text);

// KnownTruthTable returns "schedule true_delta noise_sd" lines, the best
// first with a "# best" comment line, for benches that score searches.
std::string KnownTruthTable(const KnownTruth& truth);

}  // namespace prism::bench

#endif  // PRISM_BENCH_KNOWN_TRUTH_REPLAY_H_
