// core/layer_registry.h — layer type names ("conv", "max_pool", …) to Layer descriptions.
//
//   LayerConfig cfg(obj, "x.json: layer 'c1'");
//   std::unique_ptr<Layer> layer = make_layer("c1", "conv", cfg);   // throws on unknown type
//   for (auto& t : layer_types()) std::cout << t << "\n";
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

std::unique_ptr<Layer> make_layer(const std::string& name, const std::string& type, LayerConfig& cfg);
std::vector<std::string> layer_types();

}  // namespace vdnn
