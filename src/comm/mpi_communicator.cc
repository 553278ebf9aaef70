#include "comm/mpi_communicator.h"

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>

#include "vdnn/error.h"

namespace vdnn {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kNoteTag = 7;

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(const CommOptions& options) : options_(options) {
    // Open MPI loads its components as plugins that need libmpi's symbols global; inside a Python
    // extension (loaded RTLD_LOCAL) they would not be (mpi4py does the same).
    dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    int initialized = 0;
    MPI_Initialized(&initialized);
    VDNN_CHECK(!initialized, "MPI is already initialised: one communicator per process");
    int provided = 0;
    if (const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided); rc != MPI_SUCCESS)
      VDNN_THROW("MPI_Init_thread failed: " << mpi_error(rc));
    if (provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      VDNN_THROW("this MPI library does not provide MPI_THREAD_MULTIPLE (the collective watchdog needs it); "
                 "use an MPI built with thread support (Debian's Open MPI has it)");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_dup(MPI_COMM_WORLD, &data_);
    MPI_Comm_dup(MPI_COMM_WORLD, &notes_);
    MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(notes_, MPI_ERRORS_RETURN);
    seen_.assign(size_, 0);
    note_in_.assign(size_, 0);
    note_out_.assign(size_, 0);
    recv_.assign(size_, MPI_REQUEST_NULL);
    send_.assign(size_, MPI_REQUEST_NULL);
    for (int peer = 0; peer < size_; ++peer)
      if (peer != rank_) MPI_Irecv(&note_in_[peer], 1, MPI_INT64_T, peer, kNoteTag, notes_, &recv_[peer]);
    watchdog_ = std::thread([this] { watch(); });
  }

  ~MpiCommunicator() override {
    try {
      collective("the final barrier", [&] { return MPI_Barrier(data_); });
    } catch (...) {
    }
    {
      std::lock_guard lock(watch_mu_);
      stop_ = true;
    }
    watch_cv_.notify_all();
    watchdog_.join();
    for (MPI_Request& r : recv_)
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
    for (MPI_Request& r : send_)
      if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Comm_free(&notes_);
    MPI_Comm_free(&data_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "mpi"; }

  void all_reduce_sum(std::span<const ReduceBuffer> buffers, float scale) override {
    size_t total = 0;
    for (const ReduceBuffer& b : buffers) total += b.count;
    VDNN_CHECK(total <= static_cast<size_t>(INT32_MAX), "a gradient bucket of " << total
                                                                                << " floats is too large for one MPI call");
    staging_.resize(total);
    float* at = staging_.data();
    for (const ReduceBuffer& b : buffers)
      for (size_t i = 0; i < b.count; ++i) *at++ = b.data[i] * scale;
    collective(VDNN_MSG("the all-reduce of a gradient bucket (" << total << " floats)"), [&] {
      return MPI_Allreduce(MPI_IN_PLACE, staging_.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, data_);
    });
    at = staging_.data();
    for (const ReduceBuffer& b : buffers) {
      std::copy_n(at, b.count, b.data);
      at += b.count;
    }
  }

  void sum_host(double* values, int count) override {
    collective("a sum of training statistics", [&] {
      return MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, data_);
    });
  }

