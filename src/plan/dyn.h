// plan/dyn.h — vDNN_dyn: the first configuration that fits a budget, in the paper's order.
//
// Model (docs/VDNN.md "dyn"): 1. trainability — `all` with the leanest algorithms everywhere; if
// even that does not fit the device, nothing does, and the answer is its minimum budget. 2. `none`,
// 3. `conv`, 4. `all`, each with the fastest algorithms. 5. greedy downgrade, with `conv` then `all`:
// walking the layers in order, each layer steps down to its next leaner algorithm (fastest first
// among those using less workspace) until the configuration fits. 6. the step-1 configuration.
// Every "fits" is the memory planner's exact answer for both the training and the evaluation
// Program; from step 2 on it includes the Planner's host budget (set_host_budget), so under one
// dyn takes the first configuration whose host copies fit it too.
//
//   DynChoice d = choose_dyn(planner, size_t{12} << 30);
//   if (!d.fits) fail("needs at least " + format_bytes(d.minimum_budget));
//   NetOptions o; o.policy = d.config.policy; o.conv_algos = conv_algos_of(costs, d.config.algos);
#pragma once

#include <string>
#include <vector>

#include "plan/planner.h"

namespace vdnn {

struct DynChoice {
  bool fits = false;
  Configuration config;            // meaningful when fits
  int step = 0;                    // which step of the search chose it (1..6)
  std::string why;                 // one sentence
  size_t minimum_budget = 0;       // of the trainability configuration (all + leanest)
  std::vector<std::string> tried;  // every configuration tried, in order, with "fits"/"does not fit"
};

DynChoice choose_dyn(const Planner& planner, size_t budget);

}  // namespace vdnn
