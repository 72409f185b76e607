// train_bench: training throughput of the Prism trainer, side by side in one
// run with the PyTorch eager reference (bench/reference/train_reference.py)
// on the same model shape, batch and cores. Results go to bench/RESULTS.md
// ("Trainer").
//
//   build-h2/bench/train_bench --preset small --steps 6 --rounds 2
//       --reference bench/reference/train_reference.py
//
// Each configuration trains `warmup + steps` steps; tokens/s is taken over
// the timed steps only (forward, backward, clipping and the optimizer; the
// evaluation passes before and after are excluded). Configurations are run
// round-robin `rounds` times and the best round is reported, so a burst of
// load from elsewhere on the machine hits every configuration alike; "vs
// uniform, paired" is the median over rounds of each round's own ratio to
// the uniform row (robust to a burst that hits one configuration's turn),
// and "paired 95% CI" the Student-t interval of those ratios' geometric
// mean. List the uniform schedule twice to get a control row: its interval
// is what noise alone gives on this host at that moment.
// With --interleave the schedules of a round train at once, one step each
// in turn, and each step is timed alone: the pairing is then step by step.
//
// The host's CPU flags come first; every Prism row names the attention
// kernel it trained with ("auto" rows: what the autotuner chose, with the
// times it measured for each candidate printed when the choice is made). Unless
// --no-isa-levels, the uniform schedule also runs with PRISM_ISA set to each
// instruction set the CPU has (the fused kernel's and GELU's level; auto
// then chooses between that fused kernel and masked softmax), so an AVX-512
// host measures what an AVX2-only or baseline host would run.
//
// Those rows change only our kernels; OpenBLAS and ATen keep the host's
// widest code. `--host-level avx2|baseline` emulates a whole host of that
// level instead: train_bench runs itself again with OPENBLAS_CORETYPE
// (Haswell for avx2, Prescott, OpenBLAS's oldest x86-64 kernels, for
// baseline) and ATEN_CPU_CAPABILITY (avx2, default) set, which every row
// and the reference's Python process inherit, every Prism row trains with
// PRISM_ISA at that level, and the matmul peak is that level's.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "model/internal/kernels.h"
#include "model/trainer.h"
#include "scheduler/space/presets.h"
#include "scheduler/space/schedule.h"
#include "scheduler/stats/statistics.h"

namespace {

using Clock = std::chrono::steady_clock;

// StepTimer records when each optimizer step finished.
class StepTimer final : public prism::model::TrainObserver {
 public:
  void OnStep(int64_t step, double, double) override {
    if (static_cast<int64_t>(times_.size()) < step) times_.resize(step);
    times_[step - 1] = Clock::now();
  }
  // Seconds between the end of step `from` and the end of step `to`.
  double Seconds(int64_t from, int64_t to) const {
    return std::chrono::duration<double>(times_[to - 1] - times_[from - 1])
        .count();
  }

