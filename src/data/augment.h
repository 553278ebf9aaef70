// data/augment.h — training-time augmentation of in-memory images, as the standard CIFAR recipe
// does it (torchvision: RandomCrop(size, padding=pad), then RandomHorizontalFlip()).
//
// Model: a sample (C x H x W floats, already normalized) is padded by `pad` pixels on every side
// with the value a black pixel normalizes to (Dataset::zero_pixel; torchvision pads the raw image
// with 0 before ToTensor and Normalize, so this is the same image), an H x W window is cut at a
// uniformly drawn offset (top, then left, each in 0..2*pad), and with probability 1/2 the result
// is mirrored left to right. Every draw comes from the Rng handed in; BatchLoader seeds one per
// sample from (--seed, epoch, position in the epoch), so a run is reproducible whatever the thread
// timing, and the same sample is augmented differently in every epoch. torchvision draws from
// torch's generator, so the same seed gives other crops than PyTorch; the distribution is the same.
//
//   Augmentation a = parse_augmentation("cifar", "--augment");   // pad 4, flip
//   Rng rng(seed, stream);
//   augment_sample(src, dst, 3, 32, 32, dataset.zero_pixel, a, rng);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vdnn/rng.h"

namespace vdnn {

struct Augmentation {
  int pad = 0;        // > 0: random crop of the image's size from it padded by this much
  bool flip = false;  // horizontal flip with probability 1/2
  // RandomResizedCrop (image folders only, data/image_folder.h: the crop is drawn before decoding)
  bool resized_crop = false;
  bool any() const { return pad > 0 || flip || resized_crop; }
};

// "none", "flip", "cifar" (pad 4 + crop, flip) or "imagenet" (random resized crop, flip; image
// folders); anything else throws vdnn::Error naming `flag` and the valid values.
Augmentation parse_augmentation(const std::string& text, const std::string& flag);
// What parse_augmentation reads back: "none", "flip", "cifar", "imagenet" (or "pad N" / "pad N, flip").
std::string augmentation_name(const Augmentation& a);

// `dst` (C x H x W floats, not overlapping `src`) = `src` padded, cropped and flipped as `a` says
// (a.resized_crop is the image folder's). zero_pixel: per channel the padding value (empty: 0).
void augment_sample(const float* src, float* dst, int64_t channels, int64_t height, int64_t width,
                    const std::vector<float>& zero_pixel, const Augmentation& a, Rng& rng);

}  // namespace vdnn
