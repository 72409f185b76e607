#include "model/internal/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

// The fused kernel is written with GCC vector extensions and compiled once per
// x86-64 level (AVX-512, AVX2, baseline), picked at load time, so one binary
// runs everywhere and uses the widest vectors the CPU has.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PRISM_KERNEL_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PRISM_KERNEL_CLONES
#endif
#define PRISM_INLINE inline __attribute__((always_inline))

namespace prism::model::internal {
namespace {

// Shape legend: B batch, T time (context), C channels, H heads, D head dim.

using Vec = float __attribute__((vector_size(64)));
using VecInt = int32_t __attribute__((vector_size(64)));
constexpr int kLanes = 16;
constexpr int kRows = 4;           // rows of a register tile
constexpr int kCols = 2 * kLanes;  // columns of a register tile

PRISM_INLINE Vec Load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
PRISM_INLINE void Store(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }
PRISM_INLINE Vec Splat(float x) { return Vec{} + x; }
PRISM_INLINE VecInt LaneIndex() {
  return VecInt{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
}

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Exp is expf to a few ulp: x = n ln2 + r with |r| <= ln2/2, e^r by Cephes'
// degree-6 polynomial, 2^n through the exponent bits. Inputs are clamped to
// [-87, 88], so the result stays a normal float (about 1e-38 .. 1.7e38).
PRISM_INLINE Vec Exp(Vec x) {
  x = x < Splat(-87.0f) ? Splat(-87.0f) : x;
  x = x > Splat(88.0f) ? Splat(88.0f) : x;
  const Vec round_magic = Splat(12582912.0f);  // 1.5 * 2^23
  Vec n = (x * Splat(1.44269504088896341f) + round_magic) - round_magic;
  Vec r = x - n * Splat(0.693359375f);
  r = r - n * Splat(-2.12194440e-4f);
  Vec p = Splat(1.9875691500e-4f);
  p = p * r + Splat(1.3981999507e-3f);
  p = p * r + Splat(8.3334519073e-3f);
  p = p * r + Splat(4.1665795894e-2f);
  p = p * r + Splat(1.6666665459e-1f);
  p = p * r + Splat(5.0000001201e-1f);
  p = p * r * r + r + Splat(1.0f);
  const VecInt bits = (__builtin_convertvector(n, VecInt) + 127) << 23;
  // A C-style cast between same-size GCC vectors reinterprets the bits.
  return p * (Vec)bits;
}

PRISM_INLINE float HorizontalMax(Vec v) {
  float m = v[0];
  for (int i = 1; i < kLanes; ++i) m = std::max(m, v[i]);
  return m;
}
PRISM_INLINE float HorizontalSum(Vec v) {
  float s = 0.0f;
  for (int i = 0; i < kLanes; ++i) s += v[i];
  return s;
}

// Tile computes R rows of C = diag(alpha) * A * B: row r of the product is
// scaled by alpha[r]; A(r, k) = a[r * a_rs + k * a_cs], row k of B starts at
// b + k * ldb (n contiguous floats) and row r of C at c + r * ldc.
template <int R>
PRISM_INLINE void Tile(int64_t k_len, int64_t n, const float* a, int64_t a_rs,
                       int64_t a_cs, const float* b, int64_t ldb, float* c,
                       int64_t ldc, const float* alpha) {
  int64_t col = 0;
  for (; col + kCols <= n; col += kCols) {
    Vec acc[R][2] = {};
    const float* bp = b + col;
    for (int64_t k = 0; k < k_len; ++k, bp += ldb) {
      const Vec b0 = Load(bp);
      const Vec b1 = Load(bp + kLanes);
      for (int r = 0; r < R; ++r) {
        const float av = a[r * a_rs + k * a_cs];
        acc[r][0] += av * b0;
        acc[r][1] += av * b1;
      }
    }
    for (int r = 0; r < R; ++r) {
      float* cp = c + r * ldc + col;
      Store(cp, acc[r][0] * alpha[r]);
      Store(cp + kLanes, acc[r][1] * alpha[r]);
    }
  }
  for (; col + kLanes <= n; col += kLanes) {
    Vec acc[R] = {};
    const float* bp = b + col;
    for (int64_t k = 0; k < k_len; ++k, bp += ldb) {
      const Vec b0 = Load(bp);
      for (int r = 0; r < R; ++r) acc[r] += a[r * a_rs + k * a_cs] * b0;
    }
    for (int r = 0; r < R; ++r) Store(c + r * ldc + col, acc[r] * alpha[r]);
  }
  for (; col < n; ++col) {  // head dims that are not a multiple of 16
    for (int r = 0; r < R; ++r) {
      float acc = 0.0f;
      for (int64_t k = 0; k < k_len; ++k) {
        acc += a[r * a_rs + k * a_cs] * b[k * ldb + col];
      }
      c[r * ldc + col] = alpha[r] * acc;
    }
  }
}

// ScaledGemm computes `rows` (1..4) rows of C = diag(alpha) * A * B.
PRISM_INLINE void ScaledGemm(int rows, int64_t k_len, int64_t n, const float* a,
                             int64_t a_rs, int64_t a_cs, const float* b,
                             int64_t ldb, float* c, int64_t ldc,
                             const float* alpha) {
  switch (rows) {
    case 4:
      Tile<4>(k_len, n, a, a_rs, a_cs, b, ldb, c, ldc, alpha);
      break;
    case 3:
      Tile<3>(k_len, n, a, a_rs, a_cs, b, ldb, c, ldc, alpha);
      break;
    case 2:
      Tile<2>(k_len, n, a, a_rs, a_cs, b, ldb, c, ldc, alpha);
      break;
    default:
      Tile<1>(k_len, n, a, a_rs, a_cs, b, ldb, c, ldc, alpha);
      break;
  }
}

// Gemm computes `rows` rows of C = alpha * A * B.
PRISM_INLINE void Gemm(int rows, int64_t k_len, int64_t n, const float* a,
                       int64_t a_rs, int64_t a_cs, const float* b, int64_t ldb,
                       float* c, int64_t ldc, float alpha) {
  const float scales[kRows] = {alpha, alpha, alpha, alpha};
  ScaledGemm(rows, k_len, n, a, a_rs, a_cs, b, ldb, c, ldc, scales);
}

// TransposeHead writes the T x D head at `src` (row stride src_rs) as D x Tp
// (zero padded to Tp columns) into dst.
PRISM_INLINE void TransposeHead(const float* src, int64_t src_rs, int64_t t,
                                int64_t d, int64_t tp, float* dst) {
  std::fill(dst, dst + d * tp, 0.0f);
  for (int64_t j = 0; j < t; ++j) {
    const float* row = src + j * src_rs;
    for (int64_t e = 0; e < d; ++e) dst[e * tp + j] = row[e];
  }
}

// ExpRow replaces the scores s[0, valid) by exp(s - max) in place, zeros
// s[valid, RoundUp(valid, 16)), and returns the row's sum; the caller scales
// by 1 / sum inside the P V product instead of in another pass. *lse gets
// the log-sum-exp the backward needs to recompute the probabilities.
PRISM_INLINE float ExpRow(float* s, int64_t valid, float* lse) {
  const int64_t chunks = RoundUp(valid, kLanes);
  const Vec neg_inf = Splat(-std::numeric_limits<float>::infinity());
  Vec max = neg_inf;
  for (int64_t j = 0; j < chunks; j += kLanes) {
    const VecInt inside =
        LaneIndex() + static_cast<int32_t>(j) < static_cast<int32_t>(valid);
    Vec x = Load(s + j);
    x = inside ? x : neg_inf;
    max = max > x ? max : x;
  }
  const float row_max = HorizontalMax(max);
  Vec sum = {};
  for (int64_t j = 0; j < chunks; j += kLanes) {
    const VecInt inside =
        LaneIndex() + static_cast<int32_t>(j) < static_cast<int32_t>(valid);
    Vec e = Exp(Load(s + j) - Splat(row_max));
    e = inside ? e : Vec{};
    Store(s + j, e);
    sum += e;
  }
  const float total = HorizontalSum(sum);
  *lse = row_max + std::log(total);
  return total;
}

// ProbabilityRow writes the softmax probabilities exp(s - lse) of the
// scores s[0, valid) to p[0, valid) and zeros p[valid, out_len); s holds
// RoundUp(valid, 16) floats and out_len <= that.
PRISM_INLINE void ProbabilityRow(const float* s, int64_t valid, float lse,
                                 float* p, int64_t out_len) {
  int64_t j = 0;
  for (; j + kLanes <= out_len; j += kLanes) {
    const VecInt inside =
        LaneIndex() + static_cast<int32_t>(j) < static_cast<int32_t>(valid);
    const Vec e = Exp(Load(s + j) - Splat(lse));
    Store(p + j, inside ? e : Vec{});
  }
  if (j < out_len) {  // the last, partial vector
    const VecInt inside =
        LaneIndex() + static_cast<int32_t>(j) < static_cast<int32_t>(valid);
    const Vec e = Exp(Load(s + j) - Splat(lse));
    float tail[kLanes];
    Store(tail, inside ? e : Vec{});
    std::memcpy(p + j, tail, (out_len - j) * sizeof(float));
  }
}

// TanhGelu returns gelu(x) and, through *slope, gelu'(x) for the tanh
// approximation: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), with
// tanh(u) = 1 - 2 / (1 + e^{2u}) (exact at both saturations).
PRISM_INLINE Vec TanhGelu(Vec x, Vec* slope) {
  const Vec k = Splat(0.7978845608028654f);  // sqrt(2 / pi)
  const Vec c = Splat(0.044715f);
  const Vec x2 = x * x;
  const Vec u = k * (x + c * x2 * x);
  const Vec t = Splat(1.0f) - Splat(2.0f) / (Exp(u + u) + Splat(1.0f));
  if (slope != nullptr) {
    *slope = Splat(0.5f) * (Splat(1.0f) + t) +
             Splat(0.5f) * x * (Splat(1.0f) - t * t) * k *
                 (Splat(1.0f) + Splat(3.0f) * c * x2);
  }
  return Splat(0.5f) * x * (Splat(1.0f) + t);
}

}  // namespace

PRISM_KERNEL_CLONES
void GeluForward(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Store(y + i, TanhGelu(Load(x + i), nullptr));
  }
  if (i < n) {  // the tail, through a zero-padded vector
    float in[kLanes] = {}, out[kLanes];
    std::memcpy(in, x + i, (n - i) * sizeof(float));
    Store(out, TanhGelu(Load(in), nullptr));
    std::memcpy(y + i, out, (n - i) * sizeof(float));
  }
}

PRISM_KERNEL_CLONES
void GeluBackward(const float* x, const float* dy, float* dx, int64_t n) {
  int64_t i = 0;
  Vec slope;
  for (; i + kLanes <= n; i += kLanes) {
    TanhGelu(Load(x + i), &slope);
    Store(dx + i, Load(dy + i) * slope);
  }
  if (i < n) {
    float in[kLanes] = {}, grad[kLanes] = {}, out[kLanes];
    std::memcpy(in, x + i, (n - i) * sizeof(float));
    std::memcpy(grad, dy + i, (n - i) * sizeof(float));
    TanhGelu(Load(in), &slope);
    Store(out, Load(grad) * slope);
    std::memcpy(dx + i, out, (n - i) * sizeof(float));
  }
}

PRISM_KERNEL_CLONES
void AttentionForwardHead(HeadView q, HeadView k, HeadView v, int64_t t,
                          int64_t d, float scale, float* y, int64_t y_rs,
                          float* lse, AttentionScratch* scratch) {
  const int64_t tp = RoundUp(t, kCols);
  scratch->kt.resize(d * tp);
  scratch->strip.resize(kRows * tp);
  float* kt = scratch->kt.data();
  float* strip = scratch->strip.data();
  TransposeHead(k.data, k.row_stride, t, d, tp, kt);
  for (int64_t i0 = 0; i0 < t; i0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, t - i0));
    const int64_t end = i0 + rows;  // keys this row block can see
    // S = scale * Q K^T over the key columns [0, end) only, then softmax in
    // place: the strip stays in L1/L2, nothing T x T goes to memory.
    Gemm(rows, d, RoundUp(end, kLanes), q.data + i0 * q.row_stride,
         q.row_stride, 1, kt, tp, strip, tp, scale);
    float inv_sum[kRows];
    float row_lse[kRows];
    for (int r = 0; r < rows; ++r) {
      inv_sum[r] = 1.0f / ExpRow(strip + r * tp, i0 + r + 1, &row_lse[r]);
      if (lse != nullptr) lse[i0 + r] = row_lse[r];
    }
    // Y = diag(1 / sum) E V; the zeros past the diagonal keep the block
    // exact.
    ScaledGemm(rows, end, d, strip, tp, 1, v.data, v.row_stride, y + i0 * y_rs,
               y_rs, inv_sum);
  }
}

