// plan/simulator.h — runs a Program on virtual streams to predict its time (issue 4's core).
//
// Model: the same Program the executor runs, interpreted with clocks instead of kernels. The host
// issues steps in order at no cost; each stream (compute, d2h, h2d) runs its ops back to back; an
// op starts when its stream is free and the host has issued it; `record` stamps an event with its
// stream's clock, `wait` holds a stream until the event's time (the wait on the compute stream is
// its stall), `sync` and the end of the forward pass hold the host until the streams are done.
// A training step ends with the optimizer's update of every trainable weight (the trainer runs it
// once the streams are done: CostModel::update_seconds, memory-bound), after the Program's steps;
// with optimizer state in host memory (Program::host_updated) the host's update follows instead, a
// pipeline of host updates and weight copies back (host_update_seconds);
// a data-parallel Program (plan/collectives.h) has its own kUpdate steps per gradient bucket
// instead, and its kAllReduce steps run on the comm stream (CostModel::all_reduce_seconds).
// Durations come from a CostModel (measured per layer, or a roofline of a device profile). Two
// overlap rules stretch an op for the part of it that overlaps already-scheduled ops (the op
// issued later carries the stretch; the earlier one keeps its schedule):
//   - compute vs the other streams (copies, comm): slowdown_when_overlapped (1 on a GPU; on the
//     CPU backend the copy engine and the communicator are threads sharing cores and memory
//     bandwidth with the kernels; the copy's measured slowdown stands for both);
//   - all-reduce (comm) vs copies, when the network crosses the host link the copies use (a PCIe
//     NIC): slowdown_when_sharing_host_link. Both directions of the link are in use during a ring
//     all-reduce (every rank sends and receives at once), so either copy direction competes.
//
//   struct MyCosts : CostModel { ... };
//   SimResult r = simulate(program, costs);
//   r.iteration_seconds; r.stall_seconds; r.busy_seconds[static_cast<int>(StreamKind::kCompute)];
//   r.busy_seconds[static_cast<int>(StreamKind::kComm)]; r.all_reduce_hidden;   // ranks > 1
//   write_chrome_trace("predicted.json", r.timeline(), "vgg16 predicted");  // report/chrome_trace.h
#pragma once

#include <array>
#include <string>
#include <vector>

#include "memory/memory_class.h"
#include "plan/program.h"
#include "plan/step_timeline.h"

namespace vdnn {

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual double forward_seconds(int node) const = 0;
  virtual double backward_seconds(int node) const = 0;
  virtual double copy_seconds(size_t bytes) const = 0;  // one direction of the host link
  virtual double accumulate_seconds(size_t bytes) const { return 0.0; }
  virtual double load_input_seconds(size_t bytes) const { return 0.0; }
  // The optimizer's step over `weight_bytes` of trainable weights and `state_bytes` of their
  // optimizer state (SGD: a momentum as big as the weights; AdamW: two moments), after the backward pass.
  virtual double update_seconds(size_t weight_bytes, size_t state_bytes) const { return 0.0; }
  // The same step run by the host's CPU over state in host memory (plan/optimizer_state.h
  // StatePlace::kHost); by default the device's (the CPU backend: one memory).
  virtual double host_update_seconds(size_t weight_bytes, size_t state_bytes) const {
    return update_seconds(weight_bytes, state_bytes);
  }
  // How much slower an op on stream `s` runs while the other kind of stream is busy (compute vs
  // copies): 1 on a GPU, whose copy engines are separate hardware; above 1 on the CPU backend,
  // where the copy engine is a thread sharing cores and memory bandwidth with the kernels.
  virtual double slowdown_when_overlapped(StreamKind s) const { return 1.0; }
  // Data parallel: all-reducing `bytes` over `ranks` ranks on the network (0: collectives free).
  virtual double all_reduce_seconds(size_t bytes, int ranks) const { return 0.0; }
  // How much slower a copy and an all-reduce run while both are in flight: above 1 when the
  // network's traffic crosses the host link (PCIe) the copies use, else 1.
  virtual double slowdown_when_sharing_host_link() const { return 1.0; }
};

struct SimResult {
  double iteration_seconds = 0;
  double forward_seconds = 0;    // when the loss is ready
  double stall_seconds = 0;      // time the compute stream waited on other streams
  double recompute_seconds = 0;  // forward kernels re-run in the backward pass (kRecompute)
  double update_seconds = 0;     // training: the optimizer's step (all kUpdate steps when the Program has them)
  // Optimizer state in host memory: from the end of the device's work until the last updated weight
  // is back (the host's update and the weights' copies in, as a pipeline); in iteration_seconds.
  double host_update_seconds = 0;
  std::array<double, kStreamCount> busy_seconds{};  // busy_seconds[kComm]: the all-reduces
  // Data parallel: the fraction of the comm stream's busy time during which the compute stream is
  // busy too (all-reduce hidden under backward); 0 without all-reduces.
  double all_reduce_hidden = 0;
  std::vector<TimelineOp> ops;  // every op, in issue order (a predicted trace)
  // Device bytes by class after each alloc and free, stamped with the compute stream's clock.
  std::vector<MemoryPoint> memory;
  ClassStats memory_by_class;  // current and peak bytes per class over the step

  StepTimeline timeline() const { return {ops, memory}; }
};

SimResult simulate(const Program& program, const CostModel& costs);

}  // namespace vdnn
