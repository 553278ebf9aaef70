// data/image_transform.h — the geometry of torchvision's image recipes, on decoded 8-bit pixels:
// which region of a photo becomes a sample, and the antialiased resampling that makes it one.
//
// Model: a sample is a region of the source image (ImageRegion, data/image_decode.h) resampled to
// the model's width x height, optionally mirrored, then normalized per channel: (p / 255 - mean) /
// std, stored C x H x W as floats.
//  - random_resized_crop_region is torchvision's RandomResizedCrop(scale = (0.08, 1), ratio =
//    (3/4, 4/3)).get_params: up to ten draws of an area fraction (uniform) and a log-uniform aspect
//    ratio, the first that fits at a uniform position; else the whole image cropped to the nearest
//    ratio in range, centered.
//  - center_region is Resize(round(size * resize_ratio)) then CenterCrop(size) (ratio 256/224 =
//    the ImageNet evaluation recipe; 1 = resize the shorter side to the sample and crop the longer):
//    the source region those two steps keep.
//  - resample_region filters with a triangle ("bilinear") kernel widened by the downscaling factor,
//    as PIL's resize does (torchvision's transforms on PIL images), so a large crop is averaged,
//    not aliased. Taps outside the pixels read are left out and the others' weights renormalized,
//    as PIL does at an image's edge; those pixels are the region's own for a crop that is resized
//    (within_region: RandomResizedCrop crops, then resizes), the image's around it for a resize
//    that is cropped (Resize, then CenterCrop).
//
//   DecodedImage img = decode_image(path, 3, [&](ImageSize s) { return random_resized_crop_region(s, rng); },
//                                   224, 224);
//   resample_region(img, 224, 224, /*flip=*/rng.below(2) == 1, kImageNetMean, kImageNetStd, dst,
//                   /*within_region=*/true);
#pragma once

#include <cstdint>

#include "data/image_decode.h"
#include "vdnn/rng.h"

namespace vdnn {

// ImageNet's per-channel mean and std (R, G, B), torchvision's Normalize constants.
inline constexpr float kImageNetMean[3] = {0.485f, 0.456f, 0.406f};
inline constexpr float kImageNetStd[3] = {0.229f, 0.224f, 0.225f};
inline constexpr double kImageNetResizeRatio = 256.0 / 224.0;

ImageRegion random_resized_crop_region(ImageSize size, Rng& rng);
ImageRegion center_region(ImageSize size, int64_t out_width, int64_t out_height, double resize_ratio);

// img.region resampled into dst: img.channels x out_height x out_width floats. mean, std:
// img.channels values each.
void resample_region(const DecodedImage& img, int64_t out_width, int64_t out_height, bool flip, const float* mean,
                     const float* std, float* dst, bool within_region = false);

}  // namespace vdnn
