#include "model/eval.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "model/internal/checkpoint.h"
#include "model/internal/decoder.h"
#include "model/internal/runtime.h"
#include "scheduler/space/space.h"

namespace prism::model {
namespace {

// CheckShapeAndSchedule refuses a shape or schedule the decoder cannot build.
absl::Status CheckShapeAndSchedule(const EvalConfig& config) {
  if (absl::Status s = ValidateShape(config.shape); !s.ok()) return s;
  SpaceSpec spec;
  spec.d_model = config.shape.d_model;
  spec.layers = config.shape.layers;
  spec.base_heads = config.shape.base_heads;
  if (absl::Status s = CheckHardConstraints(spec, config.schedule); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "schedule '", config.schedule.ToString(), "': ", s.message()));
  }
  return absl::OkStatus();
}

// LoadEvalCheckpoint loads the latest checkpoint of this shape and schedule,
// whatever seed and recipe trained it; NotFound when there is none.
absl::StatusOr<internal::Checkpoint> LoadEvalCheckpoint(
    const EvalConfig& config) {
  internal::CheckpointIdentity identity;
  identity.shape = internal::ShapeKey(config.shape);
  identity.schedule = config.schedule.ToString();
  identity.check_seed = false;
  identity.check_recipe = false;
  absl::StatusOr<std::optional<internal::Checkpoint>> checkpoint =
      internal::LoadCheckpoint(config.checkpoint_dir, identity);
  if (!checkpoint.ok()) return checkpoint.status();
  if (!checkpoint->has_value()) {
    return absl::NotFoundError(absl::StrCat("no checkpoint in ",
                                            config.checkpoint_dir,
                                            " (train with --checkpoint-dir)"));
  }
  return std::move(**checkpoint);
}

// CopyFlatParameters copies a checkpoint's flat parameters into the model.
// FailedPrecondition when their counts differ.
absl::Status CopyFlatParameters(internal::PrismDecoder& model,
                                const torch::Tensor& flat) {
  // The trainer's flat layout: decayed parameters first, then the rest.
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params = model->DecayedParameters();
  for (const torch::Tensor& p : model->OtherParameters()) params.push_back(p);
  int64_t offset = 0;
  for (torch::Tensor& p : params) offset += p.numel();
  if (offset != flat.numel()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint has ", flat.numel(), " parameters, the model ", offset));
  }
  offset = 0;
  for (torch::Tensor& p : params) {
    p.copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
  return absl::OkStatus();
}

// ExampleBatch is one example's completions as a batch: row r is context +
// completion r, shifted into inputs and targets, with mask 1 on the targets
// that are the completion's tokens.
//   R rows (completions), T the longest row less one
struct ExampleBatch {
  torch::Tensor inputs;   // (R, T) int64
  torch::Tensor targets;  // (R, T) int64
  torch::Tensor mask;     // (R, T) float
};

ExampleBatch BatchExample(const EvalExample& example, int64_t window) {
  const int64_t rows = static_cast<int64_t>(example.completions.size());
  // Each row is context + completion, left-truncated to the window; the
  // scored targets are the completion's last tokens.
  std::vector<std::vector<uint16_t>> sequences;
  int64_t longest = 2;
  for (const std::vector<uint16_t>& completion : example.completions) {
    std::vector<uint16_t> seq = example.context;
    seq.insert(seq.end(), completion.begin(), completion.end());
    if (static_cast<int64_t>(seq.size()) > window) {
      seq.erase(seq.begin(), seq.end() - window);
    }
    longest = std::max<int64_t>(longest, seq.size());
    sequences.push_back(std::move(seq));
  }
  const int64_t t = longest - 1;
  ExampleBatch batch;
  batch.inputs = torch::zeros({rows, t}, torch::kInt64);
  batch.targets = torch::zeros({rows, t}, torch::kInt64);
  batch.mask = torch::zeros({rows, t}, torch::kFloat32);
  auto in = batch.inputs.accessor<int64_t, 2>();
  auto out = batch.targets.accessor<int64_t, 2>();
  auto scored_mask = batch.mask.accessor<float, 2>();
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<uint16_t>& seq = sequences[r];
    const int64_t n = static_cast<int64_t>(seq.size());
    const int64_t scored = std::min<int64_t>(
        static_cast<int64_t>(example.completions[r].size()), n - 1);
    for (int64_t i = 0; i + 1 < n; ++i) {
      in[r][i] = seq[i];
      out[r][i] = seq[i + 1];
      if (i >= n - 1 - scored) scored_mask[r][i] = 1.0f;
    }
  }
  return batch;
}

// ScoreExample counts one example into `result`: correct when the label's
// completion has the lowest summed loss, correct_norm when it has the lowest
// mean loss per completion token.
void ScoreExample(internal::PrismDecoder& model, const torch::Device& device,
                  const EvalExample& example, int64_t window,
                  EvalResult* result) {
  const ExampleBatch batch = BatchExample(example, window);
  const torch::Tensor losses =
      model->TokenLosses(batch.inputs.to(device), batch.targets.to(device))
          .to(torch::kCPU) *
      batch.mask;
  const torch::Tensor sums = losses.sum(1);
  const torch::Tensor means = sums / batch.mask.sum(1).clamp_min(1.0f);
  if (sums.argmin().item<int64_t>() == example.label) ++result->correct;
  if (means.argmin().item<int64_t>() == example.label) {
    ++result->correct_norm;
  }
  ++result->examples;
}

absl::StatusOr<EvalResult> Evaluate(const EvalConfig& config) {
  if (absl::Status s = CheckShapeAndSchedule(config); !s.ok()) return s;
  absl::StatusOr<std::vector<EvalExample>> examples =
      ReadEvalFile(config.eval_file, config.shape.vocab_size);
  if (!examples.ok()) return examples.status();
  absl::StatusOr<torch::Device> device = internal::ResolveDevice(config.device);
  if (!device.ok()) return device.status();
  absl::StatusOr<internal::Checkpoint> checkpoint = LoadEvalCheckpoint(config);
  if (!checkpoint.ok()) return checkpoint.status();

  const int threads =
      config.threads > 0 ? config.threads : internal::HardwareThreads();
  at::set_num_threads(threads);
  internal::PrismDecoder model(config.shape, config.schedule);
  if (absl::Status s = CopyFlatParameters(model, checkpoint->parameters);
      !s.ok()) {
    return s;
  }
  model->to(*device);
  model->eval();

  EvalResult result;
  result.checkpoint_step = checkpoint->step;
  result.device = device->str();
  const int64_t window = int64_t{config.shape.context} + 1;
  const int64_t count =
      config.limit > 0
          ? std::min<int64_t>(config.limit,
                              static_cast<int64_t>(examples->size()))
          : static_cast<int64_t>(examples->size());
  for (int64_t e = 0; e < count; ++e) {
    ScoreExample(model, *device, (*examples)[e], window, &result);
  }
  if (result.examples > 0) {
    result.acc = static_cast<double>(result.correct) / result.examples;
    result.acc_norm =
        static_cast<double>(result.correct_norm) / result.examples;
  }
  return result;
}

}  // namespace

absl::StatusOr<EvalResult> EvaluateMultipleChoice(const EvalConfig& config) {
  try {
    return Evaluate(config);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("libtorch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("evaluation failed: ", e.what()));
  }
}

}  // namespace prism::model
