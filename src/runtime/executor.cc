#include "runtime/executor.h"

#include "vdnn/error.h"

namespace vdnn {

Executor::Executor(Backend& backend, char* arena, HostPool& host)
    : backend_(backend), device_(backend.device()), arena_(arena), host_(host) {}

Executor::~Executor() {
  try {
    device_.synchronize_all();
  } catch (...) {
  }
  for (auto& [program, blocks] : host_blocks_)
    for (const HostBlock& b : blocks)
      if (b.ptr) host_.free(b);
}

void Executor::ensure_host_copies(const Program& p) {
  auto& blocks = host_blocks_[&p];
  if (!blocks.empty() || p.offloaded_bytes() == 0) return;
  blocks.resize(p.tensors.size());
  for (size_t t = 0; t < p.tensors.size(); ++t)
    if (p.tensors[t].offloaded) blocks[t] = host_.allocate(p.tensors[t].bytes);
}

StepResult Executor::run(const Program& p, Phase phase, const BatchView& batch) {
  ensure_host_copies(p);
  if (phase != Phase::kBackward) {
    ptr_.assign(p.tensors.size(), nullptr);
    for (size_t t = 0; t < p.tensors.size(); ++t)
      if (p.tensors[t].persistent) ptr_[t] = arena_ + p.tensors[t].offset;
    events_.assign(static_cast<size_t>(p.event_count), Event());
    residency_.clear();
    for (const ProgramTensor& t : p.tensors) residency_.emplace_back(t.name);
    result_ = {};
  }
  size_t begin = 0, end = p.steps.size();
  size_t phase_end = end;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].op == Op::kPhaseEnd) phase_end = i;
  if (phase == Phase::kForward) end = phase_end + 1;
  if (phase == Phase::kBackward) begin = phase_end + 1;
  for (size_t i = begin; i < end; ++i) issue(p, p.steps[i], batch);
  if (phase != Phase::kForward) device_.synchronize_all();
  return result_;
}

void Executor::issue(const Program& p, const Step& s, const BatchView& batch) {
  const int t = s.tensor;
  switch (s.op) {
    case Op::kAlloc:
      ptr_[t] = arena_ + s.offset;
      if (s.stream != StreamKind::kH2D) residency_[t].to(Residency::kDevice);
      break;
    case Op::kFree:
      ptr_[t] = nullptr;
      residency_[t].to(residency_[t].state() == Residency::kOffloading ? Residency::kHost
                                                                        : Residency::kAbsent);
      break;
    case Op::kLoadInput: {
      void* dst = ptr_[t];
      const size_t bytes = p.tensors[t].bytes;
      const float* src = batch.images;
      device_.launch(StreamKind::kCompute,
                     [this, dst, src, bytes] { backend_.load_input(dst, src, bytes); });
      break;
    }
    case Op::kForward: launch_kernel(p, s.node, false, batch); break;
    case Op::kBackward: launch_kernel(p, s.node, true, batch); break;
    case Op::kAccumulate: {
      void* into = ptr_[t];
      const void* addend = ptr_[s.tensor2];
      const size_t bytes = p.tensors[t].bytes;
      device_.launch(StreamKind::kCompute,
                     [this, into, addend, bytes] { backend_.accumulate(into, addend, bytes); });
      break;
    }
    case Op::kOffload:
      events_[s.event] = device_.copy_async(StreamKind::kD2H, host_blocks_[&p][t].ptr, ptr_[t], p.tensors[t].bytes);
      residency_[t].to(Residency::kOffloading, events_[s.event]);
      break;
    case Op::kPrefetch:
      events_[s.event] = device_.copy_async(StreamKind::kH2D, ptr_[t], host_blocks_[&p][t].ptr, p.tensors[t].bytes);
      residency_[t].to(Residency::kPrefetching, events_[s.event]);
      break;
    case Op::kRecord: events_[s.event] = device_.record(s.stream); break;
    case Op::kWait: device_.wait(s.stream, events_[s.event]); break;
    case Op::kSync: device_.synchronize_all(); break;
    case Op::kPhaseEnd: read_results(p, batch); break;
  }
}

void Executor::launch_kernel(const Program& p, int node, bool backward, const BatchView& batch) {
  const NodeBinding& b = p.nodes[node];
  auto at = [&](int t) -> void* {
    if (t < 0) return nullptr;
    VDNN_CHECK(ptr_[t], "node '" << p.node_names[node] << "' " << (backward ? "backward" : "forward")
                                 << " reads '" << p.tensors[t].name << "', which is not on the device");
    return ptr_[t];
  };
  KernelArgs a;
  for (int t : b.in) a.in.push_back(!backward || b.backward_reads_in ? at(t) : nullptr);
  for (int t : b.d_in) a.d_in.push_back(backward ? at(t) : nullptr);
  for (int t : b.params) a.params.push_back(at(t));
  for (int t : b.d_params) a.d_params.push_back(backward ? at(t) : nullptr);
  for (int t : b.saved) a.saved.push_back(at(t));
  a.out = !backward || b.backward_reads_out ? at(b.out) : nullptr;
  a.d_out = backward ? at(b.d_out) : nullptr;
  a.scratch = at(b.scratch);
  a.labels = batch.labels;
  a.valid = batch.valid;
  a.step = batch.step;
  a.training = batch.training;
  if (backward) {  // what this backward reads was prefetched and waited for: it is back
    std::vector<int> reads(b.in);
    reads.push_back(b.out);
    reads.insert(reads.end(), b.saved.begin(), b.saved.end());
    for (int t : reads)
      if (t >= 0 && residency_[t].state() == Residency::kPrefetching) residency_[t].to(Residency::kDevice);
  }
  device_.launch(StreamKind::kCompute, [this, node, a, backward] {
    if (backward)
      backend_.backward(node, a);
    else
      backend_.forward(node, a);
  });
}

void Executor::read_results(const Program& p, const BatchView& batch) {
  device_.synchronize(StreamKind::kCompute);
  backend_.download(&result_.loss, ptr_[p.loss_tensor], sizeof(float));
  logits_.resize(static_cast<size_t>(batch.valid * batch.classes));
  backend_.download(logits_.data(), ptr_[p.logits_tensor], logits_.size() * sizeof(float));
  const float* logits = logits_.data();
  for (int64_t n = 0; n < batch.valid; ++n) {
    const float* row = logits + n * batch.classes;
    int64_t best = 0;
    for (int64_t c = 1; c < batch.classes; ++c)
      if (row[c] > row[best]) best = c;
    result_.correct += best == batch.labels[n];
  }
}

}  // namespace vdnn
