// runtime/host_optimizer_step.h — one optimizer step of a Net whose optimizer state is in host
// memory (NetOptions::optimizer_state kHost: ZeRO-Offload's placement on one device).
//
// Model: the backward pass has copied each gradient to the host as it finished it (the Program's
// kOffload of a host_mirror gradient; ParamTensor::grad is that copy). Then, per trainable
// parameter in the Net's order, two stages in a pipeline: the host's CPU updates the master weight
// and the state (Optimizer::update_on_host, run on the compute stream's thread, the one OpenMP
// team), and the weight is copied back (the h2d stream) while the host updates the next parameter.
// It returns with every weight back on the device. This is the schedule the simulator prices
// (SimResult::host_update_seconds). The step's scalars come from begin_step, as on the device, and
// the arithmetic is the same code (backend_api/host_update.h), so on the CPU backend the weights
// are the device update's to the bit. The Trainer calls it after net.backward() and the
// non-finite check:
//
//   optimizer.begin_step(lr, grad_scale);
//   vdnn::host_optimizer_step(net, optimizer);
#pragma once

#include "runtime/net.h"
#include "runtime/optimizer.h"

namespace vdnn {

void host_optimizer_step(Net& net, Optimizer& optimizer);

}  // namespace vdnn
