#include "plan/network_costs.h"

#include <algorithm>
#include <cstdio>

#include "io/json_text.h"
#include "plan/physical_limits.h"
#include "util/json_dump.h"
#include "util/text_file.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

double total(const AlgoCost& a) { return a.forward_seconds + a.backward_seconds; }

// Per node the best whole-batch algorithm (sub-batched ones are a leaner step only `auto` takes).
template <class Better>
AlgoChoice pick(const std::vector<NodeCost>& nodes, Better better) {
  AlgoChoice out;
  for (const NodeCost& n : nodes) {
    int best = -1;
    for (int i = 0; i < static_cast<int>(n.algos.size()); ++i)
      if (n.algos[i].sub_batches == 1 && (best < 0 || better(n.algos[i], n.algos[best]))) best = i;
    VDNN_CHECK(best >= 0, "node '" << n.name << "' has no whole-batch algorithm");
    out.push_back(best);
  }
  return out;
}

template <class T>
T field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) VDNN_THROW(where << ": missing field '" << key << "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    VDNN_THROW(where << ": field '" << key << "' has the wrong type (" << j.at(key).type_name() << ")");
  }
}

}  // namespace

std::string AlgoCost::label() const { return sub_batches > 1 ? name + "/" + std::to_string(sub_batches) : name; }

int NodeCost::next_leaner(int current, bool sub_batched_too) const {
  int best = -1;
  const size_t now = algos.at(current).workspace_bytes;
  for (int i = 0; i < static_cast<int>(algos.size()); ++i)
    if (algos[i].workspace_bytes < now && (sub_batched_too || algos[i].sub_batches == 1) &&
        (best < 0 || total(algos[i]) < total(algos[best])))
      best = i;
  return best;
}

AlgoChoice NetworkCosts::fastest() const {
  return pick(nodes, [](const AlgoCost& a, const AlgoCost& b) { return total(a) < total(b); });
}

AlgoChoice NetworkCosts::fastest_forward() const {
  return pick(nodes, [](const AlgoCost& a, const AlgoCost& b) { return a.forward_seconds < b.forward_seconds; });
}

AlgoChoice NetworkCosts::leanest() const {
  return pick(nodes, [](const AlgoCost& a, const AlgoCost& b) {
    return a.workspace_bytes < b.workspace_bytes || (a.workspace_bytes == b.workspace_bytes && total(a) < total(b));
  });
}

AlgoChoice NetworkCosts::defaults() const {
  AlgoChoice out = fastest();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].runs_by_default >= 0) out[i] = nodes[i].runs_by_default;
  return out;
}

AlgoChoice NetworkCosts::direct() const {
  AlgoChoice out = leanest();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int k = 0; k < static_cast<int>(nodes[i].algos.size()); ++k)
      if (nodes[i].algos[k].name == "direct" && nodes[i].algos[k].sub_batches == 1) out[i] = k;
  return out;
}

double NetworkCosts::compute_seconds(const AlgoChoice& choice) const {
  double t = 0;
  for (size_t i = 0; i < nodes.size(); ++i) t += total(nodes[i].algos.at(choice.at(i)));
  return t;
}

std::string NetworkCosts::unstable_warning() const {
  if (unstable.empty()) return "";
  std::string names;
  for (const std::string& name : unstable) {
    double spread = 0, waited = 0;
    for (const NodeCost& n : nodes)
      if (n.name == name)
        for (const AlgoCost& a : n.algos) {
          spread = std::max(spread, a.spread);
          waited = std::max(waited, a.waited);
        }
    char buf[64];
    std::snprintf(buf, sizeof buf, " (spread %.0f%%, waited for a CPU %.0f%%)", spread * 100, waited * 100);
    names += (names.empty() ? "" : ", ") + name + buf;
  }
  return VDNN_MSG("warning: unstable timings in " << model << " (another process was using the CPU?): " << names
                                                  << "; these costs may be far off: profile again on an idle machine");
}

