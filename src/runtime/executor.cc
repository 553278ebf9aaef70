#include "runtime/executor.h"

#include "vdnn/error.h"

namespace vdnn {

Executor::Executor(Backend& backend, char* arena) : backend_(backend), device_(backend.device()), arena_(arena) {}

Executor::~Executor() {
  try {
    device_.synchronize_all();
  } catch (...) {
  }
}

char* Executor::host_copy(const Program& p, int tensor) const {
  const ProgramTensor& t = p.tensors.at(static_cast<size_t>(tensor));
  if (!t.has_host_copy()) return nullptr;
  auto it = host_regions_.find(&p);
  VDNN_CHECK(it != host_regions_.end() && it->second,
             "tensor '" << t.name << "' has a host copy, but its Program was given no host region");
  return it->second + t.host_offset;
}

StepResult Executor::run(const Program& p, Phase phase, const BatchView& batch) {
  if (phase != Phase::kBackward) {
    ptr_.assign(p.tensors.size(), nullptr);
    for (size_t t = 0; t < p.tensors.size(); ++t)
      if (p.tensors[t].persistent) ptr_[t] = arena_ + p.tensors[t].offset;
    events_.assign(static_cast<size_t>(p.event_count), Event());
    residency_.clear();
    for (const ProgramTensor& t : p.tensors) {  // a streamed weight starts on the host
      residency_.emplace_back(t.name);
      if (t.streamed) residency_.back().start_on_host();
    }
    result_ = {};
    if (recorder_) recorder_->begin(p);
  }
  size_t begin = 0, end = p.steps.size();
  size_t phase_end = end;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].op == Op::kPhaseEnd) phase_end = i;
  if (phase == Phase::kForward) end = phase_end + 1;
  if (phase == Phase::kBackward) begin = phase_end + 1;
  for (size_t i = begin; i < end; ++i) issue(p, i, i > phase_end ? Pass::kBackward : Pass::kForward, batch);
  if (phase != Phase::kForward) device_.synchronize_all();
  return result_;
}

void Executor::issue(const Program& p, size_t step, Pass pass, const BatchView& batch) {
  const Step& s = p.steps[step];
  const int t = s.tensor;
  switch (s.op) {
    case Op::kAlloc:
      ptr_[t] = arena_ + s.offset;
      if (s.stream != StreamKind::kH2D) residency_[t].to(Residency::kDevice);
      if (recorder_) count_memory(p.tensors[t], true);
      break;
    case Op::kFree:
      if (recorder_) count_memory(p.tensors[t], false);
      ptr_[t] = nullptr;
      residency_[t].to(residency_[t].state() == Residency::kOffloading ? Residency::kHost : Residency::kAbsent);
      break;
    case Op::kLoadInput: {
      void* dst = ptr_[t];
      const size_t bytes = p.tensors[t].bytes;
      const float* src = batch.images;
      launch_compute(p, step, pass, [this, dst, src, bytes] { backend_.load_input(dst, src, bytes); });
      break;
    }
    case Op::kForward:
    case Op::kBackward:
    case Op::kRecompute:
      launch_kernel(p, step, pass, batch);
      break;
    case Op::kAccumulate: {
      void* into = ptr_[t];
      const void* addend = ptr_[s.tensor2];
      const size_t bytes = p.tensors[t].bytes;
      launch_compute(p, step, pass, [this, into, addend, bytes] { backend_.accumulate(into, addend, bytes); });
      break;
    }
    case Op::kOffload:
      events_[s.event] = copy(p, step, pass, host_copy(p, t), ptr_[t]);
      residency_[t].to(Residency::kOffloading, events_[s.event]);
      break;
    case Op::kPrefetch:
      events_[s.event] = copy(p, step, pass, ptr_[t], host_copy(p, t));
      residency_[t].to(Residency::kPrefetching, events_[s.event]);
      break;
    case Op::kRecord:
      events_[s.event] = device_.record(s.stream);
      break;
    case Op::kWait:
      device_.wait(s.stream, events_[s.event]);
      break;
    case Op::kSync:
      device_.synchronize_all();
      break;
    case Op::kPhaseEnd:
      read_results(p, batch);
      break;
    case Op::kAllReduce:
      all_reduce(p, step, pass);
      break;
    case Op::kUpdate:
      VDNN_CHECK(update_, "the Program updates bucket " << s.bucket << " but no optimizer hook is set");
      launch_compute(p, step, pass, [this, bucket = s.bucket] { update_(bucket); });
      break;
  }
}

// The bucket's gradients (and running statistics), summed over the ranks: each rank's share is
// scaled by 1/ranks, so every rank holds the mean (training batches are all full: same weight).
void Executor::all_reduce(const Program& p, size_t step, Pass pass) {
  const GradientBucket& bucket = p.buckets.at(p.steps[step].bucket);
  VDNN_CHECK(comm_ && comm_->size() == p.ranks,
             "the Program was planned for " << p.ranks << " ranks but the run has " << (comm_ ? comm_->size() : 0));
  std::vector<ReduceBuffer> buffers;
  for (int t : bucket.tensors) buffers.push_back({static_cast<float*>(ptr_[t]), p.tensors[t].bytes / sizeof(float)});
  const float scale = 1.0f / static_cast<float>(p.ranks);
  launch_on(StreamKind::kComm, p, step, pass,
            [comm = comm_, buffers = std::move(buffers), scale] { comm->all_reduce_sum(buffers, scale); });
}

