#include "core/layer_registry.h"

#include <functional>
#include <map>

#include "layers/attention.h"
#include "layers/batch_norm.h"
#include "layers/conv.h"
#include "layers/elementwise.h"
#include "layers/embedding.h"
#include "layers/fc.h"
#include "layers/gelu.h"
#include "layers/join.h"
#include "layers/layer_norm.h"
#include "layers/linear.h"
#include "layers/lrn.h"
#include "layers/pool.h"
#include "layers/position_embedding.h"
#include "layers/softmax_ce.h"
#include "layers/token_ce.h"
#include "vdnn/error.h"

namespace vdnn {

using Factory = std::function<std::unique_ptr<Layer>(const std::string&, LayerConfig&)>;

static const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> table = {
      {"conv", ConvLayer::parse},
      {"attention", AttentionLayer::parse},
      {"max_pool", [](auto& n, auto& c) { return PoolLayer::parse(n, "max_pool", c); }},
      {"avg_pool", [](auto& n, auto& c) { return PoolLayer::parse(n, "avg_pool", c); }},
      {"lrn", LrnLayer::parse},
      {"batch_norm", BatchNormLayer::parse},
      {"fc", FcLayer::parse},
      {"relu", [](auto& n, auto&) { return std::make_unique<ReluLayer>(n); }},
      {"relu6", [](auto& n, auto&) { return std::make_unique<Relu6Layer>(n); }},
      {"dropout", DropoutLayer::parse},
      {"flatten", [](auto& n, auto&) { return std::make_unique<FlattenLayer>(n); }},
      {"concat", [](auto& n, auto&) { return std::make_unique<ConcatLayer>(n); }},
      {"add", [](auto& n, auto&) { return std::make_unique<AddLayer>(n); }},
      {"softmax_cross_entropy", [](auto& n, auto&) { return std::make_unique<SoftmaxCrossEntropyLayer>(n); }},
      {"embedding", EmbeddingLayer::parse},
      {"position_embedding", PositionEmbeddingLayer::parse},
      {"layer_norm", LayerNormLayer::parse},
      {"gelu", GeluLayer::parse},
      {"linear", LinearLayer::parse},
      {"token_cross_entropy", TokenCrossEntropyLayer::parse},
  };
  return table;
}

std::vector<std::string> layer_types() {
  std::vector<std::string> out;
  for (const auto& [name, factory] : factories()) out.push_back(name);
  return out;
}

std::unique_ptr<Layer> make_layer(const std::string& name, const std::string& type, LayerConfig& cfg) {
  auto it = factories().find(type);
  if (it == factories().end()) {
    std::string valid;
    for (const auto& t : layer_types()) valid += (valid.empty() ? "" : ", ") + t;
    VDNN_THROW(cfg.where() << ": unknown layer type '" << type << "' (valid: " << valid << ")");
  }
  auto layer = it->second(name, cfg);
  cfg.check_all_used();
  layer->set_settings(cfg.settings());
  return layer;
}

}  // namespace vdnn
