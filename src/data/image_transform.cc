// data/image_transform.cc — crop regions as torchvision draws them, and PIL-style antialiased
// bilinear resampling (see image_transform.h).
#include "data/image_transform.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vdnn {

ImageRegion random_resized_crop_region(ImageSize size, Rng& rng) {
  const double width = static_cast<double>(size.width), height = static_cast<double>(size.height);
  const double area = width * height;
  const double log_min = std::log(3.0 / 4.0), log_max = std::log(4.0 / 3.0);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (0.08 + 0.92 * rng.uniform());
    const double ratio = std::exp(log_min + (log_max - log_min) * rng.uniform());
    const int64_t w = std::llround(std::sqrt(target * ratio));
    const int64_t h = std::llround(std::sqrt(target / ratio));
    if (w > 0 && w <= size.width && h > 0 && h <= size.height) {
      const int64_t top = static_cast<int64_t>(rng.below(static_cast<uint64_t>(size.height - h + 1)));
      const int64_t left = static_cast<int64_t>(rng.below(static_cast<uint64_t>(size.width - w + 1)));
      return {static_cast<double>(left), static_cast<double>(top), static_cast<double>(w), static_cast<double>(h)};
    }
  }
  int64_t w = size.width, h = size.height;  // the whole image, at the nearest ratio in range
  if (width / height < 3.0 / 4.0)
    h = std::llround(width / (3.0 / 4.0));
  else if (width / height > 4.0 / 3.0)
    w = std::llround(height * (4.0 / 3.0));
  return {static_cast<double>((size.width - w) / 2), static_cast<double>((size.height - h) / 2), static_cast<double>(w),
          static_cast<double>(h)};
}

ImageRegion center_region(ImageSize size, int64_t out_width, int64_t out_height, double resize_ratio) {
  // Resize(s): the shorter side becomes s, the longer s * long / short (truncated), as torchvision.
  const int64_t s = std::llround(static_cast<double>(std::min(out_width, out_height)) * resize_ratio);
  const bool wide = size.width >= size.height;
  const int64_t shorter = wide ? size.height : size.width, longer = wide ? size.width : size.height;
  const int64_t resized_long = s * longer / shorter;
  const int64_t resized_w = wide ? resized_long : s, resized_h = wide ? s : resized_long;
  // CenterCrop(out): offsets rounded half to even (Python's round), in the resized image; then
  // back to source pixels.
  const double left = std::nearbyint((resized_w - out_width) / 2.0),
               top = std::nearbyint((resized_h - out_height) / 2.0);
  const double sx = static_cast<double>(size.width) / static_cast<double>(resized_w);
  const double sy = static_cast<double>(size.height) / static_cast<double>(resized_h);
  ImageRegion r{left * sx, top * sy, static_cast<double>(out_width) * sx, static_cast<double>(out_height) * sy};
  // A sample larger than the resized image (a crop past its edge) is clipped to the image.
  r.x = std::max(r.x, 0.0), r.y = std::max(r.y, 0.0);
  r.width = std::min(r.width, static_cast<double>(size.width) - r.x);
  r.height = std::min(r.height, static_cast<double>(size.height) - r.y);
  return r;
}

