// runtime/executor.h — runs a planned Program on a Backend (its Device and its kernels).
//
// Model: one host thread walks the steps in order and issues them: kernels are launched on the
// compute stream with the device pointers the plan fixed (arena base + offset), copies go to the
// d2h/h2d streams, record/wait steps become device events, `sync` is a full barrier; a `recompute`
// step is the node's forward kernel again, with KernelArgs::recompute set. Offloaded
// tensors and streamed weights have a host copy at their planned host_offset in their Program's
// host region (the Net takes it once, memory/host_buffer.h), and a Residency state machine. At the end of the forward
// pass the host downloads the loss and the logits and takes the arg-max. Data parallel (Program::ranks > 1): an
// `all_reduce` step hands its bucket's tensors to the Communicator on the comm stream, an `update` step runs the
// optimizer hook for its bucket on the compute stream. Nothing here knows which backend runs the kernels.
//
//   Executor ex(backend, arena);
//   ex.set_host_region(train_program, host_copies.data());   // when it offloads anything
//   ex.run(train_program, Executor::Phase::kForward, batch);   // loss, correct after it
//   ex.run(train_program, Executor::Phase::kBackward, batch);
//   ex.record_into(&recorder);   // the next step's measured timeline (runtime/step_recorder.h)
//   ex.set_collectives(&comm, [&](int bucket) { sgd_update(bucket); });   // before ranks > 1 runs
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "backend_api/backend.h"
#include "comm/communicator.h"
#include "device/device.h"
#include "memory/host_buffer.h"
#include "memory/residency.h"
#include "plan/program.h"
#include "runtime/step_recorder.h"

namespace vdnn {

struct BatchView {
  const float* images = nullptr;    // host, plain NCHW, `input_bytes` bytes
  const int32_t* labels = nullptr;  // valid x labels_per_sample, sample-major
  int64_t valid = 0;
  int64_t classes = 0;
  int64_t labels_per_sample = 1;  // T for a loss over [T, classes] logits (Graph::labels_per_sample)
  uint64_t step = 0;
  bool training = true;
};

struct StepResult {
  float loss = 0;
  int64_t correct = 0;  // labels whose logits' arg-max is the label (per token, for [T, classes] logits)
};

class Executor {
 public:
  enum class Phase { kForward, kBackward, kAll };

  // `arena` is the base of the device memory the Programs were planned for.
  Executor(Backend& backend, char* arena);
  ~Executor();

  // Issues the steps of `phase`; returns once the streams are done with them.
  StepResult run(const Program& program, Phase phase, const BatchView& batch);

  // Runs from here on (a kForward or kAll run begins a new timeline) are recorded into `recorder`
  // (null: none, and no cost). It must outlive the runs it records.
  void record_into(StepRecorder* recorder) { recorder_ = recorder; }
  // What `all_reduce` and `update` steps call (both must outlive the runs): the ranks' communicator,
  // and the optimizer step of one gradient bucket's parameters, run on the compute stream.
  void set_collectives(Communicator* comm, std::function<void(int bucket)> update) {
    comm_ = comm;
    update_ = std::move(update);
  }
  // Where `program`'s host copies live: `region` + each tensor's host_offset, MemoryPlan::host_bytes
  // bytes, pinned where the backend needs it. It must outlive the runs; a Program with host copies
  // runs only once it has one.
  void set_host_region(const Program& program, char* region) { host_regions_[&program] = region; }
  // The host copy of `program`'s tensor t (offloaded, or a streamed weight, which lives there:
  // the Net loads it in place); null for other tensors.
  char* host_copy(const Program& program, int tensor) const;
  // The last forward pass's logits, valid samples x labels_per_sample x classes (row-major), as
  // downloaded for the arg-max.
  const std::vector<float>& logits() const { return logits_; }

 private:
  void issue(const Program& p, size_t step, Pass pass, const BatchView& batch);
  void launch_kernel(const Program& p, size_t step, Pass pass, const BatchView& batch);
  // Stream work of step `step`, stamped when a recorder is attached.
  void launch_compute(const Program& p, size_t step, Pass pass, std::function<void()> work) {
    launch_on(StreamKind::kCompute, p, step, pass, std::move(work));
  }
  void launch_on(StreamKind stream, const Program& p, size_t step, Pass pass, std::function<void()> work);
  void all_reduce(const Program& p, size_t step, Pass pass);
  Event copy(const Program& p, size_t step, Pass pass, void* dst, const void* src);
  void count_memory(const ProgramTensor& t, bool alloc);
  void read_results(const Program& p, const BatchView& batch);

  Backend& backend_;
  Device& device_;
  char* arena_;
  std::vector<void*> ptr_;
  std::vector<Event> events_;
  std::map<const Program*, char*> host_regions_;
  std::vector<Residency> residency_;
  std::vector<float> logits_;  // host copy, read after the forward pass
  StepResult result_;
  StepRecorder* recorder_ = nullptr;
  Communicator* comm_ = nullptr;
  std::function<void(int)> update_;
};

}  // namespace vdnn
