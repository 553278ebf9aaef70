#include "plan/simulator.h"

#include <algorithm>

#include "vdnn/error.h"

namespace vdnn {
namespace {

class Clocks {
 public:
  Clocks(const Program& p, SimResult& r) : p_(p), r_(r), event_time_(p.event_count, 0.0) {}

  void run(const Step& s, const CostModel& costs) {
    switch (s.op) {
      case Op::kAlloc:
      case Op::kFree: break;
      case Op::kLoadInput: op(s.stream, "load_input", costs.load_input_seconds(bytes(s.tensor))); break;
      case Op::kForward: op(s.stream, "forward " + p_.node_names[s.node], costs.forward_seconds(s.node)); break;
      case Op::kBackward: op(s.stream, "backward " + p_.node_names[s.node], costs.backward_seconds(s.node)); break;
      case Op::kAccumulate: op(s.stream, "accumulate " + name(s.tensor), costs.accumulate_seconds(bytes(s.tensor))); break;
      case Op::kOffload:
      case Op::kPrefetch:
        op(s.stream, std::string(s.op == Op::kOffload ? "offload " : "prefetch ") + name(s.tensor),
           costs.copy_seconds(bytes(s.tensor)));
        event_time_[s.event] = free_[index(s.stream)];
        break;
      case Op::kRecord: event_time_[s.event] = std::max(free_[index(s.stream)], host_); break;
      case Op::kWait: {
        double& f = free_[index(s.stream)];
        const double ready = event_time_[s.event];
        const double from = std::max(f, host_);
        if (ready > from && s.stream == StreamKind::kCompute) r_.stall_seconds += ready - from;
        f = std::max(f, ready);
        break;
      }
      case Op::kSync: host_ = *std::max_element(free_.begin(), free_.end()); break;
      case Op::kPhaseEnd:
        host_ = std::max(host_, free_[index(StreamKind::kCompute)]);
        r_.forward_seconds = host_;
        break;
    }
  }

  double end() const { return std::max(host_, *std::max_element(free_.begin(), free_.end())); }

 private:
  static int index(StreamKind s) { return static_cast<int>(s); }
  size_t bytes(int t) const { return p_.tensors.at(t).bytes; }
  const std::string& name(int t) const { return p_.tensors.at(t).name; }
  void op(StreamKind s, std::string what, double seconds) {
    VDNN_CHECK(seconds >= 0, "negative duration for " << what);
    double& f = free_[index(s)];
    const double start = std::max(f, host_);
    f = start + seconds;
    r_.busy_seconds[index(s)] += seconds;
    r_.ops.push_back({s, std::move(what), start, f});
  }

  const Program& p_;
  SimResult& r_;
  std::vector<double> event_time_;
  std::array<double, kStreamCount> free_{};
  double host_ = 0;
};

}  // namespace

SimResult simulate(const Program& program, const CostModel& costs) {
  SimResult result;
  Clocks clocks(program, result);
  for (const Step& s : program.steps) clocks.run(s, costs);
  result.iteration_seconds = clocks.end();
  return result;
}

}  // namespace vdnn