 private:
  std::vector<Clock::time_point> times_;
};

// PairedRatio is the median over rounds of `rounds[r] / base[r]`: each
// round runs every configuration back to back, so a burst of load from
// elsewhere that hits one round hits both sides of its ratio, where a ratio
// of bests can pair a quiet minute with a busy one.
double PairedRatio(const std::vector<double>& rounds,
                   const std::vector<double>& base) {
  std::vector<double> ratios;
  for (size_t r = 0; r < rounds.size() && r < base.size(); ++r) {
    if (base[r] > 0) ratios.push_back(rounds[r] / base[r]);
  }
  if (ratios.empty()) return 0.0;
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  return n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
}

// PairedInterval is the 95% interval of the per-round ratios' geometric
// mean (Student t over the log ratios), "lo-hi", or "-" under 3 rounds. A
// control (the uniform schedule listed twice) shows how wide it is when
// nothing differs.
std::string PairedInterval(const std::vector<double>& rounds,
                           const std::vector<double>& base) {
  std::vector<double> logs;
  for (size_t r = 0; r < rounds.size() && r < base.size(); ++r) {
    if (base[r] > 0 && rounds[r] > 0)
      logs.push_back(std::log(rounds[r] / base[r]));
  }
  if (logs.size() < 3) return "-";
  const prism::Interval ci = prism::MeanInterval(logs);
  return fmt::format("{:.3f}-{:.3f}", std::exp(ci.low), std::exp(ci.high));
}

struct Options {
  std::string preset = "small";
  int steps = 6;
  int warmup = 2;
  int rounds = 2;
  int threads = 2;
  int batch = 0;
  std::vector<std::string> schedules;
  std::string reference;
  std::string python = "/usr/bin/python3";
  bool ablations = true;
  bool isa_levels = true;
  std::string host_level;  // "" = this host as it is
  bool interleave = false;
};

// HostLevelEnv is the environment that makes this process's BLAS and ATen
// run as on a host whose widest instruction set is `level`; InvalidArgument
// for a level that is not one of the kernels' or that this CPU cannot run.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> HostLevelEnv(
    const std::string& level) {
  absl::StatusOr<prism::model::internal::Isa> isa =
      prism::model::internal::ParseIsa(level);
  if (!isa.ok()) return isa.status();
  const std::vector<prism::model::internal::Isa>& supported =
      prism::model::internal::SupportedIsas();
  if (std::find(supported.begin(), supported.end(), *isa) == supported.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--host-level ", level, ": this CPU cannot run it"));
  }
  switch (*isa) {
    case prism::model::internal::Isa::kAvx512:
      return std::vector<std::pair<std::string, std::string>>{
          {"OPENBLAS_CORETYPE", "SkylakeX"}, {"ATEN_CPU_CAPABILITY", "avx512"}};
    case prism::model::internal::Isa::kAvx2:
      return std::vector<std::pair<std::string, std::string>>{
          {"OPENBLAS_CORETYPE", "Haswell"}, {"ATEN_CPU_CAPABILITY", "avx2"}};
    case prism::model::internal::Isa::kBaseline:
      break;
  }
  return std::vector<std::pair<std::string, std::string>>{
      {"OPENBLAS_CORETYPE", "Prescott"}, {"ATEN_CPU_CAPABILITY", "default"}};
}

struct Config {
  std::string name;
  std::string schedule;
  prism::model::AttentionMode attention = prism::model::AttentionMode::kAuto;
  prism::model::CpuThreading threading = prism::model::CpuThreading::kShards;
  std::string isa;  // PRISM_ISA for this configuration; "" leaves it unset
  // Reference configurations run the Python script instead.
  bool reference = false;
  std::string env;  // environment for the reference
  std::string args;
};

struct Measured {
  double best = 0.0;
  std::vector<double> rounds;
  double flops_per_token = 0.0;
  double loss = 0.0;
  std::string kernel;  // the attention kernel trained with, e.g. fused/avx2
};

// BenchConfig is the trainer's config for configuration `c`: warmup + steps
// steps, no evaluation but the last, no attention or MFU probes.
prism::model::TrainConfig BenchConfig(const Options& o,
                                      const prism::ModelShape& shape,
                                      const Config& c) {
  prism::model::TrainConfig config;
  config.shape = shape;
  config.schedule = *prism::ParseSchedule(c.schedule);
  config.steps = o.warmup + o.steps;
  config.batch_size = o.batch > 0 ? o.batch : shape.batch_size;
  config.eval_every = 1 << 30;  // only the final evaluation
  config.eval_batches = 1;
  config.log_every = config.steps;
  config.learning_rate = shape.learning_rate;
  config.warmup_steps = 1;
  config.threads = o.threads;
  config.attention = c.attention;
  config.cpu_threading = c.threading;
  config.measure_attention = false;
  config.measure_mfu = false;  // the peak is measured per round instead
  return config;
}

