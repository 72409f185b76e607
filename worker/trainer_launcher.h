// TrainerLauncher: how the worker runs one training job. The real launcher
// calls model::Train in-process; unit tests inject a fake that emits scripted
// points, fails, or waits for ShouldStop, so the worker's protocol logic is
// tested without LibTorch.
//
// Thread-safety: Train is called from the worker's training thread, one job
// at a time.
#ifndef PRISM_WORKER_TRAINER_LAUNCHER_H_
#define PRISM_WORKER_TRAINER_LAUNCHER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "model/trainer.h"

namespace prism::worker {

class TrainerLauncher {
 public:
  virtual ~TrainerLauncher() = default;
  // Train runs one job to the end (or until observer->ShouldStop()). Returns
  // the result, or the trainer's error status (see model::Train).
  virtual absl::StatusOr<model::TrainResult> Train(
      const model::TrainConfig& config, model::TrainObserver* observer) = 0;
};

// NewModelTrainerLauncher returns the launcher that calls model::Train.
std::unique_ptr<TrainerLauncher> NewModelTrainerLauncher();

}  // namespace prism::worker

#endif  // PRISM_WORKER_TRAINER_LAUNCHER_H_
