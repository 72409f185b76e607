#include "model/internal/decoder.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/internal/attention.h"
#include "model/internal/gelu.h"

namespace prism::model::internal {
namespace {

// Shape legend: B batch, T time, C channels (d_model), H heads, D head dim,
// V vocabulary.

constexpr double kInitStd = 0.02;
constexpr double kRotaryBase = 10000.0;

// Dropout draws its mask from `gen`, so shards of one batch running on
// different threads stay deterministic.
torch::Tensor Dropout(const torch::Tensor& x, double p, bool training,
                      const std::optional<at::Generator>& gen) {
  if (p <= 0.0 || !training) return x;
  const torch::Tensor keep =
      torch::empty_like(x).bernoulli_(1.0 - p, gen ? *gen : at::Generator());
  return x * keep / (1.0 - p);
}

AttentionKernel Resolve(AttentionKernel kernel, const torch::Tensor& x) {
  if (kernel != AttentionKernel::kAuto) return kernel;
  if (x.is_cpu() && x.scalar_type() == torch::kFloat32) {
    return AttentionKernel::kFused;
  }
  return kHaveSdpa ? AttentionKernel::kSdpa : AttentionKernel::kMaskedSoftmax;
}

}  // namespace

AttentionKernel FusedAt(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return AttentionKernel::kFusedAvx512;
    case Isa::kAvx2:
      return AttentionKernel::kFusedAvx2;
    case Isa::kBaseline:
      return AttentionKernel::kFusedBaseline;
  }
  return AttentionKernel::kFused;
}

std::optional<Isa> FusedLevel(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kFused:
      return DefaultIsa();
    case AttentionKernel::kFusedBaseline:
      return Isa::kBaseline;
    case AttentionKernel::kFusedAvx2:
      return Isa::kAvx2;
    case AttentionKernel::kFusedAvx512:
      return Isa::kAvx512;
    default:
      return std::nullopt;
  }
}

std::pair<torch::Tensor, torch::Tensor> RotaryTables(int64_t head_dim,
                                                     int64_t context) {
  const int64_t half = head_dim / 2;
  const torch::Tensor index = torch::arange(half, torch::kFloat64);
  const torch::Tensor inv_freq =
      torch::pow(kRotaryBase, -index / std::max<int64_t>(half, 1));
  const torch::Tensor angle =
      torch::outer(torch::arange(context, torch::kFloat64), inv_freq);
  return {torch::cos(angle).to(torch::kFloat32),
          torch::sin(angle).to(torch::kFloat32)};
}

torch::Tensor ApplyRotary(const torch::Tensor& x, int64_t heads,
                          const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t b = x.size(0), t = x.size(1), c = x.size(2);
  const int64_t d = c / heads;
  const int64_t half = d / 2;
  if (half == 0) return x;  // width-1 heads have nothing to rotate
  const torch::Tensor xv = x.view({b, t, heads, d});
  const torch::Tensor x1 = xv.narrow(-1, 0, half);
  const torch::Tensor x2 = xv.narrow(-1, half, half);
  const torch::Tensor cs = cos.narrow(0, 0, t).view({1, t, 1, half});
  const torch::Tensor sn = sin.narrow(0, 0, t).view({1, t, 1, half});
  std::vector<torch::Tensor> parts = {x1 * cs - x2 * sn, x2 * cs + x1 * sn};
  if (d % 2 == 1) parts.push_back(xv.narrow(-1, 2 * half, 1));
  return torch::cat(parts, -1).view({b, t, c});
}

CausalSelfAttentionImpl::CausalSelfAttentionImpl(int64_t d_model, int64_t heads,
                                                 int64_t context, bool rotary)
    : heads_(heads), rotary_(rotary) {
  c_attn = register_module(
      "c_attn", torch::nn::Linear(
                    torch::nn::LinearOptions(d_model, 3 * d_model).bias(true)));
  c_proj = register_module(
      "c_proj",
      torch::nn::Linear(torch::nn::LinearOptions(d_model, d_model).bias(true)));
  if (rotary_) {
    auto [cos, sin] = RotaryTables(d_model / heads, context);
    rope_cos_ = register_buffer("rope_cos", cos);
    rope_sin_ = register_buffer("rope_sin", sin);
  }
}

