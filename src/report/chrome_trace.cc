#include "report/chrome_trace.h"

#include "util/json_dump.h"
#include "util/text_file.h"

namespace vdnn {
namespace {

constexpr int kPid = 1;
constexpr const char* kMemoryCounter = "device memory MiB";

int tid(StreamKind s) { return static_cast<int>(s) + 1; }  // some viewers hide thread 0

const char* category(Op op) {
  switch (op) {
    case Op::kForward:
    case Op::kBackward:
      return "kernel";
    case Op::kRecompute:
      return "recompute";
    case Op::kAccumulate:
      return "accumulate";
    case Op::kLoadInput:
      return "load_input";
    case Op::kOffload:
      return "offload";
    case Op::kPrefetch:
      return "prefetch";
    case Op::kAllReduce:
      return "all_reduce";
    case Op::kUpdate:
      return "update";
    default:
      return "other";
  }
}

double micros(double seconds) { return seconds * 1e6; }

nlohmann::json metadata(const char* what, int thread, const nlohmann::json& args) {
  nlohmann::json e{{"name", what}, {"ph", "M"}, {"pid", kPid}, {"args", args}};
  if (thread >= 0) e["tid"] = thread;
  return e;
}

}  // namespace

nlohmann::json chrome_trace(const StepTimeline& timeline, const std::string& title) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back(metadata("process_name", -1, {{"name", title}}));
  for (StreamKind s : {StreamKind::kCompute, StreamKind::kD2H, StreamKind::kH2D, StreamKind::kComm}) {
    events.push_back(metadata("thread_name", tid(s), {{"name", stream_name(s)}}));
    events.push_back(metadata("thread_sort_index", tid(s), {{"sort_index", tid(s)}}));
  }
  for (const TimelineOp& op : timeline.ops) {
    nlohmann::json args{{"pass", to_string(op.pass)}, {"program_step", op.step}};
    if (op.node >= 0) args["node"] = op.node;
    events.push_back({{"name", op.name},
                      {"cat", category(op.op)},
                      {"ph", "X"},
                      {"pid", kPid},
                      {"tid", tid(op.stream)},
                      {"ts", micros(op.start)},
                      {"dur", micros(op.end - op.start)},
                      {"args", args}});
  }
  for (const MemoryPoint& m : timeline.memory) {
    nlohmann::json by_class = nlohmann::json::object();
    for (MemoryClass c : kAllMemoryClasses) by_class[to_string(c)] = static_cast<double>(m.of(c)) / (1 << 20);
    events.push_back(
        {{"name", kMemoryCounter}, {"ph", "C"}, {"pid", kPid}, {"ts", micros(m.seconds)}, {"args", by_class}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", {{"title", title}, {"generator", "vdnn"}}}};
}

void write_chrome_trace(const std::string& path, const StepTimeline& timeline, const std::string& title) {
  write_text_file(path, dump_json(chrome_trace(timeline, title)) + "\n");
}

}  // namespace vdnn
