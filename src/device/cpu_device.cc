#include "device/cpu_device.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <system_error>
#include <thread>
#include <utility>

#include "vdnn/error.h"

namespace vdnn {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The event a CpuDevice marker completes.
class CpuEventState final : public EventState {
 public:
  bool query() const override {
    std::lock_guard lock(mutex_);
    return done_;
  }
  void synchronize() const override {
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [this] { return done_; });
  }
  void complete() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable done_cv_;
  bool done_ = false;
};

// The device whose worker runs on this thread (null on host threads), to catch self-deadlocks.
thread_local const CpuDevice* current_device = nullptr;

}  // namespace

struct CpuDevice::Task {
  enum class Kind { kWork, kCopy, kWait, kMarker };
  Kind kind = Kind::kWork;
  std::function<void()> work;             // kWork
  void* dst = nullptr;                    // kCopy
  const void* src = nullptr;              // kCopy
  size_t bytes = 0;                       // kCopy
  Event event;                            // kWait
  std::shared_ptr<CpuEventState> marker;  // kMarker
};

struct CpuDevice::Stream {
  StreamKind kind = StreamKind::kCompute;
  bool link_limited = false;  // copies obey the link model (d2h, h2d)
  mutable std::mutex mutex;   // guards queue, stop and stats
  std::condition_variable cv;
  std::deque<Task> queue;
  bool stop = false;
  StreamStats stats;
  std::thread worker;
};

double link_seconds(const LinkModel& link, size_t bytes) {
  double s = link.latency_seconds;
  if (link.bandwidth_bytes_per_second > 0) s += double(bytes) / link.bandwidth_bytes_per_second;
  return s;
}

CpuDevice::CpuDevice(LinkModel link) : link_(link) {
  VDNN_CHECK(std::isfinite(link_.bandwidth_bytes_per_second) && link_.bandwidth_bytes_per_second >= 0 &&
                 std::isfinite(link_.latency_seconds) && link_.latency_seconds >= 0,
             "bad link model " << link_.bandwidth_bytes_per_second << " B/s, " << link_.latency_seconds << " s");
  for (int i = 0; i < kStreamCount; ++i) {
    streams_[i] = std::make_unique<Stream>();
    streams_[i]->kind = static_cast<StreamKind>(i);
    streams_[i]->link_limited = streams_[i]->kind == StreamKind::kD2H || streams_[i]->kind == StreamKind::kH2D;
  }
  try {
    for (auto& st : streams_) st->worker = std::thread([this, s = st.get()] { run_worker(*s); });
  } catch (const std::system_error& e) {
    stop_workers();
    throw Error(VDNN_MSG("cpu device: cannot start a stream thread: " << e.what()));
  }
}

CpuDevice::~CpuDevice() { stop_workers(); }

void CpuDevice::stop_workers() {
  for (auto& st : streams_) {
    {
      std::lock_guard lock(st->mutex);
      st->stop = true;
    }
    st->cv.notify_all();
  }
  for (auto& st : streams_)
    if (st->worker.joinable()) st->worker.join();
}

CpuDevice::Stream& CpuDevice::stream(StreamKind s) const {
  const int i = static_cast<int>(s);
  VDNN_CHECK(i >= 0 && i < kStreamCount, "bad stream " << i);
  return *streams_[i];
}

void CpuDevice::enqueue(StreamKind s, Task task) {
  Stream& st = stream(s);
  {
    std::lock_guard lock(st.mutex);
    VDNN_CHECK(!st.stop, "work enqueued on stream " << stream_name(s) << " of a dying device");
    st.queue.push_back(std::move(task));
  }
  st.cv.notify_one();
}

void CpuDevice::launch(StreamKind s, std::function<void()> work) {
  VDNN_CHECK(work, "empty work item launched on stream " << stream_name(s));
  Task task;
  task.kind = Task::Kind::kWork;
  task.work = std::move(work);
  enqueue(s, std::move(task));
}

