// backend_api/host_update.h — the optimizers' update over memory the host's CPU reads: SGD with
// momentum and AdamW (adamw_step.h's arithmetic), every parameter of a step laid end to end and
// shared among the OpenMP threads in one parallel region.
//
// Model: two callers run the same code. The CPU backend's device update (its "device memory" is
// host memory), and, on any backend, the host's update of optimizer state kept in host memory
// (plan/optimizer_state.h StatePlace::kHost): the pointers of each SgdUpdate/AdamwUpdate are then
// host copies. One function per element for both is what keeps the weights of the two placements
// bit-identical on the CPU backend.
//
//   std::vector<float> w(n), g(n), m(n), v(n);
//   AdamwStep s{.decay = 1 - 1e-3f * 0.01f, .neg_step_size = -1e-3f / 0.1f, .bias_correction2_sqrt = 0.0316f};
//   vdnn::host_adamw_update_all({{w.data(), g.data(), m.data(), v.data(), static_cast<int64_t>(n), s}});
#pragma once

#include <vector>

#include "backend_api/backend.h"

namespace vdnn {

void host_sgd_update_all(const std::vector<SgdUpdate>& updates);
void host_adamw_update_all(const std::vector<AdamwUpdate>& updates);

}  // namespace vdnn
