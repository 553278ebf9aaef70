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
constexpr std::chrono::milliseconds kBeat{250};  // how often a rank tells its peers where it is

// What a collective is, in the notes the ranks exchange: a rank in its final barrier has left the run.
enum class Kind : int64_t { kGradients, kStatistics, kBroadcast, kGather, kFinalBarrier };
constexpr int64_t kKinds = 5;

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kGradients:
      return "a gradient all-reduce";
    case Kind::kStatistics:
      return "a sum of training statistics";
    case Kind::kBroadcast:
      return "a broadcast";
    case Kind::kGather:
      return "a gather";
    case Kind::kFinalBarrier:
      return "the final barrier";
  }
  return "?";
}

// A note: "I have reached collective #seq, of this kind", one integer (later collectives, larger).
struct Note {
  int64_t value = 0;  // seq * kKinds + kind
  int64_t seq() const { return value / kKinds; }
  Kind kind() const { return static_cast<Kind>(value % kKinds); }
  static Note of(int64_t seq, Kind kind) { return {seq * kKinds + static_cast<int64_t>(kind)}; }
};

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
      VDNN_THROW(
          "this MPI library does not provide MPI_THREAD_MULTIPLE (the collective watchdog needs it); "
          "use an MPI built with thread support (Debian's Open MPI has it)");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_dup(MPI_COMM_WORLD, &data_);
    MPI_Comm_dup(MPI_COMM_WORLD, &notes_);
    MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(notes_, MPI_ERRORS_RETURN);
    seen_.assign(size_, Note{});
    heard_.assign(size_, Clock::now());
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
      collective("the final barrier", Kind::kFinalBarrier, [&] { return MPI_Barrier(data_); });
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
    VDNN_CHECK(total <= static_cast<size_t>(INT32_MAX),
               "a gradient bucket of " << total << " floats is too large for one MPI call");
    staging_.resize(total);
    float* at = staging_.data();
    for (const ReduceBuffer& b : buffers)
      for (size_t i = 0; i < b.count; ++i) *at++ = b.data[i] * scale;
    collective(VDNN_MSG("the all-reduce of a gradient bucket (" << total << " floats)"), Kind::kGradients, [&] {
      return MPI_Allreduce(MPI_IN_PLACE, staging_.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, data_);
    });
    at = staging_.data();
    for (const ReduceBuffer& b : buffers) {
      std::copy_n(at, b.count, b.data);
      at += b.count;
    }
  }

  void sum_host(double* values, int count) override {
    collective("a sum of training statistics", Kind::kStatistics,
               [&] { return MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, data_); });
  }

  void broadcast_host(void* data, size_t bytes, int root) override {
    VDNN_CHECK(bytes <= static_cast<size_t>(INT32_MAX), "broadcast of " << bytes << " bytes is too large");
    collective("a broadcast", Kind::kBroadcast,
               [&] { return MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, data_); });
  }

  std::vector<std::string> gather_strings(const std::string& text) override {
    std::vector<int> lengths(size_);
    int mine = static_cast<int>(text.size());
    collective("a gather of lengths", Kind::kGather,
               [&] { return MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, data_); });
    std::vector<int> offsets(size_, 0);
    for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
    collective("a gather of texts", Kind::kGather, [&] {
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

  // The note the final barrier would send (the next collective, a final barrier), sent at the next
  // beat without waiting in the barrier: a peer in that collective or a later one sees the rank gone.
  void leave_run() override {
    std::lock_guard issue(issue_mu_);
    at_ = Note::of(at_.load().seq() + 1, Kind::kFinalBarrier);
  }

 private:
  // Runs one blocking collective under the watchdog: it is named in the timeout message.
  template <typename Call>
  void collective(const std::string& what, Kind kind, Call call) {
    std::lock_guard issue(issue_mu_);
    at_ = Note::of(at_.load().seq() + 1, kind);
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

  // The watchdog thread: every kBeat it tells every peer which collective this rank has reached
  // (a heartbeat: a stopped or dead rank falls silent) and takes theirs; it ends the job at once
  // when a peer has left the run, and when a collective has waited past the timeout.
  void watch() {
    std::unique_lock lock(watch_mu_);
    while (!stop_) {
      watch_cv_.wait_for(lock, kBeat);
      send_notes();
      take_notes();
      if (!busy_) continue;
      if (const std::string left = peer_left(); !left.empty()) stop_job(left);
      const double waited = seconds_since(since_);
      if (options_.timeout_seconds > 0 && waited >= options_.timeout_seconds) stop_job(timeout_message(waited));
    }
  }

  [[noreturn]] void stop_job(const std::string& why) {
    std::fprintf(stderr, "error: %s; stopping every rank (the last checkpoint written stays intact)\n", why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::_Exit(3);
  }

  void send_notes() {
    const Note at = at_;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      int done = 1;
      if (send_[peer] != MPI_REQUEST_NULL) MPI_Test(&send_[peer], &done, MPI_STATUS_IGNORE);
      if (!done) continue;  // the peer has not taken the last note: it is silent, or busy; try later
      note_out_[peer] = at.value;
      MPI_Isend(&note_out_[peer], 1, MPI_INT64_T, peer, kNoteTag, notes_, &send_[peer]);
    }
  }

  void take_notes() {
    for (int peer = 0; peer < size_; ++peer) {
      while (recv_[peer] != MPI_REQUEST_NULL) {
        int done = 0;
        MPI_Test(&recv_[peer], &done, MPI_STATUS_IGNORE);
        if (!done) break;
        seen_[peer].value = std::max(seen_[peer].value, note_in_[peer]);
        heard_[peer] = Clock::now();
        MPI_Irecv(&note_in_[peer], 1, MPI_INT64_T, peer, kNoteTag, notes_, &recv_[peer]);
      }
    }
  }

  static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

  // "rank 0: a sum of training statistics, collective #41"
  std::string waiting_in(Note at) const {
    return VDNN_MSG("rank " << rank_ << ": " << what_ << ", collective #" << at.seq());
  }

  // A peer in its final barrier at or before the collective this rank waits in (which is not that
  // barrier) has left the run early: no one will ever join this collective. "" when none has.
  std::string peer_left() const {
    const Note at = at_;
    if (at.kind() == Kind::kFinalBarrier) return "";
    for (int peer = 0; peer < size_; ++peer)
      if (peer != rank_ && seen_[peer].kind() == Kind::kFinalBarrier && seen_[peer].seq() <= at.seq())
        return VDNN_MSG(waiting_in(at) << ", will never complete: rank " << peer
                                       << " has left the run (it ended at its collective #" << seen_[peer].seq()
                                       << "): it was interrupted (Ctrl-C, SIGTERM), stopped on an error, or had "
                                          "fewer steps to run");
    return "";
  }

  // Who is to blame: peers that fell silent (stopped, dead, or their whole process hangs), else
  // peers that are alive but never reached this collective (stuck elsewhere, e.g. in a kernel),
  // else peers that reached another kind of collective under this number (the ranks diverged).
  std::string timeout_message(double waited) const {
    const Note at = at_;
    const double silence = std::max(2.0, std::min(10.0, options_.timeout_seconds / 2));
    std::ostringstream silent, behind, other;
    int silent_count = 0, behind_count = 0, other_count = 0;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      const double quiet = seconds_since(heard_[peer]);
      const Note seen = seen_[peer];
      if (quiet >= silence)
        silent << (silent_count++ ? ", " : "") << "rank " << peer << " (silent for " << static_cast<int>(quiet)
               << " s; it last reached collective #" << seen.seq() << ")";
      else if (seen.seq() < at.seq())
        behind << (behind_count++ ? ", " : "") << "rank " << peer << " (alive, but at collective #" << seen.seq()
               << ")";
      else if (seen.kind() != at.kind())
        other << (other_count++ ? ", " : "") << "rank " << peer << " is in " << kind_name(seen.kind());
    }
    std::ostringstream m;
    m << waiting_in(at) << ", did not complete within " << options_.timeout_seconds
      << " s (--collective-timeout; waited " << static_cast<int>(waited) << " s): ";
    if (silent_count)
      m << "lost " << silent.str() << ": it was killed, stopped or hangs";
    else if (behind_count)
      m << "waiting for " << behind.str() << ": it never reached this collective (stuck, or stopped on an error)";
    else if (other_count)
      m << "the ranks issue different collectives: here " << kind_name(at.kind()) << ", but " << other.str();
    else
      m << "every rank is alive and waits in it: the network or the MPI library failed";
    return m.str();
  }

  CommOptions options_;
  int rank_ = 0, size_ = 1;
  MPI_Comm data_ = MPI_COMM_NULL, notes_ = MPI_COMM_NULL;
  std::mutex issue_mu_;     // one collective at a time from this rank
  std::atomic<Note> at_{};  // the last collective this rank started (the watchdog reads it)
  std::vector<float> staging_;
  // The watchdog's state (its thread alone sends and takes notes).
  std::vector<int64_t> note_out_;
  std::vector<MPI_Request> send_;
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool stop_ = false, busy_ = false;
  std::string what_;
  Clock::time_point since_;
  std::vector<Note> seen_;                // per peer: the last collective it reached
  std::vector<int64_t> note_in_;          // per peer: the note being received
  std::vector<Clock::time_point> heard_;  // per peer: when its last note came
  std::vector<MPI_Request> recv_;
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const CommOptions& options) {
  return std::make_unique<MpiCommunicator>(options);
}

}  // namespace vdnn
