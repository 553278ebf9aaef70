// data/augment.cc — padded random crop and horizontal flip of one sample (see augment.h).
#include "data/augment.h"

#include "vdnn/error.h"

namespace vdnn {

Augmentation parse_augmentation(const std::string& text, const std::string& flag) {
  if (text == "none") return {};
  if (text == "flip") return {0, true};
  if (text == "cifar") return {4, true};
  if (text == "imagenet") return {0, true, true};
  VDNN_THROW(flag << " '" << text << "': expected none, flip (horizontal flip, p = 1/2), cifar (pad 4, random "
                  << "crop to the image's size, then flip: torchvision's RandomCrop(size, padding=4) and "
                  << "RandomHorizontalFlip()) or imagenet (image folders: RandomResizedCrop(size) and "
                  << "RandomHorizontalFlip(); evaluation Resize(size * 256 / 224) and CenterCrop(size))");
}

std::string augmentation_name(const Augmentation& a) {
  if (a.resized_crop) return a.pad == 0 && a.flip ? "imagenet" : "resized crop" + std::string(a.flip ? ", flip" : "");
  if (!a.any()) return "none";
  if (a.pad == 0) return "flip";
  if (a.pad == 4 && a.flip) return "cifar";
  return "pad " + std::to_string(a.pad) + (a.flip ? ", flip" : "");
}

void augment_sample(const float* src, float* dst, int64_t channels, int64_t height, int64_t width,
                    const std::vector<float>& zero_pixel, const Augmentation& a, Rng& rng) {
  const int64_t span = 2 * static_cast<int64_t>(a.pad) + 1;
  const int64_t top = a.pad > 0 ? static_cast<int64_t>(rng.below(static_cast<uint64_t>(span))) - a.pad : 0;
  const int64_t left = a.pad > 0 ? static_cast<int64_t>(rng.below(static_cast<uint64_t>(span))) - a.pad : 0;
  const bool flip = a.flip && rng.below(2) == 1;
  for (int64_t c = 0; c < channels; ++c) {
    const float fill = zero_pixel.empty() ? 0.f : zero_pixel[static_cast<size_t>(c)];
    const float* plane = src + c * height * width;
    float* out = dst + c * height * width;
    for (int64_t y = 0; y < height; ++y) {
      const int64_t sy = y + top;  // the source row this output row shows
      for (int64_t x = 0; x < width; ++x) {
        const int64_t sx = (flip ? width - 1 - x : x) + left;
        out[y * width + x] = sy >= 0 && sy < height && sx >= 0 && sx < width ? plane[sy * width + sx] : fill;
      }
    }
  }
}

}  // namespace vdnn