std::vector<torch::Tensor> CausalSelfAttentionImpl::Project(
    const torch::Tensor& x) {
  const int64_t c = x.size(2);
  const torch::Tensor qkv = c_attn(x);  // (B, T, 3C)
  torch::Tensor q = qkv.narrow(2, 0, c);
  torch::Tensor k = qkv.narrow(2, c, c);
  torch::Tensor v = qkv.narrow(2, 2 * c, c);
  if (rotary_) {
    q = ApplyRotary(q, heads_, rope_cos_, rope_sin_);
    k = ApplyRotary(k, heads_, rope_cos_, rope_sin_);
  }
  return {q, k, v};
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x,
                                               AttentionKernel kernel) {
  kernel = Resolve(kernel, x);
  const std::optional<Isa> level = FusedLevel(kernel);
  if (level && !rotary_) {
    return c_proj(FusedCausalAttentionPacked(c_attn(x), heads_, *level));
  }
  const std::vector<torch::Tensor> qkv = Project(x);
  if (level) {
    return c_proj(FusedCausalAttention(qkv[0], qkv[1], qkv[2], heads_, *level));
  }
  torch::Tensor y;
  switch (kernel) {
    case AttentionKernel::kSdpa:
      y = SdpaAttention(qkv[0], qkv[1], qkv[2], heads_);
      break;
    default:
      y = MaskedSoftmaxAttention(qkv[0], qkv[1], qkv[2], heads_);
      break;
  }
  return c_proj(y);
}

torch::Tensor CausalSelfAttentionImpl::ForwardProbe(const torch::Tensor& x,
                                                    double* mean_distance) {
  const std::vector<torch::Tensor> qkv = Project(x);
  const torch::Tensor probs = AttentionProbabilities(qkv[0], qkv[1], heads_);
  const int64_t queries = probs.numel() / probs.size(-1);
  *mean_distance = SumAttentionDistance(probs) / static_cast<double>(queries);
  return c_proj(AttentionFromProbabilities(probs, qkv[2]));
}

BlockImpl::BlockImpl(int64_t d_model, int64_t heads, int64_t context,
                     bool rotary, double dropout)
    : dropout_(dropout) {
  ln_1 = register_module(
      "ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  attn = register_module("attn",
                         CausalSelfAttention(d_model, heads, context, rotary));
  ln_2 = register_module(
      "ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  c_fc = register_module(
      "c_fc", torch::nn::Linear(
                  torch::nn::LinearOptions(d_model, 4 * d_model).bias(true)));
  c_proj = register_module(
      "c_proj", torch::nn::Linear(
                    torch::nn::LinearOptions(4 * d_model, d_model).bias(true)));
}

torch::Tensor BlockImpl::Mlp(const torch::Tensor& x) {
  return c_proj(TanhGelu(c_fc(x)));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, AttentionKernel kernel,
                                 std::optional<at::Generator> dropout_gen) {
  torch::Tensor h =
      x + Dropout(attn(ln_1(x), kernel), dropout_, is_training(), dropout_gen);
  return h + Dropout(Mlp(ln_2(h)), dropout_, is_training(), dropout_gen);
}

torch::Tensor BlockImpl::ForwardProbe(const torch::Tensor& x,
                                      double* mean_distance) {
  torch::Tensor h = x + attn->ForwardProbe(ln_1(x), mean_distance);
  return h + Mlp(ln_2(h));
}

PrismDecoderImpl::PrismDecoderImpl(const ModelShape& shape,
                                   const Schedule& schedule)
    : shape_(shape), schedule_(schedule) {
  TORCH_CHECK(schedule.layers() == shape.layers, "schedule has ",
              schedule.layers(), " layers, the shape ", shape.layers);
  const bool rotary = shape.positions == Positions::kRotary;
  wte = register_module("wte",
                        torch::nn::Embedding(shape.vocab_size, shape.d_model));
  if (!rotary) {
    wpe = register_module("wpe",
                          torch::nn::Embedding(shape.context, shape.d_model));
  }
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int heads : schedule.heads()) {
    TORCH_CHECK(heads > 0 && shape.d_model % heads == 0, heads,
                " heads do not divide d_model ", shape.d_model);
    blocks->push_back(
        Block(shape.d_model, heads, shape.context, rotary, shape.dropout));
  }
  ln_f = register_module(
      "ln_f",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({shape.d_model})));
}

