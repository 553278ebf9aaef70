// `vdnn infer`: test loss and accuracy of saved weights (a `vdnn train --save` checkpoint, or any
// safetensors file with the model's parameter names and shapes).
//
//   vdnn infer --model fmnist_cnn --weights run.safetensors --data fashion-mnist [--json]
//   vdnn infer --model resnet18.onnx --data synthetic     # an ONNX model's own initializers
//   vdnn infer --model fmnist_cnn --weights run.safetensors --images x.npy --logits y.npy
// --logits writes every test sample's logits (float32 [samples, classes], io/npy.h) in the data's
// order; --images takes the inputs from a float32 .npy [N, C, H, W] (or [N, K]) instead of --data,
// without labels (no loss or accuracy then): the same inputs can go to ONNX Runtime or PyTorch.
#include <omp.h>

#include <charconv>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "numeric_flags.h"
#include "data/data_source.h"
#include "interop/network_source.h"
#include "io/model_file.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "runtime/checkpoint.h"
#include "runtime/trainer.h"
#include "util/atomic_file.h"
#include "vdnn/error.h"

namespace vdnn::cli {
namespace {

struct InferOptions {
  std::string model, weights, input, images, logits;
  DataSource source;
  int64_t batch = 128;
  int classes = 0, threads = 0;
  bool seed_given = false, json = false;
};

// --images: the array as a dataset without labels (every label 0, and no loss or accuracy reported).
Dataset images_dataset(const std::string& path, const Graph& graph) {
  NpyArray a;
  try {
    a = read_npy(path);
  } catch (const Error& e) {
    VDNN_THROW("--images " << e.what());
  }
  if ((a.shape.size() != 4 && a.shape.size() != 2) || a.shape[0] < 1)
    VDNN_THROW("--images " << path << ": shape " << shape_text(a.shape)
                           << ", expected [N, C, H, W] or [N, K] with N >= 1");
  Dataset d;
  d.count = a.shape[0];
  d.channels = a.shape[1];
  d.height = a.shape.size() == 4 ? a.shape[2] : 1;
  d.width = a.shape.size() == 4 ? a.shape[3] : 1;
  d.classes = graph.classes();
  d.images = std::move(a.data);
  d.labels.assign(static_cast<size_t>(d.count), 0);
  d.name = path;
  return d;
}

int run_infer(InferOptions& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  check_output_files({{"--logits", o.logits}});
  ModelOptions mo;
  if (!o.input.empty()) mo.input = parse_shape(o.input, "--input");
  if (o.classes > 0) mo.classes = o.classes;
  NetworkSource model = load_network(o.model, mo);
  SafeTensors weights;
  if (o.weights.empty()) {  // an ONNX model's own initializers
    if (model.initial_weights.tensors.empty())
      VDNN_THROW("--weights is required for model '" << o.model << "' (only an ONNX model carries its own weights)");
    weights = std::move(model.initial_weights);
  } else {
    try {
      weights = read_weights_file(o.weights);
    } catch (const Error& e) {
      VDNN_THROW("--weights " << e.what());
    }
  }
  // Synthetic test data follows the seed: by default the one the weights were trained with.
  if (auto seed = weights.metadata.find("seed"); !o.seed_given && seed != weights.metadata.end()) {
    const std::string& s = seed->second;
    if (std::from_chars(s.data(), s.data() + s.size(), o.source.seed).ptr != s.data() + s.size() || s.empty())
      VDNN_THROW("--weights " << o.weights << ": metadata 'seed' is '" << s << "', expected an integer");
  }
  Graph graph = std::move(model.graph);
  const bool labelled = o.images.empty();
  const Dataset test = labelled ? load_data(o.source, graph, Split::kTest) : images_dataset(o.images, graph);
  check_data_fits(graph, test);
  Net net(std::move(graph), {.batch = o.batch, .seed = o.source.seed});
  load_weights(weights, net);
  std::vector<float> logits;
  const EvalResult r = Trainer(net, TrainConfig{}).evaluate(test, o.logits.empty() ? nullptr : &logits);
  if (!o.logits.empty()) write_npy(o.logits, {r.samples, net.graph().classes()}, logits);
  auto step = weights.metadata.find("step");
  if (o.json) {
    nlohmann::json j = {{"model", net.graph().name()}, {"weights", o.weights}, {"data", test.name},
                        {"samples", r.samples}, {"batch", o.batch}, {"weights_sha256", net.weights_sha256()}};
    if (labelled) j["test_loss"] = r.loss, j["test_accuracy"] = r.accuracy;
    if (!o.logits.empty()) j["logits"] = o.logits;
    if (step != weights.metadata.end()) j["step"] = step->second;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model %s, weights %s%s; data %s (%lld samples), batch %lld\n", net.graph().name().c_str(),
              (o.weights.empty() ? "(its ONNX initializers)" : o.weights.c_str()), step != weights.metadata.end() ? (" (step " + step->second + ")").c_str() : "",
              test.name.c_str(), static_cast<long long>(r.samples), static_cast<long long>(o.batch));
  if (labelled) std::printf("test loss %.4f  test acc %.4f\n", r.loss, r.accuracy);
  if (!o.logits.empty())
    std::printf("logits [%lld, %d] written to %s\n", static_cast<long long>(r.samples), net.graph().classes(),
                o.logits.c_str());
  return 0;
}

}  // namespace

Runner add_infer_command(CLI::App& app) {
  auto o = std::make_shared<InferOptions>();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--model", o->model, "model name (see `vdnn models`), JSON or ONNX file")->required();
  app.add_option("--weights", o->weights,
                 "safetensors file, e.g. from `vdnn train --save` (default for an ONNX model: its initializers)");
  CLI::Option* data = app.add_option("--data", o->source.data,
                                     "fashion-mnist, synthetic, or a folder of Fashion-MNIST IDX files")
                          ->capture_default_str();
  CLI::Option* logits = app.add_option("--logits", o->logits,
                                       "write every sample's logits to this .npy file (float32 [samples, classes])");
  app.add_option("--images", o->images, "inputs from a float32 .npy [N, C, H, W] (or [N, K]) instead of --data; "
                 "no labels, so no loss or accuracy")->excludes(data)->needs(logits);
  app.add_option("--batch", o->batch, "batch size")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--input", o->input, "override the model's input shape, CxHxW");
  app.add_option("--classes", o->classes, "override the model's class count")->check(CLI::Range(kMinClasses, kMaxClasses));
  app.add_option("--synthetic-samples", o->source.synthetic_samples,
                 "--data synthetic: training samples of the run (the test split is a quarter of them)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))->capture_default_str();
  app.add_option("--seed", o->source.seed, "--data synthetic: its seed (default: the weights' training seed)")
      ->each([o](const std::string&) { o->seed_given = true; });
  app.add_option("--threads", o->threads, "oneDNN/OpenMP threads (default: all cores)")->check(threads_check());
  app.add_flag("--json", o->json, "print JSON instead of text");
  return [o] { return run_infer(*o); };
}

}  // namespace vdnn::cli
