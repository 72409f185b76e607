#include "worker/trainer_launcher.h"

namespace prism::worker {
namespace {

class ModelTrainerLauncher final : public TrainerLauncher {
 public:
  absl::StatusOr<model::TrainResult> Train(
      const model::TrainConfig& config,
      model::TrainObserver* observer) override {
    return model::Train(config, observer);
  }
};

}  // namespace

std::unique_ptr<TrainerLauncher> NewModelTrainerLauncher() {
  return std::make_unique<ModelTrainerLauncher>();
}

}  // namespace prism::worker
