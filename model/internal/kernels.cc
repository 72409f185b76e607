#include "model/internal/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

// SumOfSquares and FusedAdamW are plain loops the compiler vectorizes;
// target_clones compiles them per x86-64 level and picks one at load time.
// GCC 12 and clang 14 both have it (and the per-level regions below), so the
// levels exist whichever of the two builds this file.
#if defined(__x86_64__) && defined(__GNUC__)
#define PRISM_KERNEL_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define PRISM_X86_LEVELS 1
#else
#define PRISM_KERNEL_CLONES
#define PRISM_X86_LEVELS 0
#endif
#define PRISM_INLINE inline __attribute__((always_inline))

namespace prism::model::internal {

// The vector kernels, once per level (see kernels_isa.inc). The #pragma
// regions give every function in them the level's instruction set (GCC's
// target pragma, clang's attribute push); target_clones cannot be called at
// a chosen level, this table can.
namespace {
#if PRISM_X86_LEVELS
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("arch=x86-64-v4"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#endif
namespace avx512 {
#define PRISM_LANES 16
#define PRISM_TILE_ROWS 4
#include "model/internal/kernels_isa.inc"
#undef PRISM_LANES
#undef PRISM_TILE_ROWS
}  // namespace avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("arch=x86-64-v3"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#endif
namespace avx2 {
#define PRISM_LANES 8
#define PRISM_TILE_ROWS 4
#include "model/internal/kernels_isa.inc"
#undef PRISM_LANES
#undef PRISM_TILE_ROWS
}  // namespace avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

namespace baseline {
#define PRISM_LANES 4
#define PRISM_TILE_ROWS 4
#include "model/internal/kernels_isa.inc"
#undef PRISM_LANES
#undef PRISM_TILE_ROWS
}  // namespace baseline

// kScratchColumns is a multiple of every level's tile width: the scratch
// row length tp = RoundUp(T, kScratchColumns) suits them all.
constexpr int64_t kScratchColumns = 32;
constexpr int64_t kMaxTileRows = 6;

int64_t ScratchColumns(int64_t t) {
  return (t + kScratchColumns - 1) / kScratchColumns * kScratchColumns;
}

bool CpuHas(Isa isa) {
#if PRISM_X86_LEVELS
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && CpuHas(Isa::kAvx2);
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2");
    case Isa::kBaseline:
      return true;
  }
  return false;
#else
  return isa == Isa::kBaseline;
#endif
}

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kBaseline:
      return "baseline";
  }
  return "baseline";
}

absl::StatusOr<Isa> ParseIsa(absl::string_view name) {
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (name == IsaName(isa)) return isa;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "instruction set '", name, "' is not baseline, avx2 or avx512"));
}

const std::vector<Isa>& SupportedIsas() {
  static const std::vector<Isa> levels = [] {
    std::vector<Isa> found;
    for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
      if (CpuHas(isa)) found.push_back(isa);
    }
    return found;
  }();
  return levels;
}

namespace {
std::string SupportedIsasText() {
  std::vector<std::string> names;
  for (Isa isa : SupportedIsas()) names.push_back(IsaName(isa));
  return absl::StrJoin(names, ", ");
}
}  // namespace

absl::StatusOr<Isa> IsaFromEnvironment() {
  const char* forced = std::getenv("PRISM_ISA");
  if (forced == nullptr || *forced == '\0') return SupportedIsas().back();
  absl::StatusOr<Isa> isa = ParseIsa(forced);
  if (!isa.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PRISM_ISA: ", isa.status().message()));
  }
  if (!CpuHas(*isa)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PRISM_ISA: this CPU (or build) has no ", forced,
                     "; it supports ", SupportedIsasText()));
  }
  return *isa;
}

Isa DefaultIsa() {
  // Read on every call (getenv is cheap next to a kernel call), so a
  // benchmark can measure each level in one process.
  absl::StatusOr<Isa> from_env = IsaFromEnvironment();
  return from_env.ok() ? *from_env : SupportedIsas().back();
}

std::string CpuFlags() {
#if PRISM_X86_LEVELS
  __builtin_cpu_init();
  std::vector<std::string> flags;
  auto add = [&](const char* name, bool has) {
    if (has) flags.push_back(name);
  };
  add("sse2", __builtin_cpu_supports("sse2"));
  add("avx", __builtin_cpu_supports("avx"));
  add("avx2", __builtin_cpu_supports("avx2"));
  add("fma", __builtin_cpu_supports("fma"));
  add("bmi2", __builtin_cpu_supports("bmi2"));
  add("avx512f", __builtin_cpu_supports("avx512f"));
  add("avx512bw", __builtin_cpu_supports("avx512bw"));
  add("avx512vl", __builtin_cpu_supports("avx512vl"));
  add("avx512dq", __builtin_cpu_supports("avx512dq"));
  return absl::StrJoin(flags, " ");
#else
  return "";
#endif
}

