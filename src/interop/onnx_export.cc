#include "interop/onnx_export.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <exception>
#include <map>
#include <set>

#include "layers/batch_norm.h"
#include "layers/conv.h"
#include "layers/lrn.h"
#include "layers/pool.h"
#include "util/atomic_file.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian");

// ONNX IR version 7 is the one that goes with opset 13.
constexpr int64_t kIrVersion = 7;

void set_tensor_type(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

void attr_int(onnx::NodeProto* n, const char* name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void attr_ints(onnx::NodeProto* n, const char* name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void attr_float(onnx::NodeProto* n, const char* name, double v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}

void set_float_data(onnx::TensorProto* t, const std::string& name, const std::vector<int64_t>& dims, const float* data,
                    size_t count) {
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(data, count * sizeof(float));
}

// An average pool's window that runs past the padding (ceil mode): per output position, kernel
// cells / cells inside the padded input, the factor that turns ONNX's mean over the whole window
// into vdnn's (and PyTorch's) over the cells inside.
std::vector<float> divisor_scale(const PoolLayer::Params& p, const PoolLayer::Window& win, const Shape& x) {
  auto inside = [](int64_t i, int64_t k, int64_t s, int64_t pad, int64_t pad_end, int64_t size) {
    const int64_t start = i * s - pad;
    return std::min(start + k, size + pad_end) - start;
  };
  std::vector<float> scale;
  for (int64_t i = 0; i < win.oh; ++i)
    for (int64_t j = 0; j < win.ow; ++j)
      scale.push_back(static_cast<float>(static_cast<double>(p.kh * p.kw) /
                                         static_cast<double>(inside(i, p.kh, p.sh, p.ph, win.eh, x.height()) *
                                                             inside(j, p.kw, p.sw, p.pw, win.ew, x.width()))));
  return scale;
}

class Exporter {
 public:
  Exporter(const Graph& graph, const SafeTensors* weights, const OnnxExportOptions& options)
      : g_(graph), weights_(weights), batch_(options.batch), names_(graph.values().size()) {}

  onnx::ModelProto run();

 private:
  onnx::NodeProto* add_node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                            const std::string& output) {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& in : inputs) n->add_input(in);
    n->add_output(output);
    return n;
  }
  // A name no initializer, input or other value has.
  std::string fresh(std::string name) {
    while (used_.count(name)) name += "_";
    used_.insert(name);
    return name;
  }
  // Parameter k of node i, as an initializer (or a graph input) in ONNX's layout `dims`.
  std::string param(const Node& node, size_t k, const std::vector<int64_t>& dims);
  void export_node(int i);
  void export_conv(const Node& node, const std::string& in, const std::string& out);
  void export_pool(const Node& node, const std::string& in, const std::string& out);
  void export_batch_norm(const Node& node, const std::string& in, const std::string& out);
  void export_lrn(const Node& node, const std::string& in, const std::string& out);
  void export_fc(const Node& node, const std::string& in, const std::string& out);
  void export_relu6(const std::string& name, const std::string& in, const std::string& out);
  void check_shapes();

  const Graph& g_;
  const SafeTensors* weights_;
  int64_t batch_;
  onnx::ModelProto model_;
  std::vector<std::string> names_;          // the ONNX name of each vdnn value ("" until produced)
  std::set<std::string> used_;              // every name given out
  std::map<std::string, int> produced_by_;  // ONNX value name -> the vdnn node whose shape it has
};

std::string Exporter::param(const Node& node, size_t k, const std::vector<int64_t>& dims) {
  const ParamSpec& spec = node.params.at(k);
  const std::string name = node.layer->name() + "." + spec.name;
  onnx::GraphProto* graph = model_.mutable_graph();
  if (!weights_) {
    set_tensor_type(graph->add_input(), name, dims);
    return name;
  }
  const SafeTensor& t = weights_->require(name, spec.file_dims(), VDNN_MSG("layer '" << node.layer->name() << "'"));
  set_float_data(graph->add_initializer(), name, dims, t.data.data(), t.data.size());
  return name;
}

// One vdnn node as ONNX nodes: its output's name, then the nodes of its kind (a dropout is the
// identity at inference: its output is its input).
void Exporter::export_node(int i) {
  const Node& node = g_.nodes()[i];
  const Layer& layer = *node.layer;
  const std::string& type = layer.type();
  std::vector<std::string> in;
  for (ValueId v : node.inputs) in.push_back(names_[v]);
  if (type == "dropout") {
    names_[node.output] = in[0];
    return;
  }
  std::string& out = names_[node.output];
  if (out.empty()) out = fresh(layer.name());
  produced_by_[out] = i;
  const std::string& name = layer.name();
  if (type == "conv") {
    export_conv(node, in[0], out);
  } else if (type == "max_pool" || type == "avg_pool") {
    export_pool(node, in[0], out);
  } else if (type == "batch_norm") {
    export_batch_norm(node, in[0], out);
  } else if (type == "lrn") {
    export_lrn(node, in[0], out);
  } else if (type == "fc") {
    export_fc(node, in[0], out);
  } else if (type == "flatten") {
    attr_int(add_node("Flatten", name, in, out), "axis", 1);
  } else if (type == "concat") {
    attr_int(add_node("Concat", name, in, out), "axis", 1);
  } else if (type == "add") {
    add_node(in.size() == 2 ? "Add" : "Sum", name, in, out);
  } else if (type == "relu") {
    add_node("Relu", name, in, out);
  } else if (type == "relu6") {
    export_relu6(name, in[0], out);
  } else {
    layer.fail(
        "ONNX export supports conv, max_pool, avg_pool, batch_norm, lrn, fc, flatten, concat, add, "
        "relu, relu6, dropout and the loss; not this kind");
  }
}

// Conv, its weight as [O, I/g, kH, kW] (vdnn's grouped [g, O/g, I/g, kH, kW] merged).
void Exporter::export_conv(const Node& node, const std::string& in, const std::string& out) {
  const ConvLayer::Params& p = static_cast<const ConvLayer&>(*node.layer).p();
  std::vector<int64_t> w = node.params[0].dims;
  if (w.size() == 5) w = {w[0] * w[1], w[2], w[3], w[4]};
  std::vector<std::string> inputs{in, param(node, 0, w)};
  if (p.bias) inputs.push_back(param(node, 1, node.params[1].dims));
  onnx::NodeProto* n = add_node("Conv", node.layer->name(), inputs, out);
  attr_ints(n, "kernel_shape", {p.kh, p.kw});
  attr_ints(n, "strides", {p.sh, p.sw});
  attr_ints(n, "dilations", {p.dh, p.dw});
  attr_ints(n, "pads", {p.ph, p.pw, p.pb(), p.pr()});
  attr_int(n, "group", p.groups);
}

// vdnn's windows exactly: the pads that make floor mode give vdnn's output size (never ceil_mode,
// whose output size runtimes compute differently).
void Exporter::export_pool(const Node& node, const std::string& in, const std::string& out) {
  const PoolLayer& pool = static_cast<const PoolLayer&>(*node.layer);
  const PoolLayer::Params& p = pool.p();
  const std::string& name = pool.name();
  if (p.global) {
    add_node(p.max ? "GlobalMaxPool" : "GlobalAveragePool", name, {in}, out);
    return;
  }
  const Shape& x = g_.value(node.inputs[0]).shape;
  const PoolLayer::Window win = pool.window(x);
  const bool include_padding = !p.max && !p.exclude_padding;
  const bool overhang = include_padding && (win.pb > win.eh || win.pr > win.ew);
  // A ceil-mode window that runs past the padding: vdnn (as PyTorch) divides its sum by its cells
  // inside the padded input, ONNX Runtime by the whole window; so the mean over the whole window
  // is scaled per output position by kernel cells / cells inside. (A Pad node before an average
  // that excludes padding would do it too, but ONNX Runtime fuses the two and loses the zeros.)
  const std::string mean = overhang ? fresh(name + "/window_mean") : out;
  onnx::NodeProto* n = add_node(p.max ? "MaxPool" : "AveragePool", overhang ? mean : name, {in}, mean);
  attr_ints(n, "kernel_shape", {p.kh, p.kw});
  attr_ints(n, "strides", {p.sh, p.sw});
  attr_ints(n, "pads", {win.pt, win.pl, win.pb, win.pr});
  if (!p.max) attr_int(n, "count_include_pad", include_padding ? 1 : 0);
  if (!overhang) return;
  const std::vector<float> scale = divisor_scale(p, win, x);
  const std::string scale_name = fresh(name + "/divisor_scale");
  set_float_data(model_.mutable_graph()->add_initializer(), scale_name, {win.oh, win.ow}, scale.data(), scale.size());
  add_node("Mul", name, {mean, scale_name}, out);
}

void Exporter::export_batch_norm(const Node& node, const std::string& in, const std::string& out) {
  const BatchNormLayer::Params& p = static_cast<const BatchNormLayer&>(*node.layer).p();
  std::vector<std::string> inputs{in};
  for (size_t k = 0; k < 4; ++k) inputs.push_back(param(node, k, node.params[k].dims));
  onnx::NodeProto* n = add_node("BatchNormalization", node.layer->name(), inputs, out);  // inference mode
  attr_float(n, "epsilon", p.eps);
  attr_float(n, "momentum", 1.0 - p.momentum);  // ONNX weighs the old running value
}

void Exporter::export_lrn(const Node& node, const std::string& in, const std::string& out) {
  const LrnLayer::Params& p = static_cast<const LrnLayer&>(*node.layer).p();
  onnx::NodeProto* n = add_node("LRN", node.layer->name(), {in}, out);
  attr_int(n, "size", p.size);
  attr_float(n, "alpha", p.alpha);
  attr_float(n, "beta", p.beta);
  attr_float(n, "bias", p.k);
}

// Gemm with the weight transposed, after a Flatten when the input is not a vector per sample.
void Exporter::export_fc(const Node& node, const std::string& in, const std::string& out) {
  const std::string& name = node.layer->name();
  const Shape& x = g_.value(node.inputs[0]).shape;
  std::string a = in;
  if (x.rank() != 1) {
    a = fresh(name + "/flatten");
    attr_int(add_node("Flatten", a, {in}, a), "axis", 1);
  }
  const int64_t units = node.params[0].dims[0];
  std::vector<std::string> inputs{a, param(node, 0, {units, x.elements()})};
  if (node.params.size() > 1) inputs.push_back(param(node, 1, node.params[1].dims));
  attr_int(add_node("Gemm", name, inputs, out), "transB", 1);
}

// Clip to [0, 6], its bounds as scalar initializers.
void Exporter::export_relu6(const std::string& name, const std::string& in, const std::string& out) {
  const std::string lo = fresh(name + "/min"), hi = fresh(name + "/max");
  const float bounds[2] = {0.0f, 6.0f};
  set_float_data(model_.mutable_graph()->add_initializer(), lo, {}, &bounds[0], 1);
  set_float_data(model_.mutable_graph()->add_initializer(), hi, {}, &bounds[1], 1);
  add_node("Clip", name, {in, lo, hi}, out);
}

// Strict shape inference, then every value ONNX infers must have vdnn's shape: a layer that ONNX
// would compute differently is refused, naming it, rather than written.
void Exporter::check_shapes() {
  try {
    onnx::checker::check_model(model_);
  } catch (const std::exception& e) {
    throw InternalError(
        VDNN_MSG("ONNX export of '" << g_.name() << "': libonnx's checker refuses the model: " << e.what()));
  }
  try {
    onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(/*check_type=*/true, /*strict=*/1));
  } catch (const std::exception& e) {
    VDNN_THROW("ONNX export of '" << g_.name() << "': libonnx's shape inference: " << e.what());
  }
  for (const onnx::ValueInfoProto& v : model_.graph().value_info()) {
    auto it = produced_by_.find(v.name());
    if (it == produced_by_.end()) continue;
    const Node& node = g_.nodes()[it->second];
    const std::vector<int64_t> want = g_.value(node.output).shape.with_batch(batch_);
    std::vector<int64_t> got;
    for (const auto& d : v.type().tensor_type().shape().dim()) got.push_back(d.has_dim_value() ? d.dim_value() : -1);
    if (got != want)
      node.layer->fail(VDNN_MSG("ONNX would compute its output as " << shape_text(got) << ", vdnn computes "
                                                                    << shape_text(want) << "; it cannot be exported"));
  }
}

