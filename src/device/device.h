// device/device.h — backend-neutral streams, events and asynchronous copies.
//
// Model: a Device owns four in-order streams (compute, device-to-host, host-to-device, and the
// communication stream that runs data-parallel collectives, comm/communicator.h), the shape
// of CUDA's cudaStream_t / cudaEvent_t / cudaMemcpyAsync. Every call returns to the caller at once;
// the work runs later, in the order it was enqueued on its stream. Streams order each other only
// through events: record(s) captures "all work enqueued on s so far", wait(t, e) makes later work
// on t start after e completes (the caller never blocks). The host blocks only in synchronize*()
// or Event::synchronize(). Backends: CpuDevice (one worker thread per stream, cpu_device.h);
// a CUDA device maps each call one-to-one onto the runtime API.
//
//   std::unique_ptr<vdnn::Device> dev = vdnn::make_cpu_device({});
//   dev->launch(vdnn::StreamKind::kCompute, [&] { forward(x, y); });   // writes y
//   vdnn::Event y_ready = dev->record(vdnn::StreamKind::kCompute);
//   dev->wait(vdnn::StreamKind::kD2H, y_ready);
//   vdnn::Event y_saved = dev->copy_async(vdnn::StreamKind::kD2H, host_y, y, y_bytes);
//   dev->wait(vdnn::StreamKind::kCompute, y_saved);   // y may be overwritten after this point
//   dev->synchronize_all();                           // end of step; rethrows a failed work item
//
// Failures: if a work item throws, the device keeps the first exception (later ones are dropped)
// and, like a CUDA sticky error, skips every later work item and copy on all streams. Waits and
// events still complete, so nothing hangs. synchronize(s) rethrows the kept exception (and keeps
// it); synchronize_all() rethrows it and clears it, after which the device runs work again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

namespace vdnn {

// The streams of a device. Values index arrays of per-stream state.
enum class StreamKind { kCompute = 0, kD2H = 1, kH2D = 2, kComm = 3 };
constexpr int kStreamCount = 4;

// "compute", "d2h", "h2d" or "comm".
constexpr const char* stream_name(StreamKind s) {
  switch (s) {
    case StreamKind::kCompute:
      return "compute";
    case StreamKind::kD2H:
      return "d2h";
    case StreamKind::kH2D:
      return "h2d";
    case StreamKind::kComm:
      return "comm";
  }
  return "?";
}

// Backend-defined completion state behind an Event (CpuEventState, a cudaEvent_t wrapper, ...).
// Implementations must be thread-safe: query() and synchronize() are called from any thread.
class EventState {
 public:
  EventState() = default;
  EventState(const EventState&) = delete;
  EventState& operator=(const EventState&) = delete;
  virtual ~EventState() = default;

  virtual bool query() const = 0;        // completed?
  virtual void synchronize() const = 0;  // blocks the calling thread until completed
};

// An opaque, cheaply copyable handle to a point in a stream. Copies share one state. A
// default-constructed Event has no state and counts as completed.
class Event {
 public:
  Event() = default;
  explicit Event(std::shared_ptr<const EventState> state) : state_(std::move(state)) {}

  bool query() const { return !state_ || state_->query(); }
  void synchronize() const {
    if (state_) state_->synchronize();
  }
  // The backend state, for a backend to downcast its own events (null for a default Event).
  const EventState* state() const { return state_.get(); }

 private:
  std::shared_ptr<const EventState> state_;
};

// Per-stream counters since construction or the last reset_stats().
struct StreamStats {
  double busy_seconds = 0;  // time spent running work items and copies (link-model time included)
  double wait_seconds = 0;  // time the stream was blocked in wait() on another event
  uint64_t ops = 0;         // work items and copies that ran (not waits, not records)
  size_t bytes_copied = 0;  // bytes moved by copy_async on this stream
};

class Device {
 public:
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  // Destroying a device with work still enqueued: the backend decides whether that work runs
  // (CpuDevice drops it); call synchronize_all() first when it must.
  virtual ~Device() = default;

  // Enqueues host-side work that runs in stream order. CPU: on the stream's worker thread. CUDA:
  // called on the host in order, to launch kernels onto the stream. Returns at once.
  virtual void launch(StreamKind s, std::function<void()> work) = 0;

  // An event that completes when all work enqueued on s so far is done (cudaEventRecord).
  virtual Event record(StreamKind s) = 0;

  // Later work on s starts only after e completes (cudaStreamWaitEvent). Never blocks the caller.
  virtual void wait(StreamKind s, const Event& e) = 0;

  // Copies `bytes` bytes from src to dst in stream order; returns the event of its completion.
  // Both buffers must stay valid and untouched by others until that event completes.
  virtual Event copy_async(StreamKind s, void* dst, const void* src, size_t bytes) = 0;

  // Blocks until all work enqueued on s (or on every stream) so far is done, then rethrows a
  // failed work item's exception (see the header comment).
  virtual void synchronize(StreamKind s) = 0;
  virtual void synchronize_all() = 0;

  virtual const char* name() const = 0;

  virtual StreamStats stats(StreamKind s) const = 0;
  virtual void reset_stats() = 0;
};

}  // namespace vdnn
