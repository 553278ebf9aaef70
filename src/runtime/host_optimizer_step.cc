#include "runtime/host_optimizer_step.h"

#include "vdnn/error.h"

namespace vdnn {

void host_optimizer_step(Net& net, Optimizer& optimizer) {
  VDNN_CHECK(net.state_on_host(), "a host optimizer step on a Net whose optimizer state is on the device");
  net.refresh_host_masters();
  Device& device = net.device();
  for (ParamTensor& p : net.params()) {
    if (!p.grad) continue;
    VDNN_CHECK(p.host_data && p.host_grad, "parameter '" << p.name << "' has no host copies");
    net.run_on_compute([&] { optimizer.update_on_host(p); });
    device.copy_async(StreamKind::kH2D, p.data, p.host_data, p.bytes);
  }
  device.synchronize(StreamKind::kH2D);
}

}  // namespace vdnn
