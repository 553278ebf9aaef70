// device/cpu_device.h — the Device interface on host threads, with a model of the PCIe link.
//
// Model: each of the three streams is a worker thread draining a FIFO queue (mutex + condition
// variable). launch() enqueues a function; record() enqueues a marker that completes an event;
// wait() enqueues a task that blocks that stream's worker until the event completes (the caller
// never blocks); copy_async() enqueues a memcpy. On the d2h and h2d streams a copy lasts at least
// link.latency_seconds + bytes / link.bandwidth_bytes_per_second (the real memcpy, then a sleep on
// a steady clock for the rest), which emulates a GPU's PCIe link on a machine without one; copies
// on the compute stream (device to device) are plain memcpy. Work on the compute stream may use
// OpenMP (oneDNN) inside; the device does not care.
//
//   vdnn::CpuDevice dev(vdnn::parse_link("12.8", "10us"));   // 12.8 GB/s, 10 us per copy
//   dev.launch(vdnn::StreamKind::kCompute, [&] { fill(buf); });
//   dev.wait(vdnn::StreamKind::kD2H, dev.record(vdnn::StreamKind::kCompute));
//   vdnn::Event saved = dev.copy_async(vdnn::StreamKind::kD2H, host, buf, bytes);
//   saved.synchronize();                                       // host blocks until copied
//   double s = dev.stats(vdnn::StreamKind::kD2H).busy_seconds; // >= 10us + bytes / 12.8e9
//
// Destruction abandons queued work: each worker finishes the item it is running (a link-model
// sleep is cut short), drops the rest without running it, completes the events of the dropped
// records (so no holder of an Event hangs) and exits. A kept error is discarded. Call
// synchronize_all() first when the work must run.
#pragma once

#include <array>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "device/device.h"

namespace vdnn {

// The emulated host<->device link. Zero fields mean "no limit".
struct LinkModel {
  double bandwidth_bytes_per_second = 0;  // 0: unlimited
  double latency_seconds = 0;             // per copy
};

// The least time a copy of `bytes` bytes takes on `link`: latency + bytes / bandwidth.
double link_seconds(const LinkModel& link, size_t bytes);

// The slowest link and the longest latency the flags accept: outside them one step's copies would
// take hours (or days), a run that never ends rather than an emulation.
inline constexpr double kMinLinkGBps = 0.001;
inline constexpr double kMaxLinkGBps = 1e6;  // 1 PB/s; "1e308" GB/s overflowed to an infinite rate
inline constexpr double kMaxLinkLatencySeconds = 1.0;

// Parses --link-bandwidth (GB/s, 1 GB = 1e9 bytes: "12.8", "12.8GB/s"; "0" = unlimited; else
// kMinLinkGBps to kMaxLinkGBps) and --link-latency ("10us", "0.01ms", "2e-6s", "500ns", "0"; at most
// kMaxLinkLatencySeconds). Throws vdnn::Error naming the flag and the valid range.
LinkModel parse_link(const std::string& bandwidth_text, const std::string& latency_text);

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(LinkModel link = {});
  ~CpuDevice() override;

  void launch(StreamKind s, std::function<void()> work) override;
  Event record(StreamKind s) override;
  void wait(StreamKind s, const Event& e) override;
  Event copy_async(StreamKind s, void* dst, const void* src, size_t bytes) override;
  void synchronize(StreamKind s) override;
  void synchronize_all() override;
  const char* name() const override { return "cpu"; }

  StreamStats stats(StreamKind s) const override;
  void reset_stats() override;

  const LinkModel& link() const { return link_; }

 private:
  struct Task;
  struct Stream;

  Stream& stream(StreamKind s) const;
  void enqueue(StreamKind s, Task task);
  void run_worker(Stream& st);
  void run_task(Stream& st, Task& task);
  void run_copy(Stream& st, const Task& task);
  void keep_error(std::exception_ptr error);
  void check_not_worker(const char* what) const;
  void stop_workers();

  LinkModel link_;
  std::array<std::unique_ptr<Stream>, kStreamCount> streams_;
  std::atomic<bool> failed_{false};  // an error is kept: skip work and copies
  mutable std::mutex error_mutex_;
  std::exception_ptr error_;  // the first exception a work item threw; guarded
};

// A CpuDevice behind the backend-neutral interface.
std::unique_ptr<Device> make_cpu_device(LinkModel link = {});

}  // namespace vdnn