// SetIsa sets PRISM_ISA for the runs that follow; "" unsets it.
void SetIsa(const std::string& isa) {
  if (isa.empty()) {
    unsetenv("PRISM_ISA");
  } else {
    setenv("PRISM_ISA", isa.c_str(), 1);
  }
}

// Recorded returns the tokens/s of a finished run of `c` over its timed
// steps (as `timer` saw them), and keeps its model numbers and kernel in
// *m; a failed run ends the benchmark.
template <typename Timer>
double Recorded(const Options& o, const prism::ModelShape& shape,
                const Config& c, const prism::model::TrainConfig& config,
                const absl::StatusOr<prism::model::TrainResult>& result,
                const Timer& timer, Measured* m) {
  if (!result.ok()) {
    std::cerr << c.name << ": " << result.status() << "\n";
    std::exit(1);
  }
  m->flops_per_token = static_cast<double>(result->flops_per_token);
  m->loss = result->final_train_loss;
  m->kernel = result->isa.empty()
                  ? result->attention_kernel
                  : absl::StrCat(result->attention_kernel, "/", result->isa);
  // What the attention autotuner measured to choose m->kernel.
  std::vector<std::string> timed;
  for (const prism::model::AttentionTiming& t : result->attention_timings) {
    timed.push_back(fmt::format("{}{}{} {:.2f} ms", t.kernel,
                                t.isa.empty() ? "" : "/", t.isa,
                                t.milliseconds));
  }
  // Printed when it changes: the choice is cached per shape for the process,
  // so later rounds mostly repeat it.
  static auto* last_printed = new std::map<std::string, std::string>();
  const std::string line = fmt::format("  {} chose {}: {}", c.name, m->kernel,
                                       absl::StrJoin(timed, ", "));
  if (!timed.empty() && (*last_printed)[c.name] != line) {
    (*last_printed)[c.name] = line;
    std::cerr << line << "\n";
  }
  const double tokens =
      static_cast<double>(o.steps) * config.batch_size * shape.context;
  return tokens / timer.Seconds(o.warmup, o.warmup + o.steps);
}

double RunOurs(const Options& o, const prism::ModelShape& shape,
               const Config& c, Measured* m) {
  const prism::model::TrainConfig config = BenchConfig(o, shape, c);
  StepTimer timer;
  SetIsa(c.isa);
  absl::StatusOr<prism::model::TrainResult> result =
      prism::model::Train(config, &timer);
  SetIsa("");
  return Recorded(o, shape, c, config, result, timer, m);
}

// Baton gives the interleaved runs (--interleave) one turn at a time,
// round robin over the runs not finished.
class Baton {
 public:
  explicit Baton(int runs) : done_(runs, false) {}

  void Wait(int run) {
    absl::MutexLock lock(&mu_);
    auto mine = [this, run]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return turn_ == run; };
    mu_.Await(absl::Condition(&mine));
  }
  // Pass hands the turn from `run` to the next run not finished.
  void Pass(int run) {
    absl::MutexLock lock(&mu_);
    PassLocked(run);
  }
  void Finish(int run) {
    absl::MutexLock lock(&mu_);
    done_[run] = true;
    PassLocked(run);
  }

 private:
  void PassLocked(int run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (turn_ != run) return;
    const int n = static_cast<int>(done_.size());
    for (int k = 1; k <= n; ++k) {
      const int next = (run + k) % n;
      if (!done_[next]) {
        turn_ = next;
        return;
      }
    }
    turn_ = -1;
  }

  absl::Mutex mu_;
  int turn_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<bool> done_ ABSL_GUARDED_BY(mu_);
};

// InterleavedTimer hands the turn on after the run's setup and after each
// of its steps, and times each step from getting the turn back to its end,
// so a step is timed while no other run computes.
class InterleavedTimer final : public prism::model::TrainObserver {
 public:
  InterleavedTimer(Baton* baton, int run) : baton_(baton), run_(run) {}
  void OnStart(const prism::model::TrainConfig&, int64_t) override { Yield(); }
  void OnStep(int64_t, double, double) override {
    seconds_.push_back(
        std::chrono::duration<double>(Clock::now() - resumed_).count());
    Yield();
  }
  // Seconds of steps (from, to], 1-based as steps are counted.
  double Seconds(int64_t from, int64_t to) const {
    double total = 0.0;
    for (int64_t s = from; s < to; ++s) total += seconds_[s];
    return total;
  }