Event CpuDevice::record(StreamKind s) {
  auto state = std::make_shared<CpuEventState>();
  Task task;
  task.kind = Task::Kind::kMarker;
  task.marker = state;
  enqueue(s, std::move(task));
  return Event(std::move(state));
}

void CpuDevice::wait(StreamKind s, const Event& e) {
  stream(s);              // validates s
  if (e.query()) return;  // already complete (a default Event always is): nothing to order
  Task task;
  task.kind = Task::Kind::kWait;
  task.event = e;
  enqueue(s, std::move(task));
}

Event CpuDevice::copy_async(StreamKind s, void* dst, const void* src, size_t bytes) {
  VDNN_CHECK(bytes == 0 || (dst && src), "copy of " << bytes << " bytes with a null pointer on " << stream_name(s));
  Task task;
  task.kind = Task::Kind::kCopy;
  task.dst = dst;
  task.src = src;
  task.bytes = bytes;
  enqueue(s, std::move(task));
  return record(s);
}

void CpuDevice::check_not_worker(const char* what) const {
  VDNN_CHECK(current_device != this, what << " called from a work item of the same device");
}

void CpuDevice::synchronize(StreamKind s) {
  check_not_worker("synchronize()");
  record(s).synchronize();
  std::lock_guard lock(error_mutex_);
  if (error_) std::rethrow_exception(error_);
}

void CpuDevice::synchronize_all() {
  check_not_worker("synchronize_all()");
  std::array<Event, kStreamCount> ends;
  for (int i = 0; i < kStreamCount; ++i) ends[i] = record(static_cast<StreamKind>(i));
  for (const Event& e : ends) e.synchronize();
  std::exception_ptr error;
  {
    std::lock_guard lock(error_mutex_);
    error = std::exchange(error_, nullptr);
    failed_.store(false, std::memory_order_release);
  }
  if (error) std::rethrow_exception(error);
}

StreamStats CpuDevice::stats(StreamKind s) const {
  Stream& st = stream(s);
  std::lock_guard lock(st.mutex);
  return st.stats;
}

void CpuDevice::reset_stats() {
  for (auto& st : streams_) {
    std::lock_guard lock(st->mutex);
    st->stats = StreamStats{};
  }
}

void CpuDevice::keep_error(std::exception_ptr error) {
  std::lock_guard lock(error_mutex_);
  if (!error_) error_ = std::move(error);
  failed_.store(true, std::memory_order_release);
}

void CpuDevice::run_worker(Stream& st) {
  current_device = this;
  for (;;) {
    Task task;
    {
      std::unique_lock lock(st.mutex);
      st.cv.wait(lock, [&st] { return st.stop || !st.queue.empty(); });
      if (st.stop) break;
      task = std::move(st.queue.front());
      st.queue.pop_front();
    }
    run_task(st, task);
  }
  // Abandon what is left, but complete its events: another stream or a host thread may wait.
  std::deque<Task> dropped;
  {
    std::lock_guard lock(st.mutex);
    dropped.swap(st.queue);
  }
  for (Task& task : dropped)
    if (task.marker) task.marker->complete();
}

void CpuDevice::run_task(Stream& st, Task& task) {
  switch (task.kind) {
    case Task::Kind::kMarker:
      task.marker->complete();
      return;
    case Task::Kind::kWait: {
      const auto start = Clock::now();
      task.event.synchronize();
      const double waited = seconds_since(start);
      std::lock_guard lock(st.mutex);
      st.stats.wait_seconds += waited;
      return;
    }
    case Task::Kind::kWork: {
      if (failed_.load(std::memory_order_acquire)) return;  // sticky error: skip
      const auto start = Clock::now();
      try {
        task.work();
      } catch (...) {
        keep_error(std::current_exception());
      }
      task.work = nullptr;  // release captures on the worker, before the stats are visible
      const double busy = seconds_since(start);
      std::lock_guard lock(st.mutex);
      st.stats.busy_seconds += busy;
      st.stats.ops += 1;
      return;
    }
    case Task::Kind::kCopy:
      if (failed_.load(std::memory_order_acquire)) return;
      run_copy(st, task);
      return;
  }
}