nlohmann::json NetworkCosts::to_json() const {
  nlohmann::json js = nlohmann::json::array();
  for (const NodeCost& n : nodes) {
    nlohmann::json algos = nlohmann::json::array();
    for (const AlgoCost& a : n.algos)
      algos.push_back({{"name", a.name},
                       {"forward_seconds", a.forward_seconds},
                       {"backward_seconds", a.backward_seconds},
                       {"workspace_bytes", a.workspace_bytes},
                       {"spread", a.spread},
                       {"waited", a.waited},
                       {"sub_batches", a.sub_batches}});
    nlohmann::json node = {{"name", n.name}, {"type", n.type}, {"algos", algos}};
    if (n.runs_by_default >= 0) node["default"] = n.algos[n.runs_by_default].name;
    js.push_back(node);
  }
  return {{"source", source},
          {"model", model},
          {"batch", batch},
          {"precision", to_string(precision)},
          {"link_bytes_per_second", link_bytes_per_second},
          {"link_latency_seconds", link_latency_seconds},
          {"memory_bytes_per_second", memory_bytes_per_second},
          {"host_memory_bytes_per_second", host_memory_bytes_per_second},
          {"compute_slowdown_when_copying", compute_slowdown_when_copying},
          {"copy_slowdown_when_computing", copy_slowdown_when_computing},
          {"kernel_scale", kernel_scale},
          {"unstable", unstable},
          {"nodes", js}};
}

NetworkCosts NetworkCosts::from_json(const nlohmann::json& j, const std::string& where) {
  NetworkCosts c;
  c.source = field<std::string>(j, "source", where);
  c.model = field<std::string>(j, "model", where);
  c.batch = field<int64_t>(j, "batch", where);
  if (j.contains("precision")) {
    const std::string p = field<std::string>(j, "precision", where);
    if (p != "fp32" && p != "bf16") VDNN_THROW(where << ": 'precision' is '" << p << "'; valid: fp32, bf16");
    c.precision = parse_precision(p);
  }
  c.link_bytes_per_second = field<double>(j, "link_bytes_per_second", where);
  c.link_latency_seconds = field<double>(j, "link_latency_seconds", where);
  c.memory_bytes_per_second = field<double>(j, "memory_bytes_per_second", where);
  if (j.contains("host_memory_bytes_per_second"))
    c.host_memory_bytes_per_second = field<double>(j, "host_memory_bytes_per_second", where);
  if (j.contains("compute_slowdown_when_copying"))
    c.compute_slowdown_when_copying = field<double>(j, "compute_slowdown_when_copying", where);
  if (j.contains("copy_slowdown_when_computing"))
    c.copy_slowdown_when_computing = field<double>(j, "copy_slowdown_when_computing", where);
  if (!(c.compute_slowdown_when_copying >= 1 && c.compute_slowdown_when_copying <= kMaxSlowdown &&
        c.copy_slowdown_when_computing >= 1 && c.copy_slowdown_when_computing <= kMaxSlowdown))
    VDNN_THROW(where << ": slowdowns must be from 1 to " << kMaxSlowdown << " (plan/physical_limits.h)");
  if (j.contains("kernel_scale")) c.kernel_scale = field<double>(j, "kernel_scale", where);
  if (!(c.kernel_scale >= 0.1 && c.kernel_scale <= 10))
    VDNN_THROW(where << ": 'kernel_scale' must be between 0.1 and 10 (a measured step over its simulation), got "
                     << c.kernel_scale);
  if (c.batch < 1) VDNN_THROW(where << ": 'batch' must be >= 1, got " << c.batch);
  // 0: not measured (an unlimited emulated link, no memory figure); else what hardware can be.
  const auto rate_or_zero = [](double x) { return x == 0 || within_rate(x); };
  if (!(rate_or_zero(c.link_bytes_per_second) && rate_or_zero(c.memory_bytes_per_second) &&
        rate_or_zero(c.host_memory_bytes_per_second) &&
        c.link_latency_seconds >= 0 && c.link_latency_seconds <= kMaxOverheadSeconds))
    VDNN_THROW(where << ": link and memory figures must be 0 (not measured) or rates from " << kMinRatePerSecond
                     << " to " << kMaxRatePerSecond << " bytes per second, and the link latency from 0 to "
                     << kMaxOverheadSeconds << " s (plan/physical_limits.h)");
  const auto nodes = field<nlohmann::json>(j, "nodes", where);
  if (!nodes.is_array()) VDNN_THROW(where << ": 'nodes' must be an array");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string at = VDNN_MSG(where << ": nodes[" << i << "]");
    NodeCost n{field<std::string>(nodes[i], "name", at), field<std::string>(nodes[i], "type", at), {}};
    const auto algos = field<nlohmann::json>(nodes[i], "algos", at);
    if (!algos.is_array() || algos.empty())
      VDNN_THROW(at << " ('" << n.name << "'): 'algos' must be a non-empty array");
    for (size_t k = 0; k < algos.size(); ++k) {
      const std::string ak = VDNN_MSG(at << ".algos[" << k << "]");
      AlgoCost a{field<std::string>(algos[k], "name", ak), field<double>(algos[k], "forward_seconds", ak),
                 field<double>(algos[k], "backward_seconds", ak), field<size_t>(algos[k], "workspace_bytes", ak)};
      if (algos[k].contains("spread")) a.spread = field<double>(algos[k], "spread", ak);
      if (algos[k].contains("waited")) a.waited = field<double>(algos[k], "waited", ak);
      if (algos[k].contains("sub_batches")) {
        const nlohmann::json& k_json = algos[k]["sub_batches"];
        if (!k_json.is_number_integer() || k_json.get<int64_t>() < 1 || k_json.get<int64_t>() > c.batch ||
            c.batch % k_json.get<int64_t>() != 0)
          VDNN_THROW(ak << ": 'sub_batches' must be an integer dividing the batch " << c.batch << ", got "
                        << dump_json(k_json));
        a.sub_batches = static_cast<int>(k_json.get<int64_t>());
        if (a.sub_batches > 1 && n.type != "conv")
          VDNN_THROW(ak << ": 'sub_batches' " << a.sub_batches << " on a " << n.type
                        << " layer (only convolutions run in sub-batches)");
      }
      if (!(a.forward_seconds >= 0 && a.forward_seconds <= kMaxKernelSeconds && a.backward_seconds >= 0 &&
            a.backward_seconds <= kMaxKernelSeconds && a.spread >= 0 && a.waited >= 0))
        VDNN_THROW(ak << ": times must be from 0 to " << kMaxKernelSeconds
                      << " s (plan/physical_limits.h), spread and waited >= 0");
      n.algos.push_back(a);
    }
    if (std::none_of(n.algos.begin(), n.algos.end(), [](const AlgoCost& a) { return a.sub_batches == 1; }))
      VDNN_THROW(at << " ('" << n.name
                    << "'): every algorithm is sub-batched; expected at least one over the whole batch");
    if (nodes[i].contains("default")) {
      const std::string d = field<std::string>(nodes[i], "default", at);
      for (int k = 0; k < static_cast<int>(n.algos.size()) && n.runs_by_default < 0; ++k)
        if (n.algos[k].name == d && n.algos[k].sub_batches == 1) n.runs_by_default = k;
      if (n.runs_by_default < 0)
        VDNN_THROW(at << " ('" << n.name << "'): 'default' names algorithm '" << d
                      << "', which is not one of its whole-batch 'algos'");
    }
    c.nodes.push_back(std::move(n));
  }
  if (j.contains("unstable")) c.unstable = field<std::vector<std::string>>(j, "unstable", where);
  for (const std::string& name : c.unstable)
    if (std::none_of(c.nodes.begin(), c.nodes.end(), [&](const NodeCost& n) { return n.name == name; }))
      VDNN_THROW(where << ": 'unstable' names layer '" << name << "', which is not in 'nodes'");
  return c;
}

