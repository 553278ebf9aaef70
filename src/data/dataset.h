// data/dataset.h — an in-memory labelled image dataset, or token data for language models.
//
// Model: `count` samples, each a C x H x W float image (stored NCHW, already normalized, so
// images.size() == count * channels * height * width) and `labels_per_sample` int32 labels in
// [0, classes) (1 for images: labels.size() == count * labels_per_sample).
// Loaders (load_fashion_mnist, make_synthetic) fill it; BatchLoader iterates over it. A dataset
// too large to hold (an image folder, data/image_folder.h) has a `reader` instead of `images`:
// BatchLoader's workers ask it for each sample, decoded and augmented then.
// Token data (`tokens`; data/token_windows.h): a sample is a window of T token ids held as exact
// floats (channels = T, height = width = 1: the model's per-sample input Shape{T}), its
// labels_per_sample = T labels the next T ids, `classes` the vocabulary size; the reader makes
// both from the token file, so `labels` stays empty.
//
//   vdnn::Dataset d = vdnn::make_synthetic(256, 1, 8, 8, 4, /*seed=*/1);
//   int64_t sample = d.channels * d.height * d.width;
//   const float* third = d.images.data() + 2 * sample;   // image of sample 2
//   int32_t label = d.labels[2];                          // in [0, d.classes)
//   std::cout << d.name << ": " << d.count << " samples\n";
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/augment.h"

namespace vdnn {

// Produces samples on demand; called from several loader threads at once.
class SampleReader {
 public:
  virtual ~SampleReader() = default;
  // Writes sample `index` (C x H x W floats), augmented with draws from `rng`, to dst and its
  // Dataset::labels_per_sample labels to `labels`; returns the sample written (another one when
  // `index` is unreadable and the reader skips bad samples). `rng` is the sample's own stream
  // (BatchLoader: from the seed, the epoch and the position in it), for whatever the reader draws.
  virtual int64_t read(int64_t index, float* dst, int32_t* labels, const Augmentation& augment, Rng& rng) const = 0;
  virtual int64_t bad_images() const { return 0; }  // unreadable samples left out or replaced so far
  // Whether read() ignores `index` when training, drawing its sample from `rng` instead (token
  // windows at random offsets): BatchLoader then keeps no shuffled order of the samples.
  virtual bool draws_samples() const { return false; }
};

// Image files that are not already what the model takes (image folders; all 0 for other data):
// decoded at another size, or converted from another colour mode (PIL's names: L, LA, RGB, RGBA,
// CMYK) to the model's (L for one channel, RGB for three).
struct ImageAdaptation {
  int64_t images = 0;                       // readable image files
  int64_t resized = 0;                      // whose width x height is not the model's
  int64_t converted = 0;                    // whose colour mode is not the model's
  std::vector<std::string> converted_from;  // those files' modes
};

struct Dataset {
  int64_t count = 0, channels = 0, height = 0, width = 0;
  int classes = 0;                // image classes; token data: the vocabulary size
  int64_t labels_per_sample = 1;  // token data: T (the next token of each position)
  bool tokens = false;            // token data: samples hold token ids, not pixels
  std::vector<float> images;      // count * channels * height * width, NCHW, normalized
  std::vector<int32_t> labels;    // count * labels_per_sample entries in [0, classes); empty when the reader makes them
  std::string name;               // e.g. "fashion-mnist-train"; used in messages
  // Per channel, what a raw 0 (black) pixel became when normalized: what augmentation pads with
  // (data/augment.h). Empty: 0.
  std::vector<float> zero_pixel;
  std::shared_ptr<const SampleReader> reader;  // set: `images` is empty and the reader makes samples
  ImageAdaptation adapted;                     // image folders: what decoding resizes and converts
  // Token data read from text: the character (UTF-8) of each id, to decode what a model generates;
  // empty otherwise (a .bin file's ids come from a tokenizer vdnn does not hold).
  std::vector<std::string> vocabulary;
  // Image folders: each label's class folder name, in label order (torchvision's ImageFolder
  // classes); empty where the data names no classes. Saved with the weights, checked by `vdnn infer`.
  std::vector<std::string> class_names;
};

}  // namespace vdnn
