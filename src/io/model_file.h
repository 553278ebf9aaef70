// io/model_file.h — networks from JSON model files, model names, and a C++ builder.
//
// A model file:
//   {"name": "fmnist_cnn", "input": [1, 28, 28], "classes": 10,
//    "layers": [
//      {"name": "conv1", "type": "conv", "channels": 32, "kernel": 3, "pad": 1},
//      {"name": "relu1", "type": "relu"},
//      {"name": "fc",    "type": "fc", "units": "classes"},      // "classes": the model's count
//                                                                // (also an embedding's "vocab")
//      {"name": "loss",  "type": "softmax_cross_entropy"}]}
// A layer's input is the previous layer's output unless "inputs": ["a", "b"] names others.
//
//   Graph g = load_model("fmnist_cnn");                 // a name from models/, or a path
//   Graph h = load_model("my.json", {.input = Shape{3, 64, 64}, .classes = 100});
//   Graph m = parse_model_text(R"({"input": [8], "classes": 2, "layers": [...]})", "inline");
//   ModelBuilder b("tiny", {1, 8, 8}, 10);
//   b.layer("conv", "c1", {{"channels", 4}, {"kernel", 3}}).layer("fc", "fc", {{"units", 10}});
//   Graph t = b.layer("softmax_cross_entropy", "loss").build();
// A token model's input is [T] token ids ("input_type": "tokens"; default "values", floats):
//   ModelBuilder lm("lm", {16}, 32);
//   lm.tokens().layer("embedding", "wte", {{"vocab", 32}, {"dim", 8}}).layer("linear", "head", {{"units", 32}});
//   Graph l = lm.layer("token_cross_entropy", "loss").build();
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/graph.h"

namespace vdnn {

// The bounds a model file's "input" and "classes" and the --input / --classes flags share (one
// class makes the loss 0 and the accuracy 1 for any weights, so it is refused everywhere).
inline constexpr int kMinClasses = 2;
inline constexpr int kMaxClasses = 1 << 20;
inline constexpr int64_t kMaxInputDim = int64_t{1} << 31;

struct ModelOptions {
  std::optional<Shape> input;  // replaces the file's "input"
  std::optional<int> classes;  // replaces the file's "classes"
};

// Builds a graph from a parsed model description; `source` names it in errors.
Graph parse_model(const nlohmann::json& model, const std::string& source, const ModelOptions& options = {});
// The same from the text of a model file; invalid JSON is a vdnn::Error too.
Graph parse_model_text(std::string_view text, const std::string& source, const ModelOptions& options = {});
// A path to a .json file, or the name of a model in the models folder.
Graph load_model(const std::string& name_or_path, const ModelOptions& options = {});
// The folder holding the shipped models ($VDNN_MODELS_DIR, else the data directory's models/,
// vdnn/data_dir.h; throws vdnn::Error listing where it looked when there is none).
std::string models_dir();
std::vector<std::string> model_names();
// Parses "CxHxW" or "K" (e.g. "3x224x224"); throws naming `flag` on bad text.
Shape parse_shape(const std::string& text, const std::string& flag);

class ModelBuilder {
 public:
  ModelBuilder(std::string name, std::vector<int64_t> input, int classes);
  ModelBuilder& tokens();  // the input holds token ids ("input_type": "tokens")
  ModelBuilder& layer(const std::string& type, const std::string& name,
                      nlohmann::json fields = nlohmann::json::object(), std::vector<std::string> inputs = {});
  const nlohmann::json& json() const { return model_; }
  Graph build() const;

 private:
  nlohmann::json model_;
};

}  // namespace vdnn
