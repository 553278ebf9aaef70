// Tests for device/cpu_device: stream order, asynchrony, cross-stream events, the link model,
// sticky errors, shutdown with pending work, stats, and the --link-* parsers. Ordering is forced
// with gates (never with sleeps); durations are only bounded from below.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "device/cpu_device.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_cpu_device {

using Clock = std::chrono::steady_clock;
constexpr StreamKind kAll[] = {StreamKind::kCompute, StreamKind::kD2H, StreamKind::kH2D, StreamKind::kComm};

// A one-shot gate: wait() blocks until open() was called.
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(CpuDevice, RunsWorkInStreamOrderOnEveryStream) {
  CpuDevice dev;
  EXPECT_STREQ(dev.name(), "cpu");
  std::vector<int> order[kStreamCount];  // each touched only by its stream's worker
  for (int i = 0; i < 200; ++i)
    for (StreamKind s : kAll) dev.launch(s, [&order, s, i] { order[int(s)].push_back(i); });
  dev.synchronize_all();
  std::vector<int> expected(200);
  std::iota(expected.begin(), expected.end(), 0);
  for (StreamKind s : kAll) EXPECT_EQ(order[int(s)], expected) << stream_name(s);
}

TEST(CpuDevice, LaunchReturnsBeforeWorkRuns) {
  CpuDevice dev;
  Gate gate;
  bool ran = false;  // written by the worker after the gate, read by the host after synchronize
  dev.launch(StreamKind::kCompute, [&] {
    gate.wait();
    ran = true;
  });
  Event done = dev.record(StreamKind::kCompute);
  EXPECT_FALSE(done.query());  // the work is held at the gate, so launch() cannot have waited
  gate.open();
  done.synchronize();
  EXPECT_TRUE(done.query());
  EXPECT_TRUE(ran);
}

TEST(CpuDevice, D2HCopyWaitsForComputeEvent) {
  CpuDevice dev;
  Gate gate;
  std::vector<float> device_buf(4096, 0.0f), host_buf(4096, -1.0f);
  dev.launch(StreamKind::kCompute, [&] {
    gate.wait();
    for (size_t i = 0; i < device_buf.size(); ++i) device_buf[i] = float(i);
  });
  dev.wait(StreamKind::kD2H, dev.record(StreamKind::kCompute));
  Event saved = dev.copy_async(StreamKind::kD2H, host_buf.data(), device_buf.data(), device_buf.size() * sizeof(float));
  EXPECT_FALSE(saved.query());  // compute is held at the gate; the copy must not have run
  gate.open();
  saved.synchronize();
  for (size_t i = 0; i < host_buf.size(); ++i) ASSERT_EQ(host_buf[i], float(i)) << i;
  dev.synchronize_all();
}

TEST(CpuDevice, ComputeWaitsForH2DCopy) {
  CpuDevice dev;
  Gate gate;
  std::vector<int> host_buf(1000), device_buf(1000, 0);
  std::iota(host_buf.begin(), host_buf.end(), 1);
  long sum = 0;
  dev.launch(StreamKind::kH2D, [&] { gate.wait(); });
  Event loaded = dev.copy_async(StreamKind::kH2D, device_buf.data(), host_buf.data(), host_buf.size() * sizeof(int));
  dev.wait(StreamKind::kCompute, loaded);
  dev.launch(StreamKind::kCompute, [&] { sum = std::accumulate(device_buf.begin(), device_buf.end(), 0L); });
  Event computed = dev.record(StreamKind::kCompute);
  EXPECT_FALSE(computed.query());
  gate.open();
  dev.synchronize(StreamKind::kCompute);
  EXPECT_TRUE(loaded.query());
  EXPECT_EQ(sum, 1000L * 1001 / 2);
}

