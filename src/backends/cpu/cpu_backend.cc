#include "backends/cpu/cpu_backend.h"

#include <omp.h>

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "backend_api/host_update.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/dnnl_util.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

// The CPU "device": anonymous pages from mmap, zero-filled by the kernel and resident only once
// touched, so a process holds the part of the arena a run writes (an inference Net's weights and
// working set), not its whole span up front.
class HostArena final : public DeviceBuffer {
 public:
  explicit HostArena(size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<char*>(p);
  }
  ~HostArena() override {
    if (data_) munmap(data_, bytes_);
  }
  char* data() const override { return data_; }
  size_t bytes() const override { return bytes_; }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace

CpuBackend::CpuBackend(const Graph& graph, const BackendOptions& options)
    : graph_(graph),
      engine_(dnnl::engine::kind::cpu, 0),
      compute_stream_(engine_),
      host_stream_(engine_),
      compiled_(graph, options.batch, options.seed, engine_, options.conv_algo, options.conv_algos,
                options.conv_sub_batches, runnable(options.precision)),
      kernels_(compiled_.kernels()),
      device_(make_cpu_device(options.link)) {}

CpuBackend::~CpuBackend() {
  device_.reset();  // stop the workers before the kernels and sums they may be running go away
}

std::unique_ptr<DeviceBuffer> CpuBackend::allocate_arena(size_t bytes) { return std::make_unique<HostArena>(bytes); }

void CpuBackend::forward(int node, const KernelArgs& args) {
  kernels_[node]->forward(compute_stream_, args);
  compute_stream_.wait();
}

void CpuBackend::backward(int node, const KernelArgs& args) {
  kernels_[node]->backward(compute_stream_, args);
  compute_stream_.wait();
}

// Every accumulated gradient is an activation's (the logits, f32 in bf16, have one reader: the loss).
void CpuBackend::accumulate(void* into, const void* addend, size_t bytes) {
  const dt type = compiled_.precision() == Precision::kBf16 ? dt::bf16 : dt::f32;
  const auto md = plain_md({static_cast<int64_t>(bytes / dnnl::memory::data_type_size(type))}, type);
  auto it = sums_.find(bytes);
  if (it == sums_.end())
    it = sums_.emplace(bytes, dnnl::sum(dnnl::sum::primitive_desc(md, {1.0f, 1.0f}, {md, md}, engine_))).first;
  dnnl::memory dst(md, engine_, into);
  it->second.execute(compute_stream_,
                     {{DNNL_ARG_MULTIPLE_SRC, dst},
                      {DNNL_ARG_MULTIPLE_SRC + 1, dnnl::memory(md, engine_, const_cast<void*>(addend))},
                      {DNNL_ARG_DST, dst}});
  compute_stream_.wait();
}

void CpuBackend::load_input(void* dst, const float* host_src, size_t bytes) {
  const dnnl::memory::desc& md = compiled_.value_md(0);
  if (md.data_type() == dt::f32) {
    std::memcpy(dst, host_src, bytes);
    return;
  }
  if (md.data_type() == dt::s32) {  // token ids: each float must hold a whole number int32 can
    VDNN_CHECK(bytes == md.get_size(), "input of " << bytes << " bytes, expected " << md.get_size());
    const int64_t count = static_cast<int64_t>(bytes / sizeof(int32_t)), per_sample = graph_.input_shape().elements();
    int32_t* ids = static_cast<int32_t*>(dst);
    for (int64_t i = 0; i < count; ++i) {
      const float v = host_src[i];
      if (!(v >= -2147483648.0f && v < 2147483648.0f) || v != std::trunc(v))
        VDNN_THROW("token input: sample " << i / per_sample << " position " << i % per_sample << " holds " << v
                                          << ", not a whole-number token id");
      ids[i] = static_cast<int32_t>(v);
    }
    return;
  }
  VDNN_CHECK(bytes == md.get_size(), "input of " << bytes << " bytes, expected " << md.get_size());
  dnnl::memory from(with_type(md, dt::f32), engine_, const_cast<float*>(host_src)), to(md, engine_, dst);
  dnnl::reorder(from, to).execute(compute_stream_, from, to);
  compute_stream_.wait();
}

void CpuBackend::sgd_update(const SgdUpdate& u) { sgd_update_all({u}); }
void CpuBackend::sgd_update_all(const std::vector<SgdUpdate>& updates) { host_sgd_update_all(updates); }
void CpuBackend::adamw_update(const AdamwUpdate& u) { adamw_update_all({u}); }
void CpuBackend::adamw_update_all(const std::vector<AdamwUpdate>& updates) { host_adamw_update_all(updates); }

void CpuBackend::download(void* host_dst, const void* device_src, size_t bytes) {
  std::memcpy(host_dst, device_src, bytes);
}

void CpuBackend::upload(void* device_dst, const void* host_src, size_t bytes) {
  std::memcpy(device_dst, host_src, bytes);
}

std::vector<float> CpuBackend::export_param(int node, int k, const void* device_data) {
  const ParamSpec& spec = graph_.nodes()[node].params[k];
  std::vector<float> plain(static_cast<size_t>(spec.elements()));
  dnnl::memory src(compiled_.kernel(node).param_mds[k], engine_, const_cast<void*>(device_data));
  dnnl::memory dst(plain_md(spec.dims), engine_, plain.data());
  dnnl::reorder(src, dst).execute(host_stream_, src, dst);
  host_stream_.wait();
  return plain;
}

void CpuBackend::import_param(int node, int k, const std::vector<float>& plain, void* device_data) {
  const ParamSpec& spec = graph_.nodes()[node].params[k];
  dnnl::memory src(plain_md(spec.dims), engine_, const_cast<float*>(plain.data()));
  dnnl::memory dst(compiled_.kernel(node).param_mds[k], engine_, device_data);
  dnnl::reorder(src, dst).execute(host_stream_, src, dst);
  host_stream_.wait();
}

}  // namespace vdnn
