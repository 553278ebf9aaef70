#include "backends/cpu/kernel.h"

#include <functional>
#include <map>

#include "backends/cpu/kernels.h"
#include "vdnn/error.h"

namespace vdnn {

std::unique_ptr<CpuKernel> make_cpu_kernel(const KernelSetup& setup, const dnnl::engine& engine) {
  using Factory = std::function<std::unique_ptr<CpuKernel>(const KernelSetup&, const dnnl::engine&)>;
  static const std::map<std::string, Factory> table = {
      {"conv", make_conv_kernel},       {"max_pool", make_pool_kernel},
      {"avg_pool", make_pool_kernel},   {"lrn", make_lrn_kernel},
      {"batch_norm", make_batch_norm_kernel}, {"fc", make_fc_kernel},
      {"relu", make_relu_kernel},       {"dropout", make_dropout_kernel},
      {"flatten", make_flatten_kernel}, {"concat", make_concat_kernel},
      {"add", make_add_kernel},         {"softmax_cross_entropy", make_softmax_ce_kernel},
  };
  const Layer& layer = setup.layer;
  auto it = table.find(layer.type());
  if (it == table.end()) layer.fail("the CPU backend has no kernel for this layer type");
  try {
    return it->second(setup, engine);
  } catch (const dnnl::error& e) {
    layer.fail(VDNN_MSG("oneDNN cannot implement it for batch " << setup.batch << ": " << e.what()));
  }
}

}  // namespace vdnn