 private:
  void Yield() {
    baton_->Pass(run_);
    baton_->Wait(run_);
    resumed_ = Clock::now();
  }

  Baton* baton_;
  int run_;
  Clock::time_point resumed_;
  std::vector<double> seconds_;
};

// RunInterleaved trains every configuration of `configs` at once, one step
// each in turn (A1 B1 C1 A2 B2 ...), and returns each one's tokens/s over
// its timed steps: a slow second of the machine then lands on adjacent steps
// of every configuration instead of on one configuration's whole turn.
// Setups (including the attention autotuner's timing) run one at a time
// too. The configurations must share their PRISM_ISA (set once here).
std::vector<double> RunInterleaved(const Options& o,
                                   const prism::ModelShape& shape,
                                   const std::vector<Config>& configs,
                                   std::vector<Measured>* measured) {
  const int n = static_cast<int>(configs.size());
  Baton baton(n);
  std::vector<std::unique_ptr<InterleavedTimer>> timers;
  std::vector<absl::StatusOr<prism::model::TrainResult>> results(
      n, absl::UnknownError("not run"));
  std::vector<prism::model::TrainConfig> train;
  for (int i = 0; i < n; ++i) {
    timers.push_back(std::make_unique<InterleavedTimer>(&baton, i));
    train.push_back(BenchConfig(o, shape, configs[i]));
  }
  SetIsa(configs[0].isa);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      baton.Wait(i);
      results[i] = prism::model::Train(train[i], timers[i].get());
      baton.Finish(i);
    });
  }
  for (std::thread& t : threads) t.join();
  SetIsa("");

  std::vector<double> tps(n);
  for (int i = 0; i < n; ++i) {
    tps[i] = Recorded(o, shape, configs[i], train[i], results[i], *timers[i],
                      &(*measured)[i]);
  }
  return tps;
}

double RunReference(const Options& o, const prism::ModelShape& shape,
                    const Config& c) {
  const int batch = o.batch > 0 ? o.batch : shape.batch_size;
  const std::string command = absl::StrCat(
      c.env, " ", o.python, " ", o.reference, " --d-model ", shape.d_model,
      " --context ", shape.context, " --vocab ", shape.vocab_size,
      " --schedule ", c.schedule, " --batch ", batch, " --warmup ", o.warmup,
      " --steps ", o.steps, " ", c.args);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    std::cerr << "cannot run " << command << "\n";
    std::exit(1);
  }
  std::string output;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  if (pclose(pipe) != 0) {
    std::cerr << "reference failed: " << command << "\n" << output;
    std::exit(1);
  }
  // The script prints one JSON line: {"tokens_per_second": X, ...}.
  const std::string key = "\"tokens_per_second\": ";
  const size_t at = output.rfind(key);
  double tps = 0.0;
  if (at == std::string::npos ||
      !absl::SimpleAtod(
          output.substr(at + key.size(),
                        output.find_first_of(",}", at) - at - key.size()),
          &tps)) {
    std::cerr << "cannot parse reference output:\n" << output;
    std::exit(1);
  }
  return tps;
}

// IsaNames lists the instruction sets this CPU runs, widest first, from
// `widest` down when it is set.
std::vector<std::string> IsaNames(const std::string& widest = "") {
  std::vector<std::string> names;
  for (prism::model::internal::Isa isa :
       prism::model::internal::SupportedIsas()) {
    names.insert(names.begin(), prism::model::internal::IsaName(isa));
  }
  auto from = std::find(names.begin(), names.end(), widest);
  if (from != names.end()) names.erase(names.begin(), from);
  return names;
}