TEST(CpuDevice, EventsChainAcrossAllStreams) {
  CpuDevice dev;
  Gate gate;
  std::vector<int> trace;  // appended in a chain compute -> h2d -> d2h -> compute, never at once
  dev.launch(StreamKind::kCompute, [&] {
    gate.wait();
    trace.push_back(0);
  });
  dev.wait(StreamKind::kH2D, dev.record(StreamKind::kCompute));
  dev.launch(StreamKind::kH2D, [&] { trace.push_back(1); });
  Event h2d_done = dev.record(StreamKind::kH2D);
  dev.wait(StreamKind::kD2H, h2d_done);
  dev.launch(StreamKind::kD2H, [&] { trace.push_back(2); });
  Event d2h_done = dev.record(StreamKind::kD2H);
  dev.wait(StreamKind::kCompute, d2h_done);
  dev.launch(StreamKind::kCompute, [&] { trace.push_back(3); });
  Event copy_of_event = h2d_done;  // copies share the state
  EXPECT_FALSE(copy_of_event.query());
  gate.open();
  dev.synchronize(StreamKind::kCompute);
  EXPECT_TRUE(copy_of_event.query());
  EXPECT_TRUE(d2h_done.query());
  EXPECT_EQ(trace, (std::vector<int>{0, 1, 2, 3}));
}

TEST(CpuDevice, DefaultEventIsComplete) {
  Event e;
  EXPECT_TRUE(e.query());
  e.synchronize();
  EXPECT_EQ(e.state(), nullptr);
  CpuDevice dev;
  bool ran = false;
  dev.wait(StreamKind::kD2H, Event{});
  dev.launch(StreamKind::kD2H, [&] { ran = true; });
  dev.synchronize(StreamKind::kD2H);
  EXPECT_TRUE(ran);
}

TEST(CpuDevice, LinkModelMakesCopiesLastAtLeastBytesOverBandwidth) {
  CpuDevice dev(LinkModel{100e6, 0});  // 100 MB/s: 1 MB takes >= 10 ms
  std::vector<char> src(1000000, 7), dst(1000000, 0);
  const auto start = Clock::now();
  dev.copy_async(StreamKind::kD2H, dst.data(), src.data(), src.size()).synchronize();
  EXPECT_GE(seconds_since(start), 0.010);
  EXPECT_EQ(dst, src);
  const StreamStats st = dev.stats(StreamKind::kD2H);
  EXPECT_GE(st.busy_seconds, 0.010);
  EXPECT_EQ(st.ops, 1u);
  EXPECT_EQ(st.bytes_copied, 1000000u);
}

TEST(CpuDevice, LinkLatencyAppliesToEveryCopy) {
  CpuDevice dev(LinkModel{0, 0.002});  // unlimited bandwidth, 2 ms per copy
  char a = 1, b = 0;
  const auto start = Clock::now();
  for (int i = 0; i < 3; ++i) dev.copy_async(StreamKind::kH2D, &b, &a, 1);
  dev.synchronize(StreamKind::kH2D);
  EXPECT_GE(seconds_since(start), 0.006);
  EXPECT_GE(dev.stats(StreamKind::kH2D).busy_seconds, 0.006);
  EXPECT_EQ(b, 1);
  EXPECT_DOUBLE_EQ(link_seconds(LinkModel{1e9, 1e-5}, 1000000), 1e-5 + 1e-3);
  EXPECT_EQ(link_seconds(LinkModel{}, 1 << 30), 0.0);
}

TEST(CpuDevice, SynchronizeAllDrainsEveryStream) {
  CpuDevice dev(LinkModel{0, 0.0001});
  int counts[kStreamCount] = {};
  std::vector<Event> events;
  std::vector<char> src(64, 1), dst[kStreamCount];  // one destination per stream: no overlap
  for (auto& d : dst) d.assign(64, 0);
  for (int i = 0; i < 50; ++i) {
    for (StreamKind s : kAll) {
      dev.launch(s, [&counts, s] { ++counts[int(s)]; });
      events.push_back(dev.copy_async(s, dst[int(s)].data(), src.data(), src.size()));
    }
  }
  dev.synchronize_all();
  for (StreamKind s : kAll) EXPECT_EQ(counts[int(s)], 50) << stream_name(s);
  for (const Event& e : events) EXPECT_TRUE(e.query());
  for (const auto& d : dst) EXPECT_EQ(d, src);
}

