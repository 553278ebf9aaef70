// runtime/step_recorder.h — the measured timeline of a training step, taken as the streams run it.
//
// Model: attached to an Executor (Executor::record_into, or Net::record_step), the recorder
// receives, for every Program step that is stream work, when it started and ended on its stream,
// and for every alloc and free the device bytes per class when the compute stream reaches it (the
// simulator's convention, so predicted and measured timelines compare). The executor does the
// stamping: kernels, sums and the input upload stamp themselves inside their compute work item;
// a copy is bracketed by two tiny work items launched on its copy stream; alloc/free counters are
// work items on the compute stream. Without a recorder the executor launches nothing extra.
//
// Accuracy: on the CPU backend every work item runs on its stream's worker thread in stream
// order, so the stamps are when the work really ran. On the CUDA backend Device::launch runs the
// function on the host at once (it enqueues kernels), so the stamps are host issue times, not GPU
// execution times: a CUDA "measured" timeline shows the issue order only (see docs/design.md).
//
//   StepRecorder rec;
//   net.record_step(3, &rec);                  // the 3rd training step (or the last, if fewer)
//   trainer.run(train, &test);
//   write_chrome_trace("step.json", rec.timeline(), "fmnist_cnn measured");   // report/chrome_trace.h
#pragma once

#include <chrono>
#include <mutex>

#include "plan/program.h"
#include "plan/step_timeline.h"

namespace vdnn {

class StepRecorder {
 public:
  // Starts a new timeline for `p` (dropping the previous one): time 0 is now, and device memory
  // holds p's persistent tensors. Host thread, while no recorded work is in flight.
  void begin(const Program& p);
  // Seconds since begin() on a steady clock. Any thread.
  double now() const;
  // A finished op, its start and end set. Any stream's thread.
  void add(TimelineOp op);
  // A tensor of `bytes` in `cls` starts (alloc) or stops (free) counting, stamped now.
  void alloc(MemoryClass cls, size_t bytes);
  void free(MemoryClass cls, size_t bytes);

  // The timeline of the step begun last, ops in issue order (as the simulator's). Read it once
  // the streams are done (after the step's synchronize).
  StepTimeline timeline() const;
  int steps_begun() const { return steps_begun_; }

 private:
  void stamp_memory();  // mutex_ held

  using Clock = std::chrono::steady_clock;
  Clock::time_point start_ = Clock::now();
  mutable std::mutex mutex_;  // guards timeline_ and memory_
  StepTimeline timeline_;
  ClassStats memory_;
  int steps_begun_ = 0;
};

}  // namespace vdnn
