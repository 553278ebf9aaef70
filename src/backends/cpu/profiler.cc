#include "backends/cpu/profiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "backends/cpu/bf16.h"
#include "backends/cpu/compiled_graph.h"
#include "util/aligned_buffer.h"
#include "util/timing_stability.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {
namespace {

using Clock = std::chrono::steady_clock;

// Writing this much evicts a kernel's buffers from the caches: in a training step each kernel
// finds its weights, saved state and gradients cold (the step's working set is far larger than
// the caches), and timing it warm underestimates the step by about a quarter on small networks.
constexpr size_t kEvictBytes = size_t{64} << 20;

// A kernel whose timings scatter is timed this many more times; the steadiest set counts.
constexpr int kRetries = 2;

// One warm-up run (first-touch of buffers, oneDNN's lazy JIT), then `repeats` timed runs.
// Each run also records how long this process's threads waited for a CPU meanwhile.
template <class F>
std::vector<Timing> timed_runs(int repeats, bool cold, F&& run) {
  static std::vector<char> evict(kEvictBytes);
  run();
  std::vector<Timing> t;
  for (int r = 0; r < repeats; ++r) {
    if (cold) std::memset(evict.data(), r, evict.size());
    const double waited = process_wait_seconds();
    const auto start = Clock::now();
    run();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    t.push_back({seconds, std::max(0.0, process_wait_seconds() - waited)});  // a thread that ended takes its wait along
  }
  return t;
}

template <class F>
double median_seconds(int repeats, bool cold, F&& run) {
  return timing_spread(timed_runs(repeats, cold, run)).median;
}

// The timings of `run`, taken again while they are unstable (another process on the cores).
template <class F>
TimingSpread steadiest_timing(int repeats, bool cold, F&& run) {
  TimingSpread best = timing_spread(timed_runs(repeats, cold, run));
  for (int retry = 0; retry < kRetries && !is_stable(best); ++retry) {
    const TimingSpread again = timing_spread(timed_runs(repeats, cold, run));
    if (std::max(again.relative_spread, again.waited) < std::max(best.relative_spread, best.waited)) best = again;
  }
  return best;
}

// Every element of a buffer described by `md` (f32 or bf16) from `draw`; int32 token ids all 0
// (an id every vocabulary has).
template <class Draw>
void fill(const dnnl::memory::desc& md, void* data, Draw draw) {
  if (md.data_type() == dnnl::memory::data_type::s32) {
    std::memset(data, 0, md.get_size());
  } else if (md.data_type() == dnnl::memory::data_type::bf16) {
    auto* x = static_cast<uint16_t*>(data);
    for (size_t i = 0; i < md.get_size() / sizeof(uint16_t); ++i) x[i] = float_to_bf16(draw());
  } else {
    auto* x = static_cast<float*>(data);
    for (size_t i = 0; i < md.get_size() / sizeof(float); ++i) x[i] = draw();
  }
}

// The labels a loss reads per sample: one per token of [T, V] logits, else one.
int64_t labels_per_sample(const KernelSetup& setup) {
  const bool per_token = setup.layer.kind() == LayerKind::kLoss && setup.in_shapes.at(0).is_sequence();
  return per_token ? setup.in_shapes[0].dims[0] : 1;
}

// One kernel with buffers of its own: inputs hold small random values, labels are valid classes.
class KernelBench {
 public:
  KernelBench(CpuKernel& kernel, const KernelSetup& setup, int64_t classes, uint64_t seed)
      : kernel_(kernel), labels_(static_cast<size_t>(setup.batch * labels_per_sample(setup))) {
    Rng rng(seed, 7);
    const bool in_place = setup.in_place;
    for (size_t i = 0; i < setup.in_mds.size(); ++i) {
      const auto& md = setup.in_mds[i];
      in_.emplace_back(md.get_size());
      d_in_.emplace_back(setup.input_needs_grad[i] ? md.get_size() : 0);  // the graph input: none
      fill(md, in_.back().data(), [&] { return rng.normal() * 0.5f; });
    }
    out_ = AlignedBuffer(in_place ? 0 : kernel.out_md.get_size());
    d_out_ = AlignedBuffer(kernel.out_md.get_size());
    for (const auto& md : kernel.param_mds) {
      params_.emplace_back(md.get_size());
      d_params_.emplace_back(md.get_size());
      fill(md, params_.back().data(), [&] { return rng.normal() * 0.05f + 0.5f; });
    }
    for (const auto& md : kernel.saved_mds) saved_.emplace_back(md.get_size());
    scratch_ = AlignedBuffer(kernel.scratch_bytes);
    for (size_t n = 0; n < labels_.size(); ++n) labels_[n] = static_cast<int32_t>(n % classes);
    for (auto& b : in_) args_.in.push_back(b.data());
    for (auto& b : d_in_) args_.d_in.push_back(b.data());  // null where no gradient is needed
    args_.out = in_place ? args_.in[0] : out_.data();
    args_.d_out = d_out_.data();
    for (auto& b : params_) args_.params.push_back(b.data());
    for (auto& b : d_params_) args_.d_params.push_back(b.data());
    for (auto& b : saved_) args_.saved.push_back(b.data());
    args_.scratch = scratch_.data();
    args_.labels = labels_.data();
    args_.valid = setup.batch;
  }

