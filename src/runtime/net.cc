#include "runtime/net.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/dnnl_util.h"
#include "util/sha256.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {

Net::Net(Graph graph, const NetOptions& options)
    : graph_(std::move(graph)), batch_(options.batch), engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {
  if (batch_ < 1) VDNN_THROW("batch size must be >= 1, got " << batch_);
  build_kernels(options.seed);
  allocate();
  init_params(options.seed);
}

Net::~Net() = default;

// ReLU may overwrite its input when nothing else reads it: the input has no other consumer and its
// producer's backward does not read its own output.
static bool may_run_in_place(const Graph& g, const Node& node) {
  if (!node.layer->can_run_in_place()) return false;
  const Value& in = g.value(node.inputs[0]);
  if (in.producer < 0 || in.consumers.size() != 1) return false;
  return !g.nodes()[in.producer].layer->backward_reads_output();
}

void Net::build_kernels(uint64_t seed) {
  const auto& values = graph_.values();
  value_mds_.resize(values.size());
  value_mds_[0] = plain_md(graph_.input_shape().with_batch(batch_));
  for (size_t i = 0; i < graph_.nodes().size(); ++i) {
    const Node& node = graph_.nodes()[i];
    KernelSetup setup{*node.layer, batch_, {}, values[node.output].shape, {}, false, {}, 0};
    for (ValueId v : node.inputs) {
      setup.in_shapes.push_back(values[v].shape);
      setup.in_mds.push_back(value_mds_[v]);
      setup.input_needs_grad.push_back(v != 0);
    }
    setup.in_place = may_run_in_place(graph_, node);
    setup.seed = seed * 0x9E3779B97F4A7C15ULL + i;
    kernels_.push_back(make_cpu_kernel(setup, engine_));
    in_place_.push_back(setup.in_place);
    value_mds_[node.output] = kernels_.back()->out_md;
  }
}

void Net::allocate() {
  const auto& values = graph_.values();
  const auto& nodes = graph_.nodes();
  auto add = [&](size_t bytes) {
    buffers_.emplace_back(bytes);
    return static_cast<int>(buffers_.size() - 1);
  };
  data_of_.assign(values.size(), -1);
  grad_of_.assign(values.size(), -1);
  data_of_[0] = add(value_mds_[0].get_size());
  size_t scratch_bytes = 0, max_value_bytes = 0;
  size_t max_inputs = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    const CpuKernel& k = *kernels_[i];
    const ValueId out = node.output;
    if (in_place_[i]) {
      data_of_[out] = data_of_[node.inputs[0]];
      grad_of_[out] = grad_of_[node.inputs[0]];
    } else {
      data_of_[out] = add(value_mds_[out].get_size());
      grad_of_[out] = add(value_mds_[out].get_size());
    }
    std::vector<int> saved;
    for (const auto& md : k.saved_mds) saved.push_back(add(md.get_size()));
    saved_of_.push_back(saved);
    std::vector<size_t> mine;
    for (size_t p = 0; p < node.params.size(); ++p) {
      const ParamSpec& spec = node.params[p];
      const dnnl::memory::desc& md = k.param_mds[p];
      ParamTensor t{node.layer->name() + "." + spec.name, spec, md, nullptr, nullptr};
      t.data = buffers_[add(md.get_size())].as<float>();
      if (spec.trainable) t.grad = buffers_[add(md.get_size())].as<float>();
      mine.push_back(params_.size());
      params_.push_back(t);
    }
    params_of_node_.push_back(mine);
    scratch_bytes = std::max(scratch_bytes, k.scratch_bytes);
    max_value_bytes = std::max(max_value_bytes, value_mds_[out].get_size());
    max_inputs = std::max(max_inputs, node.inputs.size());
  }
  for (size_t v = 1; v < values.size(); ++v)
    max_value_bytes = std::max(max_value_bytes, value_mds_[v].get_size());
  for (size_t j = 0; j < max_inputs; ++j) accum_temps_.emplace_back(max_value_bytes);
  scratch_ = AlignedBuffer(scratch_bytes);
  labels_ = AlignedBuffer(static_cast<size_t>(batch_) * sizeof(int32_t));
  grad_written_.assign(values.size(), false);
}

static void fill_plain(const ParamSpec& spec, Rng& rng, std::vector<float>& out) {
  out.resize(static_cast<size_t>(spec.elements()));
  const float std_dev = std::sqrt(2.0f / static_cast<float>(spec.fan_in));
  for (float& x : out) {
    switch (spec.init) {
      case ParamSpec::Init::kHeNormal: x = rng.normal() * std_dev; break;
      case ParamSpec::Init::kZero: x = 0.0f; break;
      case ParamSpec::Init::kOne: x = 1.0f; break;
    }
  }
}

void Net::init_params(uint64_t seed) {
  std::vector<float> plain;
  for (size_t i = 0; i < params_.size(); ++i) {
    Rng rng(seed, 1000 + i);
    fill_plain(params_[i].spec, rng, plain);
    import_param(i, plain);
  }
}

std::vector<float> Net::export_param(size_t i) const {
  const ParamTensor& t = params_.at(i);
  std::vector<float> plain(static_cast<size_t>(t.spec.elements()));
  dnnl::memory src(t.md, engine_, t.data);
  dnnl::memory dst(plain_md(t.spec.dims), engine_, plain.data());
  dnnl::reorder(src, dst).execute(stream_, src, dst);
  stream_.wait();
  return plain;
}

