// Attention kernel autotuning (private to model/): at trainer start, on the
// CPU, time each candidate attention path for the run's actual shape, head
// counts and thread setting, and train with the fastest.
//
//   AttentionChoice choice = ChooseAttentionKernel(
//       {/*rows=*/8, /*context=*/256, /*channels=*/256, /*layer_heads=*/
//        {8, 8, 4}}, AttentionCandidates(/*forced_isa=*/std::nullopt));
//   model->Loss(inputs, targets, choice.kernel);
//
// Each candidate runs forward + backward of the attention alone (no
// projections) on random (min(rows, 4), T, 3C) inputs, once per distinct
// head count, one warmup call and then 5 timed calls, the candidates taking
// turns call by call (so a slow moment of the machine hits them all); a
// candidate's time is the sum over layers of its best call for that layer's
// head count. The first candidate wins unless another is at least 5% faster
// (candidates come in order of preference; see PreferredCandidate), so noise
// does not flip near ties. The fused kernel
// is timed at every instruction set the CPU has; the masked-softmax path is
// LibTorch's. Choices are cached per (shape, heads, rows, intra-op threads,
// candidates) for the life of the process, so a worker's later trials (and
// a resumed run in the same process) reuse the first measurement and train
// with the same kernel. Timing a few ms per candidate does not make runs
// less reproducible than the kernels are: every candidate computes the same
// function; they differ only in float rounding (see attention_test.cc).
//
// Thread-safety: ChooseAttentionKernel may be called from several threads;
// the cache is guarded by a mutex.
#ifndef PRISM_MODEL_INTERNAL_ATTENTION_TUNER_H_
#define PRISM_MODEL_INTERNAL_ATTENTION_TUNER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/internal/decoder.h"
#include "model/internal/kernels.h"

namespace prism::model::internal {

struct AttentionShape {
  int64_t rows = 1;      // sequences per call (one shard's micro-batch)
  int64_t context = 1;   // T
  int64_t channels = 1;  // C
  std::vector<int64_t> layer_heads;  // one entry per layer
};

struct AttentionTiming {
  AttentionKernel kernel = AttentionKernel::kMaskedSoftmax;
  double milliseconds = 0.0;  // forward + backward over every layer
};

struct AttentionChoice {
  AttentionKernel kernel = AttentionKernel::kMaskedSoftmax;
  std::vector<AttentionTiming> timings;  // one per candidate, in order
};

// AttentionCandidates returns the CPU candidates: the fused kernel at every
// supported instruction set, widest first (only at `forced_isa` when set),
// then masked softmax.
std::vector<AttentionKernel> AttentionCandidates(std::optional<Isa> forced_isa);

// ChooseAttentionKernel times `candidates` (none kAuto; at least one, in
// order of preference) on `shape` with the calling thread's LibTorch thread
// setting and returns the fastest (within the margin above), with every
// candidate's time. A single candidate is returned
// without timing (timings empty).
AttentionChoice ChooseAttentionKernel(
    const AttentionShape& shape,
    const std::vector<AttentionKernel>& candidates);

// PreferredCandidate returns the index of the candidate to use given each
// one's time (in order of preference): the first, replaced by a later one
// only when that one is more than `margin` (a fraction) faster than the
// current choice. 0 for an empty list.
size_t PreferredCandidate(const std::vector<double>& milliseconds,
                          double margin);

// AttentionKernelName returns "fused", "masked", "sdpa" or "auto".
std::string AttentionKernelName(AttentionKernel kernel);

// AttentionKernelKey names the kernel and, for the fused one, its level:
// "fused:avx2", "masked". KernelFromKey is its inverse over `candidates`
// (nullopt when none has that key, e.g. a level this CPU lacks).
std::string AttentionKernelKey(AttentionKernel kernel);
std::optional<AttentionKernel> KernelFromKey(
    const std::string& key, const std::vector<AttentionKernel>& candidates);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_ATTENTION_TUNER_H_
