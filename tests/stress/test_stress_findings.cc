// What the stress test found (tests/stress), kept as regression tests with the networks it found
// them on.
#include <gtest/gtest.h>

#include "io/model_file.h"
#include "plan/memory_plan.h"
#include "plan/program_builder.h"
#include "runtime/net.h"
#include "runtime/train_for_hash.h"

namespace vdnn {
namespace {

// Network seed 25: an LRN of size 1 after a grouped convolution, whose output oneDNN lays out
// channels-last. oneDNN 2.6's JIT LRN crashed (SIGSEGV) creating that LRN's backward primitive;
// the kernel now uses the reference implementation for size 1.
TEST(StressFindings, LrnOfSizeOneAfterAGroupedConvolutionTrains) {
  const auto model = nlohmann::json::parse(R"({"name": "seed25", "input": [2, 6, 6], "classes": 10,
    "layers": [{"name": "conv1", "type": "conv", "channels": 21, "kernel": [2, 5], "pad": 1},
               {"name": "conv3", "type": "conv", "channels": 7, "groups": 7, "kernel": 1},
               {"name": "lrn4", "type": "lrn", "size": 1, "alpha": 0.001, "k": 2.0},
               {"name": "concat5", "type": "concat", "inputs": ["conv1", "lrn4"]},
               {"name": "fc10", "type": "fc", "units": 10},
               {"name": "loss", "type": "softmax_cross_entropy"}]})");
  NetOptions none{.batch = 3}, all{.batch = 3, .policy = Policy::kAll};
  EXPECT_EQ(test::train_for_hash(parse_model(model, "seed25"), all, 3),
            test::train_for_hash(parse_model(model, "seed25"), none, 3));
}

// Network seed 7, policy all, batch 7: best fit placed the training step in its smallest budget
// (407,438 bytes on an AVX-512 machine) but not in 408,133, so Net refused a budget above the
// smallest one its own error named. Every capacity from the smallest budget up must fit.
TEST(StressFindings, EveryBudgetFromTheSmallestUpFits) {
  const auto model = nlohmann::json::parse(R"({"name": "seed7", "input": [4, 14, 14], "classes": 6,
    "layers": [{"name": "dropout1", "type": "dropout", "rate": 0.0},
               {"name": "conv2", "type": "conv", "channels": 10, "kernel": [5, 1], "pad": [2, 0], "stride": 3},
               {"name": "conv3", "type": "conv", "channels": 10, "kernel": 2, "pad": 1, "bias": false},
               {"name": "batch_norm4", "type": "batch_norm"},
               {"name": "avg_pool5", "type": "avg_pool", "kernel": 3, "pad": 1, "stride": 1},
               {"name": "conv6", "type": "conv", "channels": 2, "groups": 2, "kernel": 5, "pad": 2, "inputs": ["batch_norm4"]},
               {"name": "batch_norm7", "type": "batch_norm"},
               {"name": "conv8", "type": "conv", "channels": 5, "groups": 5, "kernel": 3, "pad": 1, "inputs": ["batch_norm4"]},
               {"name": "max_pool9", "type": "max_pool", "kernel": 3, "pad": 1, "stride": 1},
               {"name": "relu10", "type": "relu"},
               {"name": "concat11", "type": "concat", "inputs": ["avg_pool5", "batch_norm7", "relu10"]},
               {"name": "conv12", "type": "conv", "channels": 16, "kernel": 5, "pad": 2},
               {"name": "conv13", "type": "conv", "channels": 16, "groups": 16, "kernel": 3, "pad": 1},
               {"name": "avg_pool14", "type": "avg_pool", "kernel": 3, "pad": 1, "stride": 1, "inputs": ["concat11"]},
               {"name": "batch_norm15", "type": "batch_norm"},
               {"name": "conv16", "type": "conv", "channels": 12, "kernel": 1, "inputs": ["concat11"]},
               {"name": "relu17", "type": "relu"},
               {"name": "concat18", "type": "concat", "inputs": ["conv13", "batch_norm15", "relu17"]},
               {"name": "concat19", "type": "concat", "inputs": ["conv8", "concat18"]},
               {"name": "fc20", "type": "fc", "units": 6},
               {"name": "relu21", "type": "relu"},
               {"name": "fc22", "type": "fc", "units": 6},
               {"name": "loss", "type": "softmax_cross_entropy"}]})");
  for (Policy policy : {Policy::kNone, Policy::kConv, Policy::kAll}) {
    Net net(parse_model(model, "seed7"),
            {.batch = 7, .policy = policy, .conv_algo = ConvAlgo::kDirect});
    for (bool training : {true, false}) {
      const Program program =
          build_program(net.graph(), net.backend().value_bytes(), net.backend().facts(),
                        {policy, SyncMode::kEvent, training});
      const size_t smallest = minimum_budget(program);
      int missed = 0;
      for (size_t capacity = smallest; capacity < smallest + 16384; capacity += 16) {
        Program p = program;
        const MemoryPlan m = plan_memory(p, capacity);
        missed += !m.fits;
        EXPECT_EQ(m.capacity_bytes, capacity);
      }
      EXPECT_EQ(missed, 0) << to_string(policy) << (training ? " training" : " evaluation");
    }
  }
}

// Network seed 1145, policy conv: the input is offloaded, freed, and allocated again for its
// prefetch, and best fit had put the FC's output into its first place. minimum_budget assumed a
// pool with room for every tensor once always fits, so a Net without a budget failed with an
// internal error ("a plan must fit when every tensor has its own memory").
TEST(StressFindings, ATensorAllocatedTwiceStillHasASmallestBudget) {
  const auto model =
      nlohmann::json::parse(R"({"name": "seed1145", "input": [3, 12, 12], "classes": 6,
    "layers": [{"name": "conv1", "type": "conv", "channels": 23, "kernel": 1},
               {"name": "fc2", "type": "fc", "units": 6},
               {"name": "loss", "type": "softmax_cross_entropy"}]})");
  for (Policy policy : {Policy::kConv, Policy::kAll}) {
    const NetOptions o{.batch = 8, .policy = policy};
    EXPECT_EQ(test::train_for_hash(parse_model(model, "seed1145"), o, 3),
              test::train_for_hash(parse_model(model, "seed1145"), {.batch = 8}, 3))
        << to_string(policy);
  }
}

}  // namespace
}  // namespace vdnn
