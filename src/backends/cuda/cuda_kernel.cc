#include "backends/cuda/cuda_kernel.h"

#include <functional>
#include <map>

#include "backends/cuda/cuda_kernels.h"
#include "vdnn/error.h"

namespace vdnn {

void CudaKernel::declare_sizes(const CudaKernelSetup& s) {
  CudaSizes sizes = cuda_kernel_sizes(s);
  out_bytes = sizes.out_bytes;
  param_bytes = std::move(sizes.param_bytes);
  saved_bytes = std::move(sizes.saved_bytes);
  scratch_bytes = sizes.scratch_bytes;
  saved_regenerated = std::move(sizes.saved_regenerated);
}

std::unique_ptr<CudaKernel> make_cuda_kernel(const CudaKernelSetup& setup, const CudaContext& ctx) {
  using Factory = std::function<std::unique_ptr<CudaKernel>(const CudaKernelSetup&, const CudaContext&)>;
  static const std::map<std::string, Factory> table = {
      {"conv", make_cudnn_conv_kernel},
      {"max_pool", make_cuda_pool_kernel},
      {"avg_pool", make_cuda_pool_kernel},
      {"lrn", make_cudnn_lrn_kernel},
      {"batch_norm", make_cudnn_batch_norm_kernel},
      {"fc", make_cublas_fc_kernel},
      {"relu", make_cudnn_relu_kernel},
      {"relu6", make_cudnn_relu_kernel},
      {"dropout", make_cuda_dropout_kernel},
      {"flatten", make_cuda_flatten_kernel},
      {"concat", make_cuda_concat_kernel},
      {"add", make_cuda_add_kernel},
      {"softmax_cross_entropy", make_cuda_softmax_ce_kernel},
  };
  const Layer& layer = setup.layer;
  auto it = table.find(layer.type());
  if (it == table.end()) layer.fail("the CUDA backend has no kernel for this layer type");
  try {
    return it->second(setup, ctx);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind("layer '", 0) == 0) throw;  // already names the layer
    layer.fail(VDNN_MSG("the CUDA backend cannot implement it for batch " << setup.batch << ": " << what));
  }
}

}  // namespace vdnn
