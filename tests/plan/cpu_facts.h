// tests/plan/cpu_facts.h — a model's graph with what the CPU backend's kernels declare for it
// (value sizes, per-node facts), the planner's inputs for tests that plan without a Net.
//   const test::CpuFacts f("fmnist_cnn", 16);
//   PlannedInference p = plan_inference(f.graph, f.value_bytes, f.facts, 0);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend_targets.h"
#include "io/model_file.h"
#include "plan/program.h"

namespace vdnn::test {

struct CpuFacts {
  Graph graph;
  std::vector<size_t> value_bytes;
  std::vector<NodeFacts> facts;
  CpuFacts(const std::string& model, int64_t batch) : graph(load_model(model)) {
    const std::unique_ptr<Backend> b = make_backend(graph, {BackendKind::kCpu, batch});
    value_bytes = b->value_bytes();
    facts = b->facts();
  }
};

}  // namespace vdnn::test