void PrismDecoderImpl::InitializeWeights(uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const double residual_std =
      kInitStd / std::sqrt(2.0 * static_cast<double>(shape_.layers));
  auto normal = [&](torch::Tensor& w, double stddev) {
    // Draw on the CPU so every device starts from the same weights.
    w.copy_(torch::empty(w.sizes(), torch::kFloat32).normal_(0.0, stddev, gen));
  };
  normal(wte->weight, kInitStd);
  if (wpe) normal(wpe->weight, kInitStd);
  for (const auto& module : *blocks) {
    auto block = module->as<BlockImpl>();
    normal(block->attn->c_attn->weight, kInitStd);
    normal(block->attn->c_proj->weight, residual_std);
    normal(block->c_fc->weight, kInitStd);
    normal(block->c_proj->weight, residual_std);
    for (torch::nn::Linear* linear :
         {&block->attn->c_attn, &block->attn->c_proj, &block->c_fc,
          &block->c_proj}) {
      (*linear)->bias.zero_();
    }
    for (torch::nn::LayerNorm* norm : {&block->ln_1, &block->ln_2}) {
      (*norm)->weight.fill_(1.0);
      (*norm)->bias.zero_();
    }
  }
  ln_f->weight.fill_(1.0);
  ln_f->bias.zero_();
}

torch::Tensor PrismDecoderImpl::Embed(
    const torch::Tensor& idx, std::optional<at::Generator> dropout_gen) {
  const int64_t t = idx.size(1);
  TORCH_CHECK(t <= shape_.context, "sequence of ", t,
              " tokens exceeds the context ", shape_.context);
  torch::Tensor x = wte(idx);
  if (wpe) x = x + wpe->weight.narrow(0, 0, t);
  return Dropout(x, shape_.dropout, is_training(), dropout_gen);
}

torch::Tensor PrismDecoderImpl::forward(
    const torch::Tensor& idx, AttentionKernel kernel,
    std::optional<at::Generator> dropout_gen) {
  torch::Tensor x = Embed(idx, dropout_gen);
  for (const auto& module : *blocks) {
    x = module->as<BlockImpl>()->forward(x, kernel, dropout_gen);
  }
  return torch::nn::functional::linear(ln_f(x), wte->weight);
}

torch::Tensor PrismDecoderImpl::Loss(const torch::Tensor& idx,
                                     const torch::Tensor& targets,
                                     AttentionKernel kernel,
                                     std::optional<at::Generator> dropout_gen) {
  const torch::Tensor logits = forward(idx, kernel, dropout_gen);
  return torch::nn::functional::cross_entropy(
      logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
}

torch::Tensor PrismDecoderImpl::TokenLosses(const torch::Tensor& idx,
                                            const torch::Tensor& targets) {
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = forward(idx);
  return torch::nn::functional::cross_entropy(
             logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32),
             targets.reshape({-1}),
             torch::nn::functional::CrossEntropyFuncOptions().reduction(
                 torch::kNone))
      .view(targets.sizes());
}

std::vector<double> PrismDecoderImpl::AttentionDistances(
    const torch::Tensor& idx) {
  torch::NoGradGuard no_grad;
  std::vector<double> distances;
  torch::Tensor x = Embed(idx, std::nullopt);
  for (const auto& module : *blocks) {
    double distance = 0.0;
    x = module->as<BlockImpl>()->ForwardProbe(x, &distance);
    distances.push_back(distance);
  }
  return distances;
}

int64_t PrismDecoderImpl::ForwardFlopsPerToken(int64_t t) {
  int64_t flops = 0;
  for (const torch::Tensor& p : parameters()) {
    if (!wpe || !p.is_same(wpe->weight)) flops += 2 * p.numel();
  }
  for (const auto& module : *blocks) {
    const CausalSelfAttention& attn = module->as<BlockImpl>()->attn;
    const int64_t head_dim = shape_.d_model / attn->heads();
    flops += attn->heads() * 2 * 2 * t * head_dim;
  }
  return flops;
}

std::vector<torch::Tensor> PrismDecoderImpl::DecayedParameters() {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : parameters()) {
    if (p.dim() >= 2) out.push_back(p);
  }
  return out;
}

std::vector<torch::Tensor> PrismDecoderImpl::OtherParameters() {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : parameters()) {
    if (p.dim() < 2) out.push_back(p);
  }
  return out;
}

}  // namespace prism::model::internal
