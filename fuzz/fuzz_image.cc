// fuzz/fuzz_image.cc — bytes -> an image file -> read_image_size and decode_image with a region and
// a sample size drawn from the input's last bytes, then resample_region: what an image folder's scan
// and its loader's workers run on every file (libjpeg-turbo's region and DCT-scaled decoding,
// libpng's simplified API, the crop geometry and the resampler).
//
//   build-fuzz/fuzz/fuzz_image /tmp/new-inputs fuzz/corpus/image
// (bash scripts/fuzz.sh runs every target; new inputs go to the first folder, which must exist.)
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "data/image_decode.h"
#include "data/image_transform.h"
#include "fuzz/expect_vdnn_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The decoders read files: this process's own, rewritten for every input.
  static const std::string path = "/tmp/vdnn_fuzz_image_" + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  // The last 4 bytes (when there are more than 8): the region's corner and size as fractions of the
  // image, the sample's side and channel count.
  const uint8_t* knobs = size > 8 ? data + size - 4 : nullptr;
  const double fx = knobs ? knobs[0] / 255.0 : 0, fw = knobs ? (knobs[1] + 1) / 256.0 : 1;
  const int64_t side = knobs ? 1 + knobs[2] % 64 : 8;
  const int channels = knobs && knobs[3] % 2 ? 1 : 3;
  // Headers claiming more than 2^22 pixels are not decoded: up to vdnn's limit (PIL's, 179 million
  // pixels) the decoders may allocate gigabytes, which -malloc_limit_mb would report as a finding.
  int64_t pixels = 0;
  vdnn::fuzz::expect_vdnn_error([&] {
    const vdnn::ImageSize s = vdnn::read_image_size(path);
    pixels = s.width * s.height;
  });
  if (pixels > (int64_t{1} << 22)) return 0;
  vdnn::fuzz::expect_vdnn_error([&] {
    const vdnn::DecodedImage img = vdnn::decode_image(
        path, channels,
        [&](vdnn::ImageSize s) {
          const double w = static_cast<double>(s.width), h = static_cast<double>(s.height);
          return vdnn::ImageRegion{fx * w * (1 - fw), fx * h * (1 - fw), w * fw, h * fw};
        },
        side, side);
    std::vector<float> out(static_cast<size_t>(channels * side * side));
    const float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.25f, 0.25f, 0.25f};
    vdnn::resample_region(img, side, side, knobs && knobs[0] % 2, mean, std, out.data());
  });
  return 0;
}