TEST(CpuDevice, ExceptionSurfacesAtSynchronizeAndSkipsLaterWork) {
  CpuDevice dev;
  bool later_ran = false;
  int dst = 0;
  const int src = 42;
  dev.launch(StreamKind::kH2D, [] { throw Error("conv1: kernel failed"); });
  dev.launch(StreamKind::kH2D, [&] { later_ran = true; });
  dev.launch(StreamKind::kH2D, [] { throw Error("second failure"); });  // dropped: not the first
  EXPECT_THROW(
      {
        try {
          dev.synchronize(StreamKind::kH2D);
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "conv1: kernel failed");
          throw;
        }
      },
      Error);
  EXPECT_FALSE(later_ran);
  // Sticky: work and copies on other streams are skipped too; events still complete.
  bool compute_ran = false;
  dev.launch(StreamKind::kCompute, [&] { compute_ran = true; });
  Event copied = dev.copy_async(StreamKind::kD2H, &dst, &src, sizeof src);
  copied.synchronize();
  EXPECT_THROW(dev.synchronize(StreamKind::kCompute), Error);
  EXPECT_THROW(dev.synchronize(StreamKind::kH2D), Error);  // kept until synchronize_all()
  EXPECT_THROW(dev.synchronize_all(), Error);              // reported and cleared
  EXPECT_FALSE(compute_ran);
  EXPECT_EQ(dst, 0);
  // The device runs work again.
  dev.launch(StreamKind::kCompute, [&] { compute_ran = true; });
  dev.copy_async(StreamKind::kD2H, &dst, &src, sizeof src);
  EXPECT_NO_THROW(dev.synchronize_all());
  EXPECT_TRUE(compute_ran);
  EXPECT_EQ(dst, 42);
}

TEST(CpuDevice, NonVdnnExceptionsAreKeptToo) {
  CpuDevice dev;
  dev.launch(StreamKind::kCompute, [] { throw std::bad_alloc(); });
  EXPECT_THROW(dev.synchronize_all(), std::bad_alloc);
  EXPECT_NO_THROW(dev.synchronize_all());
}

TEST(CpuDevice, SynchronizeFromOwnWorkItemIsAnInternalError) {
  CpuDevice dev;
  bool caught = false;
  dev.launch(StreamKind::kCompute, [&] {
    try {
      dev.synchronize(StreamKind::kD2H);
    } catch (const InternalError&) {
      caught = true;
    }
  });
  dev.synchronize_all();
  EXPECT_TRUE(caught);
}

TEST(CpuDevice, DestructorAbandonsPendingWorkWithoutHanging) {
  // Each stream is held by a copy with a 1000 s latency; only destruction can cut it short.
  int ran = 0;  // would be touched by workers only; must stay 0
  std::vector<Event> events;
  char a = 1, b = 0, c = 0;
  {
    CpuDevice dev(LinkModel{0, 1000.0});
    dev.copy_async(StreamKind::kD2H, &b, &a, 1);
    dev.copy_async(StreamKind::kH2D, &c, &a, 1);
    for (int i = 0; i < 10; ++i) {
      dev.launch(StreamKind::kD2H, [&] { ++ran; });
      events.push_back(dev.record(StreamKind::kD2H));
    }
    dev.wait(StreamKind::kCompute, events.back());  // compute blocks on an abandoned event
    dev.launch(StreamKind::kCompute, [&] { ++ran; });
    events.push_back(dev.record(StreamKind::kCompute));
  }
  EXPECT_EQ(ran, 0);
  for (const Event& e : events) {
    e.synchronize();  // abandoned events complete: no holder hangs
    EXPECT_TRUE(e.query());
  }
}

TEST(CpuDevice, DestructorFinishesTheRunningItem) {
  Gate entered, release;
  bool finished = false;
  std::thread opener;
  {
    auto dev = make_cpu_device({});
    dev->launch(StreamKind::kCompute, [&] {
      entered.open();
      release.wait();
      finished = true;
    });
    entered.wait();
    opener = std::thread([&] { release.open(); });
  }  // joins the compute worker, which needs the opener thread
  opener.join();
  EXPECT_TRUE(finished);
}

