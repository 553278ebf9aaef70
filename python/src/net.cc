// python/src/net.cc — vdnn.Net: a network bound to the CPU backend under a memory policy, trained
// one NumPy batch at a time (the same step as `vdnn train`: runtime/trainer.h's train_batch), with
// its gradients and weights as NumPy arrays.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>

#include "bindings.h"
#include "comm/rank_agreement.h"
#include "layers/token_ce.h"
#include "net_handle.h"
#include "runtime/checkpoint.h"
#include "vdnn/error.h"

namespace vdnn::python {
namespace {

// The first sample of `a` holding a NaN or an Inf, and that value; -1 when every value is finite.
std::pair<int64_t, float> first_nonfinite_sample(const py::array_t<float, py::array::c_style>& a) {
  const int64_t per_sample = a.shape(0) > 0 ? a.size() / a.shape(0) : 1;
  for (py::ssize_t i = 0; i < a.size(); ++i)
    if (!std::isfinite(a.data()[i])) return {i / per_sample, a.data()[i]};
  return {-1, 0.0f};
}

// x: float32 (n, *input) with 1 <= n (<= batch when `max_n` > 0), every value finite.
py::array_t<float, py::array::c_style> check_images(const NetHandle& h, const py::handle& x, int64_t max_n) {
  auto a = float32_array(x, "x");
  const Shape& in = h.net->graph().input_shape();
  bool ok =
      a.ndim() == static_cast<py::ssize_t>(in.rank() + 1) && a.shape(0) >= 1 && (max_n <= 0 || a.shape(0) <= max_n);
  for (size_t i = 0; ok && i < in.rank(); ++i) ok = a.shape(static_cast<py::ssize_t>(i + 1)) == in.dims[i];
  if (!ok) {
    std::string expected = shape_text(in.dims);
    expected.insert(1, in.rank() ? "n, " : "n");
    VDNN_THROW("x: shape " << shape_text({a.shape(), a.shape() + a.ndim()}) << ", model '" << h.net->graph().name()
                           << "' expects NCHW batches " << expected
                           << (max_n > 0 ? VDNN_MSG(" with n <= batch " << max_n) : std::string()));
  }
  if (const auto [sample, value] = first_nonfinite_sample(a); sample >= 0)
    VDNN_THROW("x[" << sample << "] holds " << value << ": inputs must be finite numbers (no NaN or Inf)");
  return a;
}

// y: integers (n,) in [0, classes); (n, T) for a loss over [T, classes] logits (one per token).
std::vector<int32_t> check_labels(const NetHandle& h, const py::handle& y, int64_t n) {
  const py::array a = as_array(y, "y", /*float32=*/false);
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u')
    VDNN_THROW("y: dtype " << py::str(a.dtype()).cast<std::string>() << ", expected integer class labels");
  const int64_t per_sample = h.net->graph().labels_per_sample();
  if (per_sample == 1 && (a.ndim() != 1 || a.shape(0) != n))
    VDNN_THROW("y: expected shape (" << n << ",), one label per sample of x");
  if (per_sample > 1 && (a.ndim() != 2 || a.shape(0) != n || a.shape(1) != per_sample))
    VDNN_THROW("y: expected shape (" << n << ", " << per_sample << "), one label per token of x");
  const auto labels = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  std::vector<int32_t> out(static_cast<size_t>(n * per_sample));
  const int classes = h.net->graph().classes();
  // Per token, the loss's ignore_index is a label too (layers/token_ce.h: such tokens are not counted).
  const Layer& loss = *h.net->graph().nodes().back().layer;
  const bool per_token = loss.type() == "token_cross_entropy";
  const int64_t ignored = per_token ? static_cast<const TokenCrossEntropyLayer&>(loss).ignore_index() : int64_t{-1};
  for (int64_t i = 0; i < n * per_sample; ++i) {
    const int64_t v = labels.data()[i];
    if ((v < 0 || v >= classes) && !(per_token && v == ignored))
      VDNN_THROW("y[" << (per_sample > 1 ? VDNN_MSG(i / per_sample << ", " << i % per_sample) : std::to_string(i))
                      << "] = " << v << ": model '" << h.net->graph().name() << "' has classes 0.." << classes - 1
                      << (per_token ? VDNN_MSG(" (or ignore_index " << ignored << ")") : std::string()));
    out[static_cast<size_t>(i)] = static_cast<int32_t>(v);
  }
  return out;
}

py::dict tensors(const NetHandle& h, bool gradients) {
  py::dict d;
  const std::vector<ParamTensor>& params = h.net->params();
  for (size_t i = 0; i < params.size(); ++i) {
    if (gradients && !params[i].grad) continue;
    d[py::str(params[i].name)] =
        to_numpy(gradients ? h.net->export_grad(i) : h.net->export_param(i), params[i].spec.file_dims());
  }
  return d;
}

// Replaces the weights named in `given` (any subset; the others keep their values), with the
// checks `vdnn infer` makes on a weights file. PyTorch's "<bn>.num_batches_tracked" entries are
// skipped, so a state_dict converted to NumPy loads as it is. Under mpirun a collective: every
// rank compares the digest of the weights it would hold (the one `--initial-weights` is compared
// by), and loads them only when every rank's is the same, else every rank refuses together
// (docs/design/data-parallel.md: replicas must stay bit-identical).
void set_weights(NetHandle& h, const py::dict& given) {
  const auto taken = h.lock();
  const std::vector<ParamTensor>& params = h.net->params();
  SafeTensors file = state_dict(*h.net, h.steps);  // its batch-norm counters load back as they are
  file.path = "set_weights";
  for (const auto& [key, value] : given) {
    const std::string name = py::str(key).cast<std::string>();
    if (is_batches_tracked(name)) continue;  // a PyTorch state_dict's batch-norm counter: not a weight
    auto it =
        std::find_if(file.tensors.begin(), file.tensors.end(), [&](const SafeTensor& t) { return t.name == name; });
    if (it == file.tensors.end())
      VDNN_THROW("set_weights: model '" << h.net->graph().name() << "' has no tensor '" << name << "' (its names: "
                                        << params.front().name << ", ... ; see net.weights().keys())");
    const auto a = float32_array(value, "set_weights: '" + name + "'");
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    if (shape != it->shape)
      VDNN_THROW("set_weights: '" << name << "' has shape " << shape_text(shape) << ", the model's is "
                                  << shape_text(it->shape));
    it->data.assign(a.data(), a.data() + a.size());
  }
  // A tied pair is one tensor: either name given sets both (both given must agree: load_weights checks).
  auto entry = [&](const std::string& name) -> SafeTensor& {
    return *std::find_if(file.tensors.begin(), file.tensors.end(), [&](const SafeTensor& t) { return t.name == name; });
  };
  for (const auto& [tied, owner] : tied_parameter_names(h.net->graph())) {
    const bool tied_given = given.contains(tied), owner_given = given.contains(owner);
    if (tied_given != owner_given) entry(tied_given ? owner : tied).data = entry(tied_given ? tied : owner).data;
  }
  py::gil_scoped_release release;
  if (h.net->ranks() > 1)
    check_ranks_agree(*h.net->options().comm,
                      {{"the weights' sha256", weights_sha256(file, h.net->graph()).substr(0, 16)}}, "set_weights");
  load_weights(file, *h.net, h.steps);
}

py::array_t<float> infer(NetHandle& h, const py::handle& x) {
  const auto a = check_images(h, x, 0);
  const auto taken = h.lock();
  const int64_t n = a.shape(0), batch = h.net->batch(), classes = h.net->graph().classes();
  const int64_t sample = h.net->graph().input_shape().elements();
  const int64_t rows = h.net->graph().labels_per_sample();  // logits per sample: 1, or T (one per token)
  std::vector<float> logits(static_cast<size_t>(n * rows * classes));
  {
    py::gil_scoped_release release;
    const std::vector<int32_t> labels(static_cast<size_t>(batch * rows), 0);
    for (int64_t first = 0; first < n; first += batch) {
      const int64_t count = std::min(batch, n - first);
      h.net->set_batch(a.data() + first * sample, labels.data(), count);
      h.net->forward(/*training=*/false);
      const std::vector<float>& out = h.net->logits();
      std::copy(out.begin(), out.begin() + count * rows * classes, logits.begin() + first * rows * classes);
    }
  }
  // As evaluation in train refuses them: a NaN or infinite logit has no class (finite inputs whose
  // forward pass overflows float32, or weights set that large).
  const auto bad = std::find_if(logits.begin(), logits.end(), [](float v) { return !std::isfinite(v); });
  if (bad != logits.end())
    VDNN_THROW("infer: x[" << (bad - logits.begin()) / (rows * classes) << "] gave a logit of " << *bad
                           << ": the inputs or the weights overflow float32 in the forward pass; expected inputs "
                              "and weights that give finite logits");
  if (rows > 1) return to_numpy(logits, {n, rows, classes});
  return to_numpy(logits, {n, classes});
}

// The training plan's (an inference Net: its only plan's) peak by class and smallest budget.
py::dict memory(const NetHandle& h) {
  const MemoryPlan& plan = h.net->train_plan();
  py::dict by_class;
  for (MemoryClass c : kAllMemoryClasses) by_class[to_string(c)] = plan.by_class.peak(c);
  py::dict d;
  d["peak_bytes"] = plan.by_class.total_peak;
  d["smallest_budget_bytes"] = h.net->options().inference  // every weight resident
                                   ? h.net->smallest_resident_budget()
                                   : std::max(plan.smallest_bytes, h.net->eval_plan().smallest_bytes);
  d["peak_by_class"] = by_class;
  d["host_bytes"] = h.net->host_bytes();  // the host copies' region, taken once: the smallest host_memory
  if (h.net->options().inference) {       // weights streamed from host memory (plan/planned_inference.h)
    d["streamed_bytes_per_batch"] = h.net->train_program().streamed_bytes();
    d["smallest_streamed_budget_bytes"] = h.net->smallest_streamed_budget();
  }
  return d;
}

}  // namespace

void bind_net(py::module_& m) {
  py::class_<NetHandle, std::shared_ptr<NetHandle>>(
      m, "Net",
      "A network on the CPU backend with its weights, gradients and SGD momentum in a device arena "
      "planned for `batch` under a memory policy (none, conv, all, or dyn and auto, which pick for "
      "device_memory from costs measured now or read from `costs`); device_memory is the budget "
      "(bytes or e.g. '48MiB'; None: what the plan needs). weight_decay_on: 'weights' (vdnn's "
      "default: conv and fc weights) or 'all' (PyTorch's: every trainable parameter). inference=True: a Net "
      "that only infers — no gradients or momentum, the forward pass alone within device_memory (see memory); "
      "training it raises vdnn.Error. host_memory bounds the host copies of offloaded tensors (bytes or "
      "e.g. '1GiB'; None: what the plan needs); a plan needing more raises vdnn.Error naming the smallest. "
      "precision='bf16': activations and conv/fc arithmetic in bfloat16, weights and their update in fp32 "
      "(a CPU without native bf16 raises vdnn.Error). optimizer: 'sgd' (momentum) or 'adamw' (torch.optim.AdamW: "
      "beta1, beta2, eps; its two moments are planned in the arena); weight_decay None: 5e-4 with sgd, 0.01 with "
      "adamw; clip_grad_norm > 0: each train_step clips the gradients' global L2 norm to it (clip_grad_norm_). "
      "optimizer_state: 'device' (beside each weight in the arena) or 'host' (the state, a master of each weight "
      "and its gradient's copy in host memory, updated by the CPU after the backward pass: ZeRO-Offload; one rank). "
      "Threads may share a Net: its calls take turns.")
      .def(py::init(&make_net), py::arg("model"), py::arg("batch") = 128, py::arg("policy") = "none",
           py::arg("device_memory") = py::none(), py::arg("seed") = 1, py::arg("momentum") = 0.9,
           py::arg("weight_decay") = py::none(), py::arg("weight_decay_on") = "weights", py::arg("sync") = "event",
           py::arg("prefetch") = "vdnn", py::arg("conv_algo") = py::none(), py::arg("costs") = "",
           py::arg("inference") = false, py::arg("host_memory") = py::none(), py::arg("precision") = "fp32",
           py::arg("optimizer") = "sgd", py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("eps") = 1e-8,
           py::arg("clip_grad_norm") = 0.0, py::arg("optimizer_state") = "device")
      .def_property_readonly("model", [](const NetHandle& h) { return h.model; })
      .def_property_readonly("batch", [](const NetHandle& h) { return h.net->batch(); })
      .def_property_readonly(
          "convolutions_made_direct", [](const NetHandle& h) { return h.net->convolutions_made_direct(); },
          "The convolutions this Net made direct so its plan fits device_memory (conv_algo None), by name.")
      .def_property_readonly("precision",
                             [](const NetHandle& h) { return std::string(to_string(h.net->options().precision)); })
      .def_property_readonly("seed", [](const NetHandle& h) { return h.config.seed; })
      .def_property_readonly(
          "steps",
          [](NetHandle& h) {
            const auto taken = h.lock();
            return h.steps;
          },
          "training steps made: train_step calls and vdnn.train's steps (one whose callback raised included)")
      .def_property_readonly("arena_bytes", [](const NetHandle& h) { return h.net->arena_bytes(); })
      .def_property_readonly("optimizer",
                             [](const NetHandle& h) { return std::string(to_string(h.net->options().optimizer)); })
      .def_property_readonly(
          "optimizer_state", [](const NetHandle& h) { return std::string(to_string(h.net->options().optimizer_state)); })
      .def_property_readonly(
          "grad_norm",
          [](NetHandle& h) {
            const auto taken = h.lock();
            return h.trainer->last_grad_norm();
          },
          "with clip_grad_norm: the last train_step's global gradient norm before clipping; else 0")
      .def_property_readonly(
          "optimizer_steps",
          [](NetHandle& h) {
            const auto taken = h.lock();
            return h.trainer->optimizer_steps();
          },
          "updates made (AdamW's step count t)")
      .def_property_readonly(
          "memory", &memory,
          "the planned device memory: peak_bytes, smallest_budget_bytes and peak_by_class (bytes "
          "per class: weights, weight_grads, optimizer_state, feature_maps, gradient_maps, workspace); an "
          "inference Net adds streamed_bytes_per_batch (weights streamed from host memory under "
          "its budget) and smallest_streamed_budget_bytes (every weight streamed); host_bytes: the host "
          "memory taken once for the host copies of offloaded tensors and streamed weights, "
          "the smallest host_memory that works")
      .def_property_readonly(
          "policy", [](const NetHandle& h) { return std::string(to_string(h.net->options().policy)); },
          "the policy the Net runs (dyn and auto: what they picked)")
      .def_property_readonly(
          "policy_summary", [](const NetHandle& h) { return h.policy_summary; },
          "dyn or auto: what was picked and why ('' otherwise)")
      .def(
          "train_step",
          [](NetHandle& h, const py::handle& x, const py::handle& y, double lr) {
            const auto a = check_images(h, x, h.net->batch());
            const std::vector<int32_t> labels = check_labels(h, y, a.shape(0));
            const auto taken = h.lock();
            py::gil_scoped_release release;
            const float loss = h.trainer->train_batch(a.data(), labels.data(), a.shape(0), lr, h.steps);
            ++h.steps;
            return loss;
          },
          py::arg("x"), py::arg("y"), py::arg("lr"),
          "One optimizer step (SGD or AdamW, as the Net was made; clipped with clip_grad_norm) on float32 NCHW x and "
          "integer labels y (n <= batch "
          "samples), as each step of `vdnn train`; returns the batch's mean loss. lr: 0 to 100. A loss or "
          "gradient that is not finite raises vdnn.Error and makes no update (the running statistics are left "
          "as they were). Calls from several threads take turns. Under mpirun every rank calls it together: "
          "a rank in another call (forward_backward, set_weights), at another step, on another number of "
          "samples or with another lr makes every rank raise vdnn.Error naming what differs, before the step.")
      .def(
          "forward_backward",
          [](NetHandle& h, const py::handle& x, const py::handle& y) {
            const auto a = check_images(h, x, h.net->batch());
            const std::vector<int32_t> labels = check_labels(h, y, a.shape(0));
            const auto taken = h.lock();
            py::gil_scoped_release release;
            return h.trainer->forward_backward(a.data(), labels.data(), a.shape(0));
          },
          py::arg("x"), py::arg("y"),
          "A training-mode forward and backward pass without an update (batch-norm running statistics "
          "and the dropout counter do advance, as in PyTorch's train mode); returns the mean loss. "
          "gradients() then holds d loss / d parameter. A loss or gradient that is not finite raises "
          "vdnn.Error naming it, the running statistics left as they were. Under mpirun every rank calls it "
          "together (on as many samples): the gradients and running statistics are then the mean over the "
          "ranks and the loss the ranks' mean, as in a data-parallel train_step, still without an update.")
      .def(
          "gradients",
          [](NetHandle& h) {
            const auto taken = h.lock();
            return tensors(h, true);
          },
          "The last backward pass's gradients by parameter name, in the parameters' shapes.")
      .def(
          "weights",
          [](NetHandle& h) {
            const auto taken = h.lock();
            return tensors(h, false);
          },
          "Every parameter and running statistic by name (float32 copies).")
      .def("set_weights", &set_weights, py::arg("weights"),
           "Replaces the named tensors (the others keep their values); each must have the shape "
           "weights() reports and finite values. '<bn>.num_batches_tracked' entries (PyTorch's) are skipped. "
           "Under mpirun every rank calls it together with the same weights: weights that differ on some rank "
           "make every rank raise vdnn.Error, and no rank's weights change.")
      .def("infer", &infer, py::arg("x"), "Evaluation-mode logits (n, classes) of float32 NCHW x.")
      .def(
          "weights_sha256",
          [](NetHandle& h) {
            const auto taken = h.lock();
            return h.net->weights_sha256();
          },
          "The hash `vdnn train` prints as weights_sha256.")
      .def(
          "save",
          [](NetHandle& h, const std::string& path) {
            const auto taken = h.lock();
            vdnn::save_weights(path, *h.net, h.config.seed, h.steps);
          },
          py::arg("path"),
          "Writes the weights as a PyTorch state_dict (safetensors), as `vdnn train --save-weights` does: "
          "for `vdnn infer --weights`, --initial-weights, set_weights or torch's load_state_dict(strict=True).")
      .def("__repr__", [](const NetHandle& h) {
        return "vdnn.Net('" + h.net->graph().name() + "', batch " + std::to_string(h.net->batch()) + ", policy " +
               to_string(h.net->options().policy) + ")";
      });
}

}  // namespace vdnn::python
