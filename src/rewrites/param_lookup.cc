#include "rewrites/param_lookup.h"

namespace vdnn {

std::string param_name(const Graph& g, int node, const ParamSpec& spec) {
  return g.nodes()[node].layer->name() + "." + spec.name;
}

const ParamSpec* find_spec(const Graph& g, int node, const std::string& name) {
  for (const ParamSpec& p : g.nodes()[node].params)
    if (p.name == name) return &p;
  return nullptr;
}

const SafeTensor& require_param(const SafeTensors& weights, const Graph& g, int node, const ParamSpec& spec,
                                const std::string& who) {
  const std::string name = param_name(g, node, spec);
  const SafeTensor* found = weights.find(name);
  const auto& shape = found && found->shape == spec.dims ? spec.dims : spec.file_dims();
  return weights.require(name, shape, who);
}

}  // namespace vdnn