void AddOptions(CLI::App& app, Options* o) {
  app.add_option("--preset", o->preset, "model preset");
  app.add_option("--steps", o->steps, "timed steps per configuration");
  app.add_option("--warmup", o->warmup, "untimed steps first");
  app.add_option("--rounds", o->rounds, "round-robin repetitions");
  app.add_option("--threads", o->threads, "cores to use");
  app.add_option("--batch", o->batch, "sequences per step (0: preset)");
  app.add_option("--schedules", o->schedules,
                 "schedules; the first is the uniform baseline")
      ->delimiter(';');
  app.add_option("--reference", o->reference,
                 "path of train_reference.py (omit to skip the reference)");
  app.add_option("--python", o->python, "python with torch");
  app.add_flag("!--no-ablations", o->ablations, "skip the ablations");
  app.add_flag("!--no-isa-levels", o->isa_levels,
               "skip the uniform schedule at each instruction set");
  app.add_option("--host-level", o->host_level,
                 "emulate a whole host of this level (avx512, avx2, "
                 "baseline): BLAS, ATen and our kernels");
  app.add_flag("--interleave", o->interleave,
               "train the schedules at once, one step each in turn, and time "
               "each step alone (needs --no-isa-levels --no-ablations and no "
               "--reference)");
}

// EmulateHostLevel runs this process again with --host-level's environment
// unless every variable already has its value. Returns the exit code when
// main must stop (2: a bad level, 1: the re-run failed), nullopt to go on.
std::optional<int> EmulateHostLevel(const Options& o, char** argv) {
  if (o.host_level.empty()) return std::nullopt;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> env =
      HostLevelEnv(o.host_level);
  if (!env.ok()) {
    std::cerr << "train_bench: " << env.status().message() << "\n";
    return 2;
  }
  // OpenBLAS picks its kernels when it is loaded, so the variables take
  // effect only in a new process: run this one again with them set,
  // unless every one already has its value (an OPENBLAS_CORETYPE the
  // caller's environment set alone does not count).
  const bool already_set =
      std::all_of(env->begin(), env->end(), [](const auto& variable) {
        const char* current = std::getenv(variable.first.c_str());
        return current != nullptr && variable.second == current;
      });
  if (already_set) return std::nullopt;
  for (const auto& [name, value] : *env) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  execv("/proc/self/exe", argv);
  std::cerr << "train_bench: cannot run itself again\n";
  return 1;
}

// DefaultSchedules are the uniform baseline and, for the presets that have
// them, the schedules RESULTS.md compares.
std::vector<std::string> DefaultSchedules(const prism::ModelShape& shape) {
  const int base = shape.base_heads;
  std::vector<std::string> schedules = {absl::StrCat(base, "x", shape.layers)};
  if (shape.layers == 8 && base == 8) {
    schedules.push_back("2x2,4x2,8x4");
    schedules.push_back("1x2,2x2,4x2,8x2");
  } else if (shape.layers == 6 && base == 4) {
    schedules.push_back("1x2,2x2,4x2");
  }
  return schedules;
}

// PrintHost says what the CPU runs and which levels the environment forces.
void PrintHost(const Options& o) {
  std::cout << fmt::format("cpu flags: {}; instruction sets: {}\n",
                           prism::model::internal::CpuFlags(),
                           absl::StrJoin(IsaNames(), " "));
  if (o.host_level.empty() && std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    // Set by the caller's environment, it decides OpenBLAS's kernels for
    // every row: a "native" run is then not this CPU's widest level.
    std::cout << fmt::format("OPENBLAS_CORETYPE={} (from the environment)\n",
                             std::getenv("OPENBLAS_CORETYPE"));
  }
  if (!o.host_level.empty()) {
    std::cout << fmt::format(
        "emulated host level: {} (OPENBLAS_CORETYPE={} ATEN_CPU_CAPABILITY={}, "
        "PRISM_ISA={} for every prism row)\n",
        o.host_level, std::getenv("OPENBLAS_CORETYPE"),
        std::getenv("ATEN_CPU_CAPABILITY"), o.host_level);
  }
}

