// data/dataset.h — an in-memory labelled image dataset.
//
// Model: `count` samples, each a C x H x W float image (stored NCHW, already normalized, so
// images.size() == count * channels * height * width) and an int32 label in [0, classes).
// Loaders (load_fashion_mnist, make_synthetic) fill it; BatchLoader iterates over it.
//
//   vdnn::Dataset d = vdnn::make_synthetic(256, 1, 8, 8, 4, /*seed=*/1);
//   int64_t sample = d.channels * d.height * d.width;
//   const float* third = d.images.data() + 2 * sample;   // image of sample 2
//   int32_t label = d.labels[2];                          // in [0, d.classes)
//   std::cout << d.name << ": " << d.count << " samples\n";
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vdnn {

struct Dataset {
  int64_t count = 0, channels = 0, height = 0, width = 0;
  int classes = 0;
  std::vector<float> images;    // count * channels * height * width, NCHW, normalized
  std::vector<int32_t> labels;  // count entries in [0, classes)
  std::string name;             // e.g. "fashion-mnist-train"; used in messages
  // Per channel, what a raw 0 (black) pixel became when normalized: what augmentation pads with
  // (data/augment.h). Empty: 0.
  std::vector<float> zero_pixel;
};

}  // namespace vdnn
