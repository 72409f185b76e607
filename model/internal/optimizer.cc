#include "model/internal/optimizer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "model/internal/kernels.h"

namespace prism::model::internal {

FlatAdamW::FlatAdamW(const std::vector<torch::Tensor>& decayed,
                     const std::vector<torch::Tensor>& other,
                     AdamWOptions options)
    : options_(options) {
  params_ = decayed;
  params_.insert(params_.end(), other.begin(), other.end());
  int64_t total = 0;
  for (const torch::Tensor& p : params_) total += p.numel();
  for (const torch::Tensor& p : decayed) decayed_numel_ += p.numel();
  TORCH_CHECK(!params_.empty(), "FlatAdamW: no parameters");
  const auto options_like = params_.front().options();
  flat_params_ = torch::empty({total}, options_like);
  flat_grads_ = torch::zeros({total}, options_like);
  exp_avg_ = torch::zeros({total}, options_like);
  exp_avg_sq_ = torch::zeros({total}, options_like);
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (torch::Tensor& p : params_) {
    const int64_t n = p.numel();
    torch::Tensor slot = flat_params_.narrow(0, offset, n).view(p.sizes());
    slot.copy_(p);
    p.set_data(slot);
    torch::Tensor grad = flat_grads_.narrow(0, offset, n).view(p.sizes());
    grads_.push_back(grad);
    offset += n;
  }
}

double FlatAdamW::Step(double lr, double max_norm, ShardPool* pool) {
  torch::NoGradGuard no_grad;
  const int64_t total = flat_params_.numel();
  double norm = 0.0;
  if (flat_params_.is_cpu()) {
    // Fixed chunks per shard, summed in shard order: deterministic.
    const int shards = pool->size();
    std::vector<double> partial(shards, 0.0);
    const float* g = flat_grads_.data_ptr<float>();
    pool->Run([&](int shard) {
      const int64_t begin = total * shard / shards;
      const int64_t end = total * (shard + 1) / shards;
      partial[shard] = SumOfSquares(g + begin, end - begin);
    });
    double sum = 0.0;
    for (double p : partial) sum += p;
    norm = std::sqrt(sum);
  } else {
    norm = flat_grads_.norm().item<double>();
  }
  if (!std::isfinite(norm)) return norm;

  ++step_count_;
  const double clip = std::min(1.0, max_norm / (norm + 1e-6));
  const double bias1 = 1.0 - std::pow(options_.beta1, step_count_);
  const double bias2 = 1.0 - std::pow(options_.beta2, step_count_);
  const double step_size = lr / bias1;
  const double decay = 1.0 - lr * options_.weight_decay;

  if (flat_params_.is_cpu()) {
    AdamWCoefficients c;
    c.clip = static_cast<float>(clip);
    c.beta1 = static_cast<float>(options_.beta1);
    c.beta2 = static_cast<float>(options_.beta2);
    c.step_size = static_cast<float>(step_size);
    c.inv_sqrt_bias2 = static_cast<float>(1.0 / std::sqrt(bias2));
    c.eps = static_cast<float>(options_.eps);
    float* p = flat_params_.data_ptr<float>();
    const float* g = flat_grads_.data_ptr<float>();
    float* m = exp_avg_.data_ptr<float>();
    float* v = exp_avg_sq_.data_ptr<float>();
    const int shards = pool->size();
    pool->Run([&](int shard) {
      const int64_t begin = total * shard / shards;
      const int64_t end = total * (shard + 1) / shards;
      // Split the chunk where weight decay stops.
      const int64_t split = std::clamp(decayed_numel_, begin, end);
      AdamWCoefficients decayed = c;
      decayed.decay = static_cast<float>(decay);
      FusedAdamW(p + begin, g + begin, m + begin, v + begin, split - begin,
                 decayed);
      AdamWCoefficients undecayed = c;
      undecayed.decay = 1.0f;
      FusedAdamW(p + split, g + split, m + split, v + split, end - split,
                 undecayed);
    });
    return norm;
  }
  // CUDA: a few whole-buffer kernels, the same arithmetic as torch.optim.
  if (clip < 1.0) flat_grads_.mul_(clip);
  exp_avg_.mul_(options_.beta1).add_(flat_grads_, 1.0 - options_.beta1);
  exp_avg_sq_.mul_(options_.beta2)
      .addcmul_(flat_grads_, flat_grads_, 1.0 - options_.beta2);
  flat_params_.narrow(0, 0, decayed_numel_).mul_(decay);
  const torch::Tensor denom =
      (exp_avg_sq_.sqrt() / std::sqrt(bias2)).add_(options_.eps);
  flat_params_.addcdiv_(exp_avg_, denom, -step_size);
  return norm;
}

}  // namespace prism::model::internal