PRISM_KERNEL_CLONES
void AttentionBackwardHead(HeadView q, HeadView k, HeadView v, HeadView y,
                           HeadView dy, const float* lse, int64_t t, int64_t d,
                           float scale, float* dq, float* dk, float* dv,
                           int64_t grad_rs, AttentionScratch* scratch) {
  const int64_t tp = RoundUp(t, kCols);
  scratch->kt.resize(d * tp);
  scratch->vt.resize(d * tp);
  scratch->strip.resize(kRows * tp);
  scratch->probs.resize(t * t);
  scratch->ds.resize(t * t);
  scratch->delta.resize(t);
  float* kt = scratch->kt.data();
  float* vt = scratch->vt.data();
  float* strip = scratch->strip.data();
  float* probs = scratch->probs.data();
  float* ds = scratch->ds.data();
  float* delta = scratch->delta.data();
  TransposeHead(k.data, k.row_stride, t, d, tp, kt);
  TransposeHead(v.data, v.row_stride, t, d, tp, vt);
  for (int64_t i = 0; i < t; ++i) {
    const float* a = dy.data + i * dy.row_stride;
    const float* b = y.data + i * y.row_stride;
    float acc = 0.0f;
    for (int64_t e = 0; e < d; ++e) acc += a[e] * b[e];
    delta[i] = acc;
  }
  for (int64_t i0 = 0; i0 < t; i0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, t - i0));
    const int64_t end = i0 + rows;
    const int64_t cols = RoundUp(end, kLanes);
    // P again from S and the forward's log-sum-exp (cheaper than keeping a
    // T x T tensor per head in memory between forward and backward).
    Gemm(rows, d, cols, q.data + i0 * q.row_stride, q.row_stride, 1, kt, tp,
         strip, tp, scale);
    for (int r = 0; r < rows; ++r) {
      ProbabilityRow(strip + r * tp, i0 + r + 1, lse[i0 + r],
                     probs + (i0 + r) * t, end);
    }
    // dP = dY V^T, then dS = P * (dP - delta) row by row.
    Gemm(rows, d, cols, dy.data + i0 * dy.row_stride, dy.row_stride, 1, vt, tp,
         strip, tp, 1.0f);
    for (int r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      const float* p = probs + i * t;
      const float* dp = strip + r * tp;
      float* out = ds + i * t;
      const float di = delta[i];
      for (int64_t j = 0; j < end; ++j) out[j] = p[j] * (dp[j] - di);
    }
    // dQ = scale * dS K.
    Gemm(rows, end, d, ds + i0 * t, t, 1, k.data, k.row_stride,
         dq + i0 * grad_rs, grad_rs, scale);
  }
  for (int64_t j0 = 0; j0 < t; j0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, t - j0));
    // dV = P^T dY and dK = scale * dS^T Q over the queries i >= j0.
    Gemm(rows, t - j0, d, probs + j0 * t + j0, 1, t,
         dy.data + j0 * dy.row_stride, dy.row_stride, dv + j0 * grad_rs,
         grad_rs, 1.0f);
    Gemm(rows, t - j0, d, ds + j0 * t + j0, 1, t, q.data + j0 * q.row_stride,
         q.row_stride, dk + j0 * grad_rs, grad_rs, scale);
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
