#include "backends/cpu/kernel.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels.h"
#include "core/layer_kind.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

// One line per layer name and process: kernels are created again for profiling and each run.
void warn_slow_once(const Layer& layer, const std::vector<std::string>& slow) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(layer.name()).second) return;
  std::string passes;
  for (const std::string& p : slow) passes += (passes.empty() ? "" : "; ") + p;
  std::fprintf(stderr, "warning: layer '%s' (%s) runs oneDNN's reference kernel (%s); expect it to be slow\n",
               layer.name().c_str(), layer.type().c_str(), passes.c_str());
}

// A kernel whose forward is a reference implementation names it in slow_kernels (first).
void mark_forward_reference(CpuKernel& kernel) {
  const auto names_forward = [](const std::string& pass) { return pass.rfind("forward: ", 0) == 0; };
  if (is_reference_implementation(kernel.implementation) &&
      std::none_of(kernel.slow_kernels.begin(), kernel.slow_kernels.end(), names_forward))
    kernel.slow_kernels.insert(kernel.slow_kernels.begin(), "forward: " + kernel.implementation);
}

}  // namespace

bool is_reference_implementation(const std::string& impl) {
  return impl.rfind("ref:", 0) == 0 || impl.find("_ref:") != std::string::npos;
}

std::unique_ptr<CpuKernel> make_cpu_kernel(const KernelSetup& setup, const dnnl::engine& engine) {
  static const std::map<std::string, KernelFactory> table = {
      {"conv", make_conv_kernel},
      {"max_pool", make_pool_kernel},
      {"avg_pool", make_pool_kernel},
      {"lrn", make_lrn_kernel},
      {"batch_norm", make_batch_norm_kernel},
      {"fc", make_fc_kernel},
      {"relu", make_relu_kernel},
      {"relu6", make_relu_kernel},
      {"dropout", make_dropout_kernel},
      {"flatten", make_flatten_kernel},
      {"concat", make_concat_kernel},
      {"add", make_add_kernel},
      {"softmax_cross_entropy", make_softmax_ce_kernel},
      {"attention", make_attention_kernel},
      {"embedding", make_embedding_kernel},
      {"position_embedding", make_position_embedding_kernel},
      {"layer_norm", make_layer_norm_kernel},
      {"gelu", make_gelu_kernel},
      {"linear", make_linear_kernel},
      {"token_cross_entropy", make_token_ce_kernel},
      {"batch_slice", make_batch_slice_kernel},
      {"batch_gather", make_batch_gather_kernel},
      {"bn_stats", make_bn_stats_kernel},
      {"bn_combine", make_bn_combine_kernel},
      {"bn_apply", make_bn_apply_kernel},
  };
  const Layer& layer = setup.layer;
  auto it = table.find(layer.type());
  if (it == table.end()) layer.fail("the CPU backend has no kernel for this layer type");
  try {
    auto kernel = setup.sub_batches > 1 ? make_sub_batched_kernel(setup, engine) : it->second(setup, engine);
    mark_forward_reference(*kernel);
    if (setup.precision != Precision::kFp32 && !kernel->slow_kernels.empty())  // bf16 only on a reference kernel
      if (auto island = make_f32_island_kernel(setup, engine, it->second)) kernel = std::move(island);
    if (!kernel->slow_kernels.empty()) warn_slow_once(layer, kernel->slow_kernels);
    return kernel;
  } catch (const dnnl::error& e) {
    // Winograd exists only for some shapes and instruction sets: the algorithm, not the batch, is why.
    if (layer.kind() == LayerKind::kConv && setup.conv_algo == ConvAlgo::kWinograd)
      layer.fail(VDNN_MSG("oneDNN has no Winograd convolution for this layer's shape on this CPU ("
                          << cpu_isa_name() << "): the auto or direct algorithm runs it (" << e.what() << ")"));
    layer.fail(VDNN_MSG("oneDNN cannot implement it for batch "
                        << setup.batch
                        << (setup.sub_batches > 1 ? VDNN_MSG(" (in " << setup.sub_batches << " sub-batches)") : "")
                        << ": " << e.what()));
  }
}

}  // namespace vdnn
