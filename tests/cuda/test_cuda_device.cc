// The CUDA device: each rank takes the GPU of its local rank, four streams of its own, copies and
// events order the streams, a failing work item is kept and rethrown like a sticky CUDA error, the
// arena is zero-filled, pinned host memory carries copies; the vendor-call wrapper names the
// statement. Tests needing a GPU skip without one.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_memory.h"
#include "cuda/cuda_test_util.h"
#include "memory/host_buffer.h"
#include "scoped_env.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_cuda_device {

TEST(CudaCheck, FailuresNameTheStatementAndTheLibraryError) {
  try {
    VDNN_CUDA_CHECK(cudaErrorInvalidValue);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CUDA call failed: cudaErrorInvalidValue"), std::string::npos) << what;
    EXPECT_NE(what.find("test_cuda_device.cc"), std::string::npos) << what;
    EXPECT_NE(what.find("error 1)"), std::string::npos) << what;
  }
  EXPECT_THROW(VDNN_CUDA_CHECK(CUDNN_STATUS_BAD_PARAM), Error);
  EXPECT_THROW(VDNN_CUDA_CHECK(CUBLAS_STATUS_INVALID_VALUE), Error);
  EXPECT_NO_THROW(VDNN_CUDA_CHECK(CUBLAS_STATUS_SUCCESS));
  EXPECT_NE(describe(cudaErrorInsufficientDriver).find("cudaErrorInsufficientDriver, error 35"), std::string::npos);
}

TEST(CudaDevice, WithoutAGpuConstructionFailsWithTheRuntimeReason) {
  const std::string why = cuda_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "a GPU answers here";
  try {
    CudaDevice device;
    ADD_FAILURE() << "constructed without a GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, CopiesAndEventsOrderTheStreams) {
  VDNN_REQUIRE_GPU();
  CudaDevice dev;
  const size_t n = 1 << 20, bytes = n * sizeof(float);
  HostBuffer in(bytes, pinned_host_memory()), out(bytes, pinned_host_memory());
  float* src = in.as<float>();
  std::iota(src, src + n, 0.0f);
  auto arena = allocate_cuda_arena(2 * bytes);
  char* a = arena->data();
  char* b = a + bytes;
  Event up = dev.copy_async(StreamKind::kH2D, a, src, bytes);
  dev.wait(StreamKind::kCompute, up);
  dev.launch(StreamKind::kCompute, [&] {
    VDNN_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, dev.stream(StreamKind::kCompute)));
  });
  dev.wait(StreamKind::kD2H, dev.record(StreamKind::kCompute));
  Event down = dev.copy_async(StreamKind::kD2H, out.data(), b, bytes);
  down.synchronize();
  EXPECT_TRUE(down.query());
  const float* result = out.as<float>();
  for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(result[i], static_cast<float>(i));
  EXPECT_EQ(dev.stats(StreamKind::kD2H).bytes_copied, bytes);
  EXPECT_EQ(dev.stats(StreamKind::kH2D).bytes_copied, bytes);
  dev.synchronize_all();
}

TEST(CudaDevice, AFailedWorkItemIsKeptSkipsLaterWorkAndIsRethrown) {
  VDNN_REQUIRE_GPU();
  CudaDevice dev;
  int ran = 0;
  dev.launch(StreamKind::kCompute, [] { throw Error("kernel failed"); });
  dev.launch(StreamKind::kCompute, [&] { ++ran; });
  EXPECT_THROW(dev.synchronize(StreamKind::kCompute), Error);
  EXPECT_THROW(dev.synchronize_all(), Error);  // rethrown once more, then cleared
  EXPECT_EQ(ran, 0);
  dev.launch(StreamKind::kCompute, [&] { ++ran; });
  dev.synchronize_all();
  EXPECT_EQ(ran, 1);
}

// Launchers' local-rank variables, in the order they are read (cuda_device.h).
constexpr const char* kLocalRankVariables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                               "LOCAL_RANK"};

TEST(CudaDevice, EachRankTakesTheGpuOfItsLocalRank) {
  test::ScopedEnv a(kLocalRankVariables[0], std::nullopt), b(kLocalRankVariables[1], std::nullopt),
      c(kLocalRankVariables[2], std::nullopt), d(kLocalRankVariables[3], std::nullopt);
  EXPECT_EQ(local_rank_from_environment(), -1);
  EXPECT_EQ(default_cuda_device(8), 0);  // no launcher: device 0
  {
    test::ScopedEnv torchrun("LOCAL_RANK", "2");
    EXPECT_EQ(default_cuda_device(8), 2);
    test::ScopedEnv open_mpi("OMPI_COMM_WORLD_LOCAL_RANK", "5");  // read first
    EXPECT_EQ(local_rank_from_environment(), 5);
    EXPECT_EQ(default_cuda_device(8), 5);
    EXPECT_EQ(default_cuda_device(4), 1);  // more ranks than GPUs on the node: shared round robin
    EXPECT_EQ(default_cuda_device(0), 0);
  }
  for (const char* bad : {"x", "-1", "3a", ""}) {
    test::ScopedEnv slurm("SLURM_LOCALID", bad);
    try {
      default_cuda_device(8);
      ADD_FAILURE() << "accepted SLURM_LOCALID='" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM_LOCALID='" + std::string(bad) + "' is not a local rank"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(CudaDevice, AGpuThatIsNotThereIsRefusedNamingTheVisibleOnes) {
  VDNN_REQUIRE_GPU();
  try {
    CudaDevice dev(1000);
    ADD_FAILURE() << "constructed on device 1000";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA device 1000 requested but"), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, FourStreamsOfTheirOwn) {
  VDNN_REQUIRE_GPU();
  CudaDevice dev;
  std::set<cudaStream_t> streams;
  for (int s = 0; s < kStreamCount; ++s) streams.insert(dev.stream(static_cast<StreamKind>(s)));
  EXPECT_EQ(streams.size(), 4u);
  EXPECT_FALSE(streams.count(nullptr));  // none is the legacy default stream
  int current = -1;
  VDNN_CUDA_CHECK(cudaGetDevice(&current));
  EXPECT_EQ(current, dev.index());
}

TEST(CudaMemory, ArenaIsZeroFilled) {
  VDNN_REQUIRE_GPU();
  CudaDevice dev;
  auto arena = allocate_cuda_arena(size_t{3} << 20);
  std::vector<char> host(arena->bytes(), 1);
  VDNN_CUDA_CHECK(cudaMemcpy(host.data(), arena->data(), host.size(), cudaMemcpyDeviceToHost));
  for (char c : host) ASSERT_EQ(c, 0);
}

}  // namespace test_cuda_device
}  // namespace vdnn
