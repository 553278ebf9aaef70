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
#include "interop/onnx_opset.h"
#include "interop/onnx_pads.h"
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
    "Conv, Relu, Clip (as ReLU, ReLU6 or the identity), MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, "
    "BatchNormalization, Gemm, MatMul (+ Add), Flatten, Reshape (to 2-D), Concat, Add, Pad (into the Conv or "
    "pooling that reads it), Dropout, LRN, Identity, Constant, Softmax (as the last node), SoftmaxCrossEntropyLoss";

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
  struct PendingPad {           // a Pad's output, folded into the nodes that read it
    std::string input;          // the ONNX value it pads
    std::vector<int64_t> pads;  // top, left, bottom, right
    std::string name;           // the Pad node's
  };

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
    if (loss_added_ && out != loss_output_)
      VDNN_THROW(source_ << ": the graph's output '" << out << "' is not its loss's");
    if (!loss_added_) logits_ = vdnn_value(out, source_ + ": the graph's output '" + out + "'");
    const int classes = check_logits(loss_added_ ? logits_onnx_ : out);
    if (!loss_added_)
      add_layer({{"name", "loss"}, {"type", "softmax_cross_entropy"}, {"inputs", {logits_}}},
                source_ + ": the loss vdnn adds after the logits");
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
    result.notes = std::move(notes_);
    result.output_is_softmax = output_is_softmax_;
    return result;
  }

  // The logits' class count: a vector of 2 or more per sample (what vdnn's loss classifies).
  // `onnx_logits` names them in the file, and its producer names the node.
  int check_logits(const std::string& onnx_logits) const {
    const Shape& shape = shape_of(logits_);
    auto it = producer_.find(onnx_logits);
    const std::string at = it != producer_.end()
                               ? VDNN_MSG(it->second << ": its output '" << onnx_logits << "', the logits,")
                               : VDNN_MSG(source_ << ": the graph's input '" << onnx_logits << "', the logits,");
    if (shape.rank() != 1)
      VDNN_THROW(at << " has per-sample shape " << shape.to_string()
                    << "; expected [classes] (flatten before the classifier)");
    if (shape.dims[0] < kMinClasses || shape.dims[0] > kMaxClasses)
      VDNN_THROW(at << " has " << shape.dims[0] << " value" << (shape.dims[0] == 1 ? "" : "s")
                    << " per sample; a classifier needs 2 or more classes (vdnn's loss classifies, at most 2^20)");
    return static_cast<int>(shape.dims[0]);
  }

  // --- naming ---------------------------------------------------------------------------------

  // The vdnn value an ONNX value stands for; throws when no translated node made it.
  std::string vdnn_value(const std::string& onnx_name, const std::string& where) const {
    auto it = value_of_.find(onnx_name);
    if (it != value_of_.end()) return it->second;
    if (auto p = padded_.find(onnx_name); p != padded_.end())
      VDNN_THROW(where << ": reads the output of the zero Pad '" << p->second.name
                       << "'; vdnn has no layer that pads alone, and folds a Pad only into the Conv, AveragePool, "
                          "or MaxPool of non-negative values (after a Relu) that reads it");
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

  void produce(OnnxNodeReader& node, const std::string& vdnn_name) {
    if (node.proto().output_size() < 1 || node.proto().output(0).empty())
      VDNN_THROW(source_ << ": node '" << node.proto().name() << "' has no output");
    value_of_[node.proto().output(0)] = vdnn_name;
    producer_[node.proto().output(0)] = node.where();
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

  // How a file's tensor becomes a parameter: a 2-D tensor transposed (MatMul's [K, units] for fc's
  // [units, K]), scaled (Gemm's alpha and beta), a single value broadcast to the parameter's shape
  // (Gemm's scalar C).
  struct WeightRule {
    bool transpose = false;
    float scale = 1;
    bool broadcast = false;
  };

  // The weights of the layer just added, from the node's constant inputs in ParamSpec order
  // (`inputs[k]` feeds param k; -1 skips it), each as `rules[k]` says (none: as it is).
  void take_weights(OnnxNodeReader& node, int layer, const std::vector<int>& inputs,
                    const std::vector<WeightRule>& rules = {}) {
    const Node& n = shadow_->nodes()[layer];
    for (size_t k = 0; k < inputs.size() && k < n.params.size(); ++k) {
      if (inputs[k] < 0 || node.input(inputs[k]).empty()) continue;
      const ParamSpec& spec = n.params[k];
      const std::string what = VDNN_MSG(node.where() << ": " << spec.name << " '" << node.input(inputs[k]) << "'");
      const onnx::TensorProto& t = node.require_constant(inputs[k], spec.name);
      if (used_initializers_.count(node.input(inputs[k])))
        VDNN_THROW(what << ": is used by a second node; vdnn does not share weights between layers");
      std::vector<int64_t> dims = onnx_dims(t, what);
      const std::vector<int64_t> file_dims = dims;
      std::vector<float> data = onnx_floats(t, what);
      const WeightRule rule = k < rules.size() ? rules[k] : WeightRule{};
      apply_rule(rule, spec, dims, data);
      if (!same_layout(dims, spec.dims)) {
        // Both shapes as the file lays the tensor out (Gemm transB 0 and MatMul hold [K, units]).
        std::vector<int64_t> needed = spec.dims;
        if (rule.transpose && needed.size() == 2) std::swap(needed[0], needed[1]);
        VDNN_THROW(what << ": has shape " << Shape(file_dims).to_string() << ", the layer needs "
                        << Shape(needed).to_string() << " for its input "
                        << shadow_->value(n.inputs[0]).shape.to_string());
      }
      used_initializers_.insert(node.input(inputs[k]));
      weights_.tensors.push_back({n.layer->name() + "." + spec.name, spec.dims, std::move(data)});
      constants_.release(node.input(inputs[k]));  // translated: the file's copy goes
    }
  }

  static void apply_rule(const WeightRule& rule, const ParamSpec& spec, std::vector<int64_t>& dims,
                         std::vector<float>& data) {
    if (rule.transpose && dims.size() == 2) {
      std::vector<float> tr(data.size());
      for (int64_t i = 0; i < dims[0]; ++i)
        for (int64_t j = 0; j < dims[1]; ++j) tr[j * dims[0] + i] = data[i * dims[1] + j];
      data.swap(tr);
      std::swap(dims[0], dims[1]);
    }
    if (rule.broadcast && data.size() == 1 && spec.elements() > 1) {
      data.assign(static_cast<size_t>(spec.elements()), data[0]);
      dims = spec.dims;
    }
    if (rule.scale != 1)
      for (float& v : data) v *= rule.scale;
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

 public:
  using Handlers = std::map<std::string, void (Translator::*)(OnnxNodeReader&, int)>;
  static const Handlers& handlers() {
    static const Handlers all = {
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
        {"Softmax", &Translator::softmax},
        {"SoftmaxCrossEntropyLoss", &Translator::loss},
    };
    return all;
  }

  // The domain and operator of a node, checked before anything reads the graph (or converts it).
  static void check_operator(const onnx::NodeProto& proto, const std::string& source) {
    const auto where = [&] {
      return VDNN_MSG(source << ": node '" << proto.name() << "' (" << proto.op_type() << ")");
    };
    if (!proto.domain().empty() && proto.domain() != "ai.onnx")
      VDNN_THROW(where() << ": operator domain '" << proto.domain()
                         << "' is not supported (only the default ONNX domain)");
    if (!handlers().count(proto.op_type()))
      VDNN_THROW(where() << ": operator " << proto.op_type() << " is not supported (supported: " << kSupportedOps
                         << ")");
  }

 private:
  void translate(const onnx::NodeProto& proto, int index) {
    OnnxNodeReader node(proto, constants_, source_);
    check_operator(proto, source_);
    if (skipped_.count(index)) return;
    if (proto.output_size() < 1 || proto.output(0).empty()) node.fail("has no output");
    if (loss_added_) node.fail("comes after the loss; the loss must be the graph's last node");
    (this->*(handlers().at(proto.op_type())))(node, index);
    node.check_attributes_used();
  }

  // The data input i as a vdnn value name.
  std::string data_input(OnnxNodeReader& node, int i) {
    if (node.input(i).empty()) node.fail(VDNN_MSG("input " << i << " is missing"));
    return vdnn_value(node.input(i), node.where());
  }

  static json pair(int64_t a, int64_t b) { return a == b ? json(a) : json::array({a, b}); }

  // An image's shape after a folded Pad's {top, left, bottom, right}, what the node itself reads.
  static Shape padded_shape(const Shape& in, const std::vector<int64_t>& pads) {
    if (!in.is_image()) return in;
    return Shape{in.channels(), in.height() + pads[0] + pads[2], in.width() + pads[1] + pads[3]};
  }

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
    const auto kernel = node.ints("kernel_shape", {wd[2], wd[3]}, 2);
    if (kernel[0] != wd[2] || kernel[1] != wd[3]) node.fail("kernel_shape disagrees with the weight's shape");
    const auto strides = node.ints("strides", {1, 1}, 2);
    const auto dilations = node.ints("dilations", {1, 1}, 2);
    const int64_t groups = node.integer("group", 1);
    const OnnxPads own = onnx_pads(node, padded_shape(shape_of(input), extra_pads), kernel, strides, dilations);
    std::vector<int64_t> pads{own.begin[0], own.begin[1], own.end[0], own.end[1]};
    for (int k = 0; k < 4; ++k) pads[k] += extra_pads[k];
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
    produce(node, layer["name"]);
  }

  void relu(OnnxNodeReader& node, int index) { activation(node, index, "relu"); }

  void activation(OnnxNodeReader& node, int index, const std::string& type) {
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name}, {"type", type}, {"inputs", {data_input(node, 0)}}}, node.where());
    produce(node, name);
  }

  void clip(OnnxNodeReader& node, int index) {
    const double inf = std::numeric_limits<double>::infinity();
    const double lo = node.has("min") ? node.real("min", 0) : node.scalar_input(1, -inf, "min");
    const double hi = node.has("max") ? node.real("max", 0) : node.scalar_input(2, inf, "max");
    // A bound at or beyond float's range bounds no float (exporters write ±FLT_MAX or ±inf for none).
    const bool no_lo = lo <= std::numeric_limits<float>::lowest(), no_hi = hi >= std::numeric_limits<float>::max();
    if (no_lo && no_hi) return identity(node, index);
    if (lo == 0 && no_hi) return activation(node, index, "relu");
    if (lo == 0 && hi == 6) return activation(node, index, "relu6");
    node.fail(VDNN_MSG("Clip(min " << lo << ", max " << hi
                                   << ") is supported only as ReLU (min 0), ReLU6 (min 0, max 6) or the identity "
                                      "(no bounds, or bounds beyond float's range)"));
  }

  void pool(OnnxNodeReader& node, int index) {
    const bool max = node.op() == "MaxPool";
    require_only_first_output_used(node);
    const auto kernel = node.ints("kernel_shape", {}, 2);
    const auto strides = node.ints("strides", {1, 1}, 2);
    bool ceil = node.integer("ceil_mode", 0) != 0;
    if (max) {
      const auto dilations = node.ints("dilations", {1, 1}, 2);
      if (dilations[0] != 1 || dilations[1] != 1) node.fail("dilated pooling is not supported");
      if (node.integer("storage_order", 0) != 0) node.fail("storage_order 1 (column-major indices) is not supported");
    }
    const bool counts_padding = !max && node.integer("count_include_pad", 0) != 0;
    std::string in = node.input(0);
    const auto folded = padded_.find(in);
    if (folded != padded_.end()) in = folded->second.input;
    const std::string input = vdnn_value(in, node.where());
    const std::vector<int64_t> zero_pads = folded != padded_.end() ? folded->second.pads : std::vector<int64_t>(4, 0);
    const OnnxPads own = onnx_pads(node, padded_shape(shape_of(input), zero_pads), kernel, strides, {1, 1});
    if (own.same) ceil = false;  // SAME's output, ceil(input / stride), is floor mode's with these pads
    std::vector<int64_t> pads{own.begin[0], own.begin[1], own.end[0], own.end[1]};
    const std::string name = plain_name(node.proto(), index);
    json layer = {{"name", name}, {"type", max ? "max_pool" : "avg_pool"}, {"ceil", ceil}};
    if (!max) layer["exclude_padding"] = !counts_padding;
    if (folded != padded_.end()) fold_pad_into_pool(node, folded->second, input, pads, layer);
    layer["kernel"] = pair(kernel[0], kernel[1]);
    layer["stride"] = pair(strides[0], strides[1]);
    layer["pad"] = pair(pads[0], pads[1]);
    if (pads[2] != pads[0] || pads[3] != pads[1]) layer["pad_end"] = json::array({pads[2], pads[3]});
    layer["inputs"] = {input};
    add_layer(layer, node.where());
    produce(node, name);
  }

  // A zero Pad read by a pooling node joins its padding {top, left, bottom, right}. An average
  // counts it (PyTorch's AvgPool2d(count_include_pad=True) exports as Pad + AveragePool), so its own
  // padding, if any, must count too; a max pool ignores padding, which is the same as a zero only
  // where no real cell is below zero: its input must be a ReLU's (or ReLU6's) output.
  void fold_pad_into_pool(OnnxNodeReader& node, const PendingPad& pad, const std::string& input,
                          std::vector<int64_t>& pads, json& layer) {
    const bool max = layer["type"] == "max_pool";
    const std::string reads = "reads the zero Pad '" + pad.name + "'";
    if (layer["ceil"].get<bool>()) node.fail(reads + " and has ceil_mode 1; vdnn folds a Pad only into floor mode");
    if (max && !non_negative(input))
      node.fail(reads + " of '" + pad.input +
                "', which may be negative, where a padded zero would win the max; vdnn folds a Pad into a MaxPool "
                "only after a Relu or Clip(0, 6)");
    if (!max && layer["exclude_padding"].get<bool>() && pads != std::vector<int64_t>(4, 0))
      node.fail(reads +
                " and pads of its own that do not count (count_include_pad 0); vdnn's pool counts all of "
                "its padding or none");
    for (int k = 0; k < 4; ++k) pads[k] += pad.pads[k];
    if (!max) layer["exclude_padding"] = false;
  }

  // Whether every value of `vdnn_name` is >= 0: a ReLU's or ReLU6's output.
  bool non_negative(const std::string& vdnn_name) const {
    const int producer = shadow_->value(shadow_->find_value(vdnn_name)).producer;
    if (producer < 0) return false;
    const std::string& type = shadow_->nodes()[producer].layer->type();
    return type == "relu" || type == "relu6";
  }

  void global_pool(OnnxNodeReader& node, int index) {
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name},
               {"type", node.op() == "GlobalMaxPool" ? "max_pool" : "avg_pool"},
               {"global", true},
               {"inputs", {data_input(node, 0)}}},
              node.where());
    produce(node, name);
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
    const float onnx_momentum = node.real("momentum", 0.9f);  // ONNX's: the weight of the old running value
    if (!(onnx_momentum >= 0 && onnx_momentum <= 1))
      node.fail(VDNN_MSG("momentum " << onnx_momentum
                                     << ": expected 0 to 1 (ONNX's momentum, the weight of the "
                                        "running statistics' old value)"));
    const double momentum = as_decimal(1.0 - as_decimal(onnx_momentum));
    if (node.integer("spatial", 1) != 1) node.fail("spatial 0 is not supported");
    const std::string input = data_input(node, 0);
    json layer = {{"type", "batch_norm"}, {"eps", eps}, {"momentum", momentum}, {"inputs", {input}}};
    layer["name"] = param_layer_name(node, index, {1, 2, 3, 4}, bn_param_names());
    const int l = add_layer(layer, node.where());
    take_weights(node, l, {1, 2, 3, 4});
    produce(node, layer["name"]);
  }

  // vdnn's batch-norm ParamSpec names, in order (what the layer itself says).
  static std::vector<std::string> bn_param_names() {
    std::vector<std::string> out;
    for (const auto& p : BatchNormLayer("bn", {}).params({Shape{1, 1, 1}})) out.push_back(p.name);
    return out;
  }

  // `alpha` scales the weight, `beta` the bias (Gemm's); a one-value bias is broadcast (Gemm's C,
  // an Add's scalar).
  void fc_layer(OnnxNodeReader& node, int index, const std::string& input, int weight, int bias, bool transpose,
                float alpha = 1, float beta = 1) {
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
    take_weights(node, l, params, {{.transpose = transpose, .scale = alpha}, {.scale = beta, .broadcast = true}});
    produce(node, layer["name"]);
  }

  // Y = alpha * A B + beta * C: fc with weight alpha B (transposed unless transB) and bias beta C,
  // where C is one bias for every sample: [units], [1, units] or a single value.
  void gemm(OnnxNodeReader& node, int index) {
    const float alpha = node.real("alpha", 1.0f), beta = node.real("beta", 1.0f);
    for (const auto& [name, value] : {std::pair{"alpha", alpha}, std::pair{"beta", beta}})
      if (!std::isfinite(value)) node.fail(VDNN_MSG(name << " " << value << ": expected a finite number"));
    if (node.integer("transA", 0) != 0) node.fail("transA 1 is not supported (the data must be [N, K])");
    const bool trans_b = node.integer("transB", 0) != 0;
    const bool bias = beta != 0 && !node.input(2).empty();
    if (const onnx::TensorProto* c = bias ? node.constant_input(2) : nullptr) {
      const std::vector<int64_t> cd = onnx_dims(*c, node.where() + ": C");
      if (cd.size() == 2 && cd[0] != 1)
        node.fail(VDNN_MSG("C has shape " << Shape(cd).to_string()
                                          << ", a bias per row (sample); vdnn's fc adds one bias to every sample: "
                                             "C [units], [1, units] or a single value"));
    }
    fc_layer(node, index, data_input(node, 0), 1, bias ? 2 : -1, !trans_b, alpha, beta);
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

  // An axis attribute as a non-negative axis of the node's input `vdnn_name` (with N: rank + 1).
  int64_t axis_of(OnnxNodeReader& node, const std::string& vdnn_name, int64_t fallback) {
    const int64_t rank = static_cast<int64_t>(shape_of(vdnn_name).rank()) + 1;
    const int64_t axis = node.integer("axis", fallback);
    if (axis < -rank || axis >= rank)
      node.fail(VDNN_MSG("axis " << axis << " is outside [" << -rank << ", " << rank - 1 << "] for its " << rank
                                 << "-D input"));
    return axis < 0 ? axis + rank : axis;
  }

  void flatten(OnnxNodeReader& node, int index) {
    if (axis_of(node, data_input(node, 0), 1) != 1)
      node.fail("only axis 1 (to [N, C*H*W]; -3 of an [N, C, H, W] input, -1 of an [N, K] one) is supported");
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
    if (shape_of(input).rank() == 1) return produce(node, input);  // already [K]
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name}, {"type", "flatten"}, {"inputs", {input}}}, node.where());
    produce(node, name);
  }

  void concat(OnnxNodeReader& node, int index) {
    std::vector<std::string> inputs;
    for (int i = 0; i < node.proto().input_size(); ++i) inputs.push_back(data_input(node, i));
    if (inputs.empty()) node.fail("has no inputs");
    if (axis_of(node, inputs[0], 1) != 1)
      node.fail("only axis 1 (channels, or features; -3 of [N, C, H, W] inputs, -1 of [N, K] ones) is supported");
    if (inputs.size() == 1) return produce(node, inputs[0]);
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name}, {"type", "concat"}, {"inputs", inputs}}, node.where());
    produce(node, name);
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
    produce(node, name);
  }

  // Zero padding of H and W, folded into the Conv or pooling node that reads it (conv, pool); any
  // other reader, the graph's output included, is refused where it reads it (vdnn_value).
  void pad(OnnxNodeReader& node, int index) {
    if (node.text("mode", "constant") != "constant") node.fail("only constant (zero) padding is supported");
    std::vector<int64_t> pads = node.has("pads")
                                    ? node.ints("pads", {})
                                    : onnx_integers(node.require_constant(1, "pads"), node.where() + ": pads");
    const double value = node.has("value") ? node.real("value", 0) : node.scalar_input(2, 0.0, "constant_value");
    if (value != 0) node.fail("only zero padding is supported");
    if (pads.size() != 8 || pads[0] || pads[1] || pads[4] || pads[5])
      node.fail("only padding of H and W of an [N, C, H, W] tensor is supported");
    for (int64_t v : pads)
      if (v < 0) node.fail(VDNN_MSG("pads must be >= 0 (a negative pad crops), got " << v));
    data_input(node, 0);
    padded_[node.proto().output(0)] = {node.input(0), {pads[2], pads[3], pads[6], pads[7]}, node.proto().name()};
  }

  void dropout(OnnxNodeReader& node, int index) {
    require_only_first_output_used(node);
    const double ratio = node.has("ratio") ? node.real("ratio", 0.5f) : node.scalar_input(1, 0.5, "ratio");
    node.integer("seed", 0);  // vdnn draws masks from --seed
    const bool training = node.scalar_input(2, 0, "training_mode") != 0 || node.proto().output_size() > 1;
    const std::string input = data_input(node, 0);
    if (!training || ratio == 0) return produce(node, input);  // the identity
    const std::string name = plain_name(node.proto(), index);
    add_layer({{"name", name}, {"type", "dropout"}, {"rate", as_decimal(ratio)}, {"inputs", {input}}}, node.where());
    produce(node, name);
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
    produce(node, name);
  }

  void identity(OnnxNodeReader& node, int) { produce(node, data_input(node, 0)); }

  // A Softmax over the logits as the graph's output (an inference export): the softmax of vdnn's
  // loss. Training minimises the cross-entropy of its probabilities (the loss's softmax is this
  // one); `vdnn infer --predictions` writes its probabilities, --logits the values before it.
  void softmax(OnnxNodeReader& node, int) {
    const std::string input = data_input(node, 0);
    const std::string& out = node.proto().output(0);
    if (graph_.output_size() != 1 || graph_.output(0).name() != out || uses_[out] != 1)
      node.fail(
          "a Softmax is supported only as the graph's last node, over the logits: vdnn's loss applies it in "
          "training, `vdnn infer --predictions` in inference");
    const int64_t axis = axis_of(node, input, -1);
    if (shape_of(input).rank() != 1 || axis != 1)
      node.fail(VDNN_MSG("a Softmax over axis " << axis << " of an input of per-sample shape "
                                                << shape_of(input).to_string()
                                                << " is not the softmax over the logits [N, classes] (axis 1 or -1)"));
    output_is_softmax_ = true;
    notes_.push_back(VDNN_MSG(node.where() << ": the graph's last node is the softmax of vdnn's loss: training takes "
                                              "the cross-entropy of its probabilities; `vdnn infer --predictions` "
                                              "writes them, --logits writes its input"));
    produce(node, input);
  }

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
    logits_onnx_ = node.input(0);
    add_layer({{"name", "loss"}, {"type", "softmax_cross_entropy"}, {"inputs", {logits_}}}, node.where());
    loss_added_ = true;
    loss_output_ = node.proto().output(0);
  }

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
  std::map<std::string, PendingPad> padded_;         // outputs of Pad nodes, by name
  std::set<std::string> names_;
  std::set<std::string> used_initializers_;
  std::set<int> skipped_;  // nodes folded into an earlier one (Add after MatMul)
  std::string labels_, logits_, logits_onnx_, loss_output_;
  std::map<std::string, std::string> producer_;  // ONNX value -> where() of the node that made it
  std::vector<std::string> notes_;               // ImportedModel::notes
  bool output_is_softmax_ = false;
  int64_t batch_ = 1;
  bool loss_added_ = false;
};

}  // namespace