NetworkCosts NetworkCosts::load(const std::string& path) {
  // read_text_file, not a stream: a device (`--costs /dev/zero`) or a huge file is refused.
  return from_json(parse_json_text(read_text_file(path), path), path);
}

ChosenCosts::ChosenCosts(const NetworkCosts& costs, AlgoChoice choice) : costs_(costs), choice_(std::move(choice)) {
  VDNN_CHECK(choice_.size() == costs_.nodes.size(),
             "algorithm choice has " << choice_.size() << " entries for " << costs_.nodes.size() << " nodes");
}

const AlgoCost& ChosenCosts::at(int node) const { return costs_.nodes.at(node).algos.at(choice_.at(node)); }
double ChosenCosts::forward_seconds(int node) const { return at(node).forward_seconds * costs_.kernel_scale; }
double ChosenCosts::backward_seconds(int node) const { return at(node).backward_seconds * costs_.kernel_scale; }
double ChosenCosts::copy_seconds(size_t bytes) const {
  if (costs_.link_bytes_per_second <= 0) return 0.0;
  return costs_.link_latency_seconds + static_cast<double>(bytes) / costs_.link_bytes_per_second;
}
double ChosenCosts::accumulate_seconds(size_t bytes) const {
  // A sum reads two tensors and writes one.
  return costs_.memory_bytes_per_second > 0 ? 3.0 * static_cast<double>(bytes) / costs_.memory_bytes_per_second : 0.0;
}
std::vector<ConvAlgo> conv_algos_of(const NetworkCosts& costs, const AlgoChoice& choice) {
  std::vector<ConvAlgo> out;
  for (size_t i = 0; i < costs.nodes.size(); ++i) {
    const std::string& name = costs.nodes[i].algos.at(choice.at(i)).name;
    // "gemm" is what kAuto runs for that convolution (see conv_auto_uses_gemm_weights).
    out.push_back(name == "winograd" ? ConvAlgo::kWinograd : name == "direct" ? ConvAlgo::kDirect : ConvAlgo::kAuto);
  }
  return out;
}