Config Ours(const Options& o, std::string name, std::string schedule,
            prism::model::AttentionMode attention,
            prism::model::CpuThreading threading) {
  Config c;
  c.name = std::move(name);
  c.schedule = std::move(schedule);
  c.attention = attention;
  c.threading = threading;
  c.isa = o.host_level;
  return c;
}

Config Reference(const std::string& uniform, std::string name, std::string env,
                 std::string args) {
  Config c;
  c.name = std::move(name);
  c.schedule = uniform;
  c.reference = true;
  c.env = std::move(env);
  c.args = std::move(args);
  return c;
}

// BuildConfigs lists the rows: each schedule, the uniform one at each
// instruction set, the ablations, then the PyTorch reference.
std::vector<Config> BuildConfigs(const Options& o) {
  using prism::model::AttentionMode;
  using prism::model::CpuThreading;
  const std::string uniform = o.schedules.front();
  const std::string threads = std::to_string(o.threads);
  std::vector<Config> configs;
  for (const std::string& s : o.schedules) {
    configs.push_back(Ours(o, absl::StrCat("prism ", s), s,
                           AttentionMode::kAuto, CpuThreading::kShards));
  }
  if (o.isa_levels) {
    for (const std::string& isa : IsaNames(o.host_level)) {
      // What a host with only this level would run: auto chooses between
      // the fused kernel at this level and masked softmax.
      Config c = Ours(o, absl::StrCat("prism auto, PRISM_ISA=", isa), uniform,
                      AttentionMode::kAuto, CpuThreading::kShards);
      c.isa = isa;
      configs.push_back(c);
    }
  }
  if (o.ablations) {
    configs.push_back(Ours(o, "prism masked-softmax attention", uniform,
                           AttentionMode::kMasked, CpuThreading::kShards));
    configs.push_back(Ours(o, "prism fused, blas threading", uniform,
                           AttentionMode::kFused, CpuThreading::kBlas));
    configs.push_back(Ours(o, "prism masked-softmax, blas threading", uniform,
                           AttentionMode::kMasked, CpuThreading::kBlas));
    configs.push_back(Ours(o, "prism fused, both threading", uniform,
                           AttentionMode::kFused, CpuThreading::kBoth));
  }
  if (!o.reference.empty()) {
    // The reference at the thread settings a PyTorch user would pick, and
    // at ours (one shard per core) as an ablation.
    configs.push_back(
        Reference(uniform, "reference torch 1 / openblas " + threads,
                  "OPENBLAS_NUM_THREADS=" + threads, "--threads 1"));
    configs.push_back(Reference(
        uniform,
        "reference torch " + threads + " / openblas " + threads + " passive",
        "OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS=" + threads,
        "--threads " + threads));
    if (o.ablations) {
      configs.push_back(Reference(
          uniform, "reference, " + threads + " shard threads",
          "OPENBLAS_NUM_THREADS=1", "--threads 1 --shards " + threads));
    }
  }
  return configs;
}

// MeasureRounds trains every configuration once a round into *measured and
// returns the best matmul peak: it is measured once per round, next to the
// configurations, and MFU is best tokens/s against best peak. Returns the
// peak measurement's error.
absl::StatusOr<double> MeasureRounds(const Options& o,
                                     const prism::ModelShape& shape,
                                     const std::vector<Config>& configs,
                                     std::vector<Measured>* measured) {
  double peak = 0.0;
  for (int round = 0; round < o.rounds; ++round) {
    absl::StatusOr<double> round_peak =
        prism::model::MeasurePeakMatmulFlops("auto", o.threads);
    if (!round_peak.ok()) return round_peak.status();
    peak = std::max(peak, *round_peak);
    std::cerr << fmt::format("round {} matmul peak {:.1f} GFLOP/s\n", round + 1,
                             *round_peak / 1e9);
    std::vector<double> interleaved;
    if (o.interleave) interleaved = RunInterleaved(o, shape, configs, measured);
    for (size_t i = 0; i < configs.size(); ++i) {
      const Config& c = configs[i];
      Measured& m = (*measured)[i];
      const double tps = o.interleave  ? interleaved[i]
                         : c.reference ? RunReference(o, shape, c)
                                       : RunOurs(o, shape, c, &m);
      m.rounds.push_back(tps);
      m.best = std::max(m.best, tps);
      std::cerr << fmt::format("round {} {:<45} {:8.0f} tok/s\n", round + 1,
                               c.name, tps);
    }
  }
  return peak;
}

