#include "plan/step_timeline.h"

#include <algorithm>

#include "vdnn/error.h"

namespace vdnn {

bool is_timeline_op(Op op) {
  switch (op) {
    case Op::kLoadInput:
    case Op::kForward:
    case Op::kBackward:
    case Op::kRecompute:
    case Op::kAccumulate:
    case Op::kOffload:
    case Op::kPrefetch:
    case Op::kAllReduce:
    case Op::kUpdate:
      return true;
    default:
      return false;
  }
}

MemoryPoint peak_point(const std::vector<MemoryPoint>& memory) {
  MemoryPoint peak;
  for (const MemoryPoint& m : memory)
    if (m.bytes > peak.bytes) peak = m;
  return peak;
}

TimelineOp timeline_op(const Program& p, size_t step, Pass pass) {
  const Step& s = p.steps.at(step);
  TimelineOp op{.stream = s.stream, .op = s.op, .pass = pass, .step = static_cast<int>(step)};
  const std::string tensor = s.tensor >= 0 ? p.tensors.at(s.tensor).name : "";
  switch (s.op) {
    case Op::kLoadInput:
      op.name = "load_input";
      break;
    case Op::kForward:
      op.name = "forward " + p.node_names.at(s.node), op.node = s.node;
      break;
    case Op::kBackward:
      op.name = "backward " + p.node_names.at(s.node), op.node = s.node;
      break;
    case Op::kRecompute:
      op.name = "recompute " + p.node_names.at(s.node), op.node = s.node;
      break;
    case Op::kAccumulate:
      op.name = "accumulate " + tensor;
      break;
    case Op::kOffload:
      op.name = "offload " + tensor;
      break;
    case Op::kPrefetch:
      op.name = "prefetch " + tensor;
      break;
    case Op::kAllReduce:
      op.name = "all_reduce bucket " + std::to_string(s.bucket);
      break;
    case Op::kUpdate:
      op.name = "update bucket " + std::to_string(s.bucket);
      break;
    default:
      VDNN_CHECK(false, "step " << op.step << " is not stream work");
  }
  return op;
}

CommOverlap comm_overlap(const StepTimeline& t) {
  CommOverlap r;
  double backward_end = 0, comm_end = 0;  // the last compute op before the updates; the last all-reduce
  for (const TimelineOp& op : t.ops) {
    if (op.stream == StreamKind::kCompute && op.op != Op::kUpdate) backward_end = std::max(backward_end, op.end);
    if (op.op != Op::kAllReduce) continue;
    r.all_reduce_seconds += op.end - op.start;
    comm_end = std::max(comm_end, op.end);
    for (const TimelineOp& c : t.ops)  // one stream: its ops never overlap one another
      if (c.stream == StreamKind::kCompute)
        r.hidden_seconds += std::max(0.0, std::min(c.end, op.end) - std::max(c.start, op.start));
  }
  r.exposed_seconds = std::max(0.0, comm_end - backward_end);
  return r;
}

}  // namespace vdnn
