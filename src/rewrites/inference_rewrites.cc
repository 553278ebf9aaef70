#include "rewrites/inference_rewrites.h"

#include <cmath>
#include <numeric>
#include <set>

#include "layers/batch_norm.h"
#include "layers/conv.h"
#include "layers/fc.h"
#include "rewrites/param_lookup.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

// One batch norm folded into the conv or fc before it, with that layer's new parameters.
struct Fold {
  int layer = -1;       // the conv or fc node
  int batch_norm = -1;  // the batch norm node
  SafeTensor weight, bias;
};

// The file's tensor for parameter `spec` of `node` (rewrites/param_lookup.h).
const SafeTensor& require_param(const SafeTensors& weights, const Graph& g, int node, const ParamSpec& spec) {
  return vdnn::require_param(weights, g, node, spec, "the inference rewrite of model '" + g.name() + "'");
}

// Why batch norm `bn` cannot fold into the layer producing `input` (its input seen through the
// removed dropouts), or "" when it can. `readers`: how many surviving layers read each value.
std::string why_not_foldable(const Graph& g, int bn, ValueId input, const std::vector<int>& readers) {
  const Value& v = g.value(input);
  if (v.producer < 0) return "it reads the network input '" + v.name + "'";
  const Layer& producer = *g.nodes()[v.producer].layer;
  if (producer.kind() != LayerKind::kConv && producer.kind() != LayerKind::kFc)
    return "its input '" + v.name + "' comes from " + producer.type() + " layer '" + producer.name() +
           "', not a conv or fc";
  if (readers[input] > 1)
    return "the output of " + producer.type() + " '" + v.name + "' is also read by " +
           std::to_string(readers[input] - 1) + " other layer" + (readers[input] > 2 ? "s" : "");
  return "";
}

// W' = W * s and b' = (b - mean) * s + beta per output channel, s = gamma / sqrt(var + eps).
Fold compute_fold(const Graph& g, const SafeTensors& weights, int layer, int bn) {
  const Node& node = g.nodes()[layer];
  const auto& bn_layer = static_cast<const BatchNormLayer&>(*g.nodes()[bn].layer);
  const ParamSpec& w_spec = *find_spec(g, layer, "weight");
  const SafeTensor& w = require_param(weights, g, layer, w_spec);
  const int64_t out_channels = g.value(node.output).shape.channels();
  const ParamSpec* b_spec = find_spec(g, layer, "bias");
  const SafeTensor* b = b_spec ? &require_param(weights, g, layer, *b_spec) : nullptr;
  const auto bn_param = [&](const char* name) -> const std::vector<float>& {
    return require_param(weights, g, bn, *find_spec(g, bn, name)).data;
  };
  const std::vector<float>& gamma = bn_param("weight");
  const std::vector<float>& beta = bn_param("bias");
  const std::vector<float>& mean = bn_param("running_mean");
  const std::vector<float>& var = bn_param("running_var");
  VDNN_CHECK(static_cast<int64_t>(gamma.size()) == out_channels && w.data.size() % out_channels == 0,
             "batch norm '" << bn_layer.name() << "': " << gamma.size() << " channels after " << out_channels
                            << " output channels of " << w.data.size() << " weights");

  Fold f{layer,
         bn,
         {w.name, w.shape, std::vector<float>(w.data.size())},
         {node.layer->name() + ".bias", {out_channels}, std::vector<float>(out_channels)}};
  const size_t per_channel = w.data.size() / static_cast<size_t>(out_channels);
  for (int64_t c = 0; c < out_channels; ++c) {
    const double denominator = static_cast<double>(var[c]) + bn_layer.p().eps;
    if (!(denominator > 0))
      VDNN_THROW(weights.path << ": tensor '" << bn_layer.name() << ".running_var' holds " << var[c] << " at channel "
                              << c << ": batch norm '" << bn_layer.name()
                              << "' cannot fold (running_var + eps must be > 0)");
    const double s = static_cast<double>(gamma[c]) / std::sqrt(denominator);
    for (size_t k = c * per_channel; k < (c + 1) * per_channel; ++k)
      f.weight.data[k] = static_cast<float>(static_cast<double>(w.data[k]) * s);
    const double bias = b ? static_cast<double>(b->data[c]) : 0.0;
    f.bias.data[c] = static_cast<float>((bias - mean[c]) * s + beta[c]);
  }
  return f;
}

