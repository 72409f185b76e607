// Helpers for storage tests: a temp directory per test and small builders
// for experiments and points.
#ifndef PRISM_TESTS_STORAGE_STORE_TEST_UTIL_H_
#define PRISM_TESTS_STORAGE_STORE_TEST_UTIL_H_

#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/store.h"
#include "tests/testing/temp_dir.h"

namespace prism::storage::testing {

using ::prism::testing::TempDir;

// MakeExperiment returns an experiment of `owner` with one trial per
// (schedule, seed); the first schedule is the baseline.
// TrainedMetrics are a completion's metrics after `steps` (the whole
// budget of MakeExperiment's trials by default).
inline v1::TrialMetrics TrainedMetrics(int64_t steps = 100) {
  v1::TrialMetrics m;
  m.set_steps(steps);
  return m;
}

inline NewExperiment MakeExperiment(const std::string& owner,
                                    const std::vector<std::string>& schedules,
                                    const std::vector<int64_t>& seeds,
                                    int max_attempts = 2, int priority = 0) {
  NewExperiment e;
  e.name = "test";
  e.owner = owner;
  e.spec.set_name("test");
  e.spec.mutable_model()->set_preset("tiny");
  e.spec.mutable_budget()->set_steps(100);
  for (int64_t seed : seeds) e.spec.add_seeds(seed);
  e.priority = priority;
  e.max_attempts = max_attempts;
  e.total_steps = 100;
  e.config_fingerprint = "fp";
  e.now_ms = 1000;
  for (size_t i = 0; i < schedules.size(); ++i) {
    for (int64_t seed : seeds) {
      e.trials.push_back(NewTrial{schedules[i], seed, i == 0});
    }
  }
  return e;
}

inline v1::LossPoint Point(v1::Split split, int64_t step, float loss) {
  v1::LossPoint p;
  p.set_split(split);
  p.set_step(step);
  p.set_loss(loss);
  p.set_learning_rate(1e-3f);
  p.set_tokens_per_second(1000.0);
  p.set_elapsed_seconds(static_cast<double>(step));
  return p;
}

}  // namespace prism::storage::testing

#endif  // PRISM_TESTS_STORAGE_STORE_TEST_UTIL_H_
