#include "report/report.h"

#include <algorithm>

#include "util/json_dump.h"
#include "util/text_file.h"
#include "vdnn/error.h"

namespace vdnn {

nlohmann::json train_report(const std::string& model, const TrainConfig& config, int64_t batch,
                            const TrainResult& result) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochResult& e : result.epochs) {
    nlohmann::json j = {{"epoch", e.epoch},
                        {"steps", e.steps},
                        {"lr", e.lr},
                        {"train_loss", e.train_loss},
                        {"train_accuracy", e.train_accuracy},
                        {"train_seconds", e.train_seconds},
                        {"images_per_second", e.images_per_second},
                        {"data_wait_seconds", e.data_wait_seconds}};
    if (e.test.samples > 0) {
      j["test_loss"] = e.test.loss;
      j["test_accuracy"] = e.test.accuracy;
    }
    epochs.push_back(j);
  }
  return {
      {"config",
       {{"model", model},
        {"batch", batch},
        {"epochs", config.epochs},
        {"iterations", config.iterations},
        {"lr", config.lr},
        {"optimizer", to_string(config.optimizer)},
        {"momentum", config.momentum},
        {"weight_decay", config.weight_decay},
        {"beta1", config.beta1},
        {"beta2", config.beta2},
        {"eps", config.eps},
        {"clip_grad_norm", config.clip_grad_norm},
        {"warmup_steps", config.warmup_steps},
        {"min_lr", config.min_lr},
        {"seed", config.seed},
        {"augment", augmentation_name(config.augment)},
        {"data_threads", config.data_threads}}},
      {"epochs", epochs},
      {"iterations", result.iterations},
      {"final_loss", result.final_loss},
      {"test_accuracy", config.evaluate ? nlohmann::json(result.test_accuracy) : nlohmann::json()},
      {"images_per_second", result.images_per_second},
      {"train_seconds", result.train_seconds},
      {"data_wait_seconds", result.data_wait_seconds},
      {"bad_images", result.bad_images},
      {"weights_sha256", result.weights_sha256},
      {"skipped_steps", result.skipped_steps},
      {"step_grad_norms", result.step_grad_norms},
      {"step_losses", result.step_losses},
  };
}

nlohmann::json memory_report(Net& net, const TrainResult& result) {
  const MemoryPlan& plan = net.train_plan();
  nlohmann::json by_class = nlohmann::json::object();
  nlohmann::json average_by_class = nlohmann::json::object();
  nlohmann::json forward_end_by_class = nlohmann::json::object();
  for (MemoryClass c : kAllMemoryClasses) {
    by_class[to_string(c)] = plan.by_class.peak(c);
    average_by_class[to_string(c)] = plan.average_by_class[index_of(c)];
    forward_end_by_class[to_string(c)] = plan.at_forward_end.current(c);
  }
  const StreamStats compute = net.device().stats(StreamKind::kCompute);
  const StreamStats d2h = net.device().stats(StreamKind::kD2H);
  const StreamStats h2d = net.device().stats(StreamKind::kH2D);
  const double iterations = std::max<double>(1.0, static_cast<double>(result.iterations));
  nlohmann::json slice_runs = nlohmann::json::array();
  for (const SliceRun& run : net.options().slice_runs) slice_runs.push_back(to_string(run));
  return {
      {"backend", net.backend().name()},
      {"precision", to_string(net.options().precision)},
      {"policy", to_string(net.options().policy)},
      {"sync", to_string(net.options().sync)},
      {"prefetch_depth", net.prefetch_depth()},
      {"slice_runs", slice_runs},
      {"device_memory_bytes", net.arena_bytes()},
      {"peak_device_bytes", plan.peak_bytes},
      {"peak_by_class", by_class},
      {"average_device_bytes", plan.average_bytes},
      {"average_by_class", average_by_class},
      {"at_forward_end_by_class", forward_end_by_class},
      {"host_bytes", net.host_bytes()},  // the host copies' region: the smallest --host-memory that works
      {"host_memory_bytes", net.options().host_memory},  // the budget given; 0: none
      {"offloaded_bytes", d2h.bytes_copied},
      {"prefetched_bytes", h2d.bytes_copied},
      {"offloaded_bytes_per_iteration", static_cast<double>(d2h.bytes_copied) / iterations},
      {"stall_ms", compute.wait_seconds * 1e3},
      {"stall_ms_per_iteration", compute.wait_seconds * 1e3 / iterations},
      {"iteration_ms", result.train_seconds * 1e3 / iterations},
      {"link_bandwidth_bytes_per_second", net.options().link.bandwidth_bytes_per_second},
  };
}

nlohmann::json decisions_report(Net& net, const std::string& algo_reason) {
  const Program& p = net.train_program();
  const NetOptions& o = net.options();
  nlohmann::json layers = nlohmann::json::array();
  const Graph& graph = net.compute_graph();  // the Program's nodes: sliced layers one per slice
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Layer& layer = *graph.nodes()[i].layer;
    nlohmann::json offloaded = nlohmann::json::array();
    const NodeBinding& b = p.nodes[i];
    std::vector<int> own{b.out};
    own.insert(own.end(), b.saved.begin(), b.saved.end());
    for (size_t k = 0; k < own.size(); ++k) {
      const int t = own[k];
      if (t < 0 || !p.tensors[t].offloaded) continue;
      nlohmann::json entry{{"tensor", p.tensors[t].name}, {"bytes", p.tensors[t].bytes}};
      // Its own release and prefetch points (auto's; plan/storage_decision.h), where it has them.
      const StorageDecision* d = nullptr;
      if (k == 0 && !o.decisions.values.empty()) d = &o.decisions.values[graph.nodes()[i].output];
      if (k > 0 && i < o.decisions.saved.size() && k - 1 < o.decisions.saved[i].size())
        d = &o.decisions.saved[i][k - 1];
      if (d && d->release_at >= 0) entry["held_until_forward_of"] = p.node_names[d->release_at];
      if (d && d->prefetch_at >= 0) entry["prefetched_in_backward_slot_of"] = p.node_names[d->prefetch_at];
      offloaded.push_back(entry);
    }
    nlohmann::json j{{"layer", layer.name()},
                     {"type", layer.type()},
                     {"implementation", net.backend().implementation(static_cast<int>(i))},
                     {"slow_kernels", net.backend().slow_kernels(static_cast<int>(i))},
                     {"offloaded", offloaded}};
    if (b.out >= 0 && p.tensors[b.out].recomputed && p.tensors[b.out].name == layer.name() + ":out")
      j["recomputed"] = {{"tensor", p.tensors[b.out].name}, {"bytes", p.tensors[b.out].bytes}};
    if (layer.kind() == LayerKind::kConv) {
      j["conv_algorithm"] = to_string(o.conv_algos.empty() ? o.conv_algo : o.conv_algos[i]);
      j["why"] = algo_reason;
    }
    layers.push_back(j);
  }
  nlohmann::json j{{"policy", to_string(o.policy)},
                   {"sync", to_string(o.sync)},
                   {"offloaded_bytes_per_step", p.offloaded_bytes()},
                   {"layers", layers}};
  if (const size_t bytes = p.recomputed_bytes()) {  // explicit decisions (plan/storage_decision.h)
    j["recomputed_bytes_per_step"] = bytes;
    j["recompute_kernels_per_step"] = p.recomputed_nodes().size();
  }
  return j;
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  write_text_file(path, dump_json(j, 2) + "\n");
}

}  // namespace vdnn
