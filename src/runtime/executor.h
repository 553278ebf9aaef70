// runtime/executor.h — runs a planned Program on a Backend (its Device and its kernels).
//
// Model: one host thread walks the steps in order and issues them: kernels are launched on the
// compute stream with the device pointers the plan fixed (arena base + offset), copies go to the
// d2h/h2d streams, record/wait steps become device events, `sync` is a full barrier. Offloaded
// tensors own a host block (from the host pool, taken at construction) and a Residency state
// machine. At the end of the forward pass the host downloads the loss and the logits and takes
// the arg-max. Nothing here knows which backend runs the kernels.
//
//   Executor ex(backend, arena, host_pool);
//   ex.run(train_program, Executor::Phase::kForward, batch);   // loss, correct after it
//   ex.run(train_program, Executor::Phase::kBackward, batch);
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "device/device.h"
#include "memory/host_pool.h"
#include "memory/residency.h"
#include "plan/program.h"
#include "runtime/backend.h"

namespace vdnn {

struct BatchView {
  const float* images = nullptr;  // host, plain NCHW, `input_bytes` bytes
  const int32_t* labels = nullptr;
  int64_t valid = 0;
  int64_t classes = 0;
  uint64_t step = 0;
  bool training = true;
};

struct StepResult {
  float loss = 0;
  int64_t correct = 0;
};

class Executor {
 public:
  enum class Phase { kForward, kBackward, kAll };

  // `arena` is the base of the device memory the Programs were planned for.
  Executor(Backend& backend, char* arena, HostPool& host);
  ~Executor();

  // Issues the steps of `phase`; returns once the streams are done with them.
  StepResult run(const Program& program, Phase phase, const BatchView& batch);

 private:
  void issue(const Program& p, const Step& s, const BatchView& batch);
  void launch_kernel(const Program& p, int node, bool backward, const BatchView& batch);
  void ensure_host_copies(const Program& p);
  void read_results(const Program& p, const BatchView& batch);

  Backend& backend_;
  Device& device_;
  char* arena_;
  HostPool& host_;
  std::vector<void*> ptr_;
  std::vector<Event> events_;
  std::map<const Program*, std::vector<HostBlock>> host_blocks_;
  std::vector<Residency> residency_;
  std::vector<float> logits_;  // host copy, read after the forward pass
  StepResult result_;
};

}  // namespace vdnn
