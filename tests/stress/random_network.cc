#include "stress/random_network.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/layer_registry.h"
#include "io/model_file.h"
#include "vdnn/rng.h"

namespace vdnn::stress {
namespace {

using nlohmann::json;

struct Tensor {
  std::string name;
  Shape shape;
};

// Grows one network layer by layer; a shadow Graph infers each new value's shape.
class Generator {
 public:
  explicit Generator(uint64_t seed)
      : rng_(seed, /*stream=*/0x5735),
        form_rng_(seed, /*stream=*/0x5737),
        activation_rng_(seed, /*stream=*/0x5739),
        form_(random_form()),
        image_(random_input()),
        classes_(static_cast<int>(pick(2, 10))),
        input_(form_ == Form::kVector ? random_vector_input() : image_),
        builder_("stress_" + std::to_string(seed), input_, classes_),
        shadow_("shadow", Shape(input_), classes_) {}

  json generate() {
    Tensor x{"data", Shape(input_)};
    if (form_ == Form::kVector) {
      vector_network(x);
      return builder_.json();
    }
    images_.push_back(x);
    if (form_ == Form::kShallow) {
      if (chance(0.5)) x = chance(0.5) ? branches(x) : data_joined_with_itself(x);
    } else {
      for (int64_t blocks = pick(1, 8); blocks > 0; --blocks) x = block(x);
    }
    head(x);
    return builder_.json();
  }

  int64_t pick(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_.below(hi - lo + 1)); }
  bool chance(double p) { return rng_.uniform() < p; }

 private:
  // Deep: the image networks the stress test always had (their seeds give the same networks as
  // before these forms existed: the form comes from a stream of its own). Shallow: an image with
  // at most one block (a join reading "data"), so the head's layers read the input. Vector: a
  // [K] input with 0–2 hidden layers, where FCs, joins and the loss itself read "data".
  enum class Form { kDeep, kShallow, kVector };
  Form random_form() {
    const float r = form_rng_.uniform();
    return r < 0.15f ? Form::kVector : r < 0.22f ? Form::kShallow : Form::kDeep;
  }
  // 60% of the vector inputs have as many elements as classes: the loss may read them.
  std::vector<int64_t> random_vector_input() {
    return {form_rng_.uniform() < 0.6f ? classes_ : 1 + static_cast<int64_t>(form_rng_.below(32))};
  }

  // C x H x W: 1–4 channels, 4–16 pixels a side, mostly square.
  std::vector<int64_t> random_input() {
    const int64_t c = pick(1, 4), h = pick(4, 16);
    return {c, h, chance(0.7) ? h : pick(4, 16)};
  }

  // Appends a layer reading `inputs` and returns its output.
  Tensor add(const std::string& type, json fields, const std::vector<Tensor>& inputs) {
    const std::string name = type + std::to_string(++layers_);
    std::vector<std::string> names;
    if (!(inputs.size() == 1 && inputs[0].name == previous_))  // else: the previous layer's output
      for (const Tensor& t : inputs) names.push_back(t.name);
    builder_.layer(type, name, fields, names);
    LayerConfig cfg(builder_.json()["layers"].back(), "stress: layer '" + name + "'");
    shadow_.add(make_layer(name, type, cfg), names);
    previous_ = name;
    Tensor out{name, shadow_.value(shadow_.find_value(name)).shape};
    (out.shape.is_image() ? images_ : vectors_).push_back(out);
    return out;
  }

  // A window (kernel, stride, pad) along one axis of `size` pixels that fits it.
  struct Window {
    int64_t kernel = 1, stride = 1, pad = 0;
  };
  Window window(int64_t size, std::vector<int64_t> kernels, int64_t max_stride, bool pad_below_kernel) {
    for (int tries = 0; tries < 20; ++tries) {
      Window w;
      w.kernel = kernels[rng_.below(kernels.size())];
      w.pad = pick(0, std::min<int64_t>(2, pad_below_kernel ? w.kernel - 1 : w.kernel));
      if (size + 2 * w.pad < w.kernel) continue;
      w.stride = chance(0.35) ? pick(1, max_stride) : 1;
      return w;
    }
    return {};
  }
  static json pair_field(int64_t h, int64_t w) { return h == w ? json(h) : json::array({h, w}); }

