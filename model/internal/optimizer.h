// FlatAdamW: AdamW over one flat parameter buffer, with global-norm gradient
// clipping (private to model/).
//
// The constructor moves every parameter's storage into one contiguous buffer
// (weight-decayed tensors first) and gives each a matching gradient view, so
// clipping and the update are single passes over contiguous memory instead
// of a dozen operators per tensor: on the CPU one fused loop per shard
// thread, on CUDA a handful of whole-buffer kernels. The update is AdamW as
// PyTorch defines it (decoupled weight decay, bias-corrected moments).
//
//   FlatAdamW opt(model->DecayedParameters(), model->OtherParameters(), {});
//   ... backward into opt.gradients() ...
//   double norm = opt.Step(lr, /*max_norm=*/1.0, &pool);
//
// Thread-safety: not thread-safe; Step uses the pool for its own threads.
#ifndef PRISM_MODEL_INTERNAL_OPTIMIZER_H_
#define PRISM_MODEL_INTERNAL_OPTIMIZER_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "model/internal/shard_pool.h"

namespace prism::model::internal {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

class FlatAdamW {
 public:
  FlatAdamW(const std::vector<torch::Tensor>& decayed,
            const std::vector<torch::Tensor>& other, AdamWOptions options);

  // parameters() are the tensors given, decayed first; gradients()[i] is the
  // view of the flat gradient that belongs to parameters()[i].
  const std::vector<torch::Tensor>& parameters() const { return params_; }
  const std::vector<torch::Tensor>& gradients() const { return grads_; }

  torch::Tensor& flat_parameters() { return flat_params_; }
  torch::Tensor& flat_gradients() { return flat_grads_; }
  torch::Tensor& exp_avg() { return exp_avg_; }
  torch::Tensor& exp_avg_sq() { return exp_avg_sq_; }
  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t steps) { step_count_ = steps; }

  void ZeroGrad() { flat_grads_.zero_(); }

  // Step clips the gradient to a global L2 norm of max_norm (as
  // torch.nn.utils.clip_grad_norm_ does) and applies one AdamW update with
  // learning rate lr. Returns the norm before clipping; when it is not
  // finite nothing is updated.
  double Step(double lr, double max_norm, ShardPool* pool);

 private:
  AdamWOptions options_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> grads_;
  torch::Tensor flat_params_, flat_grads_, exp_avg_, exp_avg_sq_;
  int64_t decayed_numel_ = 0;
  int64_t step_count_ = 0;
};

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_OPTIMIZER_H_
