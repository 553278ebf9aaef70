// The backend seam: parsing --backend, why a backend is unavailable (one line), the CPU backend's
// facts are the compiled graph's, its gradients need no communicator of their own, and host memory
// comes from the backend's source.
#include <gtest/gtest.h>

#include "backend_api/backend.h"
#include "backends/backend_targets.h"
#include "io/model_file.h"
#include "memory/host_buffer.h"
#include "runtime/net.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_backend {

TEST(Backend, ParsesItsNameAndRejectsOthersNamingTheFlag) {
  EXPECT_EQ(parse_backend("cpu"), BackendKind::kCpu);
  EXPECT_EQ(parse_backend("cuda"), BackendKind::kCuda);
  try {
    parse_backend("tpu");
    ADD_FAILURE() << "accepted tpu";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--backend"), std::string::npos) << e.what();
  }
  EXPECT_STREQ(to_string(BackendKind::kCuda), "cuda");
}

TEST(Backend, CpuIsAlwaysAvailableAndCudaSaysWhyNotInOneLine) {
  EXPECT_EQ(backend_unavailable_reason(BackendKind::kCpu), "");
  const std::string why = backend_unavailable_reason(BackendKind::kCuda);
  if (why.empty()) GTEST_SKIP() << "a GPU answers here";
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  NetOptions o;
  o.batch = 4;
  o.backend = BackendKind::kCuda;
  try {
    Net net(load_model("fmnist_cnn"), o);
    ADD_FAILURE() << "a CUDA net without a usable GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(Backend, CpuGradientsAreAllReducedByTheHostCommunicatorItself) {
  const Graph g = load_model("fmnist_cnn");
  std::unique_ptr<Backend> cpu = make_backend(g, {.kind = BackendKind::kCpu, .batch = 2});
  std::unique_ptr<Communicator> host = make_single_rank();
  EXPECT_EQ(cpu->gradient_communicator(*host, {}), nullptr);  // device memory is host memory
}

TEST(Backend, CpuBackendDeclaresWhatTheNetPlansWith) {
  const Graph g = load_model("fmnist_dag");
  std::unique_ptr<Backend> cpu = make_backend(g, {.kind = BackendKind::kCpu, .batch = 8});
  EXPECT_STREQ(cpu->name(), "cpu");
  EXPECT_STREQ(cpu->device().name(), "cpu");
  const auto facts = cpu->facts();
  ASSERT_EQ(facts.size(), g.nodes().size());
  EXPECT_EQ(cpu->value_bytes().size(), g.values().size());
  for (size_t i = 0; i < facts.size(); ++i) EXPECT_EQ(facts[i].param_bytes.size(), g.nodes()[i].params.size());
  auto arena = cpu->allocate_arena(4096);
  EXPECT_EQ(arena->bytes(), 4096u);
  for (size_t b = 0; b < 4096; ++b) ASSERT_EQ(arena->data()[b], 0);
}

TEST(HostBuffer, TakesItsMemoryFromTheGivenSourceAndCountsIt) {
  int taken = 0, released = 0;
  HostMemory counting{[&](size_t bytes) {
                        ++taken;
                        return HostMemory::aligned().allocate(bytes);
                      },
                      [&](void* p) {
                        ++released;
                        HostMemory::aligned().release(p);
                      }};
  const size_t before = HostBuffer::taken_count();
  {
    HostBuffer staging(256, counting), region(3 << 20, counting), none(0, counting);
    EXPECT_EQ(taken, 2);
    EXPECT_EQ(none.data(), nullptr);
    EXPECT_EQ(region.bytes(), size_t{3} << 20);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(region.data()) % 64, 0u);
  }
  EXPECT_EQ(released, 2);
  EXPECT_EQ(HostBuffer::taken_count(), before + 2);
  HostMemory failing{[](size_t) -> void* { return nullptr; }, [](void*) {}};
  EXPECT_THROW(HostBuffer(10, failing, "input batch"), Error);
}

}  // namespace test_backend
}  // namespace vdnn
