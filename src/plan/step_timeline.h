// plan/step_timeline.h — one training step as it ran (or would run) on the three streams.
//
// Model: the neutral record both interpreters of a Program produce: the simulator (predicted,
// plan/simulator.h) and the executor with a StepRecorder attached (measured,
// runtime/step_recorder.h). An op is one piece of stream work — a kernel, a gradient sum, the
// input upload or a copy — with its stream, its Program step, the layer and pass it belongs to,
// and when it started and ended (seconds from the start of the step). The memory timeline holds
// the device bytes in use per class after each alloc or free, at the time the compute stream
// reaches it. Writers (report/chrome_trace.h, report/memory_chart.h) read only this.
//
//   SimResult r = simulate(program, costs);
//   StepTimeline t{r.ops, r.memory};
//   for (const TimelineOp& op : t.ops) std::cout << op.name << " " << op.end - op.start << "\n";
//   t.memory.back().bytes;                                   // total in use at the end
//   t.memory.back().of(MemoryClass::kFeatureMaps);           // of which feature maps
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "memory/memory_class.h"
#include "plan/program.h"

namespace vdnn {

enum class Pass { kForward, kBackward };

constexpr const char* to_string(Pass p) { return p == Pass::kForward ? "forward" : "backward"; }

struct TimelineOp {
  StreamKind stream = StreamKind::kCompute;
  std::string name;  // "forward conv1", "recompute pool1", "offload conv1:out", "accumulate relu1:grad", "load_input"
  double start = 0, end = 0;  // seconds from the start of the step
  Op op = Op::kForward;       // kForward, kBackward, kRecompute, kAccumulate, kLoadInput, kOffload, kPrefetch
  Pass pass = Pass::kForward;
  int node = -1;  // the layer (graph order): kernels; -1 for the rest
  int step = -1;  // index in Program::steps
};

// Device bytes in use (tensor sizes) after an alloc or free.
struct MemoryPoint {
  double seconds = 0;
  size_t bytes = 0;  // all classes
  std::array<size_t, kMemoryClassCount> by_class{};

  size_t of(MemoryClass cls) const { return by_class[index_of(cls)]; }
};

struct StepTimeline {
  std::vector<TimelineOp> ops;      // in issue order
  std::vector<MemoryPoint> memory;  // in time order, the first at 0 (persistent tensors only)
};

// The op that step `step` of `p` (stream work) becomes in a timeline: all but the times. `pass`
// is the pass it is issued in (before or after the Program's kPhaseEnd).
TimelineOp timeline_op(const Program& p, size_t step, Pass pass);

// The point of a memory timeline with the most bytes in use (the first such); {} if empty.
MemoryPoint peak_point(const std::vector<MemoryPoint>& memory);

// Whether a step is stream work that a timeline shows (kernels, sums, the upload, copies,
// all-reduces and updates).
bool is_timeline_op(Op op);

// Data parallel: how much of the all-reduce time the compute stream hid, one definition for the
// measured step (the executor's recorder) and the predicted one (the simulator).
struct CommOverlap {
  double all_reduce_seconds = 0;  // the comm stream's all-reduce ops, summed
  double hidden_seconds = 0;      // of which the compute stream was busy (kernels, updates) at the same time
  double exposed_seconds = 0;     // from the last compute op before the updates to the last all-reduce's end
  double hidden_fraction() const { return all_reduce_seconds > 0 ? hidden_seconds / all_reduce_seconds : 0.0; }
};
CommOverlap comm_overlap(const StepTimeline& timeline);

}  // namespace vdnn
