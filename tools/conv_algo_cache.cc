#include "conv_algo_cache.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "io/json_text.h"
#include "plan/network_costs.h"
#include "planning/plan_source.h"
#include "util/atomic_file.h"
#include "util/file_kind.h"
#include "util/json_dump.h"
#include "util/text_file.h"
#include "vdnn/error.h"

namespace vdnn::cli {
namespace {

ConvAlgo parse_algo(const std::string& text, const std::string& where) {
  for (ConvAlgo a : {ConvAlgo::kAuto, ConvAlgo::kDirect, ConvAlgo::kWinograd})
    if (text == to_string(a)) return a;
  VDNN_THROW(where << ": algorithm '" << text << "'; valid: auto, direct, winograd");
}

std::vector<ConvAlgo> read_cache(const Graph& graph, int64_t batch, const std::string& path) {
  const nlohmann::json j = parse_json_text(read_text_file(path), path);
  const std::string again = "; measure again: delete " + path;
  if (!j.is_object() || !j.contains("algorithms") || !j["algorithms"].is_object() || !j.contains("batch") ||
      !j["batch"].is_number_integer() || !j.contains("model") || !j["model"].is_string())
    VDNN_THROW(path << ": not an algorithm cache (expected {\"model\", \"batch\", \"algorithms\": {layer: algorithm}})"
                    << again);
  if (j["model"] != graph.name() || j["batch"].get<int64_t>() != batch)
    VDNN_THROW(path << " was measured for model '" << j["model"].get<std::string>() << "' at batch "
                    << j["batch"].get<int64_t>() << ", not '" << graph.name() << "' at batch " << batch << again);
  std::vector<ConvAlgo> algos(graph.nodes().size(), ConvAlgo::kAuto);
  const nlohmann::json& by_layer = j["algorithms"];
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Layer& layer = *graph.nodes()[i].layer;
    if (layer.kind() != LayerKind::kConv) continue;
    if (!by_layer.contains(layer.name()) || !by_layer[layer.name()].is_string())
      VDNN_THROW(path << " has no algorithm for convolution '" << layer.name() << "'" << again);
    algos[i] = parse_algo(by_layer[layer.name()].get<std::string>(), path + ", layer '" + layer.name() + "'");
  }
  return algos;
}

}  // namespace

void check_algo_cache_path(const std::string& cache) {
  if (cache.empty()) return;
  std::error_code missing;
  if (!std::filesystem::exists(cache, missing) && !missing) return check_can_create_file(cache, "--algo-cache");
  if (const std::string why = not_a_regular_file(cache); !why.empty())
    VDNN_THROW("--algo-cache '" << cache << "' " << why << "; expected a cache file to read, or a new file to write");
}

std::vector<ConvAlgo> fastest_conv_algos(const Graph& graph, int64_t batch, const std::string& cache) {
  std::error_code unreadable;  // a link loop: not_a_regular_file says so (check_algo_cache_path, before)
  if (!cache.empty() && std::filesystem::exists(cache, unreadable)) return read_cache(graph, batch, cache);
  const NetworkCosts costs = plan_inputs(graph, batch, {.device = "cpu"}).costs;
  std::vector<ConvAlgo> algos = conv_algos_of(costs, costs.fastest_forward());
  if (cache.empty()) return algos;
  nlohmann::json by_layer = nlohmann::json::object();
  for (size_t i = 0; i < graph.nodes().size(); ++i)
    if (graph.nodes()[i].layer->kind() == LayerKind::kConv)
      by_layer[graph.nodes()[i].layer->name()] = to_string(algos[i]);
  write_text_file(
      cache, dump_json(nlohmann::json{{"model", graph.name()}, {"batch", batch}, {"algorithms", by_layer}}, 2) + "\n");
  return algos;
}

}  // namespace vdnn::cli
