// plan/step_bound.h — a lower bound on the step of any plan of a network under a budget: how far
// from optimal an `auto` plan can be at most (issue 43).
//
// Model. Whatever a plan keeps, offloads or recomputes, every forward and backward kernel of the
// step runs once on the compute stream (recomputes add kernels, copies and stalls add time), with
// one algorithm per layer, and while a kernel runs the device holds the parameters, their
// gradients and optimizer state, the tensors that kernel reads and writes (its inputs, output,
// saved state and gradients — what the Program's NodeBinding names for it) and the algorithm's
// workspace. So at budget B a layer can only run an algorithm whose workspace fits beside those:
//   bound(B) = oracle + sum over kernels of (time on the fastest algorithm that fits B at that
//              layer - time on the fastest algorithm)
// The oracle is none with the fastest algorithms (every kernel back to back, nothing moved); the
// sum is what the budget forces onto leaner algorithms (VGG-16 b256 at 12 GiB: conv1_2's
// winograd_nonfused needs 13.8 GiB of workspace beside its 9 GiB of maps). No plan at B is faster;
// a layer with no algorithm that fits means no plan fits at all. Transfers are not in it: a copy
// can hide behind compute, and recomputing instead of copying costs kernels the bound does not
// know to charge. Cost: the oracle's Program (cached by the Planner) and one pass over its steps.
//
//   StepBound b = step_lower_bound(planner, size_t{12} << 30);
//   if (b.feasible) std::printf("at most %.1f%% above optimal\n", (auto_seconds / b.seconds - 1) * 100);
#pragma once

#include <cstddef>

#include "plan/planner.h"

namespace vdnn {

struct StepBound {
  bool feasible = true;  // false: some layer's kernel does not fit the budget on any algorithm
  double seconds = 0;    // no plan at the budget is faster (meaningful when feasible)
  int leaner_layers = 0;  // layers whose fastest algorithm cannot fit beside their own kernels' tensors
};

StepBound step_lower_bound(const Planner& planner, size_t budget);

}  // namespace vdnn
