#include "net_handle.h"

#include "plan/policy.h"
#include "runtime/checkpoint.h"
#include "runtime/planned_policy.h"
#include "vdnn/error.h"

namespace vdnn::python {

std::shared_ptr<NetHandle> make_net(const py::object& model, int64_t batch, const std::string& policy,
                                    const py::object& device_memory, uint64_t seed, double momentum,
                                    double weight_decay, const std::string& weight_decay_on, const std::string& sync,
                                    const std::string& prefetch, const std::string& conv_algo, const std::string& costs,
                                    bool inference, const py::object& host_memory, const std::string& precision) {
  auto h = std::make_shared<NetHandle>();
  h->model = as_model(model);
  if (batch < 1) VDNN_THROW("batch " << batch << ": expected >= 1");
  const bool planned = policy == "dyn" || policy == "auto";
  if (planned && device_memory.is_none())
    VDNN_THROW("policy '" << policy << "' needs device_memory: it picks what fits a budget");
  if (momentum < 0 || momentum >= 1) VDNN_THROW("momentum " << momentum << ": expected 0 <= momentum < 1");
  if (weight_decay < 0 || weight_decay > 1) VDNN_THROW("weight_decay " << weight_decay << ": expected 0 to 1");
  NetOptions o;
  o.batch = batch;
  o.precision = parse_precision(precision);
  o.inference = inference;
  if (planned && inference) VDNN_THROW("policy '" << policy << "' plans training; an inference Net takes policy 'none'");
  // Under mpirun: data parallel (an inference Net runs on each rank alone).
  if (process_communicator().size() > 1 && !inference) o.comm = &process_communicator();
  o.seed = seed;
  if (!planned) o.policy = parse_policy(policy);
  o.sync = parse_sync_mode(sync);
  o.prefetch_ahead = parse_prefetch(prefetch) == Prefetch::kAhead;
  o.device_memory = budget_bytes(device_memory, "device_memory");
  o.host_memory = budget_bytes(host_memory, "host_memory");
  o.conv_algo = parse_conv_algo(conv_algo, "conv_algo");
  h->config.seed = seed;
  h->config.momentum = momentum;
  h->config.weight_decay = weight_decay;
  h->config.weight_decay_on = SgdConfig::parse_decay_on(weight_decay_on);
  py::gil_scoped_release release;
  Graph graph = h->model->fresh_graph();
  if (planned) {
    PlanSourceOptions source{.costs_file = costs};
    source.precision = o.precision;
    source.calibrate_with = [model = h->model] { return model->fresh_graph(); };
    h->policy_summary = choose_planned_policy(graph, batch, policy, o.device_memory, source, o.sync, o).summary;
  }
  h->net = std::make_unique<Net>(std::move(graph), o);
  if (!h->model->loaded.initial_weights.tensors.empty()) load_weights(h->model->loaded.initial_weights, *h->net);
  h->trainer = std::make_unique<Trainer>(*h->net, h->config);
  return h;
}

}  // namespace vdnn::python
