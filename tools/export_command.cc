// `vdnn export --onnx`: a network and its weights as an ONNX model for inference (ONNX Runtime),
// interop/onnx_export.h. The weights go through load_weights first, with the checks `vdnn infer`
// makes (names, shapes, finite values, the weights_sha256 of a vdnn checkpoint).
//
//   vdnn export --onnx out.onnx --model fmnist_cnn --weights run.safetensors [--batch 1]
//   vdnn export --onnx out.onnx --model resnet18 --input 3x64x64 --classes 10   (seeded weights)
// Without --weights: an ONNX model's own initializers, or vdnn's seeded initialisation (--seed).
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>

#include "commands.h"
#include "interop/onnx_export.h"
#include "model_flags.h"
#include "runtime/checkpoint.h"
#include "runtime/net.h"
#include "util/atomic_file.h"
#include "vdnn/error.h"

namespace vdnn::cli {
namespace {

struct ExportOptions {
  std::string onnx;
  ModelFlags model{.batch = 1};
  uint64_t seed = 1;
};

// --onnx naming the file --model or --weights reads (through ./ or a link too) would replace a
// training model with its inference form, which train then refuses: refused before any work.
void check_onnx_is_not_an_input(const ExportOptions& o) {
  for (const auto& [flag, input] : {std::pair{"--model", o.model.name}, std::pair{"--weights", o.model.weights}}) {
    std::error_code unrelated;
    if (!input.empty() && std::filesystem::equivalent(o.onnx, input, unrelated))
      VDNN_THROW("--onnx '" << o.onnx << "' is the file " << flag << " reads ('" << input
                            << "'); writing it would replace it: give another file");
  }
}

int run_export(const ExportOptions& o) {
  check_output_files({{"--onnx", o.onnx}});
  check_onnx_is_not_an_input(o);
  NetworkSource source = o.model.load();
  SafeTensors weights = std::move(source.initial_weights);
  if (std::optional<SafeTensors> file = o.model.read_weights()) weights = std::move(*file);
  onnx::ModelProto model;
  std::string name, input;
  {  // A Net of batch 1 holds the weights: the seeded initialisation, or the file's, checked on loading.
    Net net(std::move(source.graph), {.batch = 1, .seed = o.seed});
    if (!weights.tensors.empty()) load_weights(weights, net);
    weights = {};
    const SafeTensors plain = state_dict(net, 0);
    model = export_onnx(net.graph(), &plain, {.batch = o.model.batch});
    name = net.graph().name();
    input = net.graph().input_shape().to_string();
  }  // the Net and the copies are gone before the file is written
  write_onnx(o.onnx, model);
  std::printf("wrote %s: model %s, %d nodes, %d initializers, input [%lld, %s], opset %d\n", o.onnx.c_str(),
              name.c_str(), model.graph().node_size(), model.graph().initializer_size(),
              static_cast<long long>(o.model.batch), input.c_str(), kOnnxExportOpset);
  return 0;
}

}  // namespace

Command add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--onnx", o->onnx, "write the network to this ONNX file (opset 13, for inference)")->required();
  add_model_flags(app, o->model,
                  {.model_required = true,
                   .batch_help = "the fixed batch size N of the ONNX input [N, C, H, W]",
                   .weights_help = "safetensors file, e.g. from `vdnn train --save` (default: the model's initial "
                                   "weights)"});
  app.add_option("--seed", o->seed, "seed of the initial weights when there is no --weights")->capture_default_str();
  FlagRules rules(app);
  rules.add({"--seed"}, {"without --weights (it seeds the initial weights)", [o] { return o->model.weights.empty(); },
                         [o] { return "with --weights " + o->model.weights; }});
  return {[o] { return run_export(*o); }, rules};
}

}  // namespace vdnn::cli
