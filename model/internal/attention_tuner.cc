#include "model/internal/attention_tuner.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/internal/attention.h"

namespace prism::model::internal {
namespace {

constexpr int kTimedReps = 5;
// A later candidate replaces the current choice only when it is this much
// faster: candidates come in order of preference (the widest fused kernel
// first), so timing noise between near-equal kernels (on a loaded machine)
// does not flip the choice between runs.
constexpr double kMargin = 0.05;
constexpr int64_t kMaxRows = 4;

// Milliseconds of one call of AttentionOnce.
double AttentionOnce(AttentionKernel kernel, const torch::Tensor& input,
                     const torch::Tensor& grad, int64_t heads) {
  const auto start = std::chrono::steady_clock::now();
  torch::Tensor qkv = input.detach().requires_grad_(true);
  const int64_t c = qkv.size(2) / 3;
  torch::Tensor y;
  if (const std::optional<Isa> level = FusedLevel(kernel)) {
    y = FusedCausalAttentionPacked(qkv, heads, *level);
  } else if (kernel == AttentionKernel::kSdpa) {
    y = SdpaAttention(qkv.narrow(2, 0, c), qkv.narrow(2, c, c),
                      qkv.narrow(2, 2 * c, c), heads);
  } else {
    y = MaskedSoftmaxAttention(qkv.narrow(2, 0, c), qkv.narrow(2, c, c),
                               qkv.narrow(2, 2 * c, c), heads);
  }
  y.backward(grad);
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

std::string CacheKey(const AttentionShape& shape,
                     const std::vector<AttentionKernel>& candidates) {
  std::vector<int> kernels;
  for (AttentionKernel k : candidates) kernels.push_back(static_cast<int>(k));
  return absl::StrCat(shape.rows, "/", shape.context, "/", shape.channels, "/",
                      absl::StrJoin(shape.layer_heads, ","), "/",
                      at::get_num_threads(), "/", absl::StrJoin(kernels, ","));
}

std::mutex& CacheMutex() {
  static std::mutex mu;
  return mu;
}

std::map<std::string, AttentionChoice>& Cache() {
  static auto* cache = new std::map<std::string, AttentionChoice>();
  return *cache;
}

}  // namespace

std::vector<AttentionKernel> AttentionCandidates(
    std::optional<Isa> forced_isa) {
  std::vector<AttentionKernel> candidates;
  if (forced_isa) {
    candidates.push_back(FusedAt(*forced_isa));
  } else {
    const std::vector<Isa> levels = SupportedIsas();
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
      candidates.push_back(FusedAt(*it));
    }
  }
  candidates.push_back(AttentionKernel::kMaskedSoftmax);
  return candidates;
}

AttentionChoice ChooseAttentionKernel(
    const AttentionShape& shape,
    const std::vector<AttentionKernel>& candidates) {
  AttentionChoice choice;
  choice.kernel = candidates.front();
  if (candidates.size() == 1) return choice;
  const std::string key = CacheKey(shape, candidates);
  std::lock_guard<std::mutex> lock(CacheMutex());
  if (auto it = Cache().find(key); it != Cache().end()) return it->second;

  std::map<int64_t, int> layers_with;  // head count -> layers
  for (int64_t heads : shape.layer_heads) ++layers_with[heads];
  torch::manual_seed(0);
  // Attention's cost is linear in the rows; a few rows rank the candidates.
  const int64_t rows = std::min(shape.rows, kMaxRows);
  const torch::Tensor input =
      torch::randn({rows, shape.context, 3 * shape.channels});
  const torch::Tensor grad =
      torch::randn({rows, shape.context, shape.channels});
  double best = std::numeric_limits<double>::infinity();
  for (AttentionKernel kernel : candidates) {
    double total = 0.0;
    for (const auto& [heads, layers] : layers_with) {
      AttentionOnce(kernel, input, grad, heads);  // warmup: scratch, pages
      double fastest = std::numeric_limits<double>::infinity();
      for (int rep = 0; rep < kTimedReps; ++rep) {
        fastest = std::min(fastest, AttentionOnce(kernel, input, grad, heads));
      }
      total += layers * fastest;
    }
    choice.timings.push_back({kernel, total});
    if (total < best * (1.0 - kMargin)) {
      best = total;
      choice.kernel = kernel;
    }
  }
  Cache()[key] = choice;
  return choice;
}

std::string AttentionKernelName(AttentionKernel kernel) {
  if (FusedLevel(kernel)) return "fused";
  switch (kernel) {
    case AttentionKernel::kMaskedSoftmax:
      return "masked";
    case AttentionKernel::kSdpa:
      return "sdpa";
    default:
      return "auto";
  }
}

std::string AttentionKernelKey(AttentionKernel kernel) {
  const std::optional<Isa> level = FusedLevel(kernel);
  return level ? AttentionKernelName(kernel) + ":" + IsaName(*level)
               : AttentionKernelName(kernel);
}

std::optional<AttentionKernel> KernelFromKey(
    const std::string& key, const std::vector<AttentionKernel>& candidates) {
  for (AttentionKernel k : candidates) {
    if (AttentionKernelKey(k) == key) return k;
  }
  return std::nullopt;
}

}  // namespace prism::model::internal