void GeluForward(const float* x, float* y, int64_t n) {
  switch (DefaultIsa()) {
#if PRISM_X86_LEVELS
    case Isa::kAvx512:
      return avx512::GeluForward(x, y, n);
    case Isa::kAvx2:
      return avx2::GeluForward(x, y, n);
#endif
    default:
      return baseline::GeluForward(x, y, n);
  }
}

void GeluBackward(const float* x, const float* dy, float* dx, int64_t n) {
  switch (DefaultIsa()) {
#if PRISM_X86_LEVELS
    case Isa::kAvx512:
      return avx512::GeluBackward(x, dy, dx, n);
    case Isa::kAvx2:
      return avx2::GeluBackward(x, dy, dx, n);
#endif
    default:
      return baseline::GeluBackward(x, dy, dx, n);
  }
}

void AttentionForwardHead(Isa isa, HeadView q, HeadView k, HeadView v,
                          int64_t t, int64_t d, float scale, float* y,
                          int64_t y_rs, float* lse, AttentionScratch* scratch) {
  const int64_t tp = ScratchColumns(t);
  scratch->kt.resize(d * tp);
  scratch->strip.resize(kMaxTileRows * tp);
  float* kt = scratch->kt.data();
  float* strip = scratch->strip.data();
  switch (isa) {
#if PRISM_X86_LEVELS
    case Isa::kAvx512:
      return avx512::AttentionForwardHead(q, k, v, t, d, scale, y, y_rs, lse,
                                          tp, kt, strip);
    case Isa::kAvx2:
      return avx2::AttentionForwardHead(q, k, v, t, d, scale, y, y_rs, lse, tp,
                                        kt, strip);
#endif
    default:
      return baseline::AttentionForwardHead(q, k, v, t, d, scale, y, y_rs, lse,
                                            tp, kt, strip);
  }
}

void AttentionBackwardHead(Isa isa, HeadView q, HeadView k, HeadView v,
                           HeadView y, HeadView dy, const float* lse, int64_t t,
                           int64_t d, float scale, float* dq, float* dk,
                           float* dv, int64_t grad_rs,
                           AttentionScratch* scratch) {
  const int64_t tp = ScratchColumns(t);
  scratch->kt.resize(d * tp);
  scratch->vt.resize(d * tp);
  scratch->strip.resize(kMaxTileRows * tp);
  scratch->probs.resize(t * t);
  scratch->ds.resize(t * t);
  scratch->delta.resize(t);
  float* kt = scratch->kt.data();
  float* vt = scratch->vt.data();
  float* strip = scratch->strip.data();
  float* probs = scratch->probs.data();
  float* ds = scratch->ds.data();
  float* delta = scratch->delta.data();
  switch (isa) {
#if PRISM_X86_LEVELS
    case Isa::kAvx512:
      return avx512::AttentionBackwardHead(q, k, v, y, dy, lse, t, d, scale, dq,
                                           dk, dv, grad_rs, tp, kt, vt, strip,
                                           probs, ds, delta);
    case Isa::kAvx2:
      return avx2::AttentionBackwardHead(q, k, v, y, dy, lse, t, d, scale, dq,
                                         dk, dv, grad_rs, tp, kt, vt, strip,
                                         probs, ds, delta);
#endif
    default:
      return baseline::AttentionBackwardHead(q, k, v, y, dy, lse, t, d, scale,
                                             dq, dk, dv, grad_rs, tp, kt, vt,
                                             strip, probs, ds, delta);
  }
}

PRISM_KERNEL_CLONES
double SumOfSquares(const float* g, int64_t n) {
  // Eight partial sums in double keep the loop vectorizable and the result
  // independent of how many threads split the buffer into chunks.
  double partial[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) {
      partial[k] += static_cast<double>(g[i + k]) * g[i + k];
    }
  }
  double sum = 0.0;
  for (; i < n; ++i) sum += static_cast<double>(g[i]) * g[i];
  for (double p : partial) sum += p;
  return sum;
}

PRISM_KERNEL_CLONES
void FusedAdamW(float* __restrict p, const float* __restrict g,
                float* __restrict m, float* __restrict v, int64_t n,
                AdamWCoefficients c) {
  const float one_minus_beta1 = 1.0f - c.beta1;
  const float one_minus_beta2 = 1.0f - c.beta2;
  for (int64_t i = 0; i < n; ++i) {
    const float grad = g[i] * c.clip;
    const float mi = c.beta1 * m[i] + one_minus_beta1 * grad;
    const float vi = c.beta2 * v[i] + one_minus_beta2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) * c.inv_sqrt_bias2 + c.eps;
    p[i] = p[i] * c.decay - c.step_size * mi / denom;
  }
}

}  // namespace prism::model::internal
