#include "backends/cuda/cuda_device.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "backends/cuda/cuda_check.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

// A recorded cudaEvent_t; destroyed with the last Event handle that shares it (CUDA releases an
// event destroyed before it completes once it does).
class CudaEventState final : public EventState {
 public:
  explicit CudaEventState(cudaStream_t stream) {
    VDNN_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    const cudaError_t recorded = cudaEventRecord(event_, stream);
    if (recorded != cudaSuccess) {
      cudaEventDestroy(event_);
      VDNN_CUDA_CHECK(recorded);
    }
  }
  ~CudaEventState() override { cudaEventDestroy(event_); }

  bool query() const override {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) return false;
    VDNN_CUDA_CHECK(status);
    return true;
  }
  void synchronize() const override { VDNN_CUDA_CHECK(cudaEventSynchronize(event_)); }
  cudaEvent_t event() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return "cudaGetDeviceCount: " + describe(status);
  if (count == 0) return "cudaGetDeviceCount: no CUDA device";
  return {};
}

int local_rank_from_environment() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"}) {
    const char* text = std::getenv(name);
    if (!text) continue;
    char* end = nullptr;
    errno = 0;
    const long rank = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || rank < 0 || rank > INT32_MAX)
      VDNN_THROW("environment variable " << name << "='" << text << "' is not a local rank (a number >= 0)");
    return static_cast<int>(rank);
  }
  return -1;
}

int default_cuda_device(int device_count) {
  const int local_rank = local_rank_from_environment();
  return local_rank < 0 || device_count <= 0 ? 0 : local_rank % device_count;
}

CudaDevice::CudaDevice(int index) {
  if (const std::string why = cuda_unavailable_reason(); !why.empty()) VDNN_THROW("no usable GPU: " << why);
  int count = 0;
  VDNN_CUDA_CHECK(cudaGetDeviceCount(&count));
  index_ = index < 0 ? default_cuda_device(count) : index;
  if (index_ >= count) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    VDNN_THROW("CUDA device " << index_ << " requested but " << count << " visible (0 to " << count - 1
                              << "; CUDA_VISIBLE_DEVICES=" << (visible ? visible : "unset") << ")");
  }
  VDNN_CUDA_CHECK(cudaSetDevice(index_));
  for (cudaStream_t& s : streams_) VDNN_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
}

CudaDevice::~CudaDevice() {
  for (cudaStream_t s : streams_)
    if (s) {
      cudaStreamSynchronize(s);  // no error can be reported from a destructor
      cudaStreamDestroy(s);
    }
}

void CudaDevice::keep_error(std::exception_ptr error) {
  if (!error_) error_ = std::move(error);
}

void CudaDevice::rethrow_kept(bool clear) {
  if (!error_) return;
  std::exception_ptr e = error_;
  if (clear) error_ = nullptr;
  std::rethrow_exception(e);
}

void CudaDevice::launch(StreamKind s, std::function<void()> work) {
  if (error_) return;
  try {
    work();
    ++stats_[static_cast<int>(s)].ops;
  } catch (...) {
    keep_error(std::current_exception());
  }
}

Event CudaDevice::record(StreamKind s) { return Event(std::make_shared<CudaEventState>(stream(s))); }

void CudaDevice::wait(StreamKind s, const Event& e) {
  if (!e.state()) return;  // a default Event counts as completed
  const auto* state = dynamic_cast<const CudaEventState*>(e.state());
  VDNN_CHECK(state, "an event of another device was passed to the CUDA device");
  VDNN_CUDA_CHECK(cudaStreamWaitEvent(stream(s), state->event(), 0));
}

Event CudaDevice::copy_async(StreamKind s, void* dst, const void* src, size_t bytes) {
  if (!error_) {
    try {
      VDNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream(s)));
      StreamStats& st = stats_[static_cast<int>(s)];
      ++st.ops;
      st.bytes_copied += bytes;
    } catch (...) {
      keep_error(std::current_exception());
    }
  }
  return record(s);
}

void CudaDevice::synchronize(StreamKind s) {
  VDNN_CUDA_CHECK(cudaStreamSynchronize(stream(s)));
  rethrow_kept(/*clear=*/false);
}

void CudaDevice::synchronize_all() {
  for (cudaStream_t st : streams_) VDNN_CUDA_CHECK(cudaStreamSynchronize(st));
  rethrow_kept(/*clear=*/true);
}

}  // namespace vdnn
