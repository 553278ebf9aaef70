#include "planning/plan_source.h"

#include <algorithm>
#include <cstdio>

#include "backends/backend_targets.h"
#include "plan/device_profile.h"
#include "planning/step_calibration.h"
#include "util/progress.h"
#include "vdnn/error.h"

namespace vdnn {

PlanInputs plan_inputs(const Graph& graph, int64_t batch, const PlanSourceOptions& o) {
  const OptionNames& names = o.names;
  if (o.repeats < 1 || o.repeats > kMaxRepeats)
    VDNN_THROW(names("repeats") << " " << o.repeats << ": expected 1 to " << kMaxRepeats << " timed runs per kernel");
  PlanInputs in;
  if (o.device != "cpu") {  // a GPU we need not have: the CUDA target, costed by the profile
    if (!o.costs_file.empty())
      VDNN_THROW(names("costs") << " is for " << names("device") << " cpu; a device profile brings its own costs");
    const DeviceProfile device = load_device_profile(o.device);
    const BackendTarget& cuda = backend_target("cuda");
    TargetFacts f = cuda.facts(graph, batch, {}, o.precision);
    in.costs = cuda.costs(graph, batch, {.device = o.device, .link = o.link, .precision = o.precision});
    in.value_bytes = std::move(f.value_bytes);
    in.facts = std::move(f.facts);
    in.device_memory_bytes = device.memory_bytes;
    in.unified_memory = device.unified_memory;
    in.device = device.name;
    return in;
  }
  if (!o.link.empty()) VDNN_THROW("--link is for device profiles; on cpu use --link-bandwidth/--link-latency");
  // A `vdnn profile` file costs the unsliced graph, and calibration times the unsliced network.
  if (graph.is_sliced() && !o.costs_file.empty())
    VDNN_THROW("--costs " << o.costs_file << " with --slice-run: a `vdnn profile` file costs the unsliced graph; "
                          << "omit --costs to measure the sliced one");
  const BackendTarget& cpu = backend_target("cpu");
  TargetFacts f = cpu.facts(graph, batch, {}, o.precision);  // direct convolutions as the base
  in.value_bytes = std::move(f.value_bytes);
  in.facts = std::move(f.facts);
  // Measuring takes tens of ms per layer (each kernel timed `repeats` times): a bar on a terminal,
  // a line every 10 s in a log, on stderr (stdout may be JSON).
  Progress progress(stderr, Progress::Mode::kAuto, "measuring this CPU's costs", "layers/s");
  in.costs = cpu.costs(graph, batch,
                       {.costs_file = o.costs_file,
                        .repeats = o.repeats,
                        .cpu_link = o.cpu_link,
                        .precision = o.precision,
                        .on_layer = [&](int done, int total) { progress.update(done, total, done); }});
  progress.finish();
  if (o.costs_file.empty() && o.calibrate_with && !graph.is_sliced()) {
    if (o.calibrate_inference)
      calibrate_inference_kernels(in.costs, o.calibrate_with(), batch);
    else
      calibrate_kernels(in.costs, o.calibrate_with(), batch);
  }
  // Costs taken on a busy machine can be off by several times: the plan built on them says so.
  if (const std::string w = in.costs.unstable_warning(); !w.empty()) std::fprintf(stderr, "%s\n", w.c_str());
  in.device = "cpu";
  return in;
}

size_t plan_host_budget(const PlanInputs& in, size_t device_budget, size_t host_memory) {
  if (!in.unified_memory) return host_memory;
  const size_t board = in.device_memory_bytes, device = device_budget ? device_budget : board;
  const size_t left = std::max<size_t>(board > device ? board - device : 0, 1);
  return host_memory ? std::min(host_memory, left) : left;
}

}  // namespace vdnn
