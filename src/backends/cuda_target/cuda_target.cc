// The CUDA backend as a planning target (see cuda_target.h).
#include "backends/cuda_target/cuda_target.h"

#include "backends/cuda_target/cuda_sizes.h"
#include "layers/conv.h"
#include "plan/conv_algorithms.h"
#include "plan/device_profile.h"
#include "plan/roofline.h"
#include "vdnn/error.h"
#ifdef VDNN_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace vdnn {
namespace {

class CudaTarget final : public BackendTarget {
 public:
  const char* name() const override { return "cuda"; }
  BackendKind kind() const override { return BackendKind::kCuda; }

  std::string unavailable_reason() const override {
#ifdef VDNN_HAVE_CUDA
    return cuda_unavailable_reason();
#else
    return "this vdnn was built without the CUDA backend (configure with -DVDNN_CUDA=ON on a "
           "machine with nvcc and cuDNN)";
#endif
  }

  std::vector<std::vector<AlgoOption>> algorithms(const Graph& graph, int64_t batch,
                                                  Precision precision) const override {
    const TargetFacts base = facts(graph, batch, {}, precision);
    std::vector<std::vector<AlgoOption>> out;
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
      const Node& node = graph.nodes()[i];
      if (node.layer->kind() != LayerKind::kConv) {
        out.push_back({{"-", base.facts[i].scratch_bytes}});
        continue;
      }
      const ConvProblem p =
          ConvProblem::of(static_cast<const ConvLayer&>(node.layer->original()), graph.value(node.inputs[0]).shape,
                          graph.value(node.output).shape, node.batch(batch));
      std::vector<AlgoOption> options;
      for (const ConvAlgoEstimate& a : conv_algorithms_with_sub_batches(p))
        options.push_back({a.name, a.workspace_bytes, a.sub_batches});
      out.push_back(std::move(options));
    }
    return out;
  }

  TargetFacts facts(const Graph& graph, int64_t batch, const std::vector<ConvAlgo>& algos,
                    Precision precision) const override {
    VDNN_CHECK(algos.empty() || algos.size() == graph.nodes().size(),
               "per-node convolution algorithms: " << algos.size() << " for " << graph.nodes().size() << " nodes");
    TargetFacts t;
    t.value_bytes.assign(graph.values().size(), 0);
    // Token ids are int32 whatever the precision; images are loaded as the activations' type.
    t.value_bytes[0] = graph.token_input() ? float_bytes(batch, graph.input_shape())
                                           : activation_bytes(batch, graph.input_shape(), precision);
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
      const CudaKernelSetup setup = cuda_kernel_setup(graph, static_cast<int>(i), batch,
                                                      algos.empty() ? ConvAlgo::kDirect : algos[i], precision);
      CudaSizes s = cuda_kernel_sizes(setup);
      t.value_bytes[graph.nodes()[i].output] = s.out_bytes;
      t.facts.push_back({s.out_bytes, std::move(s.saved_bytes), s.scratch_bytes, std::move(s.param_bytes),
                         setup.in_place, std::move(s.saved_regenerated)});
    }
    return t;
  }

  NetworkCosts costs(const Graph& graph, int64_t batch, const CostOptions& o) const override {
    if (o.device.empty() || o.device == "cpu")
      VDNN_THROW("the cuda target's costs come from a device profile: name one with --device");
    if (!o.costs_file.empty()) VDNN_THROW("--costs is for --device cpu; a device profile brings its own costs");
    const DeviceProfile device = load_device_profile(o.device);
    const LinkProfile link = load_link_profile(o.link.empty() ? device.link : o.link);
    if (o.precision == Precision::kBf16 && device.peak_bf16_flops <= 0)
      VDNN_THROW("bf16: device profile '" << device.name << "' has no bf16 arithmetic (no peak_bf16_flops: "
                                           << device.description << "); plan it in fp32");
    const TargetFacts base = facts(graph, batch, {}, o.precision);
    return roofline_costs(graph, batch, base.value_bytes, base.facts, device, link, o.precision);
  }

  std::unique_ptr<Backend> instantiate(const Graph& graph, const BackendOptions& options) const override {
    if (options.precision != Precision::kFp32)
      VDNN_THROW("--precision " << to_string(options.precision)
                                << ": the CUDA backend's kernels run fp32 only so far (a device profile plans bf16; "
                                   "the cpu backend runs it)");
#ifdef VDNN_HAVE_CUDA
    return make_cuda_backend(graph, options);
#else
    VDNN_THROW("--backend cuda: " << unavailable_reason());
#endif
  }
};

}  // namespace

const BackendTarget& cuda_target() {
  static const CudaTarget target;
  return target;
}

}  // namespace vdnn