namespace {

// The taps of one axis: output i reads inputs first[i] .. first[i] + count[i] - 1 with weights
// weights[i * taps ...], as PIL's precompute_coeffs with the bilinear (triangle) filter.
struct AxisTaps {
  int64_t taps = 0;
  std::vector<int64_t> first, count;
  std::vector<float> weights;
};

// start, length: the region along this axis in decoded pixels; in_size: the decoded pixels there;
// within: taps only inside the region.
AxisTaps axis_taps(double start, double length, int64_t in_size, int64_t out_size, bool within) {
  const double scale = length / static_cast<double>(out_size);
  const double filter_scale = std::max(scale, 1.0);
  const double support = filter_scale;  // the triangle's radius, widened when downscaling
  AxisTaps t;
  t.taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<size_t>(out_size));
  t.count.resize(static_cast<size_t>(out_size));
  t.weights.assign(static_cast<size_t>(out_size * t.taps), 0.f);
  // The pixels taps may read: [first, end), never empty.
  const int64_t first =
      within ? std::clamp<int64_t>(static_cast<int64_t>(std::floor(start + 1e-9)), 0, in_size - 1) : 0;
  const int64_t end =
      within ? std::clamp<int64_t>(static_cast<int64_t>(std::ceil(start + length - 1e-9)), first + 1, in_size)
             : in_size;
  for (int64_t i = 0; i < out_size; ++i) {
    const double center = start + (static_cast<double>(i) + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(std::floor(center - support + 0.5)), first);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(std::floor(center + support + 0.5)), end);
    double total = 0;
    float* w = t.weights.data() + i * t.taps;
    const int64_t n = std::min(std::max<int64_t>(hi - lo, 0), t.taps);
    for (int64_t k = 0; k < n; ++k) {
      const double d = std::abs((static_cast<double>(lo + k) - center + 0.5) / filter_scale);
      const double v = d < 1 ? 1 - d : 0;
      w[k] = static_cast<float>(v);
      total += v;
    }
    if (total > 0) {
      for (int64_t k = 0; k < n; ++k) w[k] = static_cast<float>(w[k] / total);
      t.first[static_cast<size_t>(i)] = lo;
      t.count[static_cast<size_t>(i)] = n;
    } else {  // a region beyond the pixels read: the nearest edge pixel
      t.first[static_cast<size_t>(i)] = std::clamp<int64_t>(static_cast<int64_t>(center), first, end - 1);
      t.count[static_cast<size_t>(i)] = 1;
      w[0] = 1.f;
    }
  }
  return t;
}

}  // namespace

void resample_region(const DecodedImage& img, int64_t out_width, int64_t out_height, bool flip, const float* mean,
                     const float* std, float* dst, bool within_region) {
  const int64_t c = img.channels;
  const ImageRegion& region = img.region;
  const AxisTaps xs =
      axis_taps((region.x - img.x_offset) / img.scale, region.width / img.scale, img.width, out_width, within_region);
  const AxisTaps ys = axis_taps((region.y - img.y_offset) / img.scale, region.height / img.scale, img.height,
                                out_height, within_region);
  // Horizontal pass over the rows the vertical taps read: rows x out_width x c floats.
  const int64_t row0 = *std::min_element(ys.first.begin(), ys.first.end());
  int64_t row1 = row0;
  for (int64_t i = 0; i < out_height; ++i)
    row1 = std::max(row1, ys.first[static_cast<size_t>(i)] + ys.count[static_cast<size_t>(i)]);
  std::vector<float> rows(static_cast<size_t>((row1 - row0) * out_width * c));
  for (int64_t y = row0; y < row1; ++y) {
    const uint8_t* in = img.pixels.data() + y * img.width * c;
    float* out = rows.data() + (y - row0) * out_width * c;
    for (int64_t x = 0; x < out_width; ++x) {
      const float* w = xs.weights.data() + x * xs.taps;
      const uint8_t* p = in + xs.first[static_cast<size_t>(x)] * c;
      for (int64_t ch = 0; ch < c; ++ch) {
        float sum = 0;
        for (int64_t k = 0; k < xs.count[static_cast<size_t>(x)]; ++k) sum += w[k] * p[k * c + ch];
        out[x * c + ch] = sum;
      }
    }
  }
  // Vertical pass, then normalization into C x H x W (mirrored: output column x is column W-1-x).
  std::vector<float> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    scale[static_cast<size_t>(ch)] = 1.f / (255.f * std[ch]);
    shift[static_cast<size_t>(ch)] = -mean[ch] / std[ch];
  }
  for (int64_t y = 0; y < out_height; ++y) {
    const float* w = ys.weights.data() + y * ys.taps;
    const int64_t first = ys.first[static_cast<size_t>(y)] - row0, n = ys.count[static_cast<size_t>(y)];
    for (int64_t x = 0; x < out_width; ++x) {
      const int64_t to = flip ? out_width - 1 - x : x;
      for (int64_t ch = 0; ch < c; ++ch) {
        float sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += w[k] * rows[static_cast<size_t>(((first + k) * out_width + x) * c + ch)];
        // PIL rounds to 8 bits between resize and ToTensor; so do we, so a sample is the same image.
        const float pixel = std::clamp(std::nearbyint(sum), 0.f, 255.f);
        dst[(ch * out_height + y) * out_width + to] =
            pixel * scale[static_cast<size_t>(ch)] + shift[static_cast<size_t>(ch)];
      }
    }
  }
}

}  // namespace vdnn
