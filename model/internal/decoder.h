// PrismDecoder: a GPT-2 style decoder whose layers each have their own
// attention head count (private to model/; the public API is trainer.h).
//
// Pre-LayerNorm blocks: x += attn(ln_1(x)); x += mlp(ln_2(x)), with a fused
// QKV projection, a 4x tanh-GELU MLP, tied input/output embeddings, learned
// positions (GPT-2) or rotary positions applied per head for any head width.
// W_Q, W_K, W_V and W_O are d_model x d_model whatever the layer's heads, so
// parameters and FLOPs do not depend on the schedule.
//
//   PrismDecoder model(shape, schedule);
//   model->InitializeWeights(/*seed=*/0);
//   torch::Tensor loss = model->Loss(inputs, targets);   // summed over tokens
//
// Thread-safety: forward passes may run concurrently on one model (shards of
// a batch) as long as nobody changes the weights meanwhile.
#ifndef PRISM_MODEL_INTERNAL_DECODER_H_
#define PRISM_MODEL_INTERNAL_DECODER_H_

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "model/internal/kernels.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"

namespace prism::model::internal {

enum class AttentionKernel {
  kAuto,           // fused on CPU fp32, SDPA elsewhere when available
  kFused,          // FusedCausalAttention at DefaultIsa() (CPU fp32 only)
  kMaskedSoftmax,  // MaskedSoftmaxAttention
  kSdpa,           // SdpaAttention
  // FusedCausalAttention at a given instruction set (one of SupportedIsas()).
  kFusedBaseline,
  kFusedAvx2,
  kFusedAvx512,
};

// FusedAt returns the fused kernel at `isa`.
AttentionKernel FusedAt(Isa isa);

// FusedLevel returns the instruction set a fused kernel runs at
// (DefaultIsa() for kFused), nullopt for the other kernels.
std::optional<Isa> FusedLevel(AttentionKernel kernel);

// ApplyRotary rotates (B, T, C) queries or keys per head of width C / heads:
// the first and second halves of each head's first 2 * floor(D / 2) channels
// form the rotated pairs (the GPT-NeoX layout); an odd last channel passes
// through. cos and sin are (>= T, floor(D / 2)).
torch::Tensor ApplyRotary(const torch::Tensor& x, int64_t heads,
                          const torch::Tensor& cos, const torch::Tensor& sin);

// RotaryTables returns {cos, sin} of shape (context, floor(head_dim / 2)) for
// base 10000.
std::pair<torch::Tensor, torch::Tensor> RotaryTables(int64_t head_dim,
                                                     int64_t context);

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  CausalSelfAttentionImpl(int64_t d_model, int64_t heads, int64_t context,
                          bool rotary);
  torch::Tensor forward(const torch::Tensor& x, AttentionKernel kernel);
  // ForwardProbe runs the explicit-softmax path and returns the output plus
  // this layer's mean attention distance over (batch, heads, queries).
  torch::Tensor ForwardProbe(const torch::Tensor& x, double* mean_distance);
  int64_t heads() const { return heads_; }

  torch::nn::Linear c_attn{nullptr};
  torch::nn::Linear c_proj{nullptr};

 private:
  std::vector<torch::Tensor> Project(const torch::Tensor& x);
  int64_t heads_;
  bool rotary_;
  torch::Tensor rope_cos_, rope_sin_;
};
TORCH_MODULE(CausalSelfAttention);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(int64_t d_model, int64_t heads, int64_t context, bool rotary,
            double dropout);
  torch::Tensor forward(const torch::Tensor& x, AttentionKernel kernel,
                        std::optional<at::Generator> dropout_gen);
  torch::Tensor ForwardProbe(const torch::Tensor& x, double* mean_distance);

  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  CausalSelfAttention attn{nullptr};
  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};

 private:
  torch::Tensor Mlp(const torch::Tensor& x);
  double dropout_;
};
TORCH_MODULE(Block);

class PrismDecoderImpl : public torch::nn::Module {
 public:
  // The schedule must have shape.layers layers, each dividing d_model.
  PrismDecoderImpl(const ModelShape& shape, const Schedule& schedule);

  // InitializeWeights draws GPT-2's init from a generator seeded with `seed`:
  // N(0, 0.02) for embeddings and projections, N(0, 0.02 / sqrt(2L)) for the
  // residual output projections, zero biases, unit LayerNorm gains.
  void InitializeWeights(uint64_t seed);

  // forward returns logits (B, T, V) for token ids (B, T). dropout_gen
  // drives dropout when the shape has any and the module is training.
  torch::Tensor forward(const torch::Tensor& idx,
                        AttentionKernel kernel = AttentionKernel::kAuto,
                        std::optional<at::Generator> dropout_gen = {});

  // Loss returns the cross entropy summed over every token.
  torch::Tensor Loss(const torch::Tensor& idx, const torch::Tensor& targets,
                     AttentionKernel kernel = AttentionKernel::kAuto,
                     std::optional<at::Generator> dropout_gen = {});

  // TokenLosses returns the per-token cross entropy (B, T) without grad.
  torch::Tensor TokenLosses(const torch::Tensor& idx,
                            const torch::Tensor& targets);

  // AttentionDistances returns, per layer, the mean over (batch, heads,
  // queries i) of sum_j a_ij * (i - j), from an explicit-softmax pass.
  std::vector<double> AttentionDistances(const torch::Tensor& idx);

  // ForwardFlopsPerToken counts this model's forward FLOPs per token at
  // context t the way presets.h's analytic count does, but from the built
  // modules: 2 per parameter outside the position table, plus, per layer and
  // per head, 2 * 2 * t * head_dim for QK^T and AV.
  int64_t ForwardFlopsPerToken(int64_t t);

  // DecayedParameters are the 2-D weights (embeddings and projections);
  // OtherParameters the biases and LayerNorm parameters.
  std::vector<torch::Tensor> DecayedParameters();
  std::vector<torch::Tensor> OtherParameters();

  const ModelShape& shape() const { return shape_; }
  const Schedule& schedule() const { return schedule_; }

  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  torch::Tensor Embed(const torch::Tensor& idx,
                      std::optional<at::Generator> dropout_gen);
  ModelShape shape_;
  Schedule schedule_;
};
TORCH_MODULE(PrismDecoder);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_DECODER_H_
