// The NCCL communicator (backends/cuda/nccl_communicator.h): the library linked is the one whose
// header was compiled against; on a GPU, one rank's all-reduce on the comm stream multiplies every
// buffer by the scale in place (NCCL's pre-multiplied sum runs a kernel even for one rank), leaves
// a scale of 1 alone, takes a new scale, and the CUDA backend hands out this communicator for its
// gradients. Tests needing a GPU skip without one; several ranks are scripts/gpu-check.sh's.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/nccl_communicator.h"
#include "comm/communicator.h"
#include "cuda/cuda_test_util.h"
#include "io/model_file.h"

namespace vdnn {
namespace test_nccl_communicator {

TEST(CudaNccl, LinkedLibraryIsTheHeadersVersion) {
  EXPECT_EQ(nccl_version(),
            std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH));
}

std::vector<float> read_back(const float* device, size_t count) {
  std::vector<float> host(count);
  VDNN_CUDA_CHECK(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

TEST(CudaNccl, OneRankAllReduceScalesEveryBufferInPlaceOnTheCommStream) {
  VDNN_REQUIRE_GPU();
  CudaDevice device;
  std::unique_ptr<Communicator> host = make_single_rank();
  std::unique_ptr<Communicator> nccl = make_nccl_communicator(device, *host, {.timeout_seconds = 60});
  EXPECT_STREQ(nccl->name(), "nccl");
  EXPECT_EQ(nccl->rank(), 0);
  EXPECT_EQ(nccl->size(), 1);

  // Two buffers of different sizes (one not a multiple of anything NCCL packs), one empty.
  const size_t n0 = 1000, n1 = 37;
  std::vector<float> v0(n0), v1(n1);
  for (size_t i = 0; i < n0; ++i) v0[i] = 0.5f * static_cast<float>(i) - 100.0f;
  for (size_t i = 0; i < n1; ++i) v1[i] = 3.0f + static_cast<float>(i);
  std::unique_ptr<DeviceBuffer> arena = allocate_cuda_arena((n0 + n1) * sizeof(float));
  float* d0 = reinterpret_cast<float*>(arena->data());
  float* d1 = d0 + n0;
  VDNN_CUDA_CHECK(cudaMemcpy(d0, v0.data(), n0 * sizeof(float), cudaMemcpyHostToDevice));
  VDNN_CUDA_CHECK(cudaMemcpy(d1, v1.data(), n1 * sizeof(float), cudaMemcpyHostToDevice));
  const std::vector<ReduceBuffer> bucket{{d0, n0}, {d1, 0}, {d1, n1}};

  auto reduce = [&](float scale) {
    device.launch(StreamKind::kComm, [&] { nccl->all_reduce_sum(bucket, scale); });
    device.synchronize_all();
  };
  reduce(0.5f);  // powers of two: the products are exact
  std::vector<float> got0 = read_back(d0, n0), got1 = read_back(d1, n1);
  for (size_t i = 0; i < n0; ++i) ASSERT_EQ(got0[i], v0[i] * 0.5f) << "buffer 0 element " << i;
  for (size_t i = 0; i < n1; ++i) ASSERT_EQ(got1[i], v1[i] * 0.5f) << "buffer 1 element " << i;

  reduce(1.0f);  // a plain sum: one rank's values unchanged
  EXPECT_EQ(read_back(d1, n1), got1);

  reduce(0.25f);  // a new scale makes a new operator
  got1 = read_back(d1, n1);
  for (size_t i = 0; i < n1; ++i) ASSERT_EQ(got1[i], v1[i] * 0.125f) << "buffer 1 element " << i;
  EXPECT_EQ(device.stats(StreamKind::kComm).ops, 3u);

  // The host collectives are the host communicator's.
  EXPECT_EQ(nccl->gather_strings("x"), std::vector<std::string>{"x"});
  double sums[2] = {1.5, 2};
  nccl->sum_host(sums, 2);
  EXPECT_EQ(sums[0], 1.5);
}

TEST(CudaNccl, TheCudaBackendAllReducesItsGradientsWithNccl) {
  VDNN_REQUIRE_GPU();
  const Graph graph = load_model("fmnist_cnn");
  CudaBackend backend(graph, {.kind = BackendKind::kCuda, .batch = 2});
  std::unique_ptr<Communicator> host = make_single_rank();
  std::unique_ptr<Communicator> grads = backend.gradient_communicator(*host, {});
  ASSERT_TRUE(grads);
  EXPECT_STREQ(grads->name(), "nccl");
}

}  // namespace test_nccl_communicator
}  // namespace vdnn