  TimingSpread forward(dnnl::stream& s, int repeats, bool cold) {
    return steadiest_timing(repeats, cold, [&] {
      kernel_.forward(s, args_);
      s.wait();
    });
  }
  TimingSpread backward(dnnl::stream& s, int repeats, bool cold) {
    kernel_.forward(s, args_);  // saved state and outputs as backward expects them
    s.wait();
    return steadiest_timing(repeats, cold, [&] {
      kernel_.backward(s, args_);
      s.wait();
    });
  }
  void forward_back_to_back(dnnl::stream& s, int runs) {
    for (int r = 0; r < runs; ++r) {
      kernel_.forward(s, args_);
      s.wait();
    }
  }

 private:
  CpuKernel& kernel_;
  std::vector<AlignedBuffer> in_, d_in_, params_, d_params_, saved_;
  AlignedBuffer out_, d_out_, scratch_;
  std::vector<int32_t> labels_;
  KernelArgs args_;
};

// One algorithm's costs; `stable` is cleared when its timings stayed unstable.
AlgoCost measure(CpuKernel& kernel, const std::string& name, const KernelSetup& setup, int64_t classes,
                 const ProfileOptions& o, dnnl::stream& s, bool& stable) {
  KernelBench bench(kernel, setup, classes, o.seed);
  const TimingSpread fwd = bench.forward(s, o.repeats, o.cold_caches);
  const TimingSpread bwd = bench.backward(s, o.repeats, o.cold_caches);
  stable = stable && is_stable(fwd) && is_stable(bwd);
  return {name,
          fwd.median,
          bwd.median,
          kernel.scratch_bytes,
          std::max(fwd.relative_spread, bwd.relative_spread),
          std::max(fwd.waited, bwd.waited)};
}

double measure_memory_bandwidth(int repeats) {
  const size_t bytes = size_t{64} << 20;
  AlignedBuffer a(bytes), b(bytes);
  const double t = median_seconds(repeats, false, [&] { std::memcpy(b.data(), a.data(), bytes); });
  return 2.0 * static_cast<double>(bytes) / t;  // read + write
}

// The copy engine as the executor drives it: copy_async on the d2h stream, then wait for it.
void measure_link(const LinkModel& link, int repeats, NetworkCosts& c) {
  auto device = make_cpu_device(link);
  const size_t big = size_t{32} << 20, small = 4096;
  AlignedBuffer a(big), b(big);
  auto copy = [&](size_t bytes) {
    return median_seconds(repeats, false,
                          [&] { device->copy_async(StreamKind::kD2H, b.data(), a.data(), bytes).synchronize(); });
  };
  const double t_small = copy(small), t_big = copy(big);
  c.link_latency_seconds = t_small;
  c.link_bytes_per_second = static_cast<double>(big - small) / std::max(t_big - t_small, 1e-9);
}

// What node `n`'s kernel was created from, with its inputs in the layouts `compiled` chose.
KernelSetup setup_of(const Graph& graph, int n, const CompiledGraph& compiled, uint64_t seed) {
  KernelSetup setup = kernel_setup(graph, n, compiled.batch(), compiled.value_mds(), compiled.precision());
  setup.seed = seed;
  return setup;
}

// The copy engine is a thread on the same cores: time the heaviest kernel alone and under a
// stream of copies, and the copies alone and under the kernel.
void measure_contention(KernelBench& bench, dnnl::stream& s, const ProfileOptions& o, NetworkCosts& c) {
  auto device = make_cpu_device(o.link);
  const size_t bytes = size_t{8} << 20;
  AlignedBuffer a(bytes), b(bytes);
  auto copy_seconds = [&] {
    const auto start = Clock::now();
    device->copy_async(StreamKind::kD2H, b.data(), a.data(), bytes).synchronize();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  // Runs `work` on this thread while another thread copies without pause; returns those copies' times.
  auto with_copier = [&](auto&& work) {
    std::atomic<bool> stop{false};
    std::vector<double> copies;
    std::thread copier([&] {
      while (!stop.load()) copies.push_back(copy_seconds());
    });
    work();
    stop = true;
    copier.join();
    return copies;
  };
  const int rounds = std::max(7, o.repeats);
  // Kernels under copies: rounds alternate alone / loaded, so drift hits both alike.
  std::vector<double> kernel_alone, kernel_loaded;
  for (int r = 0; r < rounds; ++r) {
    kernel_alone.push_back(bench.forward(s, 1, o.cold_caches).median);
    with_copier([&] { kernel_loaded.push_back(bench.forward(s, 1, o.cold_caches).median); });
  }
  // Copies under a kernel that runs back to back (no cache eviction between runs: that memset
  // would load the memory bus the copies share).
  std::vector<double> copy_alone;
  for (int r = 0; r < rounds; ++r) copy_alone.push_back(copy_seconds());
  std::vector<double> copy_loaded = with_copier([&] { bench.forward_back_to_back(s, 2 * rounds + 1); });
  c.compute_slowdown_when_copying = std::max(1.0, median(kernel_loaded) / median(kernel_alone));
  c.copy_slowdown_when_computing = copy_loaded.empty() ? 1.0 : std::max(1.0, median(copy_loaded) / median(copy_alone));
}

// Kernels are timed on a CpuDevice's compute stream, the thread (and OpenMP team) the executor
// runs them on.
void measure_kernels(const Graph& graph, int64_t batch, const ProfileOptions& o, NetworkCosts& c) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const CompiledGraph direct(graph, batch, o.seed, engine, ConvAlgo::kDirect, {}, {}, o.precision);
  c.source = VDNN_MSG("measured on cpu (" << direct.kernel(0).implementation << ")");
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& node = graph.nodes()[i];
    const int n = static_cast<int>(i);
    KernelSetup setup = setup_of(graph, n, direct, o.seed);
    CpuKernel& base = const_cast<CpuKernel&>(direct.kernel(n));
    const bool is_conv = node.layer->kind() == LayerKind::kConv;
    NodeCost cost{node.layer->name(), node.layer->type(), {}};
    bool stable = true;
    cost.algos.push_back(measure(base, is_conv ? "direct" : "-", setup, graph.classes(), o, stream, stable));
    if (is_conv) {
      for (CpuConvAlternative& alt : cpu_conv_alternatives(setup, base, engine)) {
        if (alt.algo == ConvAlgo::kAuto) cost.runs_by_default = static_cast<int>(cost.algos.size());
        if (alt.same_as >= 0) {  // a kernel measured already, under another name
          cost.algos.push_back(cost.algos.at(alt.same_as));
          cost.algos.back().name = alt.name;
          continue;
        }
        setup.conv_algo = alt.algo;
        cost.algos.push_back(measure(*alt.kernel, alt.name.c_str(), setup, graph.classes(), o, stream, stable));
      }
    }
    if (!stable) c.unstable.push_back(cost.name);
    c.nodes.push_back(std::move(cost));
    if (o.on_layer) o.on_layer(n + 1, static_cast<int>(graph.nodes().size()));
  }
  // The heaviest forward kernel stands for every kernel in the contention measurement.
  int heaviest = 0;
  for (size_t i = 0; i < c.nodes.size(); ++i)
    if (c.nodes[i].algos[0].forward_seconds > c.nodes[heaviest].algos[0].forward_seconds)
      heaviest = static_cast<int>(i);
  KernelBench bench(const_cast<CpuKernel&>(direct.kernel(heaviest)), setup_of(graph, heaviest, direct, o.seed),
                    graph.classes(), o.seed);
  measure_contention(bench, stream, o, c);
}

}  // namespace

NetworkCosts measure_costs(const Graph& graph, int64_t batch, const ProfileOptions& o) {
  VDNN_CHECK(o.repeats >= 1, "repeats must be >= 1");
  NetworkCosts c;
  c.model = graph.name();
  c.batch = batch;
  c.precision = o.precision;
  auto device = make_cpu_device({});
  device->launch(StreamKind::kCompute, [&] {
    measure_kernels(graph, batch, o, c);
    c.memory_bytes_per_second = measure_memory_bandwidth(o.repeats);
  });
  device->synchronize_all();
  measure_link(o.link, o.repeats, c);
  return c;
}

}  // namespace vdnn
