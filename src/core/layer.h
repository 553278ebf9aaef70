// core/layer.h — what a layer is, independent of any backend.
//
// Model: a Layer describes; a backend Kernel computes. The description says everything the planner
// needs before any memory exists: the kind, the per-sample output shape, the parameters, which values
// its backward reads (the offload candidates), whether it may run in place, and its FLOPs.
// Workspace and layer-private saved state (pooling indices, BN statistics) are backend facts and are
// declared by the kernel (backends/cpu/kernel.h).
//
//   LayerConfig cfg(json, "x.json: layer 'conv1'");
//   std::unique_ptr<Layer> conv = make_layer("conv1", "conv", cfg);   // core/layer_registry.h
//   Shape out = conv->infer_shape({Shape{3, 32, 32}});   // e.g. 64x32x32
//   bool offload_candidate = conv->backward_reads_input();
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/layer_kind.h"
#include "core/shape.h"

namespace vdnn {

// One parameter tensor of a layer, in its plain layout (x, oi, oihw or goihw by rank).
struct ParamSpec {
  // kHeNormal: std sqrt(2/fan_in) (convolutions, followed by ReLU); kLecunNormal: std
  // sqrt(1/fan_in) (fully connected layers, so the classifier starts with small logits);
  // kSmallNormal: std 0.02 (GPT-2's embeddings, layers/embedding.h).
  enum class Init { kHeNormal, kLecunNormal, kZero, kOne, kSmallNormal };
  std::string name;           // "weight", "bias", "running_mean", "running_var" (PyTorch's names)
  std::vector<int64_t> dims;  // plain layout
  Init init = Init::kZero;
  int64_t fan_in = 1;     // for the normal initializations
  bool trainable = true;  // false: running statistics, updated by the layer, not by SGD
  bool decay = false;     // weight decay applies
  // The shape checkpoints and weight files hold (PyTorch's), in the same memory order, where it
  // differs from `dims`: a grouped convolution's [O, I/groups, kh, kw] for its goihw dims. Empty: dims.
  std::vector<int64_t> file_shape;
  const std::vector<int64_t>& file_dims() const { return file_shape.empty() ? dims : file_shape; }
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

class Layer {
 public:
  Layer(std::string name, std::string type, LayerKind kind)
      : name_(std::move(name)), type_(std::move(type)), kind_(kind) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }
  LayerKind kind() const { return kind_; }
  // What it was configured with: its description's fields, each with the value it took
  // (LayerConfig::settings(), set by make_layer); "" for a layer made in code. The graph's digest
  // holds it (core/graph_digest.h), so attributes that change no shape are compared too.
  const std::string& settings() const { return settings_; }
  void set_settings(std::string settings) { settings_ = std::move(settings); }
  // The layer whose computation this one is: itself, or for another slice of a layer
  // (layers/batch_slice.h) that layer, whose own class a kernel reads the parameters of.
  virtual const Layer& original() const { return *this; }

  // Whether its input is the token input (int32 ids on the device, Graph::token_input): only a
  // layer that says so may read that input, and it may read nothing else (layers/embedding.h).
  virtual bool takes_tokens() const { return false; }

  virtual int min_inputs() const { return 1; }
  virtual int max_inputs() const { return 1; }

  // Per-sample output shape; throws vdnn::Error naming this layer when inputs do not fit.
  virtual Shape infer_shape(const std::vector<Shape>& in) const = 0;
  virtual std::vector<ParamSpec> params(const std::vector<Shape>& in) const { return {}; }

  // Which values the backward pass reads. These are what vDNN may offload.
  virtual bool backward_reads_input() const = 0;
  virtual bool backward_reads_output() const { return false; }
  // May write its output over its first input (vDNN runs ReLU in place; an add sums onto its first).
  virtual bool can_run_in_place() const { return false; }

  // FLOPs per sample (multiply and add counted separately: 2 per MAC).
  virtual double forward_flops(const std::vector<Shape>& in, const Shape& out) const {
    return static_cast<double>(out.elements());
  }
  virtual double backward_flops(const std::vector<Shape>& in, const Shape& out) const {
    return 2.0 * forward_flops(in, out);
  }

  // "layer 'conv1' (conv): <what>" as a vdnn::Error.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string name_;
  std::string type_;
  LayerKind kind_;
  std::string settings_;
};

}  // namespace vdnn
