// train_micro_bench: what each of the trainer's CPU kernels gives on its
// own, against the LibTorch operators it replaces, on the `small` preset's
// shapes (one shard: 8 sequences of 256 tokens, one thread). Results go to
// bench/RESULTS.md ("Trainer"); train_bench measures the whole step.
//
//   build-h2/bench/train_micro_bench [--reps 10]
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "model/internal/attention.h"
#include "model/internal/decoder.h"
#include "model/internal/gelu.h"
#include "model/internal/optimizer.h"
#include "model/internal/runtime.h"
#include "model/internal/shard_pool.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"

namespace {

using prism::model::internal::FusedCausalAttention;
using prism::model::internal::FusedCausalAttentionPacked;
using prism::model::internal::Isa;
using prism::model::internal::IsaName;
using prism::model::internal::MaskedSoftmaxAttention;

// Milliseconds per call of fn: the best of `reps` after two warmup calls.
double BestMs(int reps, const std::function<void()>& fn) {
  fn();
  fn();
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  return best;
}

void Row(const std::string& what, const std::string& ours, double ours_ms,
         const std::string& theirs, double theirs_ms) {
  std::cout << fmt::format("| {} | {} | {:.1f} | {} | {:.1f} | {:.2f}x |\n",
                           what, ours, ours_ms, theirs, theirs_ms,
                           theirs_ms / ours_ms);
}

// RunAll times every kernel and prints the table.
void RunAll(int reps);

}  // namespace

int main(int argc, char** argv) {
  int reps = 10;
  bool in_thread = false;
  CLI::App app{"Trainer CPU kernels vs the LibTorch operators they replace"};
  app.add_option("--reps", reps, "timed repetitions (best is reported)");
  app.add_flag("--in-thread", in_thread,
               "run the kernels on a new thread, as a worker's trainer does, "
               "instead of the main thread");
  CLI11_PARSE(app, argc, argv);
  if (in_thread) {
    std::thread runner([reps] { RunAll(reps); });
    runner.join();
  } else {
    RunAll(reps);
  }
  return 0;
}

namespace {

void RunAll(int reps) {
  at::set_num_threads(1);
  prism::model::internal::SetBlasThreads(1);
  torch::manual_seed(0);
  constexpr int64_t kB = 8, kT = 256, kC = 256;

  std::cout << "| what | ours | ms | replaces | ms | speedup |\n"
               "|---|---|---|---|---|---|\n";
  // Attention forward + backward, for the uniform layer (8 heads of 32) and
  // the Prism schedule's wide layers (2 heads of 128, 1 of 256).
  for (int64_t heads : {8, 2, 1}) {
    const torch::Tensor input = torch::randn({kB, kT, 3 * kC});
    const torch::Tensor grad = torch::randn({kB, kT, kC});
    // kind 0: packed, 1: sliced q/k/v, 2: masked softmax.
    auto run = [&](int kind, Isa isa) {
      torch::Tensor qkv = input.clone().requires_grad_(true);
      const torch::Tensor q = qkv.narrow(2, 0, kC), k = qkv.narrow(2, kC, kC),
                          v = qkv.narrow(2, 2 * kC, kC);
      torch::Tensor y = kind == 0 ? FusedCausalAttentionPacked(qkv, heads, isa)
                        : kind == 1 ? FusedCausalAttention(q, k, v, heads, isa)
                                    : MaskedSoftmaxAttention(q, k, v, heads);
      y.backward(grad);
    };
    const Isa widest = prism::model::internal::SupportedIsas().back();
    const double masked = BestMs(reps, [&] { run(2, widest); });
    const std::string what =
        fmt::format("attention fwd+bwd, {} heads of {}", heads, kC / heads);
    // Every instruction set this CPU runs (the autotuner's candidates).
    for (Isa isa : prism::model::internal::SupportedIsas()) {
      const double packed = BestMs(reps, [&] { run(0, isa); });
      Row(what, fmt::format("fused {}, packed QKV", IsaName(isa)), packed,
          "masked softmax", masked);
    }
    Row(what, "fused, packed QKV", BestMs(reps, [&] { run(0, widest); }),
        "fused, sliced q/k/v", BestMs(reps, [&] { run(1, widest); }));
  }

  {
    const torch::Tensor input = torch::randn({kB * kT, 4 * kC});
    const torch::Tensor grad = torch::randn({kB * kT, 4 * kC});
    auto run = [&](bool fused) {
      torch::Tensor x = input.clone().requires_grad_(true);
      torch::Tensor y =
          fused ? prism::model::internal::TanhGelu(x) : torch::gelu(x, "tanh");
      y.backward(grad);
    };
    Row("tanh GELU fwd+bwd, 2048 x 1024", "fused kernel",
        BestMs(reps, [&] { run(true); }), "torch::gelu(x, \"tanh\")",
        BestMs(reps, [&] { run(false); }));
  }

  {
    // One optimizer step (clip + AdamW) over the small preset's parameters.
    const prism::ModelShape shape = *prism::FindPreset("small");
    const prism::Schedule schedule = *prism::ParseSchedule("8x8");
    prism::model::internal::PrismDecoder ours(shape, schedule);
    prism::model::internal::PrismDecoder theirs(shape, schedule);
    prism::model::internal::FlatAdamW flat(ours->DecayedParameters(),
                                           ours->OtherParameters(), {});
    for (const torch::Tensor& g : flat.gradients()) g.normal_();
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(theirs->DecayedParameters(),
                        std::make_unique<torch::optim::AdamWOptions>(
                            torch::optim::AdamWOptions(1e-3)
                                .betas({0.9, 0.95})
                                .weight_decay(0.1)));
    groups.emplace_back(theirs->OtherParameters(),
                        std::make_unique<torch::optim::AdamWOptions>(
                            torch::optim::AdamWOptions(1e-3)
                                .betas({0.9, 0.95})
                                .weight_decay(0.0)));
    torch::optim::AdamW adamw(std::move(groups));
    for (torch::Tensor& p : theirs->parameters()) {
      p.mutable_grad() = torch::randn_like(p);
    }
    prism::model::internal::ShardPool one(1);
    const double flat_ms = BestMs(reps, [&] { flat.Step(1e-3, 1.0, &one); });
    const double torch_ms = BestMs(reps, [&] {
      torch::nn::utils::clip_grad_norm_(theirs->parameters(), 1.0);
      adamw.step();
    });
    Row(fmt::format("clip + AdamW step, {:.2f}M params",
                    flat.flat_parameters().numel() / 1e6),
        "flat fused, 1 thread", flat_ms,
        "torch::optim::AdamW + clip_grad_norm_", torch_ms);
    prism::model::internal::ShardPool two(2);
    Row("clip + AdamW step (2 threads)", "flat fused, 2 threads",
        BestMs(reps, [&] { flat.Step(1e-3, 1.0, &two); }),
        "torch::optim::AdamW + clip_grad_norm_", torch_ms);
  }
}

}  // namespace