  Tensor conv(const Tensor& x, int64_t channels, bool keep_size) {
    const int64_t in = x.shape.channels();
    Window h{1, 1, 0}, w{1, 1, 0};
    if (keep_size) {
      const int64_t k = 2 * pick(0, 2) + 1;
      h = w = {k, 1, (k - 1) / 2};
    } else {
      h = window(x.shape.height(), {1, 2, 3, 5}, 3, false);
      w = chance(0.2) ? window(x.shape.width(), {1, 2, 3, 5}, 3, false) : h;
      if (x.shape.width() + 2 * w.pad < w.kernel) w = h = Window{};
    }
    int64_t groups = 1;
    if (channels == in && chance(0.3)) {
      groups = in;  // depthwise
    } else if (chance(0.25)) {
      std::vector<int64_t> common;
      for (int64_t g = 2; g <= in; ++g)
        if (in % g == 0 && channels % g == 0) common.push_back(g);
      if (!common.empty()) groups = common[rng_.below(common.size())];
    }
    json f{{"channels", channels}, {"kernel", pair_field(h.kernel, w.kernel)}};
    if (h.stride != 1 || w.stride != 1) f["stride"] = pair_field(h.stride, w.stride);
    if (h.pad != 0 || w.pad != 0) f["pad"] = pair_field(h.pad, w.pad);
    if (groups > 1) f["groups"] = groups;
    if (chance(0.2)) f["bias"] = false;
    return add("conv", f, {x});
  }

  Tensor pool(const Tensor& x, bool keep_size) {
    const bool max = chance(0.5);
    json f;
    if (keep_size) {
      f = {{"kernel", 3}, {"stride", 1}, {"pad", 1}};
    } else {
      const Window h = window(x.shape.height(), {1, 2, 3}, 3, true);
      const Window w = chance(0.2) ? window(x.shape.width(), {1, 2, 3}, 3, true) : h;
      if (x.shape.width() + 2 * w.pad < w.kernel) return x;
      f = {{"kernel", pair_field(h.kernel, w.kernel)}};
      if (chance(0.5)) f["stride"] = pair_field(h.stride, w.stride);  // else: the kernel size
      if (h.pad != 0 || w.pad != 0) f["pad"] = pair_field(h.pad, w.pad);
      if (chance(0.3)) f["ceil"] = true;
    }
    if (!max && chance(0.3)) f["exclude_padding"] = false;
    return add(max ? "max_pool" : "avg_pool", f, {x});
  }

  Tensor lrn(const Tensor& x) {
    return add("lrn",
               {{"size", 2 * pick(0, 3) + 1},
                {"alpha", std::vector<double>{1e-4, 1e-3, 1e-2}[rng_.below(3)]},
                {"beta", chance(0.5) ? 0.75 : 0.5},
                {"k", chance(0.5) ? 1.0 : 2.0}},
               {x});
  }
  Tensor dropout(const Tensor& x) { return add("dropout", {{"rate", pick(0, 7) / 10.0}}, {x}); }
  Tensor batch_norm(const Tensor& x) { return add("batch_norm", json::object(), {x}); }
  // A quarter of the activations are ReLU6, drawn from a stream of their own: a seed gives the
  // network it gave before relu6 existed, with some of its relus clipped at 6.
  Tensor relu(const Tensor& x) {
    return add(activation_rng_.uniform() < 0.25f ? "relu6" : "relu", json::object(), {x});
  }

  // A layer that keeps C, H and W.
  Tensor same_shape_layer(const Tensor& x) {
    switch (rng_.below(6)) {
      case 0:
        return conv(x, x.shape.channels(), true);
      case 1:
        return batch_norm(x);
      case 2:
        return pool(x, true);
      case 3:
        return lrn(x);
      case 4:
        return dropout(x);
      default:
        return relu(x);
    }
  }

  // 2–3 branches from x, each a short chain of same-size layers, joined by concat or add.
  Tensor branches(const Tensor& x) {
    const bool sum = chance(0.5);
    const int64_t channels = sum && chance(0.5) ? x.shape.channels() : pick(1, 16);
    std::vector<Tensor> ends;
    for (int64_t b = pick(2, 3); b > 0; --b) {
      if (ends.empty() && (!sum || channels == x.shape.channels()) && chance(0.4)) {
        ends.push_back(x);  // the identity branch (a residual connection)
        continue;
      }
      Tensor t = !sum && chance(0.25) ? pool(x, true) : conv(x, sum ? channels : pick(1, 16), true);
      for (int64_t more = pick(0, 2); more > 0; --more) t = same_shape_layer(t);
      ends.push_back(t);
    }
    return add(sum ? "add" : "concat", json::object(), ends);
  }

  // Joins x with an earlier value: add when one has x's shape, else concat when one has its H, W;
  // now and then with itself (one value read twice by one layer).
  Tensor long_skip(const Tensor& x) {
    if (chance(0.1)) return add(chance(0.5) ? "add" : "concat", json::object(), {x, x});
    std::vector<Tensor> same_shape, same_size;
    for (const Tensor& t : images_) {
      if (t.name == x.name) continue;
      if (t.shape == x.shape) same_shape.push_back(t);
      if (t.shape.height() == x.shape.height() && t.shape.width() == x.shape.width()) same_size.push_back(t);
    }
    if (!same_shape.empty() && chance(0.6))
      return add("add", json::object(), {x, same_shape[rng_.below(same_shape.size())]});
    if (!same_size.empty()) return add("concat", json::object(), {same_size[rng_.below(same_size.size())], x});
    return conv(x, pick(1, 24), false);
  }

