// Hand-written CPU kernels behind the fused attention and the flat AdamW
// (private to model/). Torch-free so this file can be compiled with its own
// flags. The vector kernels (attention, GELU) are compiled once per
// instruction set, each with register tiles sized for its registers (see
// kernels_isa.inc), and picked through an explicit dispatch table, so a
// caller (the attention autotuner, tests, benchmarks) can run any level the
// CPU has; SumOfSquares and FusedAdamW are target_clones picked at load time.
//
//   Isa                  kBaseline (SSE2 on x86-64; portable vectors
//                        elsewhere), kAvx2 (x86-64-v3: AVX2 + FMA), kAvx512
//                        (x86-64-v4).
//   SupportedIsas()      the levels this build has and this CPU runs.
//   DefaultIsa()         the level PRISM_ISA names (baseline, avx2, avx512),
//                        else the widest supported; what GELU uses and what
//                        fused attention uses unless told otherwise.
//
// Attention works on one (batch, head) at a time: T queries and keys of head
// width D, rows `row_stride` floats apart. Both passes touch only the lower
// triangle plus the diagonal 4-row blocks (whose cells past the diagonal
// hold zeros); the forward keeps one log-sum-exp per query for the backward,
// never the T x T probabilities.
//
// Thread-safety: pure functions; callers give each thread its own scratch.
#ifndef PRISM_MODEL_INTERNAL_KERNELS_H_
#define PRISM_MODEL_INTERNAL_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism::model::internal {

enum class Isa { kBaseline, kAvx2, kAvx512 };

// IsaName returns "baseline", "avx2" or "avx512".
const char* IsaName(Isa isa);

// ParseIsa returns the level named `name`, or InvalidArgument naming the
// accepted names.
absl::StatusOr<Isa> ParseIsa(absl::string_view name);

// SupportedIsas returns the levels this build compiled and this CPU runs,
// narrowest first (kBaseline always).
const std::vector<Isa>& SupportedIsas();

// IsaFromEnvironment returns the level the PRISM_ISA environment variable
// forces, or the widest supported level when it is unset or empty.
// InvalidArgument when it names no level or one this CPU (or build) lacks.
absl::StatusOr<Isa> IsaFromEnvironment();

// DefaultIsa is IsaFromEnvironment(), or the widest supported level when
// that is an error (Train reports the error; see trainer.cc), read at each
// call: do not change PRISM_ISA while kernels run on other threads.
Isa DefaultIsa();

// CpuFlags returns the relevant x86 feature flags this CPU reports
// ("sse2 avx avx2 fma avx512f ..."), "" elsewhere.
std::string CpuFlags();

struct HeadView {
  const float* data;
  int64_t row_stride;  // floats between consecutive time steps
};

// AttentionScratch is one thread's working memory, reused across heads.
struct AttentionScratch {
  std::vector<float> kt, vt;     // K^T and V^T, D x T (padded)
  std::vector<float> strip;      // a strip of tile rows of scores
  std::vector<float> probs, ds;  // T x T, backward only
  std::vector<float> delta;      // T
};

// The attention kernels run the fused kernel compiled for `isa`, which must
// be one of SupportedIsas().
//
// AttentionForwardHead computes y = softmax(scale * q k^T, causal) v for one
// head into y (row stride y_rs) and, when lse is not null, each query's
// log-sum-exp of its scaled scores (T floats) for the backward.
void AttentionForwardHead(Isa isa, HeadView q, HeadView k, HeadView v,
                          int64_t t, int64_t d, float scale, float* y,
                          int64_t y_rs, float* lse, AttentionScratch* scratch);

// AttentionBackwardHead computes dq, dk, dv (row stride grad_rs) from the
// forward's output y, its gradient dy and its log-sum-exps, recomputing the
// probabilities head by head in cache-sized scratch.
void AttentionBackwardHead(Isa isa, HeadView q, HeadView k, HeadView v,
                           HeadView y, HeadView dy, const float* lse, int64_t t,
                           int64_t d, float scale, float* dq, float* dk,
                           float* dv, int64_t grad_rs,
                           AttentionScratch* scratch);

// GeluForward writes the tanh-approximated GELU of x[0, n) to y;
// GeluBackward writes dy * gelu'(x) to dx. Both at DefaultIsa().
void GeluForward(const float* x, float* y, int64_t n);
void GeluBackward(const float* x, const float* dy, float* dx, int64_t n);

// SumOfSquares returns sum g[i]^2 accumulated in double.
double SumOfSquares(const float* g, int64_t n);

struct AdamWCoefficients {
  float clip;            // gradient scale from clipping
  float beta1, beta2;    // moment decay rates
  float step_size;       // lr / (1 - beta1^t)
  float inv_sqrt_bias2;  // 1 / sqrt(1 - beta2^t)
  float eps;
  float decay;  // 1 - lr * weight_decay (1 where weights are not decayed)
};

// FusedAdamW applies one AdamW update to n parameters in a single pass.
void FusedAdamW(float* __restrict p, const float* __restrict g,
                float* __restrict m, float* __restrict v, int64_t n,
                AdamWCoefficients c);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_KERNELS_H_
