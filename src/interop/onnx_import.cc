#include "interop/onnx_import.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "core/layer_config.h"
#include "core/layer_registry.h"
#include "interop/onnx_node_reader.h"
#include "layers/batch_norm.h"
#include "util/mapped_file.h"
#include "util/utf8.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

using nlohmann::json;

constexpr int64_t kMinOpset = 13;

// A float attribute as the decimal it was written from (float keeps 7 significant digits), so
// PyTorch's momentum 0.1, stored by ONNX as 0.9f, reads back as 0.1 and eps 1e-5 as 1e-5.
double as_decimal(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", v);
  return std::strtod(text, nullptr);
}

// The text of the operators this importer translates, for errors.
const char* kSupportedOps =
    "Conv, Relu, Clip (as ReLU or ReLU6), MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, "
    "BatchNormalization, Gemm, MatMul (+ Add), Flatten, Reshape (to 2-D), Concat, Add, Pad (before "
    "a Conv or AveragePool), Dropout, LRN, Identity, Constant, SoftmaxCrossEntropyLoss";

// Translates the nodes of one ONNX graph into vdnn layers. A shadow Graph is built alongside the
// JSON layers so every node sees the per-sample shapes of its inputs and every layer's parameter
// specs, and any shape that does not agree is an error at the node that made it.
class Translator {
 public:
  Translator(onnx::GraphProto& graph, std::string source, const ModelOptions& options)
      : graph_(graph), source_(std::move(source)), options_(options), constants_(graph, source_) {}

  ImportedModel run(const std::string& model_name) {
    count_uses();
    const Shape input = read_data_input();
    shadow_ = std::make_unique<Graph>(model_name, options_.input.value_or(input), kMinClasses);
    for (int i = 0; i < graph_.node_size(); ++i) translate(graph_.node(i), i);
    return finish(model_name, input);
  }

 private:
  // --- the graph's inputs and outputs ---------------------------------------------------------

  // Who reads each value, once, so no node looks at every other (an import stays linear in nodes).
  void count_uses() {
    for (int i = 0; i < graph_.node_size(); ++i)
      for (const auto& in : graph_.node(i).input())
        if (!in.empty()) ++uses_[in], readers_[in].push_back(i);
    for (const auto& out : graph_.output()) ++uses_[out.name()];
  }

