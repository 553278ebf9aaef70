#include "runtime/step_recorder.h"

#include <algorithm>

namespace vdnn {

void StepRecorder::begin(const Program& p) {
  std::lock_guard lock(mutex_);
  start_ = Clock::now();
  timeline_ = {};
  memory_ = {};
  for (const ProgramTensor& t : p.tensors)
    if (t.persistent) memory_.add(t.cls, t.bytes);
  timeline_.memory.push_back({0.0, memory_.total_current, memory_.current_bytes});
  ++steps_begun_;
}

double StepRecorder::now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void StepRecorder::add(TimelineOp op) {
  std::lock_guard lock(mutex_);
  timeline_.ops.push_back(std::move(op));
}

void StepRecorder::alloc(MemoryClass cls, size_t bytes) {
  std::lock_guard lock(mutex_);
  memory_.add(cls, bytes);
  stamp_memory();
}

void StepRecorder::free(MemoryClass cls, size_t bytes) {
  std::lock_guard lock(mutex_);
  memory_.remove(cls, bytes);
  stamp_memory();
}

void StepRecorder::stamp_memory() {
  // Monotonic even if two stamps race the clock read.
  const double t = std::max(now(), timeline_.memory.empty() ? 0.0 : timeline_.memory.back().seconds);
  timeline_.memory.push_back({t, memory_.total_current, memory_.current_bytes});
}

StepTimeline StepRecorder::timeline() const {
  std::lock_guard lock(mutex_);
  StepTimeline t = timeline_;
  std::stable_sort(t.ops.begin(), t.ops.end(),
                   [](const TimelineOp& a, const TimelineOp& b) { return a.step < b.step; });
  return t;
}

}  // namespace vdnn