void Executor::launch_on(StreamKind stream, const Program& p, size_t step, Pass pass, std::function<void()> work) {
  if (!recorder_) return device_.launch(stream, std::move(work));
  device_.launch(stream, [rec = recorder_, op = timeline_op(p, step, pass), work = std::move(work)]() mutable {
    op.start = rec->now();
    work();
    op.end = rec->now();
    rec->add(std::move(op));
  });
}

// Offload (d2h) or prefetch (h2d). Recorded: bracketed by two stamps on the copy stream.
Event Executor::copy(const Program& p, size_t step, Pass pass, void* dst, const void* src) {
  const Step& s = p.steps[step];
  const StreamKind stream = s.op == Op::kOffload ? StreamKind::kD2H : StreamKind::kH2D;
  const size_t bytes = p.tensors[s.tensor].bytes;
  if (!recorder_) return device_.copy_async(stream, dst, src, bytes);
  auto op = std::make_shared<TimelineOp>(timeline_op(p, step, pass));
  device_.launch(stream, [rec = recorder_, op] { op->start = rec->now(); });
  Event done = device_.copy_async(stream, dst, src, bytes);
  device_.launch(stream, [rec = recorder_, op] {
    op->end = rec->now();
    rec->add(*op);
  });
  return done;
}

// Memory counters move when the compute stream reaches the alloc or free (as in the simulator).
void Executor::count_memory(const ProgramTensor& t, bool alloc) {
  device_.launch(StreamKind::kCompute, [rec = recorder_, cls = t.cls, bytes = t.bytes, alloc] {
    if (alloc)
      rec->alloc(cls, bytes);
    else
      rec->free(cls, bytes);
  });
}

void Executor::launch_kernel(const Program& p, size_t step, Pass pass, const BatchView& batch) {
  const int node = p.steps[step].node;
  const bool backward = p.steps[step].op == Op::kBackward;
  const bool recompute = p.steps[step].op == Op::kRecompute;  // a forward, in the backward pass
  const NodeBinding& b = p.nodes[node];
  auto at = [&](int t) -> void* {
    if (t < 0) return nullptr;
    VDNN_CHECK(ptr_[t], "node '" << p.node_names[node] << "' "
                                 << (backward    ? "backward"
                                     : recompute ? "recompute"
                                                 : "forward")
                                 << " reads '" << p.tensors[t].name << "', which is not on the device");
    return ptr_[t];
  };
  KernelArgs a;
  for (int t : b.in) a.in.push_back(!backward || b.backward_reads_in ? at(t) : nullptr);
  for (int t : b.d_in) a.d_in.push_back(backward ? at(t) : nullptr);
  for (int t : b.params) {
    a.params.push_back(at(t));
    if (residency_[t].state() == Residency::kPrefetching) residency_[t].to(Residency::kDevice);  // streamed, waited for
  }
  for (int t : b.d_params) a.d_params.push_back(backward ? at(t) : nullptr);
  for (int t : b.saved) a.saved.push_back(at(t));
  a.out = !backward || b.backward_reads_out ? at(b.out) : nullptr;
  a.d_out = backward ? at(b.d_out) : nullptr;
  a.scratch = at(b.scratch);
  a.labels = batch.labels;
  a.valid = batch.valid;
  a.step = batch.step;
  a.training = batch.training;
  a.recompute = recompute;
  if (backward || recompute) {  // what this backward reads was prefetched and waited for: it is back
    std::vector<int> reads(b.in);
    reads.push_back(b.out);
    reads.insert(reads.end(), b.saved.begin(), b.saved.end());
    for (int t : reads)
      if (t >= 0 && residency_[t].state() == Residency::kPrefetching) residency_[t].to(Residency::kDevice);
  }
  launch_compute(p, step, pass, [this, node, a, backward] {
    if (backward)
      backend_.backward(node, a);
    else
      backend_.forward(node, a);
  });
}

void Executor::read_results(const Program& p, const BatchView& batch) {
  device_.synchronize(StreamKind::kCompute);
  backend_.download(&result_.loss, ptr_[p.loss_tensor], sizeof(float));
  const int64_t rows = batch.valid * batch.labels_per_sample;  // one per label: per sample, or per token
  logits_.resize(static_cast<size_t>(rows * batch.classes));
  backend_.download(logits_.data(), ptr_[p.logits_tensor], logits_.size() * sizeof(float));
  const float* logits = logits_.data();
  for (int64_t n = 0; n < rows; ++n) {
    const float* row = logits + n * batch.classes;
    int64_t best = 0;
    for (int64_t c = 1; c < batch.classes; ++c)
      if (row[c] > row[best]) best = c;
    result_.correct += best == batch.labels[n];
  }
}

}  // namespace vdnn
