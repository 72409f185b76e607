#include "model/internal/attention.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "model/internal/kernels.h"

namespace prism::model::internal {
namespace {

void CheckInput(const torch::Tensor& x, const char* name) {
  TORCH_CHECK(x.dim() == 3 && x.device().is_cpu() &&
                  x.scalar_type() == torch::kFloat32 && x.stride(2) == 1,
              "fused attention: ", name,
              " must be a (B, T, C) fp32 CPU tensor with contiguous channels");
}

HeadView At(const torch::Tensor& x, int64_t b, int64_t h, int64_t d) {
  return {x.data_ptr<float>() + b * x.stride(0) + h * d, x.stride(1)};
}

// FusedForward runs the forward kernel over every (batch, head); with
// keep_probs it also returns the (B, H, T, T) probabilities for backward.
std::pair<torch::Tensor, torch::Tensor> FusedForward(const torch::Tensor& q,
                                                     const torch::Tensor& k,
                                                     const torch::Tensor& v,
                                                     int64_t heads,
                                                     bool keep_probs) {
  const int64_t batch = q.size(0), t = q.size(1), c = q.size(2);
  const int64_t d = c / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  torch::Tensor y = torch::empty({batch, t, c}, q.options());
  torch::Tensor probs = keep_probs
                            ? torch::empty({batch, heads, t, t}, q.options())
                            : torch::Tensor();
  at::parallel_for(0, batch * heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> kt, strip, prob_strip;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / heads, h = task % heads;
      AttentionForwardHead(
          At(q, b, h, d), At(k, b, h, d), At(v, b, h, d), t, d, scale,
          y.data_ptr<float>() + b * t * c + h * d, c,
          keep_probs ? probs.data_ptr<float>() + task * t * t : nullptr,
          keep_probs, &kt, &strip, &prob_strip);
    }
  });
  return {y, probs};
}

class FusedCausalAttentionFunction
    : public torch::autograd::Function<FusedCausalAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, int64_t heads) {
    auto [y, probs] = FusedForward(q, k, v, heads, /*keep_probs=*/true);
    ctx->save_for_backward({q, k, v, y, probs});
    ctx->saved_data["heads"] = heads;
    return y;
  }

  static torch::autograd::tensor_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::tensor_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& q = saved[0];
    const torch::Tensor& k = saved[1];
    const torch::Tensor& v = saved[2];
    const torch::Tensor& y = saved[3];
    const torch::Tensor& probs = saved[4];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const torch::Tensor dy = grad_outputs[0].contiguous();
    const int64_t batch = q.size(0), t = q.size(1), c = q.size(2);
    const int64_t d = c / heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    torch::Tensor dq = torch::empty({batch, t, c}, q.options());
    torch::Tensor dk = torch::empty({batch, t, c}, q.options());
    torch::Tensor dv = torch::empty({batch, t, c}, q.options());
    at::parallel_for(0, batch * heads, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> vt, strip, ds, delta;
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / heads, h = task % heads;
        const int64_t offset = b * t * c + h * d;
        AttentionBackwardHead(
            At(q, b, h, d), At(k, b, h, d), At(v, b, h, d), At(y, b, h, d),
            At(dy, b, h, d), probs.data_ptr<float>() + task * t * t, t, d,
            scale, dq.data_ptr<float>() + offset, dk.data_ptr<float>() + offset,
            dv.data_ptr<float>() + offset, c, &vt, &strip, &ds, &delta);
      }
    });
    return {dq, dk, dv, torch::Tensor()};
  }
};

// SplitHeads views (B, T, C) as (B, H, T, D).
torch::Tensor SplitHeads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, x.size(2) / heads})
      .transpose(1, 2);
}

torch::Tensor MergeHeads(const torch::Tensor& x) {
  return x.transpose(1, 2).reshape(
      {x.size(0), x.size(2), x.size(1) * x.size(3)});
}

}  // namespace

torch::Tensor FusedCausalAttention(const torch::Tensor& q,
                                   const torch::Tensor& k,
                                   const torch::Tensor& v, int64_t heads) {
  CheckInput(q, "q");
  CheckInput(k, "k");
  CheckInput(v, "v");
  TORCH_CHECK(q.sizes() == k.sizes() && q.sizes() == v.sizes(),
              "fused attention: q, k, v shapes differ");
  TORCH_CHECK(heads > 0 && q.size(2) % heads == 0,
              "fused attention: heads must divide the channels");
  const bool needs_grad =
      torch::GradMode::is_enabled() &&
      (q.requires_grad() || k.requires_grad() || v.requires_grad());
  // Without a backward there is no need to keep the T x T probabilities.
  if (!needs_grad) return FusedForward(q, k, v, heads, false).first;
  return FusedCausalAttentionFunction::apply(q, k, v, heads);
}

torch::Tensor AttentionProbabilities(const torch::Tensor& q,
                                     const torch::Tensor& k, int64_t heads) {
  const int64_t t = q.size(1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2) / heads));
  torch::Tensor scores =
      torch::matmul(
          SplitHeads(q, heads).to(torch::kFloat32),
          SplitHeads(k, heads).to(torch::kFloat32).transpose(-2, -1)) *
      scale;
  const torch::Tensor future =
      torch::ones({t, t},
                  torch::TensorOptions().dtype(torch::kBool).device(q.device()))
          .triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  return torch::softmax(scores, -1);
}

torch::Tensor AttentionFromProbabilities(const torch::Tensor& probs,
                                         const torch::Tensor& v) {
  const int64_t heads = probs.size(1);
  return MergeHeads(
      torch::matmul(probs.to(v.scalar_type()), SplitHeads(v, heads)));
}

torch::Tensor MaskedSoftmaxAttention(const torch::Tensor& q,
                                     const torch::Tensor& k,
                                     const torch::Tensor& v, int64_t heads) {
  const int64_t t = q.size(1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2) / heads));
  torch::Tensor scores = torch::matmul(SplitHeads(q, heads),
                                       SplitHeads(k, heads).transpose(-2, -1)) *
                         scale;
  const torch::Tensor future =
      torch::ones({t, t},
                  torch::TensorOptions().dtype(torch::kBool).device(q.device()))
          .triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  return MergeHeads(
      torch::matmul(torch::softmax(scores, -1), SplitHeads(v, heads)));
}

torch::Tensor SdpaAttention(const torch::Tensor& q, const torch::Tensor& k,
                            const torch::Tensor& v, int64_t heads) {
#if TORCH_VERSION_MAJOR >= 2
  // (query, key, value, attn_mask, dropout_p, is_causal): the signature every
  // 2.x release accepts; later releases add defaulted trailing parameters.
  return MergeHeads(at::scaled_dot_product_attention(
      SplitHeads(q, heads), SplitHeads(k, heads), SplitHeads(v, heads),
      /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true));
#else
  return MaskedSoftmaxAttention(q, k, v, heads);
#endif
}

double SumAttentionDistance(const torch::Tensor& probs) {
  const int64_t t = probs.size(-1);
  const torch::Tensor position =
      torch::arange(t, probs.options().dtype(torch::kFloat64));
  // sum_j a_ij (i - j) = i * sum_j a_ij - sum_j a_ij j.
  const torch::Tensor p = probs.to(torch::kFloat64);
  const torch::Tensor expected_key = torch::matmul(p, position);
  const torch::Tensor row_mass = p.sum(-1);
  return (row_mass * position - expected_key).sum().item<double>();
}

}  // namespace prism::model::internal