TEST(CpuDevice, StatsCountOpsBytesAndReset) {
  CpuDevice dev;
  std::vector<char> src(1000, 3), dst(1000), dst2(10);
  for (int i = 0; i < 3; ++i) dev.launch(StreamKind::kCompute, [] {});
  dev.copy_async(StreamKind::kH2D, dst.data(), src.data(), 1000);
  dev.copy_async(StreamKind::kH2D, dst.data(), src.data(), 500);
  dev.wait(StreamKind::kD2H, dev.record(StreamKind::kH2D));
  dev.copy_async(StreamKind::kCompute, dst2.data(), src.data(), 10);  // device-to-device
  dev.synchronize_all();
  const StreamStats compute = dev.stats(StreamKind::kCompute);
  const StreamStats h2d = dev.stats(StreamKind::kH2D);
  const StreamStats d2h = dev.stats(StreamKind::kD2H);
  EXPECT_EQ(compute.ops, 4u);
  EXPECT_EQ(compute.bytes_copied, 10u);
  EXPECT_EQ(h2d.ops, 2u);
  EXPECT_EQ(h2d.bytes_copied, 1500u);
  EXPECT_EQ(d2h.ops, 0u);  // waits and records are not ops
  EXPECT_GE(d2h.wait_seconds, 0.0);
  EXPECT_GE(h2d.busy_seconds, 0.0);
  dev.reset_stats();
  for (StreamKind s : kAll) {
    const StreamStats st = dev.stats(s);
    EXPECT_EQ(st.ops, 0u);
    EXPECT_EQ(st.bytes_copied, 0u);
    EXPECT_EQ(st.busy_seconds, 0.0);
    EXPECT_EQ(st.wait_seconds, 0.0);
  }
}

TEST(CpuDevice, ManyHostThreadsMayLaunch) {
  CpuDevice dev;
  int count = 0;  // touched only by the compute worker
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) dev.launch(StreamKind::kCompute, [&] { ++count; });
    });
  for (auto& t : threads) t.join();
  dev.synchronize_all();
  EXPECT_EQ(count, 400);
}

TEST(ParseLink, AcceptsGigabytesPerSecondAndTimesWithUnits) {
  LinkModel a = parse_link("12.8", "10us");
  EXPECT_DOUBLE_EQ(a.bandwidth_bytes_per_second, 12.8e9);
  EXPECT_DOUBLE_EQ(a.latency_seconds, 1e-5);
  LinkModel b = parse_link("0", "0");
  EXPECT_EQ(b.bandwidth_bytes_per_second, 0.0);
  EXPECT_EQ(b.latency_seconds, 0.0);
  EXPECT_DOUBLE_EQ(parse_link("12.8GB/s", "0.01ms").latency_seconds, 1e-5);
  EXPECT_DOUBLE_EQ(parse_link("16 GB/s", "1s").bandwidth_bytes_per_second, 16e9);
  EXPECT_DOUBLE_EQ(parse_link("1", "500ns").latency_seconds, 5e-7);
  EXPECT_DOUBLE_EQ(parse_link("1", "2e-6s").latency_seconds, 2e-6);
}

TEST(ParseLink, RejectsBadTextNamingTheFlag) {
  for (const char* bad : {"", "abc", "-1", "12.8MB/s", "nan", "inf", "fast", "+3"}) {
    try {
      parse_link(bad, "0");
      ADD_FAILURE() << "accepted bandwidth '" << bad << "'";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--link-bandwidth"), std::string::npos) << what;
      EXPECT_NE(what.find("12.8"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  for (const char* bad : {"", "10", "-5us", "10 parsecs", "us", "1e400s", "0.5"}) {
    try {
      parse_link("12.8", bad);
      ADD_FAILURE() << "accepted latency '" << bad << "'";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--link-latency"), std::string::npos) << what;
      EXPECT_NE(what.find("10us"), std::string::npos) << what;
    }
  }
}

}  // namespace test_cpu_device
}  // namespace vdnn
