// Causal self-attention kernels for the Prism decoder (private to model/).
//
// Every kernel takes q, k, v as (B, T, C) tensors whose last dimension is
// contiguous (views of a fused QKV projection are fine) and the layer's head
// count h; head n uses channels [n * C/h, (n+1) * C/h). They return (B, T, C).
//
//   FusedCausalAttention    CPU fp32: a blocked kernel that computes only the
//                           lower triangle, fuses scale, mask and softmax into
//                           one pass over cache-resident row strips, writes
//                           heads straight into (B, T, C), and has its own
//                           backward (a torch::autograd::Function) that
//                           recomputes the probabilities from one saved
//                           log-sum-exp per query: no (B, h, T, T) tensor.
//   MaskedSoftmaxAttention  the textbook path: (B, h, T, T) scores, mask,
//                           softmax; any device and dtype. The reference the
//                           fused kernel is tested against.
//   SdpaAttention           scaled_dot_product_attention with is_causal
//                           (LibTorch 2.x only: flash attention on CUDA).
//
// Thread-safety: pure functions of their inputs; the fused kernel splits
// (batch, head) pairs over at::parallel_for.
#ifndef PRISM_MODEL_INTERNAL_ATTENTION_H_
#define PRISM_MODEL_INTERNAL_ATTENTION_H_

#include <torch/torch.h>

#include <cstdint>

#include "model/internal/kernels.h"

namespace prism::model::internal {

// kHaveSdpa is true when LibTorch provides scaled_dot_product_attention.
#if TORCH_VERSION_MAJOR >= 2
inline constexpr bool kHaveSdpa = true;
#else
inline constexpr bool kHaveSdpa = false;
#endif

// `isa` picks the kernel's instruction set; it must be one of
// SupportedIsas() (see kernels.h).
torch::Tensor FusedCausalAttention(const torch::Tensor& q,
                                   const torch::Tensor& k,
                                   const torch::Tensor& v, int64_t heads,
                                   Isa isa = DefaultIsa());

// FusedCausalAttentionPacked is FusedCausalAttention on the fused (B, T, 3C)
// QKV projection itself (q, k, v are its thirds); its backward writes one
// (B, T, 3C) gradient instead of three slices for autograd to combine.
torch::Tensor FusedCausalAttentionPacked(const torch::Tensor& qkv,
                                         int64_t heads, Isa isa = DefaultIsa());

torch::Tensor MaskedSoftmaxAttention(const torch::Tensor& q,
                                     const torch::Tensor& k,
                                     const torch::Tensor& v, int64_t heads);

// SdpaAttention falls back to MaskedSoftmaxAttention without kHaveSdpa.
torch::Tensor SdpaAttention(const torch::Tensor& q, const torch::Tensor& k,
                            const torch::Tensor& v, int64_t heads);

// AttentionProbabilities returns the causal softmax probabilities
// (B, h, T, T), computed explicitly in fp32 whatever the input dtype.
torch::Tensor AttentionProbabilities(const torch::Tensor& q,
                                     const torch::Tensor& k, int64_t heads);

// AttentionFromProbabilities applies (B, h, T, T) probabilities to v and
// merges the heads back into (B, T, C).
torch::Tensor AttentionFromProbabilities(const torch::Tensor& probs,
                                         const torch::Tensor& v);

// SumAttentionDistance returns sum over (batch, head, query i) of
// sum_j a_ij * (i - j) for probabilities `probs` (..., T, T) whose rows sum
// to one; divide by probs.numel() / T for the mean.
double SumAttentionDistance(const torch::Tensor& probs);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_ATTENTION_H_
