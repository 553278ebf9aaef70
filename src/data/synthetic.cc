// data/synthetic.cc — class prototypes plus Gaussian noise.
#include "data/synthetic.h"

#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {
namespace {

constexpr uint64_t kPrototypeStream = 1;
constexpr uint64_t kSampleStream = 2;
constexpr int64_t kMaxFloats = int64_t{1} << 31;

void require_positive(const char* what, int64_t value) {
  if (value < 1) VDNN_THROW("make_synthetic: " << what << " must be >= 1, got " << value);
}

}  // namespace

Dataset make_synthetic(int64_t count, int64_t c, int64_t h, int64_t w, int classes, uint64_t seed, uint64_t split) {
  require_positive("count", count);
  require_positive("channels", c);
  require_positive("height", h);
  require_positive("width", w);
  require_positive("classes", classes);
  if (c > kMaxFloats / h || c * h > kMaxFloats / w || c * h * w > kMaxFloats / count) {
    VDNN_THROW("make_synthetic: " << count << " samples of " << c << "x" << h << "x" << w
                                  << " exceed 2^31 floats (expected a smaller synthetic dataset)");
  }
  const int64_t sample = c * h * w;
  if (classes > kMaxFloats / sample) {
    VDNN_THROW("make_synthetic: " << classes << " class prototypes of " << c << "x" << h << "x" << w
                                  << " exceed 2^31 floats (expected fewer classes or smaller images)");
  }

  Rng proto_rng(seed, kPrototypeStream);
  std::vector<float> prototypes(static_cast<size_t>(classes * sample));
  for (float& v : prototypes) v = proto_rng.normal();

  Dataset out;
  out.count = count;
  out.channels = c;
  out.height = h;
  out.width = w;
  out.classes = classes;
  out.name = "synthetic";
  out.labels.resize(static_cast<size_t>(count));
  out.images.resize(static_cast<size_t>(count * sample));

  Rng rng(seed, kSampleStream + 1000 * split);
  for (int64_t i = 0; i < count; ++i) {
    const auto label = static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
    out.labels[static_cast<size_t>(i)] = label;
    const float* proto = prototypes.data() + label * sample;
    float* dst = out.images.data() + i * sample;
    for (int64_t k = 0; k < sample; ++k) dst[k] = proto[k] + kSyntheticNoiseSigma * rng.normal();
  }
  return out;
}

Dataset make_synthetic_tokens(int64_t count, int64_t window, int vocab, uint64_t seed, uint64_t split) {
  require_positive("count", count);
  require_positive("window", window);
  if (vocab < 2) VDNN_THROW("make_synthetic_tokens: vocabulary of " << vocab << " tokens (expected at least 2)");
  if (window + 1 > kMaxFloats / count)
    VDNN_THROW("make_synthetic_tokens: " << count << " windows of " << window + 1
                                         << " tokens exceed 2^31 (expected a smaller synthetic dataset)");
  // The rule every sequence follows: next = (a * id + b) mod vocab, a and b from the seed.
  Rng rule(seed, kPrototypeStream);
  const auto v = static_cast<uint64_t>(vocab);
  const uint64_t a = 1 + rule.below(v - 1), b = rule.below(v);
  Dataset out;
  out.count = count;
  out.channels = window;
  out.height = out.width = 1;
  out.classes = vocab;
  out.labels_per_sample = window;
  out.tokens = true;
  out.name = "synthetic-tokens";
  out.images.resize(static_cast<size_t>(count * window));
  out.labels.resize(static_cast<size_t>(count * window));
  Rng rng(seed, kSampleStream + 1000 * split);
  for (int64_t i = 0; i < count; ++i) {
    uint64_t id = rng.below(v);
    for (int64_t t = 0; t < window; ++t) {
      out.images[static_cast<size_t>(i * window + t)] = static_cast<float>(id);
      id = (a * id + b) % v;
      // One token in ten is noise: the rule is learnable, the loss does not reach 0.
      const uint64_t next = rng.below(10) == 0 ? rng.below(v) : id;
      out.labels[static_cast<size_t>(i * window + t)] = static_cast<int32_t>(next);
      id = next;
    }
  }
  return out;
}

}  // namespace vdnn
