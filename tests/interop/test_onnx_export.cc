// ONNX export (interop/onnx_export.h, `vdnn export --onnx`): every zoo network passes libonnx's
// checker and strict shape inference; the initializers are the weights under vdnn's names in
// ONNX's layouts; what cannot be exported is one error naming the layer or tensor; and ONNX
// Runtime (PyPI onnxruntime in build/pyenv, scripts/python_env.sh) computes the logits `vdnn infer`
// computes, within 1e-4, for briefly trained networks with every exported layer kind
// (tests/interop/onnx_export_layers.json) — tests/interop/onnx_runtime_agreement.py runs it.
#include <onnx/checker.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "cli/cli_run.h"
#include "core/graph.h"
#include "data/data_source.h"
#include "error_of.h"
#include "interop/onnx_export.h"
#include "io/model_file.h"
#include "io/npy.h"
#include "layers/fc.h"
#include "layers/softmax_ce.h"

namespace vdnn::test {
namespace test_onnx_export {

namespace fs = std::filesystem;

const std::string kLayersModel = VDNN_SOURCE_DIR "/tests/interop/onnx_export_layers.json";

// Every parameter of `g` under its vdnn name and file shape, each element distinct.
SafeTensors numbered_weights(const Graph& g) {
  SafeTensors w;
  float next = 0.0f;
  for (const Node& node : g.nodes())
    for (const ParamSpec& spec : node.params) {
      SafeTensor t{node.layer->name() + "." + spec.name, spec.file_dims(), {}};
      for (int64_t k = 0; k < spec.elements(); ++k) t.data.push_back(next += 0.25f);
      w.tensors.push_back(std::move(t));
    }
  return w;
}

std::vector<int64_t> dims_of(const onnx::TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }

std::vector<int64_t> dims_of(const onnx::ValueInfoProto& v) {
  std::vector<int64_t> d;
  for (const auto& dim : v.type().tensor_type().shape().dim()) d.push_back(dim.dim_value());
  return d;
}

// Every CNN of the zoo; the GPTs (token input, sequence layers, attention) have no ONNX export yet and
// are refused naming the first layer it cannot write.
TEST(OnnxExport, EveryZooNetworkPassesTheCheckerAndShapeInference) {
  for (const std::string& name : model_names()) {
    const Graph g = load_model(name);
    if (g.token_input()) {
      test::expect_error([&] { export_onnx(g, nullptr, {.batch = 2}); },
                         {"layer 'transformer.wte' (embedding): ONNX export supports", "not this kind"});
      continue;
    }
    // Parameters as graph inputs: the structure of VGG-416 without its 2.3 GB of weights.
    onnx::ModelProto m = export_onnx(g, nullptr, {.batch = 2});
    EXPECT_NO_THROW(onnx::checker::check_model(m)) << name;
    ASSERT_EQ(m.graph().output_size(), 1) << name;
    EXPECT_EQ(m.graph().output(0).name(), "logits");
    EXPECT_EQ(dims_of(m.graph().output(0)), (std::vector<int64_t>{2, g.classes()})) << name;
    EXPECT_EQ(m.graph().input(0).name(), "input");
    EXPECT_EQ(dims_of(m.graph().input(0)), g.input_shape().with_batch(2)) << name;
    int64_t params = 0;
    for (const Node& node : g.nodes()) params += static_cast<int64_t>(node.params.size());
    EXPECT_EQ(m.graph().input_size(), 1 + params) << name;
    EXPECT_EQ(m.opset_import(0).version(), 13);
    // Strict inference typed every intermediate value, and the exporter compared them with vdnn's.
    EXPECT_GT(m.graph().value_info_size(), 0) << name;
    for (const onnx::NodeProto& n : m.graph().node())
      EXPECT_TRUE(n.op_type() != "Dropout" && n.op_type() != "SoftmaxCrossEntropyLoss") << name << ": " << n.op_type();
  }
}

TEST(OnnxExport, InitializersAreTheWeightsUnderVdnnNamesInOnnxLayouts) {
  const Graph g = load_model(kLayersModel);
  const SafeTensors w = numbered_weights(g);
  const onnx::ModelProto m = export_onnx(g, &w);
  std::map<std::string, const onnx::TensorProto*> inits;
  for (const onnx::TensorProto& t : m.graph().initializer()) inits[t.name()] = &t;
  for (const SafeTensor& t : w.tensors) {
    ASSERT_TRUE(inits.count(t.name)) << t.name;
    const onnx::TensorProto& i = *inits[t.name];
    EXPECT_EQ(i.data_type(), onnx::TensorProto::FLOAT) << t.name;
    ASSERT_EQ(i.raw_data().size(), t.data.size() * sizeof(float)) << t.name;
    EXPECT_EQ(std::memcmp(i.raw_data().data(), t.data.data(), i.raw_data().size()), 0) << t.name;
  }
  // ONNX's layouts: a grouped conv's weight [O, I/g, kH, kW]; an fc on an image [units, C*H*W].
  EXPECT_EQ(dims_of(*inits.at("c2.weight")), (std::vector<int64_t>{8, 2, 3, 3}));
  EXPECT_EQ(dims_of(*inits.at("fc1.weight")), (std::vector<int64_t>{12, 24}));
  EXPECT_EQ(dims_of(*inits.at("bn.running_var")), (std::vector<int64_t>{8}));
  EXPECT_FALSE(inits.count("fc2.bias"));
  std::set<std::string> ops;
  for (const onnx::NodeProto& n : m.graph().node()) {
    ops.insert(n.op_type());
    if (n.output(0) == "logits") EXPECT_EQ(n.name(), "fc2");  // through the dropout before the loss
  }
  for (const char* op : {"Conv", "Clip", "LRN", "MaxPool", "BatchNormalization", "AveragePool", "Mul", "Concat", "Sum",
                         "Relu", "GlobalAveragePool", "GlobalMaxPool", "Add", "Flatten", "Gemm"})
    EXPECT_TRUE(ops.count(op)) << op;
  EXPECT_FALSE(ops.count("Dropout"));
}

TEST(OnnxExport, MissingOrMisshapenWeightIsOneErrorNamingTheTensor) {
  const Graph g = load_model("fmnist_dag");
  SafeTensors w = numbered_weights(g);
  w.path = "w.safetensors";
  SafeTensors missing = w;
  std::erase_if(missing.tensors, [](const SafeTensor& t) { return t.name == "res_bn.running_mean"; });
  const std::string e1 = error_of([&] { export_onnx(g, &missing); });
  EXPECT_NE(e1.find("res_bn.running_mean"), std::string::npos) << e1;
  EXPECT_NE(e1.find("w.safetensors"), std::string::npos) << e1;
  SafeTensors reshaped = w;
  for (SafeTensor& t : reshaped.tensors)
    if (t.name == "fc.weight") t.shape = {t.shape[1], t.shape[0]};
  const std::string e2 = error_of([&] { export_onnx(g, &reshaped); });
  EXPECT_NE(e2.find("fc.weight"), std::string::npos) << e2;
}

// A layer kind the exporter does not know (a future one): refused, naming the layer.
class MysteryLayer : public Layer {
 public:
  explicit MysteryLayer(std::string name) : Layer(std::move(name), "mystery", LayerKind::kActivation) {}
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  bool backward_reads_input() const override { return true; }
};

TEST(OnnxExport, AnUnknownLayerKindIsOneErrorNamingTheLayer) {
  Graph g("odd", Shape{6}, 3);
  g.add(std::make_unique<FcLayer>("fc", FcLayer::Params{3}), {});
  g.add(std::make_unique<MysteryLayer>("strange"), {});
  g.add(std::make_unique<SoftmaxCrossEntropyLayer>("loss"), {});
  g.finalize();
  const std::string e = error_of([&] { export_onnx(g, nullptr); });
  EXPECT_NE(e.find("layer 'strange' (mystery)"), std::string::npos) << e;
  EXPECT_NE(e.find("ONNX export supports"), std::string::npos) << e;
}

// Inputs for `vdnn infer --images` and ONNX Runtime: normal-ish values, a seeded generator.
void write_images(const fs::path& path, std::vector<int64_t> shape) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> x(static_cast<size_t>(elements_up_to(shape)));
  for (float& v : x) v = normal(gen);
  write_npy(path.string(), shape, x);
}

TEST(OnnxExportCli, OnnxRuntimeComputesTheLogitsVdnnInferComputes) {
  const fs::path build = fs::path(VDNN_BINARY).parent_path();
  if (!fs::exists(build / "pyenv/bin/python")) {  // made once; the script below names what it lacks
    const CliRun env = run_command("bash " VDNN_SOURCE_DIR "/scripts/python_env.sh " + build.string());
    ASSERT_EQ(env.exit_code, 0) << "the test environment (scripts/python_env.sh):\n" << env.output;
  }
  const fs::path dir = temp_dir("onnx_export");
  std::string args;
  for (const std::string& model : {std::string("fmnist_dag"), kLayersModel}) {
    const Graph g = load_model(model);
    const std::string stem = (dir / g.name()).string();
    // Briefly trained, so batch norm's running statistics are not the initial 0 and 1.
    const CliRun train = vdnn("train --model " + model +
                              " --data synthetic --synthetic-samples 64 --batch 16 "
                              "--iterations 6 --lr 0.002 --save " +
                              stem + ".safetensors");
    ASSERT_EQ(train.exit_code, 0) << train.output;
    // 13 samples: ONNX Runtime runs them as chunks of the exported batch 4, vdnn as batches of 5.
    write_images(stem + ".x.npy", g.input_shape().with_batch(13));
    const CliRun exported =
        vdnn("export --onnx " + stem + ".onnx --model " + model + " --weights " + stem + ".safetensors --batch 4");
    ASSERT_EQ(exported.exit_code, 0) << exported.output;
    const CliRun infer = vdnn("infer --model " + model + " --weights " + stem + ".safetensors --images " + stem +
                              ".x.npy --logits " + stem + ".y.npy --batch 5");
    ASSERT_EQ(infer.exit_code, 0) << infer.output;
    EXPECT_EQ(infer.output.find("test loss"), std::string::npos) << "no labels, no loss: " << infer.output;
    args += " " + stem + ".onnx " + stem + ".x.npy " + stem + ".y.npy";
  }
  const CliRun ort = run_command("timeout 120 " + (build / "pyenv/bin/python").string() +
                                 " " VDNN_SOURCE_DIR "/tests/interop/onnx_runtime_agreement.py" + args);
  ASSERT_EQ(ort.exit_code, 0) << ort.output;
  std::string json_line;  // the script's one line of JSON (anything ONNX Runtime logs comes before)
  std::istringstream lines(ort.output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("{", 0) == 0) json_line = line;
  const nlohmann::json report = nlohmann::json::parse(json_line);
  ASSERT_EQ(report.size(), 2u) << ort.output;
  for (const auto& [model, r] : report.items()) {
    EXPECT_EQ(r["shape"][0], 13) << model;
    EXPECT_LT(r["max_abs_diff"].get<double>(), 1e-4) << model;
    EXPECT_GT(r["max_abs_logit"].get<double>(), 0.1) << model << ": logits this small compare nothing";
    std::printf("  %s: ONNX Runtime vs vdnn infer, max |difference| %.3g (largest |logit| %.3g)\n",
                fs::path(model).filename().c_str(), r["max_abs_diff"].get<double>(), r["max_abs_logit"].get<double>());
  }
  fs::remove_all(dir);
}

// With --data the logits come with the loss and accuracy: one row per test sample, in order, and
// their arg-max is the accuracy's prediction (the synthetic test labels are remade from the seed).
TEST(OnnxExportCli, InferWritesTheLogitsOfLabelledDataToo) {
  const fs::path dir = temp_dir("onnx_export_logits");
  const std::string d = dir.string();
  ASSERT_EQ(vdnn("train --model fmnist_cnn --data synthetic --synthetic-samples 64 --batch 16 --iterations 4 --save " +
                 d + "/w.safetensors")
                .exit_code,
            0);
  const CliRun r = vdnn("infer --model fmnist_cnn --weights " + d +
                        "/w.safetensors --data synthetic "
                        "--synthetic-samples 64 --batch 7 --json --logits " +
                        d + "/y.npy");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  const NpyArray y = read_npy(d + "/y.npy");
  ASSERT_EQ(y.shape, (std::vector<int64_t>{j["samples"].get<int64_t>(), 10}));
  const Graph g = load_model("fmnist_cnn");
  const Dataset test = load_data({.data = "synthetic", .synthetic_samples = 64, .seed = 1}, g, Split::kTest);
  ASSERT_EQ(test.count, y.shape[0]);
  int64_t right = 0;
  for (int64_t n = 0; n < test.count; ++n) {
    const float* row = y.data.data() + n * 10;
    right += std::max_element(row, row + 10) - row == test.labels[n];
  }
  EXPECT_DOUBLE_EQ(static_cast<double>(right) / static_cast<double>(test.count), j["test_accuracy"].get<double>());
  fs::remove_all(dir);
}

TEST(OnnxExportCli, BadInputIsOneErrorLine) {
  const fs::path dir = temp_dir("onnx_export_errors");
  const std::string d = dir.string();
  expect_user_error("export --onnx " + d + "/m.onnx --model fmnist_cnn --weights " + d + "/none.safetensors",
                    "--weights");
  expect_user_error("export --onnx " + d + " --model fmnist_cnn", "--onnx");
  expect_user_error("export --onnx /dev/full --model fmnist_cnn", "/dev/full");  // streamed: the write error
  ASSERT_EQ(vdnn("train --model fmnist_cnn --data synthetic --synthetic-samples 32 --batch 16 --iterations 1 --save " +
                 d + "/cnn.safetensors")
                .exit_code,
            0);
  expect_user_error("export --onnx " + d + "/m.onnx --model fmnist_cnn --classes 5 --weights " + d + "/cnn.safetensors",
                    "fc2.weight");
  EXPECT_FALSE(fs::exists(dir / "m.onnx"));
  write_images(dir / "rgb.npy", {2, 3, 28, 28});
  expect_user_error("infer --model fmnist_cnn --weights " + d + "/cnn.safetensors --images " + d +
                        "/rgb.npy --logits " + d + "/y.npy",
                    "expects 1x28x28");
  expect_user_error("infer --model fmnist_cnn --weights " + d + "/cnn.safetensors --images " + d +
                        "/cnn.safetensors --logits " + d + "/y.npy",
                    "--images");
  EXPECT_FALSE(fs::exists(dir / "y.npy"));
  fs::remove_all(dir);
}

}  // namespace test_onnx_export
}  // namespace vdnn::test
