// The stream timeline of one training step, predicted (simulator) and measured (executor with a
// StepRecorder): both become Chrome traces with the three stream tracks and memory counters by
// class; they describe the same ops and the same memory sequence; a measured op really ran on
// its stream in order; recording costs nothing when no recorder is attached.
#include <gtest/gtest.h>

#include "data/synthetic.h"
#include "io/model_file.h"
#include "io/trace_check.h"
#include "plan/simulator.h"
#include "report/chrome_trace.h"
#include "runtime/net.h"
#include "runtime/step_recorder.h"

namespace vdnn {
namespace test_step_timeline {

struct UnitCosts : CostModel {
  double forward_seconds(int node) const override { return 1e-3; }
  double backward_seconds(int node) const override { return 2e-3; }
  double copy_seconds(size_t bytes) const override { return static_cast<double>(bytes) / 1e9; }
};

class StepTimelineTest : public ::testing::Test {
 protected:
  // Trains `steps` steps of fmnist_cnn (batch 16, policy all) on synthetic data, recording the
  // `record`-th into recorder_ (0: no recorder).
  Net& train(int steps, int record) {
    net_ = std::make_unique<Net>(load_model("fmnist_cnn"), NetOptions{.batch = 16, .policy = Policy::kAll});
    const Dataset d = make_synthetic(16, 1, 28, 28, 10, 3);
    if (record) net_->record_step(record, &recorder_);
    for (int i = 0; i < steps; ++i) {
      net_->set_batch(d.images.data(), d.labels.data(), 16);
      net_->forward(true);
      net_->backward();
    }
    return *net_;
  }
  StepRecorder recorder_;
  std::unique_ptr<Net> net_;
};

TEST_F(StepTimelineTest, PredictedTraceHasTheStreamTracksMemoryCountersAndCopies) {
  Net& net = train(0, 0);
  const SimResult r = simulate(net.train_program(), UnitCosts());
  test::expect_step_trace(chrome_trace(r.timeline(), "fmnist_cnn predicted"), /*offloads=*/true);
  ASSERT_FALSE(r.memory.empty());
  for (const MemoryPoint& m : r.memory) {
    size_t sum = 0;
    for (size_t b : m.by_class) sum += b;
    EXPECT_EQ(sum, m.bytes) << "classes add up to the total";
  }
  EXPECT_EQ(peak_point(r.memory).bytes, r.memory_by_class.total_peak);
}

TEST_F(StepTimelineTest, MeasuredTraceHasTheSameOpsAndMemorySequenceAsThePrediction) {
  Net& net = train(3, 2);
  EXPECT_EQ(recorder_.steps_begun(), 2) << "steps 1 and 2 recorded, step 3 not";
  const StepTimeline measured = recorder_.timeline();
  test::expect_step_trace(chrome_trace(measured, "fmnist_cnn measured"), /*offloads=*/true);
  const SimResult predicted = simulate(net.train_program(), UnitCosts());
  ASSERT_EQ(measured.ops.size(), predicted.ops.size());
  for (size_t i = 0; i < measured.ops.size(); ++i) {
    const TimelineOp &m = measured.ops[i], &p = predicted.ops[i];
    EXPECT_EQ(m.name, p.name);
    EXPECT_EQ(m.stream, p.stream) << m.name;
    EXPECT_EQ(m.node, p.node) << m.name;
    EXPECT_EQ(m.pass, p.pass) << m.name;
    EXPECT_EQ(m.step, p.step) << m.name;
    EXPECT_GE(m.end, m.start) << m.name;
  }
  // Alloc and free reach the counters in Program order on the compute stream: the same values.
  ASSERT_EQ(measured.memory.size(), predicted.memory.size());
  for (size_t i = 0; i < measured.memory.size(); ++i) {
    EXPECT_EQ(measured.memory[i].by_class, predicted.memory[i].by_class) << i;
    if (i) EXPECT_GE(measured.memory[i].seconds, measured.memory[i - 1].seconds);
  }
}

TEST_F(StepTimelineTest, MeasuredOpsOfOneStreamRunOneAfterAnother) {
  train(1, 1);
  const StepTimeline t = recorder_.timeline();
  for (StreamKind s : {StreamKind::kCompute, StreamKind::kD2H, StreamKind::kH2D}) {
    std::vector<std::pair<double, double>> spans;
    for (const TimelineOp& op : t.ops)
      if (op.stream == s) spans.push_back({op.start, op.end});
    ASSERT_FALSE(spans.empty()) << stream_name(s);
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_GE(spans[i].first, spans[i - 1].second) << stream_name(s);
  }
  // Kernels name their layer and pass, so a report can add them up per layer.
  int kernels = 0;
  for (const TimelineOp& op : t.ops)
    if (op.op == Op::kForward || op.op == Op::kBackward) {
      ++kernels;
      EXPECT_GE(op.node, 0) << op.name;
      EXPECT_EQ(op.pass, op.op == Op::kForward ? Pass::kForward : Pass::kBackward) << op.name;
      EXPECT_NE(op.name.find(net_->train_program().node_names[op.node]), std::string::npos) << op.name;
    }
  EXPECT_EQ(kernels, 2 * static_cast<int>(net_->graph().nodes().size()));
}

TEST_F(StepTimelineTest, WithoutARecorderNothingExtraIsLaunched) {
  Net& net = train(1, 0);
  size_t copies = 0;
  for (const Step& s : net.train_program().steps) copies += s.op == Op::kOffload;
  EXPECT_EQ(net.device().stats(StreamKind::kD2H).ops, copies) << "one work item per copy, no stamps";
  EXPECT_EQ(recorder_.steps_begun(), 0);
}

}  // namespace test_step_timeline
}  // namespace vdnn
