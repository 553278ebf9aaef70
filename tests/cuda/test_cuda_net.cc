// Whole networks on the GPU: offloading never changes the math there either (bit-identical weights
// under policies none/conv/all and both sync modes, memory-optimal deterministic algorithms), the
// GPU follows the CPU backend (same loss and gradients from the same weights and batch), training
// learns, and VGG-16 at ImageNet size runs a step under a budget that only offloading meets.
// Skipped at run time without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda/cuda_test_util.h"
#include "io/model_file.h"
#include "runtime/net.h"
#include "runtime/train_for_hash.h"

namespace vdnn {
namespace test_cuda_net {

Graph dag_net() { return test::offload_test_dag("cuda_dag"); }

Graph dag_without_dropout() {  // dropout masks differ between the backends
  ModelBuilder b("cuda_dag_nodrop", {3, 12, 12}, 5);
  b.layer("conv", "stem", {{"channels", 16}, {"kernel", 3}, {"pad", 1}})
      .layer("batch_norm", "bn")
      .layer("relu", "relu")
      .layer("conv", "a", {{"channels", 8}, {"kernel", 1}}, {"relu"})
      .layer("conv", "b", {{"channels", 8}, {"kernel", 3}, {"pad", 1}, {"groups", 2}}, {"relu"})
      .layer("concat", "cat", {}, {"a", "b", "relu"})
      .layer("lrn", "lrn", {{"size", 5}, {"k", 2.0}})
      .layer("max_pool", "pool", {{"kernel", 3}, {"stride", 2}, {"ceil", true}})
      .layer("conv", "c", {{"channels", 32}, {"kernel", 1}})
      .layer("add", "res", {}, {"c", "pool"})
      .layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 5}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

NetOptions gpu_options(Policy policy, SyncMode sync) {
  NetOptions o;
  o.batch = 16;
  o.seed = 4;
  o.policy = policy;
  o.sync = sync;
  o.conv_algo = ConvAlgo::kDirect;  // deterministic choice: no timing involved
  o.backend = BackendKind::kCuda;
  return o;
}

TEST(CudaNet, BitIdenticalWeightsUnderEveryPolicyAndSyncMode) {
  VDNN_REQUIRE_GPU();
  for (auto make : {+[] { return load_model("fmnist_cnn"); }, +[] { return dag_net(); }}) {
    const std::string expected = test::train_for_hash(make(), gpu_options(Policy::kNone, SyncMode::kEvent), 6);
    for (Policy policy : {Policy::kNone, Policy::kConv, Policy::kAll})
      for (SyncMode sync : {SyncMode::kEvent, SyncMode::kLayer})
        EXPECT_EQ(test::train_for_hash(make(), gpu_options(policy, sync), 6), expected)
            << to_string(policy) << " " << to_string(sync);
  }
}

TEST(CudaNet, ForwardAndGradientsFollowTheCpuBackend) {
  VDNN_REQUIRE_GPU();
  NetOptions o = gpu_options(Policy::kAll, SyncMode::kEvent);
  o.batch = 6;
  Net gpu(dag_without_dropout(), o);
  o.backend = BackendKind::kCpu;
  Net cpu(dag_without_dropout(), o);  // same seed: same initial weights
  const auto images = ref::random_vector(6 * 3 * 12 * 12, 17);
  const std::vector<int32_t> labels{0, 3, 1, 4, 2, 2};
  for (Net* net : {&gpu, &cpu}) net->set_batch(images.data(), labels.data(), 5);  // one padded sample
  const float loss_gpu = gpu.forward(true), loss_cpu = cpu.forward(true);
  EXPECT_NEAR(loss_gpu, loss_cpu, 1e-4 * std::fabs(loss_cpu));
  EXPECT_EQ(gpu.correct(), cpu.correct());
  gpu.backward();
  cpu.backward();
  for (size_t i = 0; i < cpu.params().size(); ++i) {
    if (!cpu.params()[i].grad) continue;
    EXPECT_TRUE(test::gpu_matches_cpu(gpu.export_grad(i), cpu.export_grad(i), 1e-3)) << cpu.params()[i].name;
  }
  for (size_t i = 0; i < cpu.params().size(); ++i)  // BN's running statistics
    EXPECT_TRUE(test::gpu_matches_cpu(gpu.export_param(i), cpu.export_param(i))) << cpu.params()[i].name;
}

TEST(CudaNet, SameSeedSameWeightsAndTrainingLearns) {
  VDNN_REQUIRE_GPU();
  const NetOptions o = gpu_options(Policy::kAll, SyncMode::kEvent);
  EXPECT_EQ(test::train_for_hash(dag_net(), o, 4), test::train_for_hash(dag_net(), o, 4));
  Graph g = dag_without_dropout();
  Dataset data = make_synthetic(96, 3, 12, 12, g.classes(), 3);
  Net net(std::move(g), o);
  TrainConfig cfg;
  cfg.iterations = 60;
  cfg.lr = 0.05;
  Trainer trainer(net, cfg);
  const TrainResult r = trainer.run(data, &data);
  EXPECT_LT(r.epochs.back().train_loss, r.epochs.front().train_loss);
  EXPECT_GT(r.test_accuracy, 0.6) << "5 classes: chance is 0.2";
}

TEST(CudaNet, SubBatchedConvolutionsFollowTheWholeBatchAndEveryPolicyGivesTheSameBits) {
  // Every convolution in 4 slices of 4 (cudnn_conv_kernel.cc: descriptors at batch 4, the filter
  // gradient accumulated with beta = 1): the loss and gradients of one step follow the whole
  // batch's, and offloading changes nothing.
  VDNN_REQUIRE_GPU();
  NetOptions o = gpu_options(Policy::kNone, SyncMode::kEvent);
  Net whole(dag_without_dropout(), o);
  for (const Node& n : whole.graph().nodes()) o.conv_sub_batches.push_back(n.layer->kind() == LayerKind::kConv ? 4 : 1);
  Net sliced(dag_without_dropout(), o);
  const auto images = ref::random_vector(16 * 3 * 12 * 12, 23);
  std::vector<int32_t> labels(16);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 5);
  for (Net* net : {&whole, &sliced}) net->set_batch(images.data(), labels.data(), 16);
  const float loss_whole = whole.forward(true), loss_sliced = sliced.forward(true);
  EXPECT_NEAR(loss_sliced, loss_whole, 1e-5 * std::fabs(loss_whole));
  whole.backward();
  sliced.backward();
  for (size_t i = 0; i < whole.params().size(); ++i) {
    if (!whole.params()[i].grad) continue;
    EXPECT_TRUE(test::gpu_matches_cpu(sliced.export_grad(i), whole.export_grad(i), 1e-4)) << whole.params()[i].name;
  }
  const std::string none = test::train_for_hash(dag_without_dropout(), o, 4);
  o.policy = Policy::kAll;
  EXPECT_EQ(test::train_for_hash(dag_without_dropout(), o, 4), none);
}

TEST(CudaNet, Vgg16AtImageNetSizeTrainsUnderABudgetOnlyOffloadingMeets) {
  VDNN_REQUIRE_GPU();
  NetOptions o = gpu_options(Policy::kNone, SyncMode::kEvent);
  o.batch = 8;
  const size_t none_needs = Net(load_model("vgg16"), o).arena_bytes();
  o.policy = Policy::kAll;
  const size_t all_needs = Net(load_model("vgg16"), o).arena_bytes();  // the smallest budget of `all`
  ASSERT_LT(all_needs, none_needs);
  o.device_memory = all_needs;
  Net net(load_model("vgg16"), o);
  const Shape& s = net.graph().input_shape();
  const auto images = ref::random_vector(static_cast<size_t>(8 * s.elements()), 5);
  const std::vector<int32_t> labels{1, 2, 3, 4, 5, 6, 7, 8};
  net.set_batch(images.data(), labels.data(), 8);
  EXPECT_TRUE(std::isfinite(net.forward(true)));
  net.backward();
  EXPECT_GT(net.device().stats(StreamKind::kD2H).bytes_copied, 0u);
  EXPECT_EQ(net.device().stats(StreamKind::kD2H).bytes_copied, net.device().stats(StreamKind::kH2D).bytes_copied);
}

}  // namespace test_cuda_net
}  // namespace vdnn
