#include "backends/cuda/nccl_communicator.h"

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "backends/cuda/cuda_check.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(100);
constexpr int kAbortSeconds = 10;  // the most the watchdog waits for ncclCommAbort before ending the job
constexpr int kExitCode = 3;       // as the MPI communicator's watchdog

std::string describe(ncclResult_t status) {
  std::string text = VDNN_MSG(ncclGetErrorString(status) << " (ncclResult " << static_cast<int>(status) << ")");
  // The comm argument is unused (NCCL's documentation); the text may belong to an earlier call.
  if (const char* last = ncclGetLastError(nullptr); status != ncclSuccess && last && *last)
    text += VDNN_MSG(": " << last);
  return text;
}

void nccl_check(ncclResult_t status, const char* statement, const char* file, int line) {
  if (status != ncclSuccess) cuda_detail::fail(describe(status), statement, file, line);
}

#define VDNN_NCCL_CHECK(call) nccl_check((call), #call, __FILE__, __LINE__)

// One collective the watchdog follows: enqueued at `since`, done when `event` has completed (an
// entry without an event is a blocking call the issuing thread removes itself).
struct Pending {
  std::string what;
  Clock::time_point since;
  cudaEvent_t event = nullptr;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(CudaDevice& device, Communicator& host, const CommOptions& options)
      : device_(device), host_(host), options_(options), stream_(device.stream(StreamKind::kComm)) {
    VDNN_CUDA_CHECK(cudaSetDevice(device_.index()));  // NCCL binds the communicator to the current device
    watchdog_ = std::thread([this] { watch(); });
    try {
      init();
    } catch (...) {
      stop_watchdog();
      throw;
    }
  }

  ~NcclCommunicator() override {
    if (comm_) {
      {
        std::lock_guard lock(mu_);
        watched_ = nullptr;  // the watchdog no longer touches it
      }
      if (all_completed()) {
        if (has_op_) ncclRedOpDestroy(op_, comm_);
        // Frees what NCCL holds; bounded by the watchdog like a collective (it may wait for peers).
        blocking("the NCCL communicator's teardown (ncclCommDestroy)", [&] { return ncclCommDestroy(comm_); });
      } else {
        ncclCommAbort(comm_);  // an all-reduce never completed: nothing may wait for it
      }
      comm_ = nullptr;
    }
    stop_watchdog();
    for (Pending& p : pending_)
      if (p.event) cudaEventDestroy(p.event);
  }

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  const char* name() const override { return "nccl"; }

  void all_reduce_sum(std::span<const ReduceBuffer> buffers, float scale) override {
    const ncclRedOp_t op = scale == 1.0f ? ncclSum : scaled_sum(scale);
    size_t total = 0;
    ncclResult_t first = ncclSuccess;
    VDNN_NCCL_CHECK(ncclGroupStart());
    for (const ReduceBuffer& b : buffers) {
      if (b.count == 0) continue;
      total += b.count;
      const ncclResult_t r = ncclAllReduce(b.data, b.data, b.count, ncclFloat32, op, comm_, stream_);
      if (first == ncclSuccess) first = r;
    }
    const ncclResult_t ended = ncclGroupEnd();
    VDNN_NCCL_CHECK(first);
    VDNN_NCCL_CHECK(ended);
    cudaEvent_t done = nullptr;
    VDNN_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    if (const cudaError_t recorded = cudaEventRecord(done, stream_); recorded != cudaSuccess) {
      cudaEventDestroy(done);
      VDNN_CUDA_CHECK(recorded);
    }
    std::lock_guard lock(mu_);
    pending_.push_back(
        {VDNN_MSG("the NCCL all-reduce #" << ++count_ << " (" << buffers.size() << " buffers, " << total << " floats)"),
         Clock::now(), done});
  }

  void sum_host(double* values, int count) override { host_.sum_host(values, count); }
  void broadcast_host(void* data, size_t bytes, int root) override { host_.broadcast_host(data, bytes, root); }
  std::vector<std::string> gather_strings(const std::string& text) override { return host_.gather_strings(text); }
  void leave_run() override { host_.leave_run(); }
  [[noreturn]] void abort(int exit_code) override {
    host_.abort(exit_code);
    std::_Exit(exit_code);  // not reached (the host's abort ends the process)
  }

 private:
  // Rank 0 makes the id and hands it to the others over the host communicator, with whether it
  // could (so no rank waits for an id that never comes); then every rank joins, and the ranks
  // agree that all of them did before any all-reduce is issued.
  void init() {
    struct {
      int32_t status = ncclSuccess;
      ncclUniqueId id{};
    } offer;
    if (host_.rank() == 0) offer.status = ncclGetUniqueId(&offer.id);
    host_.broadcast_host(&offer, sizeof offer, 0);
    if (offer.status != ncclSuccess)
      VDNN_THROW("rank " << host_.rank() << ": rank 0 could not make the NCCL id: "
                         << describe(static_cast<ncclResult_t>(offer.status)));
    ncclComm_t comm = nullptr;
    const ncclResult_t joined = blocking(VDNN_MSG("ncclCommInitRank (" << host_.size() << " ranks)"),
                                         [&] { return ncclCommInitRank(&comm, host_.size(), offer.id, host_.rank()); });
    if (joined == ncclSuccess) {
      comm_ = comm;
      std::lock_guard lock(mu_);
      watched_ = comm;
    }
    double failed = joined == ncclSuccess ? 0 : 1;
    host_.sum_host(&failed, 1);
    if (joined != ncclSuccess) {
      VDNN_THROW("rank " << host_.rank() << ": NCCL could not start on GPU " << device_.index() << ": "
                         << describe(joined));
    }
    if (failed > 0) {
      {
        std::lock_guard lock(mu_);
        watched_ = nullptr;
      }
      ncclCommAbort(comm_);  // its peers never joined: nothing to wait for
      comm_ = nullptr;
      VDNN_THROW("rank " << host_.rank() << ": NCCL could not start on " << failed << " other rank(s)");
    }
  }

