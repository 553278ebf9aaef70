// vdnn's CPU kernels against an INDEPENDENT definition of each layer: PyTorch in float64
// (tests/reference/torch_reference.py). reference_ops.cc restates oneDNN's definitions, so it
// cannot see where oneDNN itself departs from what users expect (Caffe / PyTorch average pooling
// in ceil mode, LRN windows); this test can. Forward and backward of pooling (ceil mode, padding
// in and out of the divisor, overhanging windows, blocked and channels-last layouts), LRN,
// convolution (groups, strides, padding, dilation, asymmetric padding), ReLU6 (with inputs at
// exactly 0 and 6), batch norm (training), FC, softmax cross-entropy and attention (materialized and
// fused, causal and not: PyTorch's softmax(QK^T/sqrt(D) + mask)V written out, since Debian's torch
// 1.13 has no scaled_dot_product_attention); the sequence layers layer_norm, gelu (exact and tanh),
// linear and token_cross_entropy (with ignored tokens).
//
// Python runs once for all cases (importing torch takes a second or two), with a timeout. A
// missing python3 or torch FAILS the test: scripts/setup.sh installs python3-torch (Debian's, for
// /usr/bin/python3). Tolerances: vdnn computes in float32, torch in float64 on the same float32
// inputs; each case states its relative / absolute bounds.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_run.h"
#include "layers/layer_test_util.h"

