// plan/program.h — one training step as an ordered list of steps over named tensors.
//
// Model: the Program is the single artefact both the executor and (issue 4) the simulator read.
// Tensors are every buffer a step touches: parameters, their gradients and momentum (persistent),
// feature-map storages (in-place ReLU shares its input's), gradient storages, kernel-saved state,
// per-kernel workspace and gradient-accumulation temporaries. Steps are issued in order by one
// host thread onto three streams; cross-stream order comes only from record/wait events (or from
// `sync`, the faithful vDNN barrier). Device offsets are fixed by the memory planner
// (plan/memory_plan.h): an `alloc` step carries its offset and is followed by waits on the events
// that ended the previous tenants of that address range (stream-ordered reuse).
//
//   Program p = build_program(graph, value_bytes, facts, {Policy::kAll, SyncMode::kEvent});
//   MemoryPlan m = plan_memory(p, budget_bytes);   // offsets, peaks, the smallest budget
//   std::cout << p.to_text();                       // `vdnn plan --print`
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "device/device.h"
#include "memory/memory_class.h"
#include "plan/policy.h"

namespace vdnn {

struct ProgramTensor {
  std::string name;  // "conv1:out", "conv1:grad", "pool1:saved0", "conv1:scratch", "conv1.weight"
  size_t bytes = 0;
  MemoryClass cls = MemoryClass::kFeatureMaps;
  bool persistent = false;  // parameters, gradients, momentum: allocated once, never freed
  bool offloaded = false;   // has a host copy; leaves the device in forward, returns for backward
  bool recomputed = false;  // dropped after its last forward reader, re-made by kRecompute steps
  bool streamed = false;    // a weight held in host memory (inference): prefetched for its layer's
                            // forward kernel, freed after it (ProgramOptions::streamed_weights)
  size_t offset = 0;        // persistent tensors: their fixed place, set by the memory planner
  // Optimizer state in host memory (ProgramOptions::optimizer_state kHost, ZeRO-Offload's idea):
  bool on_host = false;      // lives in the host region only, never on the device (the state itself)
  bool host_mirror = false;  // has a host copy besides its device one: a trainable weight (persistent;
                             // the host's master, copied back after the host's update) and its gradient
                             // (on the device only from its first writer in backward until copied out)
  size_t host_offset = 0;   // offloaded, streamed, on_host and host_mirror tensors: their host copy's
                            // place in the Program's host region (MemoryPlan::host_bytes), set by the planner
  bool has_host_copy() const { return offloaded || streamed || on_host || host_mirror; }
};

// A trainable parameter whose optimizer state is in host memory: its gradient is copied to the host
// as soon as the backward pass finishes it (the Program's kOffload), and after the pass the host
// updates the master weight and the state there and the weight is copied back
// (runtime/host_optimizer_step.h; the simulator prices those two as a pipeline).
struct HostUpdatedParam {
  int weight = -1;         // a host_mirror tensor (its gradient is one too, streamed out in backward)
  std::vector<int> state;  // on_host tensors, in optimizer_state_suffixes order
};

enum class Op {
  kAlloc,       // tensor gets device memory at `offset`
  kFree,        // tensor's device memory returns to the pool; `events` end its last uses
  kLoadInput,   // compute: the batch is copied into the input tensor (the graph's edge)
  kForward,     // compute: node's forward kernel
  kBackward,    // compute: node's backward kernel
  kAccumulate,  // compute: tensor += tensor2 (gradient of a value read by several layers)
  kOffload,     // d2h: device -> host copy of tensor; completes `event`
  kPrefetch,    // h2d: host -> device copy of tensor (offloaded, or a streamed weight); completes `event`
  kRecord,      // `event` completes when `stream` reaches this point
  kWait,        // `stream` waits for `event`
  kSync,        // the host waits for every stream (sync layer)
  kPhaseEnd,    // end of the forward pass: the loss is ready
  kRecompute,   // compute: node's forward kernel again, in the backward pass, into `tensor` (its
                // output storage, recomputed); reads the forward's saved state (storage_decision.h)
  kAllReduce,   // comm: the tensors of gradient bucket `bucket` summed over the ranks (data
                // parallel, plan/collectives.h), each rank's share scaled by 1/ranks
  kUpdate,      // compute: the optimizer step of the parameters of bucket `bucket`
};

struct Step {
  Op op;
  StreamKind stream = StreamKind::kCompute;
  int node = -1;
  int tensor = -1;
  int tensor2 = -1;
  int event = -1;
  size_t offset = 0;        // kAlloc, filled by the memory planner
  std::vector<int> events;  // kFree: the events after which the memory may be reused
  int bucket = -1;          // kAllReduce, kUpdate
};

// Gradients all-reduced together (data parallel), and the parameters whose update waits for them.
struct GradientBucket {
  std::vector<int> tensors;                 // gradients, then running statistics (averaged), in all-reduce order
  std::vector<std::pair<int, int>> params;  // (node, parameter index) updated after the bucket
  size_t bytes = 0;                         // of `tensors`
};

// Which tensors a node's kernel reads and writes; d_in[i] < 0: no gradient for that input.
struct NodeBinding {
  std::vector<int> in, params, d_params, saved;
  int out = -1, d_out = -1, scratch = -1;
  std::vector<int> d_in;
  bool backward_reads_in = false, backward_reads_out = false;  // else they may be gone by then
};

struct Program {
  Policy policy = Policy::kNone;
  SyncMode sync = SyncMode::kEvent;
  bool training = true;
  std::vector<ProgramTensor> tensors;
  std::vector<NodeBinding> nodes;
  std::vector<Step> steps;
  int event_count = 0;
  int input_tensor = -1;
  int loss_tensor = -1;
  int logits_tensor = -1;
  std::vector<std::string> node_names;
  int ranks = 1;                        // data-parallel ranks; > 1: kAllReduce and kUpdate steps
  std::vector<GradientBucket> buckets;  // ranks > 1
  std::vector<HostUpdatedParam> host_updated;  // optimizer state in host memory, per parameter

  size_t offloaded_bytes() const;             // bytes copied each way per step
  size_t recomputed_bytes() const;            // bytes dropped in forward and re-made in backward per step
  size_t streamed_bytes() const;              // weight bytes copied host -> device per forward pass
  size_t all_reduced_bytes() const;           // data parallel: the buckets' bytes, summed over the ranks per step
  std::vector<int> recomputed_nodes() const;  // kRecompute steps' nodes, in issue order
  std::string to_text() const;                // one line per step
};

// What a backend kernel declared for one node (sizes are the kernel's layouts, padding included).
struct NodeFacts {
  size_t out_bytes = 0;
  std::vector<size_t> saved_bytes;
  size_t scratch_bytes = 0;
  std::vector<size_t> param_bytes;
  bool in_place = false;
  // Per saved buffer: the forward writes it wholly from its inputs (pooling argmax, LRN workspace),
  // so a recompute of the node regenerates it; empty: none is (storage_decision.h).
  std::vector<bool> saved_regenerated;
  // Of scratch_bytes, what the forward kernel alone uses (an inference Program's workspace, program_builder.h);
  // SIZE_MAX: all of it (backends and targets that do not tell them apart).
  size_t forward_scratch_bytes = SIZE_MAX;
  // The node's backward does nothing: its producer's backward does its work (a ReLU fused into batch
  // norm, whose backward reads the ReLU's mask). It then reads neither its input nor its output, and
  // the Program keeps neither for it, whatever the layer's own backward would read.
  bool backward_done_by_producer = false;
};

}  // namespace vdnn