// The folded layer again, with a bias.
std::unique_ptr<Layer> with_bias(const Layer& layer) {
  if (layer.kind() == LayerKind::kConv) {
    ConvLayer::Params p = static_cast<const ConvLayer&>(layer).p();
    p.bias = true;
    return std::make_unique<ConvLayer>(layer.name(), p);
  }
  FcLayer::Params p = static_cast<const FcLayer&>(layer).p();
  p.bias = true;
  return std::make_unique<FcLayer>(layer.name(), p);
}

// Puts `t` in place of the tensor of its name, or right after `after` when there is none.
void put_tensor(SafeTensors& weights, SafeTensor t, const std::string& after) {
  for (SafeTensor& old : weights.tensors)
    if (old.name == t.name) {
      old = std::move(t);
      return;
    }
  auto at = weights.tensors.begin();
  while (at != weights.tensors.end() && at->name != after) ++at;
  weights.tensors.insert(at == weights.tensors.end() ? at : at + 1, std::move(t));
}

}  // namespace

InferenceRewrites rewrite_for_inference(Graph& graph, SafeTensors& weights) {
  InferenceRewrites r;
  const std::vector<Node>& nodes = graph.nodes();
  const int count = static_cast<int>(nodes.size());

  // What each value becomes: itself, the input of a removed dropout, or a folded layer's output.
  std::vector<ValueId> source(graph.values().size());
  std::iota(source.begin(), source.end(), 0);
  std::vector<bool> removed(count, false);
  for (int i = 0; i < count; ++i)
    if (nodes[i].layer->kind() == LayerKind::kDropout) {
      source[nodes[i].output] = source[nodes[i].inputs[0]];
      removed[i] = true;
      ++r.dropouts_removed;
    }
  std::vector<int> readers(graph.values().size(), 0);
  for (int i = 0; i < count; ++i)
    if (!removed[i])
      for (ValueId in : nodes[i].inputs) ++readers[source[in]];

  std::vector<Fold> folds;
  for (int i = 0; i < count; ++i) {
    if (nodes[i].layer->type() != "batch_norm") continue;
    const ValueId input = source[nodes[i].inputs[0]];
    const std::string why = why_not_foldable(graph, i, input, readers);
    if (!why.empty()) {
      r.notes.push_back("batch norm '" + nodes[i].layer->name() + "' stays: " + why);
      continue;
    }
    folds.push_back(compute_fold(graph, weights, graph.value(input).producer, i));
    source[nodes[i].output] = input;
    removed[i] = true;
  }
  r.batch_norms_folded = static_cast<int>(folds.size());
  if (r.dropouts_removed == 0 && folds.empty()) return r;

  // The new graph: the surviving layers in order, reading the values their inputs became.
  std::vector<std::vector<std::string>> inputs(count);
  for (int i = 0; i < count; ++i)
    for (ValueId in : nodes[i].inputs) inputs[i].push_back(graph.value(source[in]).name);
  std::vector<std::unique_ptr<Layer>> replacement(count);
  std::set<std::string> stale;  // tensors that go: the batch norms', the folded layers' momentum
  for (const Fold& f : folds) {
    replacement[f.layer] = with_bias(*nodes[f.layer].layer);
    for (const ParamSpec& p : nodes[f.batch_norm].params)
      stale.insert({param_name(graph, f.batch_norm, p), param_name(graph, f.batch_norm, p) + kMomentumSuffix});
    stale.insert(nodes[f.batch_norm].layer->name() + ".num_batches_tracked");
    for (const char* p : {".weight", ".bias"}) stale.insert(nodes[f.layer].layer->name() + p + kMomentumSuffix);
  }
  Graph rewritten(graph.name(), graph.input_shape(), graph.classes(), graph.input_type());
  std::vector<std::unique_ptr<Layer>> layers = std::move(graph).release_layers();
  for (int i = 0; i < count; ++i)
    if (!removed[i]) rewritten.add(replacement[i] ? std::move(replacement[i]) : std::move(layers[i]), inputs[i]);
  rewritten.finalize();
  graph = std::move(rewritten);

  if (folds.empty()) return r;
  std::erase_if(weights.tensors, [&](const SafeTensor& t) { return stale.count(t.name) > 0; });
  for (Fold& f : folds) {
    const std::string weight_name = f.weight.name;
    put_tensor(weights, std::move(f.weight), "");
    put_tensor(weights, std::move(f.bias), weight_name);
  }
  if (weights.metadata.erase("weights_sha256") > 0)
    r.notes.push_back(
        "the weights' metadata 'weights_sha256' was removed: the folded weights no longer "
        "hash to it");
  return r;
}

}  // namespace vdnn
