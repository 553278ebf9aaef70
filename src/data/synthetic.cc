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

}  // namespace vdnn