std::vector<int> conv_sub_batches_of(const NetworkCosts& costs, const AlgoChoice& choice) {
  std::vector<int> out;
  bool any = false;
  for (size_t i = 0; i < costs.nodes.size(); ++i) {
    out.push_back(costs.nodes[i].algos.at(choice.at(i)).sub_batches);
    any = any || out.back() > 1;
  }
  return any ? out : std::vector<int>{};
}

std::vector<size_t> conv_workspace_of(const NetworkCosts& costs, const AlgoChoice& choice) {
  std::vector<size_t> out;
  for (size_t i = 0; i < costs.nodes.size(); ++i)
    out.push_back(costs.nodes[i].type == "conv" ? costs.nodes[i].algos.at(choice.at(i)).workspace_bytes : 0);
  return out;
}

namespace {

// Memory-bound: reads each weight, its gradient and its state, writes the weight and the state
// (SGD with momentum: 5 words per weight; AdamW, two moments: 7).
double update_traffic_seconds(size_t weight_bytes, size_t state_bytes, double bytes_per_second) {
  const double traffic = 3.0 * static_cast<double>(weight_bytes) + 2.0 * static_cast<double>(state_bytes);
  return bytes_per_second > 0 ? traffic / bytes_per_second : 0.0;
}

}  // namespace

double ChosenCosts::update_seconds(size_t weight_bytes, size_t state_bytes) const {
  return update_traffic_seconds(weight_bytes, state_bytes, costs_.memory_bytes_per_second);
}

double ChosenCosts::host_update_seconds(size_t weight_bytes, size_t state_bytes) const {
  const double host = costs_.host_memory_bytes_per_second;
  return update_traffic_seconds(weight_bytes, state_bytes, host > 0 ? host : costs_.memory_bytes_per_second);
}
double ChosenCosts::load_input_seconds(size_t bytes) const {
  return costs_.memory_bytes_per_second > 0 ? static_cast<double>(bytes) / costs_.memory_bytes_per_second : 0.0;
}

double ChosenCosts::slowdown_when_overlapped(StreamKind s) const {
  return s == StreamKind::kCompute ? costs_.compute_slowdown_when_copying : costs_.copy_slowdown_when_computing;
}

double ring_all_reduce_seconds(size_t bytes, int ranks, double bytes_per_second, double latency_seconds) {
  VDNN_CHECK(ranks >= 1 && bytes_per_second > 0, "an all-reduce needs ranks >= 1 and a bandwidth > 0");
  if (ranks == 1) return 0.0;
  const double steps = 2.0 * (ranks - 1);
  return steps / ranks * static_cast<double>(bytes) / bytes_per_second + steps * latency_seconds;
}

double ChosenCosts::all_reduce_seconds(size_t bytes, int ranks) const {
  const NetworkProfile& n = costs_.network;
  if (ranks <= 1 || n.bytes_per_second <= 0) return 0.0;
  return ring_all_reduce_seconds(bytes, ranks, n.bytes_per_second, n.latency_seconds);
}

// Demand-proportional sharing of one direction of the host link (L bytes/s): a copy alone uses L,
// the NIC's all-reduce alone uses N (at most L: the NIC sits on the link) in both directions; in
// flight together they ask for L + N of the L there is, so overlapped time runs (L + N) / L slower.
double ChosenCosts::slowdown_when_sharing_host_link() const {
  const NetworkProfile& n = costs_.network;
  const double link = costs_.link_bytes_per_second;
  if (!n.shares_host_link || n.bytes_per_second <= 0 || link <= 0) return 1.0;
  return 1.0 + std::min(n.bytes_per_second, link) / link;
}

}  // namespace vdnn
