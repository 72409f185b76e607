#include "model/internal/gelu.h"

#include <torch/torch.h>

#include <cstdint>

#include "model/internal/kernels.h"

namespace prism::model::internal {
namespace {

// Elements per at::parallel_for chunk: large enough to amortize the split.
constexpr int64_t kGrain = 1 << 15;

class TanhGeluFunction : public torch::autograd::Function<TanhGeluFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& x) {
    ctx->save_for_backward({x});
    return Forward(x);
  }

  static torch::autograd::tensor_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::tensor_list grad_outputs) {
    const torch::Tensor x = ctx->get_saved_variables()[0];
    const torch::Tensor dy = grad_outputs[0].contiguous();
    torch::Tensor dx = torch::empty_like(x);
    const float* xp = x.data_ptr<float>();
    const float* dyp = dy.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    at::parallel_for(0, x.numel(), kGrain, [&](int64_t begin, int64_t end) {
      GeluBackward(xp + begin, dyp + begin, dxp + begin, end - begin);
    });
    return {dx};
  }

  static torch::Tensor Forward(const torch::Tensor& x) {
    torch::Tensor y = torch::empty_like(x);
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    at::parallel_for(0, x.numel(), kGrain, [&](int64_t begin, int64_t end) {
      GeluForward(xp + begin, yp + begin, end - begin);
    });
    return y;
  }
};

}  // namespace

torch::Tensor TanhGelu(const torch::Tensor& x) {
  if (!x.is_cpu() || x.scalar_type() != torch::kFloat32 || !x.is_contiguous()) {
    return torch::gelu(x, "tanh");
  }
  if (!(torch::GradMode::is_enabled() && x.requires_grad())) {
    return TanhGeluFunction::Forward(x);
  }
  return TanhGeluFunction::apply(x);
}

}  // namespace prism::model::internal
