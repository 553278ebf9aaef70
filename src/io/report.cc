#include "io/report.h"

#include <fstream>

#include "vdnn/error.h"

namespace vdnn {

nlohmann::json train_report(const std::string& model, const TrainConfig& config, int64_t batch,
                            const TrainResult& result) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochResult& e : result.epochs) {
    nlohmann::json j = {{"epoch", e.epoch}, {"steps", e.steps}, {"lr", e.lr},
                        {"train_loss", e.train_loss}, {"train_accuracy", e.train_accuracy},
                        {"train_seconds", e.train_seconds},
                        {"images_per_second", e.images_per_second}};
    if (e.test.samples > 0) {
      j["test_loss"] = e.test.loss;
      j["test_accuracy"] = e.test.accuracy;
    }
    epochs.push_back(j);
  }
  return {
      {"config",
       {{"model", model}, {"batch", batch}, {"epochs", config.epochs},
        {"iterations", config.iterations}, {"lr", config.lr}, {"momentum", config.momentum},
        {"weight_decay", config.weight_decay}, {"seed", config.seed}}},
      {"epochs", epochs},
      {"iterations", result.iterations},
      {"final_loss", result.final_loss},
      {"test_accuracy", config.evaluate ? nlohmann::json(result.test_accuracy) : nlohmann::json()},
      {"images_per_second", result.images_per_second},
      {"train_seconds", result.train_seconds},
      {"weights_sha256", result.weights_sha256},
  };
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path);
  if (!out) VDNN_THROW(path << ": cannot open for writing");
  out << j.dump(2) << "\n";
  if (!out.flush()) VDNN_THROW(path << ": write failed");
}

}  // namespace vdnn