  // The one float input that is not an initializer: [N, C, H, W] or [N, K] with a fixed N.
  Shape read_data_input() {
    const onnx::ValueInfoProto* data = nullptr;
    for (const auto& in : graph_.input()) {
      if (constants_.is_initializer(in.name())) continue;
      const auto& type = in.type().tensor_type();
      if (type.elem_type() == onnx::TensorProto::INT64 && !labels_.empty())
        VDNN_THROW(source_ << ": two integer graph inputs ('" << labels_ << "', '" << in.name() << "')");
      if (type.elem_type() == onnx::TensorProto::INT64) {
        labels_ = in.name();
        continue;
      }
      if (data)
        VDNN_THROW(source_ << ": two data inputs ('" << data->name() << "', '" << in.name()
                           << "'); vdnn trains networks with one image or vector input");
      data = &in;
    }
    if (!data) VDNN_THROW(source_ << ": the graph has no data input");
    const std::string at = VDNN_MSG(source_ << ": input '" << data->name() << "'");
    const auto& type = data->type().tensor_type();
    if (type.elem_type() != onnx::TensorProto::FLOAT) VDNN_THROW(at << ": must be float32");
    if (!type.has_shape() || (type.shape().dim_size() != 4 && type.shape().dim_size() != 2))
      VDNN_THROW(at << ": must have a shape [N, C, H, W] or [N, K]");
    std::vector<int64_t> dims;
    for (const auto& d : type.shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 1)
        VDNN_THROW(
            at << ": dimension " << dims.size() << " is "
               << (d.has_dim_param() ? "dynamic ('" + d.dim_param() + "')" : std::string("not a positive number"))
               << "; vdnn needs fixed sizes (export with a fixed-size example input and no dynamic_axes)");
      if (d.dim_value() > kMaxInputDim) VDNN_THROW(at << ": dimension " << dims.size() << " is too large");
      dims.push_back(d.dim_value());
    }
    batch_ = dims[0];
    value_of_[data->name()] = "data";
    return Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
  }

  ImportedModel finish(const std::string& model_name, const Shape& input) {
    if (graph_.output_size() != 1)
      VDNN_THROW(source_ << ": the graph has " << graph_.output_size()
                         << " outputs; vdnn imports networks with one output (the logits or the loss)");
    const std::string out = graph_.output(0).name();
    if (!loss_added_) {
      const std::string logits = vdnn_value(out, source_ + ": graph output");
      logits_ = logits;
      add_layer({{"name", "loss"}, {"type", "softmax_cross_entropy"}, {"inputs", {logits}}},
                source_ + ": the loss vdnn adds after the logits");
    } else if (out != loss_output_) {
      VDNN_THROW(source_ << ": the graph's output '" << out << "' is not its loss's");
    }
    const Shape& logits_shape = shadow_->value(shadow_->find_value(logits_)).shape;
    if (logits_shape.rank() != 1)
      VDNN_THROW(source_ << ": the logits '" << out << "' have per-sample shape " << logits_shape.to_string()
                         << "; expected [classes] (flatten before the classifier)");
    const int classes = static_cast<int>(logits_shape.dims[0]);
    if (options_.classes && *options_.classes != classes)
      VDNN_THROW(source_ << ": the network has " << classes << " classes (its logits '" << out << "'); --classes "
                         << *options_.classes << " cannot change an imported network");
    ImportedModel result;
    result.model = {{"name", model_name},
                    {"description", escape_invalid_utf8(VDNN_MSG("imported from " << source_ << " (batch " << batch_
                                                                                  << " in the file)"))},
                    {"input", options_.input.value_or(input).dims},
                    {"classes", classes},
                    {"layers", layers_}};
    result.weights = std::move(weights_);
    result.weights.path = source_;
    return result;
  }

  // --- naming ---------------------------------------------------------------------------------

  // The vdnn value an ONNX value stands for; throws when no translated node made it.
  std::string vdnn_value(const std::string& onnx_name, const std::string& where) const {
    auto it = value_of_.find(onnx_name);
    if (it != value_of_.end()) return it->second;
    if (padded_.count(onnx_name))
      VDNN_THROW(where << ": reads the output of a Pad, which vdnn folds only into a following Conv or AveragePool");
    if (constants_.find(onnx_name))
      VDNN_THROW(where << ": reads the constant '" << onnx_name
                       << "' as data; vdnn supports constants only "
                          "as weights, biases and attributes");
    VDNN_THROW(where << ": reads '" << onnx_name << "', which no earlier node produces");
  }

  // A layer name: the node's own (unique), else op + index; bytes that are not UTF-8 as \xNN.
  std::string plain_name(const onnx::NodeProto& node, int index) {
    std::string name =
        escape_invalid_utf8(node.name().empty() ? VDNN_MSG(node.op_type() << "_" << index) : node.name());
    if (name == "data" || names_.count(name)) name = VDNN_MSG(name << "_" << index);
    return name;
  }

  // A parameterised layer is named after its initializers' common prefix when each is
  // "<prefix>.<vdnn param name>" (PyTorch's state_dict names); otherwise plainly.
  std::string param_layer_name(OnnxNodeReader& node, int index, const std::vector<int>& inputs,
                               const std::vector<std::string>& param_names) {
    std::string prefix;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const std::string in = node.input(inputs[k]);
      if (in.empty()) continue;
      const std::string suffix = "." + param_names[k];
      if (in.size() <= suffix.size() || in.compare(in.size() - suffix.size(), suffix.size(), suffix) != 0)
        return plain_name(node.proto(), index);
      const std::string p = escape_invalid_utf8(in.substr(0, in.size() - suffix.size()));
      if (!prefix.empty() && p != prefix) return plain_name(node.proto(), index);
      prefix = p;
    }
    if (prefix.empty() || prefix == "data" || names_.count(prefix)) return plain_name(node.proto(), index);
    return prefix;
  }

  // --- emitting layers ------------------------------------------------------------------------

  // Appends a layer to the model and the shadow graph; returns its node index in the shadow graph.
  int add_layer(json layer, const std::string& where) {
    const std::string name = layer["name"];
    std::vector<std::string> inputs = layer["inputs"];
    json fields = layer;
    fields.erase("name");
    fields.erase("type");
    fields.erase("inputs");
    LayerConfig cfg(fields, where);  // its errors name `where` already
    std::unique_ptr<Layer> made = make_layer(name, layer["type"], cfg);
    try {
      shadow_->add(std::move(made), inputs);
    } catch (const Error& e) {
      VDNN_THROW(where << ": " << e.what());
    }
    names_.insert(name);
    layers_.push_back(std::move(layer));
    return static_cast<int>(shadow_->nodes().size()) - 1;
  }

  void produce(const onnx::NodeProto& node, const std::string& vdnn_name) {
    if (node.output_size() < 1 || node.output(0).empty())
      VDNN_THROW(source_ << ": node '" << node.name() << "' has no output");
    value_of_[node.output(0)] = vdnn_name;
  }

  // Outputs past the first must be unused (MaxPool's indices, Dropout's mask, BN's statistics).
  void require_only_first_output_used(OnnxNodeReader& node) {
    for (int i = 1; i < node.proto().output_size(); ++i)
      if (!node.proto().output(i).empty() && uses_.count(node.proto().output(i)))
        node.fail(VDNN_MSG("its output " << i << " ('" << node.proto().output(i)
                                         << "') is used; vdnn computes only the first output of " << node.op()));
  }

  const Shape& shape_of(const std::string& vdnn_name) const {
    return shadow_->value(shadow_->find_value(vdnn_name)).shape;
  }

  // The weights of the layer just added, from the node's constant inputs in ParamSpec order
  // (`inputs[k]` feeds param k; -1 skips it). `transpose_first` transposes a 2-D first tensor.
  void take_weights(OnnxNodeReader& node, int layer, const std::vector<int>& inputs, bool transpose_first = false) {
    const Node& n = shadow_->nodes()[layer];
    for (size_t k = 0; k < inputs.size() && k < n.params.size(); ++k) {
      if (inputs[k] < 0 || node.input(inputs[k]).empty()) continue;
      const ParamSpec& spec = n.params[k];
      const std::string what = VDNN_MSG(node.where() << ": " << spec.name << " '" << node.input(inputs[k]) << "'");
      const onnx::TensorProto& t = node.require_constant(inputs[k], spec.name);
      if (used_initializers_.count(node.input(inputs[k])))
        VDNN_THROW(what << ": is used by a second node; vdnn does not share weights between layers");
      std::vector<int64_t> dims = onnx_dims(t, what);
      std::vector<float> data = onnx_floats(t, what);
      if (transpose_first && k == 0 && dims.size() == 2) {
        std::vector<float> tr(data.size());
        for (int64_t i = 0; i < dims[0]; ++i)
          for (int64_t j = 0; j < dims[1]; ++j) tr[j * dims[0] + i] = data[i * dims[1] + j];
        data.swap(tr);
        std::swap(dims[0], dims[1]);
      }
      if (!same_layout(dims, spec.dims))
        VDNN_THROW(what << ": has shape " << Shape(dims).to_string() << ", the layer needs "
                        << Shape(spec.dims).to_string() << " for its input "
                        << shadow_->value(n.inputs[0]).shape.to_string());
      used_initializers_.insert(node.input(inputs[k]));
      weights_.tensors.push_back({n.layer->name() + "." + spec.name, spec.dims, std::move(data)});
      constants_.release(node.input(inputs[k]));  // translated: the file's copy goes
    }
  }

  // Same dims, or the same plain order: a bias [1, K] for [K], grouped weights [O, I/g, kh, kw]
  // for vdnn's [g, O/g, I/g, kh, kw].
  static bool same_layout(const std::vector<int64_t>& file, const std::vector<int64_t>& spec) {
    if (file == spec) return true;
    auto squeeze = [](std::vector<int64_t> d) {
      d.erase(std::remove(d.begin(), d.end(), int64_t{1}), d.end());
      return d;
    };
    if (squeeze(file) == squeeze(spec)) return true;
    return spec.size() == 5 && file.size() == 4 && file[0] == spec[0] * spec[1] &&
           std::equal(file.begin() + 1, file.end(), spec.begin() + 2);
  }

  // --- the operators --------------------------------------------------------------------------

  void translate(const onnx::NodeProto& proto, int index) {
    OnnxNodeReader node(proto, constants_, source_);
    static const std::map<std::string, void (Translator::*)(OnnxNodeReader&, int)> handlers = {
        {"Conv", &Translator::conv},
        {"Relu", &Translator::relu},
        {"Clip", &Translator::clip},
        {"MaxPool", &Translator::pool},
        {"AveragePool", &Translator::pool},
        {"GlobalAveragePool", &Translator::global_pool},
        {"GlobalMaxPool", &Translator::global_pool},
        {"BatchNormalization", &Translator::batch_norm},
        {"Gemm", &Translator::gemm},
        {"MatMul", &Translator::matmul},
        {"Flatten", &Translator::flatten},
        {"Reshape", &Translator::reshape},
        {"Concat", &Translator::concat},
        {"Add", &Translator::add},
        {"Pad", &Translator::pad},
        {"Dropout", &Translator::dropout},
        {"LRN", &Translator::lrn},
        {"Identity", &Translator::identity},
        {"Constant", &Translator::constant},
        {"SoftmaxCrossEntropyLoss", &Translator::loss},
    };
    if (!proto.domain().empty() && proto.domain() != "ai.onnx")
      node.fail(VDNN_MSG("operator domain '" << proto.domain() << "' is not supported (only the default ONNX domain)"));
    if (skipped_.count(index)) return;
    if (proto.output_size() < 1 || proto.output(0).empty()) node.fail("has no output");
    if (loss_added_) node.fail("comes after the loss; the loss must be the graph's last node");
    auto it = handlers.find(proto.op_type());
    if (it == handlers.end())
      node.fail(VDNN_MSG("operator " << proto.op_type() << " is not supported (supported: " << kSupportedOps << ")"));
    (this->*(it->second))(node, index);
    node.check_attributes_used();
  }

  // The data input i as a vdnn value name.
  std::string data_input(OnnxNodeReader& node, int i) {
    if (node.input(i).empty()) node.fail(VDNN_MSG("input " << i << " is missing"));
    return vdnn_value(node.input(i), node.where());
  }

  void require_no_auto_pad(OnnxNodeReader& node) {
    const std::string auto_pad = node.text("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID")
      node.fail(VDNN_MSG("auto_pad " << auto_pad << " is not supported (NOTSET with explicit pads, or VALID)"));
  }

  static json pair(int64_t a, int64_t b) { return a == b ? json(a) : json::array({a, b}); }

  void conv(OnnxNodeReader& node, int index) {
    std::string in = node.input(0);
    std::vector<int64_t> extra_pads{0, 0, 0, 0};
    if (auto p = padded_.find(in); p != padded_.end()) {  // a Pad folded into this Conv
      extra_pads = p->second.pads;
      in = p->second.input;
    }
    const std::string input = vdnn_value(in, node.where());
    const onnx::TensorProto& w = node.require_constant(1, "weight");
    const std::vector<int64_t> wd = onnx_dims(w, node.where() + ": weight");
    if (wd.size() != 4)
      node.fail(
          VDNN_MSG("weight has shape " << Shape(wd).to_string() << "; vdnn supports 2-D convolutions (4-D weights)"));
    require_no_auto_pad(node);
    const auto kernel = node.ints("kernel_shape", {wd[2], wd[3]}, 2);
    if (kernel[0] != wd[2] || kernel[1] != wd[3]) node.fail("kernel_shape disagrees with the weight's shape");
    const auto strides = node.ints("strides", {1, 1}, 2);
    auto pads = node.ints("pads", {0, 0, 0, 0}, 4);
    const auto dilations = node.ints("dilations", {1, 1}, 2);
    const int64_t groups = node.integer("group", 1);
    for (int k = 0; k < 4; ++k) pads[k] += extra_pads[k];
    for (int64_t v : pads)
      if (v < 0) node.fail("pads must be >= 0");
    json layer = {{"type", "conv"},
                  {"channels", wd[0]},
                  {"kernel", pair(wd[2], wd[3])},
                  {"stride", pair(strides[0], strides[1])},
                  {"pad", pair(pads[0], pads[1])},
                  {"bias", !node.input(2).empty()},
                  {"inputs", {input}}};
    if (pads[2] != pads[0] || pads[3] != pads[1]) layer["pad_end"] = json::array({pads[2], pads[3]});
    if (dilations[0] != 1 || dilations[1] != 1) layer["dilation"] = pair(dilations[0], dilations[1]);
    if (groups != 1) layer["groups"] = groups;
    layer["name"] = param_layer_name(node, index, {1, 2}, {"weight", "bias"});
    const int l = add_layer(layer, node.where());
    take_weights(node, l, {1, 2});
    produce(node.proto(), layer["name"]);
  }

  void relu(OnnxNodeReader& node, int index) { activation(node, index, "relu"); }

  void activation(OnnxNodeReader& node, int index, const std::string& type) {
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name}, {"type", type}, {"inputs", {data_input(node, 0)}}}, node.where());
    produce(node.proto(), name);
  }

  void clip(OnnxNodeReader& node, int index) {
    const double inf = std::numeric_limits<double>::infinity();
    const double lo = node.has("min") ? node.real("min", 0) : node.scalar_input(1, -inf, "min");
    const double hi = node.has("max") ? node.real("max", 0) : node.scalar_input(2, inf, "max");
    if (lo == 0 && hi == inf) return activation(node, index, "relu");
    if (lo == 0 && hi == 6) return activation(node, index, "relu6");
    node.fail(
        VDNN_MSG("Clip(min " << lo << ", max " << hi << ") is supported only as ReLU (min 0) or ReLU6 (min 0, max 6)"));
  }

  void pool(OnnxNodeReader& node, int index) {
    const bool max = node.op() == "MaxPool";
    require_only_first_output_used(node);
    require_no_auto_pad(node);
    const auto kernel = node.ints("kernel_shape", {}, 2);
    const auto strides = node.ints("strides", {1, 1}, 2);
    const auto pads = node.ints("pads", {0, 0, 0, 0}, 4);
    const bool ceil = node.integer("ceil_mode", 0) != 0;
    if (max) {
      const auto dilations = node.ints("dilations", {1, 1}, 2);
      if (dilations[0] != 1 || dilations[1] != 1) node.fail("dilated pooling is not supported");
      if (node.integer("storage_order", 0) != 0) node.fail("storage_order 1 (column-major indices) is not supported");
    }
    if (pads[0] != pads[2] || pads[1] != pads[3])
      node.fail(VDNN_MSG("asymmetric pads [" << pads[0] << ", " << pads[1] << ", " << pads[2] << ", " << pads[3]
                                             << "] are not supported for pooling (top = bottom, left = right)"));
    const std::string name = plain_name(node.proto(), index);
    json layer = {{"name", name},
                  {"type", max ? "max_pool" : "avg_pool"},
                  {"kernel", pair(kernel[0], kernel[1])},
                  {"stride", pair(strides[0], strides[1])},
                  {"pad", pair(pads[0], pads[1])},
                  {"ceil", ceil}};
    if (!max) layer["exclude_padding"] = node.integer("count_include_pad", 0) == 0;
    std::string in = node.input(0);
    if (auto p = padded_.find(in); p != padded_.end()) {
      // PyTorch's AvgPool2d(count_include_pad=True) exports as a zero Pad and an unpadded pool:
      // one pool with that padding, counting it in the divisor.
      const std::vector<int64_t>& zp = p->second.pads;
      if (max || ceil || pads != std::vector<int64_t>{0, 0, 0, 0} || zp[0] != zp[2] || zp[1] != zp[3])
        node.fail(
            "reads a Pad, which vdnn folds only into an AveragePool without pads or ceil_mode of its own, "
            "padding top = bottom and left = right");
      layer["pad"] = pair(zp[0], zp[1]);
      layer["exclude_padding"] = false;
      in = p->second.input;
    }
    layer["inputs"] = {vdnn_value(in, node.where())};
    add_layer(layer, node.where());
    produce(node.proto(), name);
  }

  void global_pool(OnnxNodeReader& node, int index) {
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name},
               {"type", node.op() == "GlobalMaxPool" ? "max_pool" : "avg_pool"},
               {"global", true},
               {"inputs", {data_input(node, 0)}}},
              node.where());
    produce(node.proto(), name);
  }

  void batch_norm(OnnxNodeReader& node, int index) {
    const bool training = node.integer("training_mode", node.proto().output_size() > 1 ? 1 : 0) != 0;
    if (!training)
      node.fail(
          "is in inference form (one output, training_mode 0): it normalises with the running "
          "statistics, which training with batch statistics would silently change; export with "
          "training=torch.onnx.TrainingMode.TRAINING");
    require_only_first_output_used(node);
    const double eps = as_decimal(node.real("epsilon", 1e-5f));
    const double momentum = as_decimal(1.0 - as_decimal(node.real("momentum", 0.9f)));
    if (node.integer("spatial", 1) != 1) node.fail("spatial 0 is not supported");
    const std::string input = data_input(node, 0);
    json layer = {{"type", "batch_norm"}, {"eps", eps}, {"momentum", momentum}, {"inputs", {input}}};
    layer["name"] = param_layer_name(node, index, {1, 2, 3, 4}, bn_param_names());
    const int l = add_layer(layer, node.where());
    take_weights(node, l, {1, 2, 3, 4});
    produce(node.proto(), layer["name"]);
  }

  // vdnn's batch-norm ParamSpec names, in order (what the layer itself says).
  static std::vector<std::string> bn_param_names() {
    std::vector<std::string> out;
    for (const auto& p : BatchNormLayer("bn", {}).params({Shape{1, 1, 1}})) out.push_back(p.name);
    return out;
  }

  void fc_layer(OnnxNodeReader& node, int index, const std::string& input, int weight, int bias, bool transpose) {
    const onnx::TensorProto& w = node.require_constant(weight, "weight");
    const std::vector<int64_t> wd = onnx_dims(w, node.where() + ": weight");
    if (wd.size() != 2) node.fail(VDNN_MSG("weight has shape " << Shape(wd).to_string() << ", expected 2-D"));
    const Shape& in = shape_of(input);
    if (in.rank() != 1)
      node.fail(VDNN_MSG("its input has per-sample shape " << in.to_string()
                                                           << "; vdnn's fully connected layer "
                                                              "takes flattened [K] inputs (Flatten first)"));
    const int64_t units = transpose ? wd[1] : wd[0];
    json layer = {
        {"type", "fc"}, {"units", units}, {"bias", bias >= 0 && !node.input(bias).empty()}, {"inputs", {input}}};
    std::vector<int> params{weight};
    if (bias >= 0) params.push_back(bias);
    layer["name"] = param_layer_name(node, index, params, {"weight", "bias"});
    const int l = add_layer(layer, node.where());
    take_weights(node, l, params, transpose);
    produce(node.proto(), layer["name"]);
  }

  void gemm(OnnxNodeReader& node, int index) {
    if (node.real("alpha", 1.0f) != 1.0f || node.real("beta", 1.0f) != 1.0f)
      node.fail("alpha and beta other than 1 are not supported");
    if (node.integer("transA", 0) != 0) node.fail("transA 1 is not supported (the data must be [N, K])");
    const bool trans_b = node.integer("transB", 0) != 0;
    fc_layer(node, index, data_input(node, 0), 1, 2, !trans_b);
  }

  // MatMul by a constant [K, units], with an Add of a constant bias folded in when the Add is its
  // only reader (how some exporters write Linear).
  void matmul(OnnxNodeReader& node, int index) {
    const std::string input = data_input(node, 0);
    std::string bias;
    const int add = bias_add_reading(node.proto().output(0), index, &bias);
    if (add < 0) return fc_layer(node, index, input, 1, -1, true);
    onnx::NodeProto fused = node.proto();  // MatMul's inputs plus the bias, Add's output
    fused.add_input(bias);
    fused.set_output(0, graph_.node(add).output(0));
    OnnxNodeReader reader(fused, constants_, source_);
    skipped_.insert(add);
    fc_layer(reader, index, input, 1, 2, true);
  }

  // The later node that adds a constant to `value` when it is the value's only reader, else -1;
  // `bias` gets the constant's name.
  int bias_add_reading(const std::string& value, int index, std::string* bias) {
    const auto it = readers_.find(value);
    if (uses_[value] != 1 || it == readers_.end() || it->second.size() != 1 || it->second[0] <= index) return -1;
    const onnx::NodeProto& add = graph_.node(it->second[0]);
    if (add.op_type() != "Add" || add.input_size() != 2 || add.output_size() < 1 || add.output(0).empty()) return -1;
    const std::string& other = add.input(0) == value ? add.input(1) : add.input(0);
    if (!constants_.find(other)) return -1;
    *bias = other;
    return it->second[0];
  }

  void flatten(OnnxNodeReader& node, int index) {
    if (node.integer("axis", 1) != 1) node.fail("only axis 1 (to [N, C*H*W]) is supported");
    to_vector(node, index);
  }

  void reshape(OnnxNodeReader& node, int index) {
    node.integer("allowzero", 0);
    const std::vector<int64_t> target = onnx_integers(node.require_constant(1, "shape"), node.where() + ": shape");
    const std::string input = data_input(node, 0);
    const int64_t k = shape_of(input).elements();
    const bool ok = target.size() == 2 && (target[0] == batch_ || target[0] == 0 || target[0] == -1) &&
                    (target[1] == k || (target[1] == -1 && target[0] != -1));
    if (!ok)
      node.fail(VDNN_MSG("reshape to [" << (target.empty() ? "" : std::to_string(target[0]))
                                        << (target.size() > 1 ? ", " + std::to_string(target[1]) : "")
                                        << (target.size() > 2 ? ", ..." : "") << "]: only flattening to [N, " << k
                                        << "] is supported"));
    to_vector(node, index);
  }

  void to_vector(OnnxNodeReader& node, int index) {
    const std::string input = data_input(node, 0);
    if (shape_of(input).rank() == 1) return produce(node.proto(), input);  // already [K]
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name}, {"type", "flatten"}, {"inputs", {input}}}, node.where());
    produce(node.proto(), name);
  }

  void concat(OnnxNodeReader& node, int index) {
    const int64_t axis = node.integer("axis", 1);
    if (axis != 1 && axis != -3) node.fail("only axis 1 (channels) is supported");
    std::vector<std::string> inputs;
    for (int i = 0; i < node.proto().input_size(); ++i) inputs.push_back(data_input(node, i));
    if (inputs.size() == 1) return produce(node.proto(), inputs[0]);
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name}, {"type", "concat"}, {"inputs", inputs}}, node.where());
    produce(node.proto(), name);
  }

  void add(OnnxNodeReader& node, int index) {
    if (node.proto().input_size() != 2) node.fail("expected two inputs");
    for (int i = 0; i < 2; ++i)
      if (constants_.find(node.input(i)))
        node.fail(
            "adds a constant; vdnn supports Add of two computed values (residual joins) and a bias "
            "after MatMul");
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name}, {"type", "add"}, {"inputs", {data_input(node, 0), data_input(node, 1)}}}, node.where());
    produce(node.proto(), name);
  }

  // Zero padding of H and W, folded into the Conv or AveragePool that reads it.
  void pad(OnnxNodeReader& node, int index) {
    if (node.text("mode", "constant") != "constant") node.fail("only constant (zero) padding is supported");
    std::vector<int64_t> pads = node.has("pads")
                                    ? node.ints("pads", {})
                                    : onnx_integers(node.require_constant(1, "pads"), node.where() + ": pads");
    const double value = node.has("value") ? node.real("value", 0) : node.scalar_input(2, 0.0, "constant_value");
    if (value != 0) node.fail("only zero padding is supported");
    if (pads.size() != 8 || pads[0] || pads[1] || pads[4] || pads[5])
      node.fail("only padding of H and W of an [N, C, H, W] tensor is supported");
    const std::string out = node.proto().output(0);
    for (int reader : readers_[out])
      if (const std::string& op = graph_.node(reader).op_type(); op != "Conv" && op != "AveragePool")
        node.fail(VDNN_MSG("is read by a " << op << "; vdnn folds Pad only into a following Conv or AveragePool"));
    data_input(node, 0);
    padded_[out] = {node.input(0), {pads[2], pads[3], pads[6], pads[7]}};
  }

  void dropout(OnnxNodeReader& node, int index) {
    require_only_first_output_used(node);
    const double ratio = node.has("ratio") ? node.real("ratio", 0.5f) : node.scalar_input(1, 0.5, "ratio");
    node.integer("seed", 0);  // vdnn draws masks from --seed
    const bool training = node.scalar_input(2, 0, "training_mode") != 0 || node.proto().output_size() > 1;
    const std::string input = data_input(node, 0);
    if (!training || ratio == 0) return produce(node.proto(), input);  // the identity
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name}, {"type", "dropout"}, {"rate", as_decimal(ratio)}, {"inputs", {input}}}, node.where());
    produce(node.proto(), name);
  }

  void lrn(OnnxNodeReader& node, int index) {
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name},
               {"type", "lrn"},
               {"size", node.integer("size", 0)},
               {"alpha", as_decimal(node.real("alpha", 1e-4f))},
               {"beta", as_decimal(node.real("beta", 0.75f))},
               {"k", as_decimal(node.real("bias", 1.0f))},
               {"inputs", {data_input(node, 0)}}},
              node.where());
    produce(node.proto(), name);
  }

  void identity(OnnxNodeReader& node, int) { produce(node.proto(), data_input(node, 0)); }

  // Its value is read through OnnxConstants by the nodes that take it as an input.
  void constant(OnnxNodeReader& node, int) {
    if (!node.tensor("value")) node.fail("has no tensor attribute 'value' (the only form vdnn reads)");
  }

  void loss(OnnxNodeReader& node, int index) {
    if (node.text("reduction", "mean") != "mean") node.fail("only reduction 'mean' is supported (as vdnn's loss)");
    if (node.has("ignore_index")) node.fail("ignore_index is not supported");
    if (!node.input(2).empty()) node.fail("class weights are not supported");
    if (node.input(1) != labels_ || labels_.empty()) node.fail("its labels must be the graph's integer input");
    require_only_first_output_used(node);
    logits_ = data_input(node, 0);
    add_layer({{"name", "loss"}, {"type", "softmax_cross_entropy"}, {"inputs", {logits_}}}, node.where());
    loss_added_ = true;
    loss_output_ = node.proto().output(0);
  }

  struct PendingPad {
    std::string input;
    std::vector<int64_t> pads;  // top, left, bottom, right
  };

  const onnx::GraphProto& graph_;
  std::string source_;
  ModelOptions options_;
  OnnxConstants constants_;
  std::unique_ptr<Graph> shadow_;
  json layers_ = json::array();
  SafeTensors weights_;
  std::map<std::string, std::string> value_of_;      // ONNX value -> vdnn value
  std::map<std::string, int> uses_;                  // ONNX value -> readers (nodes and graph outputs)
  std::map<std::string, std::vector<int>> readers_;  // ONNX value -> the nodes reading it
  std::map<std::string, PendingPad> padded_;         // outputs of Pad nodes awaiting their Conv
  std::set<std::string> names_;
  std::set<std::string> used_initializers_;
  std::set<int> skipped_;  // nodes folded into an earlier one (Add after MatMul)
  std::string labels_, logits_, loss_output_;
  int64_t batch_ = 1;
  bool loss_added_ = false;
};

}  // namespace