onnx::ModelProto Exporter::run() {
  model_.set_ir_version(kIrVersion);
  model_.set_producer_name("vdnn");
  onnx::OperatorSetIdProto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxExportOpset);
  onnx::GraphProto* graph = model_.mutable_graph();
  graph->set_name(g_.name());
  graph->set_doc_string("exported by vdnn for inference: the loss and dropout are left out");

  used_ = {"input", "logits"};
  for (const Node& node : g_.nodes())
    for (const ParamSpec& spec : node.params) used_.insert(node.layer->name() + "." + spec.name);
  names_[0] = "input";
  set_tensor_type(graph->add_input(), "input", g_.input_shape().with_batch(batch_));

  // The value the loss reads (through any dropout) is the output "logits".
  const Node& loss = g_.nodes().back();
  ValueId logits = loss.inputs.at(0);
  while (g_.value(logits).producer >= 0 && g_.nodes()[g_.value(logits).producer].layer->type() == "dropout")
    logits = g_.nodes()[g_.value(logits).producer].inputs[0];
  if (logits != 0) names_[logits] = "logits";

  for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i) {
    if (g_.nodes()[i].layer->kind() == LayerKind::kLoss) continue;
    export_node(i);
  }
  if (logits == 0) add_node("Identity", "logits", {"input"}, "logits");
  set_tensor_type(graph->add_output(), "logits", {batch_, g_.classes()});
  check_shapes();
  return std::move(model_);
}

}  // namespace

