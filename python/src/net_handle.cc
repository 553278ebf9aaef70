#include "net_handle.h"

#include "planning/planned_policy.h"
#include "runtime/checkpoint.h"
#include "runtime/net_settings.h"
#include "runtime/sgd.h"
#include "util/option_names.h"

namespace vdnn::python {

std::unique_lock<std::recursive_mutex> NetHandle::lock() {
  std::unique_lock taken(mutex, std::try_to_lock);
  if (!taken.owns_lock()) {
    py::gil_scoped_release release;
    taken.lock();
  }
  return taken;
}

std::shared_ptr<NetHandle> make_net(const py::object& model, const py::object& batch, const std::string& policy,
                                    const py::object& device_memory, const py::object& seed_arg, double momentum,
                                    const py::object& weight_decay, const std::string& weight_decay_on,
                                    const std::string& sync, const std::string& prefetch, const py::object& conv_algo,
                                    const std::string& costs, bool inference, const py::object& host_memory,
                                    const std::string& precision, const std::string& optimizer, double beta1,
                                    double beta2, double eps, double clip_grad_norm,
                                    const std::string& optimizer_state) {
  const OptionNames keywords{OptionNames::kKeywords};  // errors name the keyword arguments
  const uint64_t seed = seed_of(seed_arg, "seed");
  if (!conv_algo.is_none() && !py::isinstance<py::str>(conv_algo))
    VDNN_THROW("conv_algo: expected None, \"auto\", \"direct\" or \"winograd\", got "
               << py::str(py::type::of(conv_algo).attr("__name__")).cast<std::string>());
  NetSettings settings{.batch = int_in_range(batch, 1, kMaxBatch, "batch"),
                       .seed = seed,
                       .policy = policy,
                       .precision = precision,
                       .conv_algo = conv_algo.is_none() ? "auto" : conv_algo.cast<std::string>(),
                       .conv_algo_asked = !conv_algo.is_none(),
                       .sync = sync,
                       .prefetch = prefetch,
                       .inference = inference,
                       .optimizer = optimizer,
                       .optimizer_state = optimizer_state};
  if (!device_memory.is_none()) settings.device_memory = budget_bytes(device_memory, keywords("device_memory"));
  if (!host_memory.is_none()) settings.host_memory = budget_bytes(host_memory, keywords("host_memory"));
  NetOptions o = net_options(settings, keywords);
  const double decay = weight_decay.is_none() ? default_weight_decay(o.optimizer) : weight_decay.cast<double>();
  check_sgd_settings(momentum, decay, keywords);
  check_adamw_settings(beta1, beta2, eps, keywords);
  check_clip_grad_norm(clip_grad_norm, keywords);
  auto h = std::make_shared<NetHandle>();
  h->model = as_model(model);
  // Under mpirun: data parallel (an inference Net runs on each rank alone).
  if (process_communicator().size() > 1 && !inference) o.comm = &process_communicator();
  h->config.seed = seed;
  h->config.optimizer = o.optimizer;
  h->config.momentum = momentum;
  h->config.weight_decay = decay;
  h->config.beta1 = beta1;
  h->config.beta2 = beta2;
  h->config.eps = eps;
  h->config.clip_grad_norm = clip_grad_norm;
  h->config.weight_decay_on = SgdConfig::parse_decay_on(weight_decay_on, keywords("weight_decay_on"));
  py::gil_scoped_release release;
  Graph graph = h->model->fresh_graph();
  if (is_planned(policy)) {
    PlanSourceOptions source{.costs_file = costs};
    source.precision = o.precision;
    source.calibrate_with = [model = h->model] { return model->fresh_graph(); };
    h->policy_summary =
        choose_planned_policy(graph, settings.batch, policy, o.device_memory, source, o.sync, o).summary;
  }
  h->net = std::make_unique<Net>(std::move(graph), o);
  if (!h->model->loaded.initial_weights.tensors.empty()) load_weights(h->model->loaded.initial_weights, *h->net);
  h->trainer = std::make_unique<Trainer>(*h->net, h->config);
  return h;
}

}  // namespace vdnn::python