void Net::import_param(size_t i, const std::vector<float>& plain) {
  const ParamTensor& t = params_.at(i);
  if (static_cast<int64_t>(plain.size()) != t.spec.elements())
    VDNN_THROW("parameter '" << t.name << "' has " << t.spec.elements() << " elements, got "
                             << plain.size());
  const auto plain_desc = plain_md(t.spec.dims);
  dnnl::memory src(plain_desc, engine_, const_cast<float*>(plain.data()));
  dnnl::memory dst(t.md, engine_, t.data);
  dnnl::reorder(src, dst).execute(stream_, src, dst);
  stream_.wait();
}

std::string Net::weights_sha256() const {
  Sha256 hash;
  for (size_t i = 0; i < params_.size(); ++i) {
    std::vector<float> plain = export_param(i);
    hash.update(plain.data(), plain.size() * sizeof(float));
  }
  return hash.hex_digest();
}

void Net::set_batch(const float* images, const int32_t* labels, int64_t valid) {
  VDNN_CHECK(valid >= 1 && valid <= batch_, "valid " << valid << " outside 1.." << batch_);
  const size_t per_sample = static_cast<size_t>(graph_.input_shape().elements());
  float* in = buffers_[data_of_[0]].as<float>();
  std::memcpy(in, images, valid * per_sample * sizeof(float));
  std::memset(in + valid * per_sample, 0, (batch_ - valid) * per_sample * sizeof(float));
  int32_t* l = labels_.as<int32_t>();
  std::memcpy(l, labels, valid * sizeof(int32_t));
  std::fill(l + valid, l + batch_, 0);
  valid_ = valid;
}

KernelArgs Net::args_for(int i) const {
  const Node& node = graph_.nodes()[i];
  KernelArgs a;
  for (ValueId v : node.inputs) a.in.push_back(buffers_[data_of_[v]].data());
  a.out = buffers_[data_of_[node.output]].data();
  for (size_t p : params_of_node_[i]) {
    a.params.push_back(params_[p].data);
    a.d_params.push_back(params_[p].grad);
  }
  for (int s : saved_of_[i]) a.saved.push_back(buffers_[s].data());
  a.scratch = scratch_.data();
  a.labels = labels_.as<int32_t>();
  a.valid = valid_;
  a.step = step_;
  return a;
}

float Net::forward(bool training) {
  VDNN_CHECK(valid_ > 0, "forward() before set_batch()");
  for (size_t i = 0; i < kernels_.size(); ++i) {
    KernelArgs a = args_for(static_cast<int>(i));
    a.training = training;
    kernels_[i]->forward(stream_, a);
  }
  stream_.wait();
  if (training) ++step_;
  return *buffers_[data_of_[graph_.nodes().back().output]].as<float>();
}

void Net::accumulate(ValueId v, void* addend) {
  const auto& md = value_mds_[v];
  dnnl::memory dst(md, engine_, buffers_[grad_of_[v]].data());
  dnnl::memory src(md, engine_, addend);
  dnnl::sum::primitive_desc pd(md, {1.0f, 1.0f}, {md, md}, engine_);
  dnnl::sum(pd).execute(stream_, {{DNNL_ARG_MULTIPLE_SRC, dst},
                                  {DNNL_ARG_MULTIPLE_SRC + 1, src},
                                  {DNNL_ARG_DST, dst}});
}

void Net::backward() {
  std::fill(grad_written_.begin(), grad_written_.end(), false);
  const auto& nodes = graph_.nodes();
  for (int i = static_cast<int>(nodes.size()) - 1; i >= 0; --i) {
    const Node& node = nodes[i];
    KernelArgs a = args_for(i);
    a.d_out = grad_of_[node.output] >= 0 ? buffers_[grad_of_[node.output]].data() : nullptr;
    std::vector<bool> needs_sum(node.inputs.size(), false);
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const ValueId v = node.inputs[j];
      if (v == 0) {
        a.d_in.push_back(nullptr);
      } else if (!grad_written_[v]) {
        a.d_in.push_back(buffers_[grad_of_[v]].data());
        grad_written_[v] = true;
      } else {
        a.d_in.push_back(accum_temps_[j].data());
        needs_sum[j] = true;
      }
    }
    kernels_[i]->backward(stream_, a);
    for (size_t j = 0; j < node.inputs.size(); ++j)
      if (needs_sum[j]) accumulate(node.inputs[j], accum_temps_[j].data());
  }
  stream_.wait();
}

int64_t Net::correct() const {
  const Node& loss = graph_.nodes().back();
  const ValueId logits = loss.inputs[0];
  const float* x = buffers_[data_of_[logits]].as<float>();
  const int64_t k = graph_.value(logits).shape.elements();
  const int32_t* labels = labels_.as<int32_t>();
  int64_t right = 0;
  for (int64_t n = 0; n < valid_; ++n) {
    const float* row = x + n * k;
    int64_t best = 0;
    for (int64_t c = 1; c < k; ++c)
      if (row[c] > row[best]) best = c;
    right += best == labels[n];
  }
  return right;
}

const float* Net::value_data(ValueId v) const { return buffers_[data_of_.at(v)].as<float>(); }
const float* Net::value_grad(ValueId v) const {
  return grad_of_.at(v) < 0 ? nullptr : buffers_[grad_of_[v]].as<float>();
}

size_t Net::allocated_bytes() const {
  size_t total = scratch_.bytes();
  for (const auto& b : buffers_) total += b.bytes();
  for (const auto& b : accum_temps_) total += b.bytes();
  return total;
}

}  // namespace vdnn