// PrintTable prints the results table and the peak it measured MFU against.
void PrintTable(const Options& o, const prism::ModelShape& shape,
                const std::vector<Config>& configs,
                const std::vector<Measured>& measured, double peak) {
  double reference_best = 0.0;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].reference &&
        configs[i].args.find("--shards") == std::string::npos) {
      reference_best = std::max(reference_best, measured[i].best);
    }
  }
  const double uniform_tps = measured[0].best;
  std::cout << fmt::format(
      "preset {} (d_model {}, {} layers, context {}), batch {}, {} threads, "
      "{} timed steps, best of {} rounds\n",
      shape.name, shape.d_model, shape.layers, shape.context,
      o.batch > 0 ? o.batch : shape.batch_size, o.threads, o.steps, o.rounds);
  std::cout << "| configuration | schedule | attention | tokens/s (best) | "
               "rounds | MFU | vs uniform | vs uniform, paired | "
               "paired 95% CI | vs reference |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < configs.size(); ++i) {
    const Measured& m = measured[i];
    std::string rounds;
    for (double r : m.rounds) {
      absl::StrAppend(&rounds, rounds.empty() ? "" : ", ",
                      fmt::format("{:.0f}", r));
    }
    std::cout << fmt::format(
        "| {} | {} | {} | {:.0f} | {} | {} | {:.3f} | {:.3f} | {} | {} |\n",
        configs[i].name, configs[i].schedule,
        configs[i].reference ? "masked" : m.kernel, m.best, rounds,
        configs[i].reference
            ? "-"
            : fmt::format("{:.1f}%", 100 * m.flops_per_token * m.best / peak),
        m.best / uniform_tps, PairedRatio(m.rounds, measured[0].rounds),
        i == 0 ? "-" : PairedInterval(m.rounds, measured[0].rounds),
        reference_best > 0 ? fmt::format("{:.2f}x", m.best / reference_best)
                           : "-");
  }
  std::cout << fmt::format(
      "matmul peak (best of {} rounds, the MFU reference): {:.1f} GFLOP/s\n",
      o.rounds, peak / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Prism trainer throughput vs the PyTorch eager reference"};
  AddOptions(app, &o);
  CLI11_PARSE(app, argc, argv);
  if (o.interleave && (o.isa_levels || o.ablations || !o.reference.empty())) {
    std::cerr << "train_bench: --interleave compares the schedules only: add "
                 "--no-isa-levels --no-ablations and drop --reference\n";
    return 2;
  }
  if (std::optional<int> exit_code = EmulateHostLevel(o, argv)) {
    return *exit_code;
  }
  absl::StatusOr<prism::ModelShape> shape = prism::FindPreset(o.preset);
  if (!shape.ok()) {
    std::cerr << shape.status() << "\n";
    return 2;
  }
  if (o.schedules.empty()) o.schedules = DefaultSchedules(*shape);
  PrintHost(o);
  const std::vector<Config> configs = BuildConfigs(o);
  std::vector<Measured> measured(configs.size());
  absl::StatusOr<double> peak = MeasureRounds(o, *shape, configs, &measured);
  if (!peak.ok()) {
    std::cerr << peak.status() << "\n";
    return 1;
  }
  PrintTable(o, *shape, configs, measured, *peak);
  return 0;
}
