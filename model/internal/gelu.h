// TanhGelu: GELU with the tanh approximation (GPT-2's), as one fused CPU
// kernel with its own backward (private to model/).
//
// Debian's LibTorch computes the tanh form through a slow vectorized tanh
// (about 3 ns per element here, over half the MLP's non-matmul time); the
// kernel in kernels.cc computes tanh through one exp and the derivative in
// the same pass. Other devices and dtypes use torch::gelu(x, "tanh").
//
// Thread-safety: a pure function.
#ifndef PRISM_MODEL_INTERNAL_GELU_H_
#define PRISM_MODEL_INTERNAL_GELU_H_

#include <torch/torch.h>

namespace prism::model::internal {

torch::Tensor TanhGelu(const torch::Tensor& x);

}  // namespace prism::model::internal

#endif  // PRISM_MODEL_INTERNAL_GELU_H_
