// `vdnn models [--model M ...]`: the shipped networks (or the named ones: zoo names, JSON or ONNX
// files) with parameters, forward FLOPs and feature-map bytes per image.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "interop/network_source.h"
#include "io/model_file.h"
#include "model_flags.h"

namespace vdnn::cli {

Command add_models_command(CLI::App& app) {  // --model always applies: no rules
  auto models = std::make_shared<std::vector<std::string>>();
  app.add_option("--model", *models, "models to describe (zoo names, JSON or ONNX files); default: the zoo");
  Runner run = [models] {
    std::printf("%-16s %8s %12s %14s %16s %s\n", "model", "layers", "params", "GFLOP/image", "fmap MiB/image", "input");
    for (const std::string& name : models->empty() ? model_names() : *models) {
      NetworkSource source = load_network(name);
      print_import_notes(source.notes);
      const Graph& g = source.graph;
      std::printf("%-16s %8zu %12lld %14.3f %16.3f %s\n", name.c_str(), g.nodes().size(),
                  static_cast<long long>(g.parameter_count()), g.forward_flops_per_sample() / 1e9,
                  static_cast<double>(g.feature_map_bytes_per_sample()) / (1 << 20),
                  g.input_shape().to_string().c_str());
    }
    return 0;
  };
  return {run, FlagRules(app)};
}

}  // namespace vdnn::cli
