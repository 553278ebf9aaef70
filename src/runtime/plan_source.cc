#include "runtime/plan_source.h"

#include <cstdio>

#include "plan/device_profile.h"
#include "plan/roofline.h"
#include "runtime/compiled_graph.h"
#include "runtime/profiler.h"
#include "vdnn/error.h"

namespace vdnn {

PlanInputs plan_inputs(const Graph& graph, int64_t batch, const PlanSourceOptions& o) {
  PlanInputs in;
  if (o.device != "cpu") {
    if (!o.costs_file.empty()) VDNN_THROW("--costs is for --device cpu; a device profile brings its own costs");
    const DeviceProfile device = load_device_profile(o.device);
    const LinkProfile link = load_link_profile(o.link.empty() ? device.link : o.link);
    in.value_bytes = plain_value_bytes(graph, batch);
    in.facts = plain_facts(graph, batch);
    in.costs = roofline_costs(graph, batch, device, link);
    in.device_memory_bytes = device.memory_bytes;
    in.device = device.name;
    return in;
  }
  if (!o.link.empty()) VDNN_THROW("--link is for device profiles; on cpu use --link-bandwidth/--link-latency");
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const CompiledGraph compiled(graph, batch, 1, engine, ConvAlgo::kDirect);
  in.value_bytes = compiled.value_bytes();
  in.facts = compiled.facts();
  if (o.costs_file.empty()) {
    in.costs = measure_costs(graph, batch, {.repeats = o.repeats, .seed = 1, .link = o.cpu_link});
  } else {
    in.costs = NetworkCosts::load(o.costs_file);
    if (in.costs.batch != batch)
      VDNN_THROW(o.costs_file << " was measured at batch " << in.costs.batch << ", not " << batch
                              << "; profile again with `vdnn profile --batch " << batch << "`");
  }
  // Costs taken on a busy machine can be off by several times: the plan built on them says so.
  if (const std::string w = in.costs.unstable_warning(); !w.empty()) std::fprintf(stderr, "%s\n", w.c_str());
  in.device = "cpu";
  return in;
}

}  // namespace vdnn