onnx::ModelProto export_onnx(const Graph& graph, const SafeTensors* weights, const OnnxExportOptions& options) {
  VDNN_CHECK(options.batch >= 1, "batch " << options.batch);
  VDNN_CHECK(!graph.nodes().empty() && graph.nodes().back().layer->kind() == LayerKind::kLoss,
             "graph '" << graph.name() << "' is not finalized");
  return Exporter(graph, weights, options).run();
}

void write_onnx(const std::string& path, const onnx::ModelProto& model) {
  const size_t bytes = model.ByteSizeLong();
  if (bytes > static_cast<size_t>(INT_MAX))
    VDNN_THROW(path << ": the ONNX model would be " << bytes << " bytes, over protobuf's 2 GiB limit for one "
                    << "message (ONNX's external data is not written by vdnn)");
  // Streamed into the file in blocks: no second copy of the weights in memory.
  struct ToAtomicFile : google::protobuf::io::CopyingOutputStream {
    AtomicFile& file;
    std::exception_ptr error;
    explicit ToAtomicFile(AtomicFile& f) : file(f) {}
    bool Write(const void* buffer, int size) override {
      try {
        file.write(buffer, static_cast<size_t>(size));
        return true;
      } catch (...) {
        error = std::current_exception();
        return false;
      }
    }
  };
  AtomicFile out(path);
  ToAtomicFile sink(out);
  bool written = false;
  {
    google::protobuf::io::CopyingOutputStreamAdaptor stream(&sink, 1 << 20);
    written = model.SerializeToZeroCopyStream(&stream) && stream.Flush();
  }
  if (sink.error) std::rethrow_exception(sink.error);
  if (!written) VDNN_THROW(path << ": the ONNX model could not be serialized");
  out.commit();
}

}  // namespace vdnn
