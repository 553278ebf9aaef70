#include "comm/communicator.h"

#include <cstdlib>

#include "comm/mpi_communicator.h"

namespace vdnn {
namespace {

class SingleRank final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* name() const override { return "single"; }
  void all_reduce_sum(std::span<const ReduceBuffer> buffers, float scale) override {
    if (scale != 1.0f) scale_buffers(buffers, scale);
  }
  void sum_host(double*, int) override {}
  void broadcast_host(void*, size_t, int) override {}
  std::vector<std::string> gather_strings(const std::string& text) override { return {text}; }
  [[noreturn]] void abort(int exit_code) override { std::_Exit(exit_code); }
};

}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

std::unique_ptr<Communicator> make_single_rank() { return std::make_unique<SingleRank>(); }

std::unique_ptr<Communicator> make_communicator(const CommOptions& options) {
  if (launched_by_mpi()) return make_mpi_communicator(options);
  return make_single_rank();
}

void scale_buffers(std::span<const ReduceBuffer> buffers, float scale) {
  for (const ReduceBuffer& b : buffers)
    for (size_t i = 0; i < b.count; ++i) b.data[i] *= scale;
}

}  // namespace vdnn