  // The pre-multiplied sum for `scale`, made once (the runtime's scale is 1/ranks on every call).
  ncclRedOp_t scaled_sum(float scale) {
    if (has_op_ && op_scale_ == scale) return op_;
    if (has_op_) ncclRedOpDestroy(op_, comm_);  // allowed once the calls given it have returned
    has_op_ = false;
    VDNN_NCCL_CHECK(ncclRedOpCreatePreMulSum(&op_, &scale, ncclFloat32, ncclScalarHostImmediate, comm_));
    has_op_ = true;
    op_scale_ = scale;
    return op_;
  }

  // A blocking NCCL call under the watchdog's bound.
  template <typename Call>
  ncclResult_t blocking(const std::string& what, Call call) {
    {
      std::lock_guard lock(mu_);
      pending_.push_back({what, Clock::now(), nullptr});
    }
    const ncclResult_t result = call();
    std::lock_guard lock(mu_);
    pending_.pop_back();
    return result;
  }

  bool all_completed() {
    std::lock_guard lock(mu_);
    for (const Pending& p : pending_)
      if (p.event && cudaEventQuery(p.event) != cudaSuccess) return false;
    return true;
  }

  void stop_watchdog() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
  }

  // The watchdog thread: retires completed all-reduces, ends the job on a timeout or NCCL error.
  void watch() {
    cudaSetDevice(device_.index());  // CUDA calls of this thread go to the rank's GPU
    std::unique_lock lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, kPollInterval);
      if (stop_) break;
      while (!pending_.empty() && pending_.front().event) {
        const cudaError_t state = cudaEventQuery(pending_.front().event);
        if (state == cudaErrorNotReady) break;
        // Completed, or the stream failed: a CUDA error the device reports at its next synchronize.
        cudaEventDestroy(pending_.front().event);
        pending_.pop_front();
      }
      std::string failure;
      ncclResult_t async = ncclSuccess;
      if (watched_ && ncclCommGetAsyncError(watched_, &async) == ncclSuccess && async != ncclSuccess &&
          async != ncclInProgress) {
        failure = VDNN_MSG("NCCL reported an error" << (pending_.empty() ? "" : " during " + pending_.front().what)
                                                    << ": " << describe(async));
      } else if (!pending_.empty() && options_.timeout_seconds > 0) {
        const double waited = std::chrono::duration<double>(Clock::now() - pending_.front().since).count();
        if (waited >= options_.timeout_seconds)
          failure =
              VDNN_MSG(pending_.front().what << " did not complete within " << static_cast<int>(waited)
                                             << " s (--collective-timeout): a peer was lost or hangs (NCCL cannot "
                                                "say which; the MPI host collectives name ranks that stop)");
      }
      if (!failure.empty()) {
        const ncclComm_t comm = watched_;
        lock.unlock();
        stop_job(failure, comm);
      }
    }
  }

  // Prints the failure, aborts NCCL (its kernels return) for at most kAbortSeconds, ends every rank.
  [[noreturn]] void stop_job(const std::string& failure, ncclComm_t comm) {
    std::fprintf(stderr, "error: rank %d: %s; stopping every rank (the last checkpoint written stays intact)\n",
                 host_.rank(), failure.c_str());
    std::fflush(stderr);
    if (comm) {
      auto aborted = std::make_shared<std::atomic<bool>>(false);
      std::thread([comm, aborted] {
        ncclCommAbort(comm);
        *aborted = true;
      }).detach();
      for (int i = 0; i < kAbortSeconds * 10 && !*aborted; ++i) std::this_thread::sleep_for(kPollInterval);
    }
    host_.abort(kExitCode);
    std::_Exit(kExitCode);  // not reached
  }

  CudaDevice& device_;
  Communicator& host_;
  CommOptions options_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;  // the issuing thread's
  ncclRedOp_t op_{};
  bool has_op_ = false;
  float op_scale_ = 1.0f;
  int64_t count_ = 0;  // all-reduces issued
  // Shared with the watchdog.
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  ncclComm_t watched_ = nullptr;  // comm_ while the watchdog may query it
  std::deque<Pending> pending_;   // oldest first
  std::thread watchdog_;          // last: starts after everything above is initialised
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(CudaDevice& device, Communicator& host,
                                                     const CommOptions& options) {
  return std::make_unique<NcclCommunicator>(device, host, options);
}

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9 (X*1000 + Y*100 + Z before).
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return VDNN_MSG(major << "." << minor << "." << code % 100);
}

}  // namespace vdnn