namespace {

// What every ONNX source shares once protobuf has parsed it: the opset check and the translation.
ImportedModel translate(onnx::ModelProto& model, const std::string& source, const ModelOptions& options) {
  if (!model.has_graph() || model.graph().node_size() == 0)
    VDNN_THROW(source << ": not an ONNX model (it has no graph nodes)");
  int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < kMinOpset)
    VDNN_THROW(source << ": opset " << opset
                      << " is older than vdnn reads (13 or newer: torch.onnx.export(..., opset_version=13))");
  const std::string stem = escape_invalid_utf8(std::filesystem::path(source).stem().string());
  return Translator(*model.mutable_graph(), source, options).run(stem.empty() ? "onnx_model" : stem);
}

void check_protobuf_size(size_t bytes, const std::string& source) {
  if (bytes > static_cast<size_t>(std::numeric_limits<int>::max()))
    VDNN_THROW(source << ": larger than 2 GB, which protobuf cannot read in one message");
}

const char* const kNotOnnx = ": not an ONNX model (protobuf could not parse it: truncated or another format)";

}  // namespace

ImportedModel import_onnx_bytes(std::string_view bytes, const std::string& source, const ModelOptions& options) {
  onnx::ModelProto model;
  check_protobuf_size(bytes.size(), source);
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) VDNN_THROW(source << kNotOnnx);
  return translate(model, source, options);
}

// The file is parsed from a descriptor, in protobuf's chunks: mapping it and parsing the mapping
// would hold the file's pages and the parsed message at once (VGG-16: 2 x 528 MiB resident before
// the weights are even translated). MappedFile only checks the path (and maps nothing it reads).
ImportedModel import_onnx(const std::string& path, const ModelOptions& options) {
  const MappedFile file(path);
  check_protobuf_size(file.bytes().size(), path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) VDNN_THROW(path << ": cannot open it: " << std::strerror(errno));
  onnx::ModelProto model;
  const bool parsed = model.ParseFromFileDescriptor(fd);
  ::close(fd);
  if (!parsed) VDNN_THROW(path << kNotOnnx);
  return translate(model, path, options);
}

}  // namespace vdnn
