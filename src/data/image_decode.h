// data/image_decode.h — JPEG and PNG files to 8-bit pixels, by Debian's libjpeg-turbo and libpng.
//
// Model: a file is told by its first bytes (JPEG: FF D8 FF; PNG: its 8-byte signature), not by its
// name. read_image_size and read_image_header read the header only; the header's colour mode is
// named as PIL names it ("L" grey, "LA" grey with alpha, "RGB", "RGBA", "CMYK"). decode_image reads the header, asks
// `choose` which region of the image the sample shows (ImageSize in, ImageRegion within it out), and returns rows of
// width x channels bytes, channels 1 = grey or 3 = RGB whatever the file holds, converted as PIL converts (grey
// repeated; RGB to grey by PIL's luma; CMYK, read as stored inverted as PIL reads it, to RGB; a PNG's alpha dropped;
// 16-bit PNGs taken as sRGB; image_decode.cc says where a PNG's gamma chunk makes it differ). A PNG is decoded whole; a
// JPEG only in the rows and (whole iMCU) columns around the region, and at 1/2, 1/4 or 1/8 of its size where the region
// still has at least 2 x min_width by 2 x min_height pixels at that scale (libjpeg-turbo's DCT
// scaling: the decoder skips the detail a downscaling would average away, as PIL's draft mode and
// DALI's ROI decoding do). Decoded pixel (x, y) shows the source pixels around
// (x_offset + (x + 0.5) * scale, y_offset + (y + 0.5) * scale).
// Anything unreadable — a missing or empty file, a file that is neither JPEG nor PNG, more than
// 179 million pixels, a truncated or corrupt stream (libjpeg's warnings about the data count as
// errors) — throws vdnn::Error naming the file.
//
//   ImageSize size = read_image_size("cat.jpg");                              // 500 x 375
//   DecodedImage img = decode_image("cat.jpg", 3, [](ImageSize) { return ImageRegion{100, 50, 300, 300}; },
//                                   224, 224);
//   // img.scale == 1 (300 / 2 < 2 * 224); img.pixels.size() == img.width * img.height * 3
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace vdnn {

struct ImageSize {
  int64_t width = 0, height = 0;
};

// A rectangle of a source image, in its pixels (fractions allowed).
struct ImageRegion {
  double x = 0, y = 0, width = 0, height = 0;
};

struct DecodedImage {
  int64_t width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;        // height rows of width * channels bytes
  double scale = 1;                   // source pixels per decoded pixel (1, 2, 4 or 8)
  double x_offset = 0, y_offset = 0;  // the source position of the decoded buffer's corner
  ImageSize source;                   // the file's image
  ImageRegion region;                 // what `choose` picked
};

using RegionChooser = std::function<ImageRegion(ImageSize)>;

ImageSize read_image_size(const std::string& path);

struct ImageHeader {
  ImageSize size;
  std::string mode;  // PIL's name of the file's colour mode: L, LA, RGB, RGBA or CMYK
};
ImageHeader read_image_header(const std::string& path);

// channels: 1 or 3. The chosen region must lie within the image.
DecodedImage decode_image(const std::string& path, int channels, const RegionChooser& choose, int64_t min_width,
                          int64_t min_height);

}  // namespace vdnn
