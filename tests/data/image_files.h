// tests/data/image_files.h — writes test images with the same libraries vdnn decodes with (libpng's
// simplified API, libjpeg-turbo): for the tests, and for the fuzz seeds (fuzz/write_seeds.cc).
// A write that fails throws std::runtime_error naming the file.
//
//   std::vector<uint8_t> px = test::gradient(40, 30, 3);        // rows of 40 x 3 bytes
//   test::write_png(dir + "/a.png", 40, 30, 3, px);
//   test::write_jpeg(dir + "/b.jpg", 40, 30, 3, px, /*quality=*/95);
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>
// clang-format off: jpeglib.h needs <cstdio> first
#include <jpeglib.h>
// clang-format on
#include <png.h>

namespace vdnn::test {

inline void write_png(const std::string& path, int64_t width, int64_t height, int channels,
                      const std::vector<uint8_t>& pixels) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr))
    throw std::runtime_error(path + ": " + image.message);
}

inline void write_jpeg(const std::string& path, int64_t width, int64_t height, int channels,
                       const std::vector<uint8_t>& pixels, int quality = 95, bool adobe_marker = true) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error(path + ": cannot be created");
  jpeg_compress_struct cinfo;
  jpeg_error_mgr errors;
  cinfo.err = jpeg_std_error(&errors);  // a test fails loudly (exit) on an encoder error
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, f);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = channels;  // 1 grey, 3 RGB, 4 CMYK (written with Adobe's marker)
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 4 ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (!adobe_marker) cinfo.write_Adobe_marker = FALSE;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels.data()) + cinfo.next_scanline * width * channels;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::fclose(f);
}

// Sets the modification time of `root` and every folder and file below it (links left alone) to now
// less `seconds_ago`: 10 s
// back, a file list cached now is not "racily clean" (data/image_folder.h) and is written; 0, it is.
inline void set_folder_times(const std::string& root, int seconds_ago) {
  namespace fs = std::filesystem;
  const auto when = fs::file_time_type::clock::now() - std::chrono::seconds(seconds_ago);
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(root))
    if (!e.is_symlink()) fs::last_write_time(e.path(), when);
  fs::last_write_time(root, when);
}

// A smooth image: channel c rises from 20 c at the top left to 20 c + 210 at the bottom right.
inline std::vector<uint8_t> gradient(int64_t width, int64_t height, int channels) {
  std::vector<uint8_t> px(static_cast<size_t>(width * height * channels));
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        px[static_cast<size_t>((y * width + x) * channels + c)] = static_cast<uint8_t>(
            x * 150 / std::max<int64_t>(width - 1, 1) + y * 60 / std::max<int64_t>(height - 1, 1) + c * 20);
  return px;
}

}  // namespace vdnn::test