void CpuDevice::run_copy(Stream& st, const Task& task) {
  const auto start = Clock::now();
  if (task.bytes > 0) std::memcpy(task.dst, task.src, task.bytes);
  if (st.link_limited) {
    const auto least = std::chrono::duration<double>(link_seconds(link_, task.bytes));
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(least);
    std::unique_lock lock(st.mutex);
    // Sleeps the rest of the link time; a dying device cuts it short.
    st.cv.wait_until(lock, deadline, [&st] { return st.stop; });
  }
  const double busy = seconds_since(start);
  std::lock_guard lock(st.mutex);
  st.stats.busy_seconds += busy;
  st.stats.ops += 1;
  st.stats.bytes_copied += task.bytes;
}

std::unique_ptr<Device> make_cpu_device(LinkModel link) { return std::make_unique<CpuDevice>(link); }

// --- flag parsing ---------------------------------------------------------------------------

namespace {

// Parses a leading non-negative finite decimal number; returns the unparsed rest in *rest.
bool parse_number(const std::string& text, double* value, std::string* rest) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  while (begin < end && *begin == ' ') ++begin;
  if (begin == end || *begin == '-' || *begin == '+') return false;
  auto [ptr, ec] = std::from_chars(begin, end, *value, std::chars_format::general);
  if (ec != std::errc() || !std::isfinite(*value) || *value < 0) return false;
  while (ptr < end && *ptr == ' ') ++ptr;
  rest->assign(ptr, end);
  while (!rest->empty() && rest->back() == ' ') rest->pop_back();
  return true;
}

double parse_bandwidth(const std::string& text) {
  double gbps = 0;
  std::string unit;
  if (!parse_number(text, &gbps, &unit) || !(unit.empty() || unit == "GB/s")) {
    VDNN_THROW("--link-bandwidth: cannot parse '" << text
                                                  << "'; give GB/s (1e9 bytes/s), e.g. 12.8, "
                                                     "12.8GB/s, or 0 for unlimited");
  }
  // Far below any real link, a run would never end (1e-9 GB/s moves a 1 MiB tensor in 12 days).
  if (gbps > 0 && gbps < kMinLinkGBps)
    VDNN_THROW("--link-bandwidth: " << text << " GB/s is too slow to finish a step; give 0 (unlimited) or at least "
                                    << kMinLinkGBps << " GB/s");
  if (gbps > kMaxLinkGBps)
    VDNN_THROW("--link-bandwidth: " << text << " GB/s is above " << kMaxLinkGBps
                                    << " GB/s; give 0 for an unlimited link");
  return gbps * 1e9;
}

double parse_latency(const std::string& text) {
  double value = 0;
  std::string unit;
  const bool parsed = parse_number(text, &value, &unit);
  if (parsed && unit.empty() && value == 0) return 0;
  double seconds = -1;
  if (parsed) {
    if (unit == "s") seconds = value;
    if (unit == "ms") seconds = value * 1e-3;
    if (unit == "us") seconds = value * 1e-6;
    if (unit == "ns") seconds = value * 1e-9;
  }
  // A step copies once per offloaded tensor: above a second per copy a run would never end.
  if (seconds > kMaxLinkLatencySeconds)
    VDNN_THROW("--link-latency: " << text << " per copy is too long to finish a step; give 0 to "
                                  << kMaxLinkLatencySeconds << "s (e.g. 10us)");
  if (seconds >= 0) return seconds;
  VDNN_THROW("--link-latency: cannot parse '" << text
                                              << "'; give a time with a unit (s, ms, us, ns), "
                                                 "e.g. 10us, 0.01ms, or 0");
}

}  // namespace

LinkModel parse_link(const std::string& bandwidth_text, const std::string& latency_text) {
  LinkModel link;
  link.bandwidth_bytes_per_second = parse_bandwidth(bandwidth_text);
  link.latency_seconds = parse_latency(latency_text);
  return link;
}

}  // namespace vdnn