  void broadcast_host(void* data, size_t bytes, int root) override {
    VDNN_CHECK(bytes <= static_cast<size_t>(INT32_MAX), "broadcast of " << bytes << " bytes is too large");
    collective("a broadcast", [&] { return MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, data_); });
  }

  std::vector<std::string> gather_strings(const std::string& text) override {
    std::vector<int> lengths(size_);
    int mine = static_cast<int>(text.size());
    collective("a gather of lengths", [&] { return MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, data_); });
    std::vector<int> offsets(size_, 0);
    for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
    collective("a gather of texts", [&] {
      return MPI_Allgatherv(text.data(), mine, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, data_);
    });
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(offsets[r], lengths[r]));
    return out;
  }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);
  }

 private:
  // Runs one blocking collective under the watchdog: it is named in the timeout message.
  template <typename Call>
  void collective(const std::string& what, Call call) {
    std::lock_guard issue(issue_mu_);
    announce();
    {
      std::lock_guard lock(watch_mu_);
      what_ = what;
      since_ = Clock::now();
      busy_ = true;
    }
    const int rc = call();
    {
      std::lock_guard lock(watch_mu_);
      busy_ = false;
    }
    if (rc != MPI_SUCCESS) VDNN_THROW("rank " << rank_ << ": " << what << " failed: " << mpi_error(rc));
  }

  // Tells every peer that this rank reached the next collective.
  void announce() {
    const int64_t seq = ++seq_;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      int done = 1;
      if (send_[peer] != MPI_REQUEST_NULL) MPI_Test(&send_[peer], &done, MPI_STATUS_IGNORE);
      if (!done) continue;  // the peer has not taken the last note yet: it sees the newer one later
      note_out_[peer] = seq;
      MPI_Isend(&note_out_[peer], 1, MPI_INT64_T, peer, kNoteTag, notes_, &send_[peer]);
    }
  }

  // The watchdog thread: takes the peers' notes, and ends the job when a collective hangs.
  void watch() {
    std::unique_lock lock(watch_mu_);
    while (!stop_) {
      watch_cv_.wait_for(lock, std::chrono::milliseconds(100));
      take_notes();
      if (!busy_ || options_.timeout_seconds <= 0) continue;
      const double waited = std::chrono::duration<double>(Clock::now() - since_).count();
      if (waited < options_.timeout_seconds) continue;
      std::fprintf(stderr, "error: %s\n", timeout_message(waited).c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }

  void take_notes() {
    for (int peer = 0; peer < size_; ++peer) {
      while (recv_[peer] != MPI_REQUEST_NULL) {
        int done = 0;
        MPI_Test(&recv_[peer], &done, MPI_STATUS_IGNORE);
        if (!done) break;
        seen_[peer] = std::max(seen_[peer], note_in_[peer]);
        MPI_Irecv(&note_in_[peer], 1, MPI_INT64_T, peer, kNoteTag, notes_, &recv_[peer]);
      }
    }
  }

  std::string timeout_message(double waited) const {
    std::ostringstream lost;
    int count = 0;
    for (int peer = 0; peer < size_; ++peer)
      if (peer != rank_ && seen_[peer] < seq_) {
        lost << (count++ ? ", " : "") << "rank " << peer << " (last reached collective #" << seen_[peer] << ")";
      }
    std::ostringstream m;
    m << "rank " << rank_ << ": " << what_ << ", collective #" << seq_ << ", did not complete within "
      << options_.timeout_seconds << " s (--collective-timeout; waited " << static_cast<int>(waited) << " s): ";
    if (count)
      m << "lost " << lost.str() << ": it was killed, crashed, hangs or stopped on an error of its own";
    else
      m << "every rank reached it, so the network or the MPI library failed";
    m << "; stopping every rank (the last checkpoint written stays intact)";
    return m.str();
  }

  CommOptions options_;
  int rank_ = 0, size_ = 1;
  MPI_Comm data_ = MPI_COMM_NULL, notes_ = MPI_COMM_NULL;
  std::mutex issue_mu_;  // one collective at a time from this rank
  std::atomic<int64_t> seq_{0};  // collectives this rank has started (the watchdog reads it)
  std::vector<int64_t> note_out_;
  std::vector<MPI_Request> send_;
  std::vector<float> staging_;
  // The watchdog's state.
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool stop_ = false, busy_ = false;
  std::string what_;
  Clock::time_point since_;
  std::vector<int64_t> seen_, note_in_;  // per peer: the last collective it reached
  std::vector<MPI_Request> recv_;
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const CommOptions& options) {
  return std::make_unique<MpiCommunicator>(options);
}

}  // namespace vdnn