namespace vdnn::test {
namespace test_torch_reference {

using tag = dnnl::memory::format_tag;
namespace fs = std::filesystem;

struct TorchCase {
  nlohmann::json layer;
  int64_t batch;
  Shape in;
  tag layout;
  double rel = 1e-4, abs = 1e-5;    // for y, dx and the parameter gradients
  float x_lo = -2.0f, x_hi = 2.0f;  // the inputs' range
  std::vector<float> planted = {};  // exact values for the first inputs (e.g. kinks)
};

// vdnn's results for one case, and what goes to Python.
struct Computed {
  std::vector<float> y, dx;
  std::vector<std::vector<float>> dparams;
  nlohmann::json request;
};

std::vector<std::vector<float>> params_for(const TorchCase& c, uint64_t seed) {
  const std::string type = c.layer["type"];
  const int64_t in_elements = c.in.elements();
  if (type == "conv") {
    const int64_t oc = c.layer["channels"], groups = c.layer.value("groups", 1);
    const auto k = c.layer["kernel"];
    const int64_t kh = k.is_array() ? k[0].get<int64_t>() : k.get<int64_t>();
    const int64_t kw = k.is_array() ? k[1].get<int64_t>() : k.get<int64_t>();
    std::vector<std::vector<float>> p{ref::random_vector(oc * c.in.channels() / groups * kh * kw, seed, -0.5f, 0.5f)};
    if (c.layer.value("bias", true)) p.push_back(ref::random_vector(oc, seed + 1));
    return p;
  }
  if (type == "batch_norm") {
    const int64_t ch = c.in.channels();
    return {ref::random_vector(ch, seed, 0.5f, 1.5f), ref::random_vector(ch, seed + 1), std::vector<float>(ch, 0.0f),
            std::vector<float>(ch, 1.0f)};
  }
  if (type == "layer_norm" && c.layer.value("affine", true)) {
    const int64_t ch = c.in.dims.back();
    return {ref::random_vector(ch, seed, 0.5f, 1.5f), ref::random_vector(ch, seed + 1)};
  }
  if (type == "linear") {
    const int64_t units = c.layer["units"];
    return {ref::random_vector(units * c.in.dims.back(), seed, -0.3f, 0.3f), ref::random_vector(units, seed + 1)};
  }
  if (type == "fc") {
    const int64_t units = c.layer["units"];
    return {ref::random_vector(units * in_elements, seed, -0.3f, 0.3f), ref::random_vector(units, seed + 1)};
  }
  return {};
}

Computed compute(const TorchCase& c, uint64_t seed) {
  auto layer = layer_from(c.layer);
  KernelHarness h(*layer, c.batch, {c.in}, c.layout);
  Computed r;
  const auto params = params_for(c, seed);
  if (!params.empty()) h.set_params(params);
  auto x = ref::random_vector(static_cast<size_t>(c.batch * c.in.elements()), seed + 2, c.x_lo, c.x_hi);
  std::copy(c.planted.begin(), c.planted.end(), x.begin());
  r.request = {{"layer", c.layer}, {"shape", c.in.with_batch(c.batch)}, {"x", x}};
  const bool loss = layer->kind() == LayerKind::kLoss;
  std::vector<int32_t> labels;
  if (loss) {
    // One label per sample, or per token of [T, V] logits (every fourth then ignore_index, -100).
    const int64_t per_sample = c.in.rank() == 2 ? c.in.dims[0] : 1, classes = c.in.dims.back();
    for (int64_t i = 0; i < c.batch * per_sample; ++i)
      labels.push_back(per_sample > 1 && i % 4 == 3 ? -100 : static_cast<int32_t>((i * 5 + 2) % classes));
    h.set_labels(labels);
    r.request["labels"] = labels;
  }
  r.y = h.forward({x});
  std::vector<float> dy;
  if (!loss) {
    dy = ref::random_vector(r.y.size(), seed + 3);
    r.request["dy"] = dy;
  }
  // Torch's batch norm and FC take gamma/beta and weights/bias; BN's running averages stay here.
  nlohmann::json torch_params = nlohmann::json::array();
  for (size_t i = 0; i < params.size() && i < 2; ++i) torch_params.push_back(params[i]);
  r.request["params"] = torch_params;
  const auto g = h.backward(dy);
  r.dx = g.d_in[0];
  r.dparams = g.d_params;
  return r;
}

// Runs the script on all requests; returns its results, or fails with its output.
nlohmann::json run_torch(const nlohmann::json& cases, std::string* failure) {
  const fs::path dir = fs::temp_directory_path() / ("vdnn_torch_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "in.json") << nlohmann::json{{"cases", cases}}.dump();
  const std::string cmd = "timeout 120 /usr/bin/python3 " VDNN_SOURCE_DIR "/tests/reference/torch_reference.py " +
                          (dir / "in.json").string() + " " + (dir / "out.json").string();
  const CliRun run = run_command(cmd);
  nlohmann::json result;
  if (run.exit_code != 0) {
    *failure = "`" + cmd + "` failed (exit status " + std::to_string(run.exit_code) +
               "; python3-torch is installed by scripts/setup.sh):\n" + run.output;
  } else {
    result = read_json_file(dir / "out.json")["results"];
  }
  fs::remove_all(dir);
  return result;
}

std::vector<float> floats(const nlohmann::json& v) {
  std::vector<float> r;
  for (const auto& e : v) r.push_back(static_cast<float>(e.get<double>()));
  return r;
}

nlohmann::json kernel(int64_t h, int64_t w) { return nlohmann::json::array({h, w}); }

TEST(TorchReference, LayersMatchPyTorchInFloat64) {
  const std::vector<TorchCase> cases{
      // Average pooling, ceil mode: the last windows overhang the padding.
      {{{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"ceil", true}, {"exclude_padding", false}},
       2,
       Shape{3, 8, 7},
       tag::nchw},
      {{{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"ceil", true}, {"exclude_padding", false}},
       1,
       Shape{16, 8, 9},
       tag::aBcd16b},
      {{{"type", "avg_pool"},
        {"kernel", kernel(2, 3)},
        {"stride", 2},
        {"pad", 1},
        {"ceil", true},
        {"exclude_padding", false}},
       2,
       Shape{5, 6, 8},
       tag::acdb},
      {{{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"ceil", true}}, 2, Shape{5, 7, 8}, tag::acdb},
      {{{"type", "avg_pool"}, {"kernel", 3}, {"stride", 1}, {"pad", 1}, {"exclude_padding", false}},
       2,
       Shape{8, 5, 5},
       tag::aBcd8b},
      {{{"type", "avg_pool"}, {"kernel", 2}}, 2, Shape{3, 6, 8}, tag::nchw},
      // Max pooling, ceil mode with and without padding.
      {{{"type", "max_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"ceil", true}}, 2, Shape{4, 9, 10}, tag::nchw},
      {{{"type", "max_pool"}, {"kernel", 3}, {"stride", 2}, {"ceil", true}}, 1, Shape{16, 12, 12}, tag::aBcd16b},
      // LRN (odd sizes; even ones are refused, LrnLayer.EvenSizeIsRefusedByNameWhenTheModelIsRead).
      {{{"type", "lrn"}, {"size", 5}, {"alpha", 0.5}, {"beta", 0.75}, {"k", 2.0}}, 2, Shape{7, 3, 5}, tag::nchw},
      {{{"type", "lrn"}, {"size", 3}, {"alpha", 0.3}, {"beta", 0.6}, {"k", 1.0}}, 2, Shape{20, 3, 3}, tag::aBcd16b},
      {{{"type", "lrn"}, {"size", 1}, {"alpha", 0.2}, {"beta", 0.75}, {"k", 2.0}}, 1, Shape{6, 4, 4}, tag::acdb},
      // Convolution: groups, strides, asymmetric kernel, padding, with and without bias.
      {{{"type", "conv"}, {"channels", 6}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"groups", 2}},
       2,
       Shape{4, 7, 6},
       tag::nchw,
       1e-4,
       1e-4},
      {{{"type", "conv"}, {"channels", 16}, {"kernel", 3}, {"pad", 1}, {"groups", 4}},
       2,
       Shape{16, 6, 6},
       tag::aBcd16b,
       1e-4,
       1e-4},
      {{{"type", "conv"},
        {"channels", 5},
        {"kernel", kernel(3, 2)},
        {"stride", kernel(2, 1)},
        {"pad", kernel(1, 0)},
        {"bias", false}},
       3,
       Shape{3, 7, 5},
       tag::nchw,
       1e-4,
       1e-4},
      // Dilation and asymmetric padding (pad: top/left, pad_end: bottom/right), as ONNX writes
      // torchvision's dilated convolutions and "same" padding of even kernels.
      {{{"type", "conv"},
        {"channels", 6},
        {"kernel", 3},
        {"dilation", kernel(2, 3)},
        {"pad", kernel(2, 1)},
        {"groups", 2}},
       2,
       Shape{4, 9, 8},
       tag::nchw,
       1e-4,
       1e-4},
      {{{"type", "conv"},
        {"channels", 16},
        {"kernel", kernel(2, 3)},
        {"stride", 2},
        {"dilation", 2},
        {"pad", kernel(0, 1)},
        {"pad_end", kernel(1, 2)}},
       2,
       Shape{16, 7, 8},
       tag::aBcd16b,
       1e-4,
       1e-4},
      // ReLU6 over both kinks, with inputs at exactly 0 and 6: PyTorch's gradient there is 0.
      {{{"type", "relu6"}},
       2,
       Shape{3, 4, 5},
       tag::nchw,
       0,
       0,
       -3.0f,
       9.0f,
       {0.0f, 6.0f, -0.0f, 6.0f, 0.0f, 5.9999995f, 6.0000005f, 1e-30f}},
      {{{"type", "relu6"}}, 1, Shape{16, 2, 3}, tag::aBcd16b, 0, 0, -3.0f, 9.0f, {6.0f, 0.0f}},
      // Batch norm in training mode (batch statistics, biased variance in the normalization).
      {{{"type", "batch_norm"}, {"eps", 1e-5}}, 3, Shape{5, 4, 3}, tag::nchw, 1e-3, 1e-4},
      {{{"type", "batch_norm"}, {"eps", 1e-3}}, 2, Shape{16, 3, 3}, tag::aBcd16b, 1e-3, 1e-4},
      // Fully connected on a blocked 4-D input, and the loss.
      {{{"type", "fc"}, {"units", 7}}, 3, Shape{16, 3, 2}, tag::aBcd16b, 1e-4, 1e-4},
      {{{"type", "softmax_cross_entropy"}}, 4, Shape{6}, tag::nchw, 1e-5, 1e-6},
      // Attention on a packed [T, 3C] sequence; T = 70 spans a fused tile and a ragged one.
      {{{"type", "attention"}, {"heads", 2}}, 2, Shape{70, 24}, tag::abc, 1e-3, 1e-5},
      {{{"type", "attention"}, {"heads", 2}, {"implementation", "fused"}}, 2, Shape{70, 24}, tag::abc, 1e-3, 1e-5},
      {{{"type", "attention"}, {"heads", 4}, {"causal", false}, {"implementation", "fused"}},
       1,
       Shape{9, 48},
       tag::abc,
       1e-3,
       1e-5},
      // Sequences [N, T, C], plain (layers/*.h; design/sequences.md).
      {{{"type", "layer_norm"}, {"eps", 1e-5}}, 2, Shape{5, 24}, tag::undef, 1e-3, 1e-4},
      {{{"type", "layer_norm"}, {"affine", false}}, 2, Shape{3, 8}, tag::undef, 1e-3, 1e-4},
      {{{"type", "gelu"}}, 2, Shape{4, 6}, tag::undef, 1e-5, 1e-6, -4.0f, 4.0f},
      {{{"type", "gelu"}, {"approximate", "tanh"}}, 2, Shape{4, 6}, tag::undef, 1e-5, 1e-6, -4.0f, 4.0f},
      {{{"type", "linear"}, {"units", 7}}, 3, Shape{5, 9}, tag::undef, 1e-4, 1e-4},
      {{{"type", "token_cross_entropy"}}, 2, Shape{6, 11}, tag::undef, 1e-5, 1e-6},
  };
  std::vector<Computed> computed;
  nlohmann::json requests = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    computed.push_back(compute(cases[i], 100 + 10 * i));
    requests.push_back(computed.back().request);
  }
  std::string failure;
  const nlohmann::json results = run_torch(requests, &failure);
  ASSERT_TRUE(failure.empty()) << failure;
  ASSERT_EQ(results.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const TorchCase& c = cases[i];
    SCOPED_TRACE(c.layer.dump() + " on " + c.in.to_string());
    const nlohmann::json& r = results[i];
    EXPECT_TRUE(ref::values_close(computed[i].y, floats(r["y"]), c.rel, c.abs)) << "forward";
    EXPECT_TRUE(ref::values_close(computed[i].dx, floats(r["dx"]), c.rel, c.abs)) << "dx";
    ASSERT_LE(r["dparams"].size(), computed[i].dparams.size());
    for (size_t p = 0; p < r["dparams"].size(); ++p)
      EXPECT_TRUE(ref::values_close(computed[i].dparams[p], floats(r["dparams"][p]), c.rel, c.abs))
          << "gradient of parameter " << p;
  }
}

}  // namespace test_torch_reference
}  // namespace vdnn::test
