#include "plan/program.h"

#include <sstream>

namespace vdnn {

size_t Program::offloaded_bytes() const {
  size_t bytes = 0;
  for (const ProgramTensor& t : tensors)
    if (t.offloaded) bytes += t.bytes;
  return bytes;
}

size_t Program::recomputed_bytes() const {
  size_t bytes = 0;
  for (const ProgramTensor& t : tensors)
    if (t.recomputed) bytes += t.bytes;
  return bytes;
}

size_t Program::streamed_bytes() const {
  size_t bytes = 0;
  for (const ProgramTensor& t : tensors)
    if (t.streamed) bytes += t.bytes;
  return bytes;
}

size_t Program::all_reduced_bytes() const {
  size_t bytes = 0;
  for (const GradientBucket& b : buckets) bytes += b.bytes;
  return bytes;
}

std::vector<int> Program::recomputed_nodes() const {
  std::vector<int> nodes;
  for (const Step& s : steps)
    if (s.op == Op::kRecompute) nodes.push_back(s.node);
  return nodes;
}

static const char* op_name(Op op) {
  switch (op) {
    case Op::kAlloc:
      return "alloc";
    case Op::kFree:
      return "free";
    case Op::kLoadInput:
      return "load_input";
    case Op::kForward:
      return "forward";
    case Op::kBackward:
      return "backward";
    case Op::kAccumulate:
      return "accumulate";
    case Op::kOffload:
      return "offload";
    case Op::kPrefetch:
      return "prefetch";
    case Op::kRecord:
      return "record";
    case Op::kWait:
      return "wait";
    case Op::kSync:
      return "sync";
    case Op::kPhaseEnd:
      return "phase_end";
    case Op::kRecompute:
      return "recompute";
    case Op::kAllReduce:
      return "all_reduce";
    case Op::kUpdate:
      return "update";
  }
  return "?";
}

std::string Program::to_text() const {
  std::ostringstream out;
  out << "# program: policy " << to_string(policy) << ", sync " << to_string(sync) << ", "
      << (training ? "training" : "evaluation") << ", " << steps.size() << " steps, " << tensors.size() << " tensors, "
      << event_count << " events";
  if (const size_t bytes = recomputed_bytes()) out << ", recompute " << bytes << " B";
  if (ranks > 1) out << ", " << ranks << " ranks, " << buckets.size() << " gradient buckets";
  out << "\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    out << i << "\t" << stream_name(s.stream) << "\t" << op_name(s.op);
    if (s.node >= 0) out << " " << node_names[s.node];
    if (s.tensor >= 0) out << " " << tensors[s.tensor].name;
    if (s.tensor2 >= 0) out << " += " << tensors[s.tensor2].name;
    if (s.op == Op::kAlloc) out << " " << tensors[s.tensor].bytes << " B @" << s.offset;
    if (s.bucket >= 0) out << " bucket " << s.bucket << " (" << buckets[s.bucket].bytes << " B)";
    if (s.event >= 0) out << " e" << s.event;
    if (!s.events.empty()) {
      out << " after";
      for (int e : s.events) out << " e" << e;
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace vdnn
