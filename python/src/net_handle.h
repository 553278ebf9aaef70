// python/src/net_handle.h — what a Python vdnn.Net holds: its Model, the runtime Net, and the
// Trainer whose step train_step runs (the optimizer settings, the step counter).
//
// Threads: a Net runs one call at a time. Every method that touches it holds its lock (lock()),
// so two Python threads calling train_step on one Net take turns, as two threads calling a
// PyTorch module under a lock would; a thread waiting for the lock has released the GIL, so the
// thread holding it can take the GIL back (a vdnn.train callback, a NumPy copy) without deadlock.
// The lock is recursive: a vdnn.train callback may call the Net it trains (weights(), say); and
// vdnn.train lets go of it while its callback runs, so the callback may hand the Net to another
// thread and wait for it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "bindings.h"
#include "runtime/net.h"
#include "runtime/trainer.h"

namespace vdnn::python {

struct NetHandle {
  std::shared_ptr<Model> model;
  TrainConfig config;  // momentum, weight_decay, seed (lr comes with each step)
  std::unique_ptr<Net> net;
  std::unique_ptr<Trainer> trainer;
  int64_t steps = 0;
  std::string policy_summary;  // dyn or auto: what it picked and why
  std::recursive_mutex mutex;  // one call at a time (lock())

  // Takes the Net for this thread, waiting (if another thread has it) with the GIL released.
  std::unique_lock<std::recursive_mutex> lock();
};

// vdnn.Net(...): the Model's graph on the CPU backend, its initial weights (an ONNX file's) loaded;
// policy dyn or auto plan first for device_memory (planning/planned_policy.h; costs: a `vdnn
// profile --save` file, or measured now). inference: a Net that only infers (runtime/net.h
// NetOptions::inference): weights and the forward pass's working set within device_memory.
// precision: "fp32" or "bf16" (NetOptions::precision; bf16 needs a CPU with native bf16).
// conv_algo None: oneDNN's default, convolutions made direct where device_memory needs it; a name:
// that algorithm, kept (NetOptions::conv_algo_asked).
// optimizer: "sgd" or "adamw" (its state planned in the arena); weight_decay None: the optimizer's
// default (default_weight_decay); beta1, beta2, eps: AdamW's; clip_grad_norm > 0: clip_grad_norm_.
std::shared_ptr<NetHandle> make_net(const py::object& model, const py::object& batch, const std::string& policy,
                                    const py::object& device_memory, const py::object& seed, double momentum,
                                    const py::object& weight_decay, const std::string& weight_decay_on,
                                    const std::string& sync, const std::string& prefetch, const py::object& conv_algo,
                                    const std::string& costs, bool inference, const py::object& host_memory,
                                    const std::string& precision, const std::string& optimizer, double beta1,
                                    double beta2, double eps, double clip_grad_norm,
                                    const std::string& optimizer_state = "device");

}  // namespace vdnn::python
