// The CPU backend as a planning target (see cpu_target.h).
#include "backends/cpu/cpu_target.h"

#include "backends/cpu/compiled_graph.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/profiler.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

class CpuTarget final : public BackendTarget {
 public:
  const char* name() const override { return "cpu"; }
  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string unavailable_reason() const override { return {}; }

  std::vector<std::vector<AlgoOption>> algorithms(const Graph& graph, int64_t batch,
                                                  Precision precision) const override {
    runnable(precision);
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const CompiledGraph direct(graph, batch, 1, engine, ConvAlgo::kDirect, {}, {}, precision);
    std::vector<std::vector<AlgoOption>> out;
    for (int n = 0; n < static_cast<int>(graph.nodes().size()); ++n) {
      const CpuKernel& base = direct.kernel(n);
      if (graph.nodes()[n].layer->kind() != LayerKind::kConv) {
        out.push_back({{"-", base.scratch_bytes}});
        continue;
      }
      std::vector<AlgoOption> options{{"direct", base.scratch_bytes}};
      for (const CpuConvAlternative& alt :
           cpu_conv_alternatives(kernel_setup(graph, n, batch, direct.value_mds(), precision), base, engine))
        options.push_back({alt.name, alt.kernel->scratch_bytes});
      out.push_back(std::move(options));
    }
    return out;
  }

  TargetFacts facts(const Graph& graph, int64_t batch, const std::vector<ConvAlgo>& algos,
                    Precision precision) const override {
    runnable(precision);
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const CompiledGraph compiled(graph, batch, 1, engine, ConvAlgo::kDirect, algos, {}, precision);
    return {compiled.value_bytes(), compiled.facts()};
  }

  NetworkCosts costs(const Graph& graph, int64_t batch, const CostOptions& o) const override {
    if (!o.device.empty() && o.device != "cpu")
      VDNN_THROW("the cpu target measures its own costs; device profile '" << o.device << "' is for --device");
    if (!o.link.empty()) VDNN_THROW("--link is for device profiles; on cpu use --link-bandwidth/--link-latency");
    if (o.costs_file.empty())
      return measure_costs(graph, batch,
                           {.repeats = o.repeats,
                            .seed = 1,
                            .link = o.cpu_link,
                            .precision = runnable(o.precision),
                            .on_layer = o.on_layer});
    NetworkCosts costs = [&] {
      try {
        return NetworkCosts::load(o.costs_file);
      } catch (const Error& e) {
        VDNN_THROW("--costs " << e.what());  // the path alone does not say which flag gave it
      }
    }();
    if (costs.precision != o.precision)
      VDNN_THROW("--costs " << o.costs_file << " was measured in " << to_string(costs.precision) << ", not " << to_string(o.precision)
                              << "; profile again with `vdnn profile --precision " << to_string(o.precision) << "`");
    if (costs.batch != batch)
      VDNN_THROW("--costs " << o.costs_file << " was measured at batch " << costs.batch << ", not " << batch
                              << "; profile again with `vdnn profile --batch " << batch << "`");
    return costs;
  }

  std::unique_ptr<Backend> instantiate(const Graph& graph, const BackendOptions& options) const override {
    return std::make_unique<CpuBackend>(graph, options);
  }
};

}  // namespace

const BackendTarget& cpu_target() {
  static const CpuTarget target;
  return target;
}

}  // namespace vdnn