namespace {

// What every ONNX source shares once protobuf has parsed it: the opset check and the translation.
ImportedModel translate(onnx::ModelProto& model, const std::string& source, const ModelOptions& options) {
  if (!model.has_graph() || model.graph().node_size() == 0)
    VDNN_THROW(source << ": not an ONNX model (it has no graph nodes)");
  for (const auto& node : model.graph().node()) Translator::check_operator(node, source);
  std::string converted;  // the note of an older opset's conversion
  if (default_opset(model, source) < kMinOpset) converted = convert_to_opset(model, source, kMinOpset);
  const std::string stem = escape_invalid_utf8(std::filesystem::path(source).stem().string());
  ImportedModel imported = Translator(*model.mutable_graph(), source, options).run(stem.empty() ? "onnx_model" : stem);
  if (!converted.empty()) imported.notes.insert(imported.notes.begin(), converted);
  return imported;
}

void check_protobuf_size(size_t bytes, const std::string& source) {
  if (bytes > static_cast<size_t>(std::numeric_limits<int>::max()))
    VDNN_THROW(source << ": larger than 2 GB, which protobuf cannot read in one message");
}

const char* const kNotOnnx = ": not an ONNX model (protobuf could not parse it: truncated or another format)";

}  // namespace

const std::vector<std::string>& onnx_import_operators() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [op, handler] : Translator::handlers()) out.push_back(op);
    return out;
  }();
  return names;
}

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
