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

size_t PreferredCandidate(const std::vector<double>& milliseconds,
                          double margin) {
  size_t chosen = 0;
  for (size_t i = 1; i < milliseconds.size(); ++i) {
    if (milliseconds[i] < milliseconds[chosen] * (1.0 - margin)) chosen = i;
  }
  return chosen;
}

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
  // Candidates take turns, one call each per repetition, so a slow moment
  // of the machine (another process, a frequency change) lands on all of
  // them instead of on whichever was being timed.
  const size_t n = candidates.size();
  std::vector<double> totals(n, 0.0);
  for (const auto& [heads, layers] : layers_with) {
    for (AttentionKernel kernel : candidates) {
      AttentionOnce(kernel, input, grad, heads);  // warmup: scratch, pages
    }
    std::vector<double> fastest(n, std::numeric_limits<double>::infinity());
    for (int rep = 0; rep < kTimedReps; ++rep) {
      for (size_t i = 0; i < n; ++i) {
        fastest[i] = std::min(fastest[i],
                              AttentionOnce(candidates[i], input, grad, heads));
      }
    }
    for (size_t i = 0; i < n; ++i) totals[i] += layers * fastest[i];
  }
  for (size_t i = 0; i < n; ++i) {
    choice.timings.push_back({candidates[i], totals[i]});
  }
  choice.kernel = candidates[PreferredCandidate(totals, kMargin)];
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