  Tensor data_joined_with_itself(const Tensor& x) {
    return add(chance(0.5) ? "add" : "concat", json::object(), {x, x});
  }

  Tensor block(const Tensor& x) {
    const uint64_t r = rng_.below(100);
    if (r < 30) return conv(x, chance(0.15) ? x.shape.channels() : pick(1, 24), false);
    if (r < 38) return batch_norm(x);
    if (r < 50) return relu(x);
    if (r < 60) return pool(x, false);
    if (r < 66) return lrn(x);
    if (r < 72) return dropout(x);
    if (r < 90) return branches(x);
    return long_skip(x);
  }

  void head(Tensor x) {
    if (chance(0.3))
      x = add(chance(0.5) ? "avg_pool" : "max_pool", {{"global", true}}, {x});
    else if (chance(0.15))
      x = add("flatten", json::object(), {x});
    if (chance(0.4)) {
      x = add("fc", {{"units", pick(1, 32)}}, {x});
      if (chance(0.7)) x = relu(x);
      if (chance(0.4)) x = dropout(x);
    }
    x = add("fc", {{"units", classes_}}, {x});
    loss(x);
  }

  // The loss reads the logits, or in a fifth of the networks a join of them with another value of
  // `classes` elements: the input, an earlier logit-sized value, or an FC from any earlier value
  // (the input included). The choice comes from the form's stream: a deep network that does not
  // take it is the one its seed gave before.
  void loss(Tensor x) {
    if (form_rng_.uniform() < 0.2f) {
      std::vector<Tensor> others;
      for (const Tensor& t : vectors_)
        if (t.shape.elements() == classes_) others.push_back(t);
      Tensor other;
      if (others.empty() || chance(0.5)) {
        std::vector<Tensor> sources = images_;
        sources.insert(sources.end(), vectors_.begin(), vectors_.end());
        other = add("fc", {{"units", classes_}}, {sources[rng_.below(sources.size())]});
      } else {
        other = others[rng_.below(others.size())];
      }
      std::vector<Tensor> ins{x, other};
      if (chance(0.3)) ins.push_back(chance(0.5) ? x : ins[1]);
      x = add("add", json::object(), ins);
    }
    add("softmax_cross_entropy", json::object(), {x});
  }

  // A [K] input: the loss alone (on the input, or on a join with it) when K is the classes, or
  // 0–2 hidden layers — FC (then maybe ReLU, batch norm or dropout), ReLU, dropout,
  // batch norm, or an add of the current value with itself or an earlier one of its size (the
  // input included) — then the loss on the current value when it has `classes` elements, else on
  // an FC.
  void vector_network(Tensor x) {
    vectors_.push_back(x);
    if (x.shape.elements() == classes_ && chance(0.5)) return loss(x);  // no other layer at all
    for (int64_t hidden = chance(0.4) ? 0 : pick(1, 2); hidden > 0; --hidden) {
      const uint64_t r = rng_.below(100);
      if (r < 40) {
        x = add("fc", {{"units", chance(0.4) ? classes_ : pick(1, 32)}}, {x});
        if (chance(0.5)) {
          const uint64_t k = rng_.below(3);
          x = k == 0 ? relu(x) : k == 1 ? batch_norm(x) : dropout(x);
        }
      } else if (r < 55) {
        x = relu(x);
      } else if (r < 65) {
        x = dropout(x);
      } else if (r < 75) {
        x = batch_norm(x);
      } else {
        std::vector<Tensor> same;
        for (const Tensor& t : vectors_)
          if (t.shape == x.shape) same.push_back(t);
        x = add("add", json::object(), {x, same[rng_.below(same.size())]});
      }
    }
    if (x.shape.elements() != classes_ || chance(0.25)) x = add("fc", {{"units", classes_}}, {x});
    loss(x);
  }

  Rng rng_, form_rng_, activation_rng_;
  Form form_;
  std::vector<int64_t> image_;
  int classes_;
  std::vector<int64_t> input_;
  ModelBuilder builder_;
  Graph shadow_;
  std::string previous_ = "data";
  int layers_ = 0;
  std::vector<Tensor> images_;   // every image-shaped value so far: long-skip candidates
  std::vector<Tensor> vectors_;  // every [K] value so far: join partners in vector networks
};

}  // namespace

Graph RandomNetwork::graph() const { return parse_model(model, "stress seed " + std::to_string(seed)); }

RandomNetwork random_network(uint64_t seed) {
  Generator g(seed);
  RandomNetwork n;
  n.seed = seed;
  n.model = g.generate();
  n.batch = g.pick(1, 8);
  return n;
}

}  // namespace vdnn::stress
