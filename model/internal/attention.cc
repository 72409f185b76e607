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

void CheckIsa(Isa isa) {
  const std::vector<Isa> supported = SupportedIsas();
  TORCH_CHECK(
      std::find(supported.begin(), supported.end(), isa) != supported.end(),
      "fused attention: this CPU cannot run the ", IsaName(isa), " kernel");
}

HeadView At(const torch::Tensor& x, int64_t b, int64_t h, int64_t d) {
  return {x.data_ptr<float>() + b * x.stride(0) + h * d, x.stride(1)};
}

// FusedForward runs the forward kernel over every (batch, head); with
// keep_lse it also returns the (B, H, T) log-sum-exps for the backward.
std::pair<torch::Tensor, torch::Tensor> FusedForward(const torch::Tensor& q,
                                                     const torch::Tensor& k,
                                                     const torch::Tensor& v,
                                                     int64_t heads,
                                                     bool keep_lse, Isa isa) {
  const int64_t batch = q.size(0), t = q.size(1), c = q.size(2);
  const int64_t d = c / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  torch::Tensor y = torch::empty({batch, t, c}, q.options());
  torch::Tensor lse =
      keep_lse ? torch::empty({batch, heads, t}, q.options()) : torch::Tensor();
  at::parallel_for(0, batch * heads, 1, [&](int64_t begin, int64_t end) {
    AttentionScratch scratch;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / heads, h = task % heads;
      AttentionForwardHead(
          isa, At(q, b, h, d), At(k, b, h, d), At(v, b, h, d), t, d, scale,
          y.data_ptr<float>() + b * t * c + h * d, c,
          keep_lse ? lse.data_ptr<float>() + task * t : nullptr, &scratch);
    }
  });
  return {y, lse};
}

// FusedBackward runs the backward kernel over every (batch, head), writing
// the gradients through base pointers with the given batch and row strides
// (separate (B, T, C) tensors, or the thirds of one (B, T, 3C) tensor).
void FusedBackward(const torch::Tensor& q, const torch::Tensor& k,
                   const torch::Tensor& v, const torch::Tensor& y,
                   const torch::Tensor& lse, const torch::Tensor& dy,
                   int64_t heads, Isa isa, float* dq, float* dk, float* dv,
                   int64_t grad_bs, int64_t grad_rs) {
  const int64_t batch = q.size(0), t = q.size(1), c = q.size(2);
  const int64_t d = c / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  at::parallel_for(0, batch * heads, 1, [&](int64_t begin, int64_t end) {
    AttentionScratch scratch;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / heads, h = task % heads;
      const int64_t offset = b * grad_bs + h * d;
      AttentionBackwardHead(
          isa, At(q, b, h, d), At(k, b, h, d), At(v, b, h, d), At(y, b, h, d),
          At(dy, b, h, d), lse.data_ptr<float>() + task * t, t, d, scale,
          dq + offset, dk + offset, dv + offset, grad_rs, &scratch);
    }
  });
}

Isa SavedIsa(torch::autograd::AutogradContext* ctx) {
  return static_cast<Isa>(ctx->saved_data["isa"].toInt());
}

std::vector<torch::Tensor> SplitQkv(const torch::Tensor& qkv) {
  const int64_t c = qkv.size(2) / 3;
  return {qkv.narrow(2, 0, c), qkv.narrow(2, c, c), qkv.narrow(2, 2 * c, c)};
}

class FusedCausalAttentionFunction
    : public torch::autograd::Function<FusedCausalAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, int64_t heads, Isa isa) {
    auto [y, lse] = FusedForward(q, k, v, heads, /*keep_lse=*/true, isa);
    ctx->save_for_backward({q, k, v, y, lse});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["isa"] = static_cast<int64_t>(isa);
    return y;
  }

  static torch::autograd::tensor_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::tensor_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& q = saved[0];
    torch::Tensor dq = torch::empty_like(q, torch::MemoryFormat::Contiguous);
    torch::Tensor dk = torch::empty_like(dq);
    torch::Tensor dv = torch::empty_like(dq);
    FusedBackward(q, saved[1], saved[2], saved[3], saved[4],
                  grad_outputs[0].contiguous(),
                  ctx->saved_data["heads"].toInt(), SavedIsa(ctx),
                  dq.data_ptr<float>(), dk.data_ptr<float>(),
                  dv.data_ptr<float>(), q.size(1) * q.size(2), q.size(2));
    return {dq, dk, dv, torch::Tensor(), torch::Tensor()};
  }
};

// PackedFusedCausalAttentionFunction takes the fused (B, T, 3C) projection
// and returns its gradient as one tensor, so autograd does not build three
// zero-padded slice gradients and add them up.
class PackedFusedCausalAttentionFunction
    : public torch::autograd::Function<PackedFusedCausalAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& qkv, int64_t heads,
                               Isa isa) {
    const std::vector<torch::Tensor> parts = SplitQkv(qkv);
    auto [y, lse] = FusedForward(parts[0], parts[1], parts[2], heads,
                                 /*keep_lse=*/true, isa);
    ctx->save_for_backward({qkv, y, lse});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["isa"] = static_cast<int64_t>(isa);
    return y;
  }

  static torch::autograd::tensor_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::tensor_list grad_outputs) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& qkv = saved[0];
    const std::vector<torch::Tensor> parts = SplitQkv(qkv);
    const int64_t c = parts[0].size(2);
    torch::Tensor dqkv =
        torch::empty_like(qkv, torch::MemoryFormat::Contiguous);
    float* base = dqkv.data_ptr<float>();
    FusedBackward(parts[0], parts[1], parts[2], saved[1], saved[2],
                  grad_outputs[0].contiguous(),
                  ctx->saved_data["heads"].toInt(), SavedIsa(ctx), base,
                  base + c, base + 2 * c, qkv.size(1) * 3 * c, 3 * c);
    return {dqkv, torch::Tensor(), torch::Tensor()};
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
                                   const torch::Tensor& v, int64_t heads,
                                   Isa isa) {
  CheckInput(q, "q");
  CheckInput(k, "k");
  CheckInput(v, "v");
  TORCH_CHECK(q.sizes() == k.sizes() && q.sizes() == v.sizes(),
              "fused attention: q, k, v shapes differ");
  TORCH_CHECK(heads > 0 && q.size(2) % heads == 0,
              "fused attention: heads must divide the channels");
  CheckIsa(isa);
  const bool needs_grad =
      torch::GradMode::is_enabled() &&
      (q.requires_grad() || k.requires_grad() || v.requires_grad());
  // Without a backward there is nothing to keep.
  if (!needs_grad) return FusedForward(q, k, v, heads, false, isa).first;
  return FusedCausalAttentionFunction::apply(q, k, v, heads, isa);
}

torch::Tensor FusedCausalAttentionPacked(const torch::Tensor& qkv,
                                         int64_t heads, Isa isa) {
  CheckInput(qkv, "qkv");
  TORCH_CHECK(
      qkv.size(2) % 3 == 0 && heads > 0 && (qkv.size(2) / 3) % heads == 0,
      "fused attention: qkv must be (B, T, 3C) with heads dividing C");
  CheckIsa(isa);
  const bool needs_grad = torch::GradMode::is_enabled() && qkv.requires_grad();
  if (!needs_grad) {
    const std::vector<torch::Tensor> parts = SplitQkv(qkv);
    return FusedForward(parts[0], parts[1], parts[2], heads, false, isa).first;
  }
  return PackedFusedCausalAttentionFunction::apply(qkv, heads, isa);
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
