// data/image_decode.cc — libjpeg-turbo (region and DCT-scaled decoding) and libpng's simplified API.
#include "data/image_decode.h"

#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
// clang-format off: jpeglib.h needs <cstdio> (FILE) first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on
#include <png.h>

#include "vdnn/error.h"

namespace vdnn {
namespace {

enum class ImageFormat { kJpeg, kPng };

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

// Opens `path` and tells its format by its first bytes; the file is left at its start.
File open_image(const std::string& path, ImageFormat* format) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) VDNN_THROW("image '" << path << "': cannot be read (" << std::strerror(errno) << ")");
  unsigned char head[8] = {};
  const size_t got = std::fread(head, 1, sizeof head, f.get());
  if (got == 0) VDNN_THROW("image '" << path << "': the file is empty (expected a JPEG or PNG image)");
  if (got >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF) {
    *format = ImageFormat::kJpeg;
  } else if (got == 8 && png_sig_cmp(head, 0, 8) == 0) {
    *format = ImageFormat::kPng;
  } else {
    VDNN_THROW("image '" << path << "': not a JPEG or PNG file (its first bytes are neither signature)");
  }
  std::rewind(f.get());
  return f;
}

// An image this large is refused before decoding (PIL's DecompressionBombError threshold, twice
// its warning limit): a corrupt or hostile header can claim 4 billion pixels.
constexpr int64_t kMaxImagePixels = 178956970;

ImageSize checked_size(const std::string& path, int64_t width, int64_t height) {
  if (width < 1 || height < 1 || width * height > kMaxImagePixels)
    VDNN_THROW("image '" << path << "': " << width << " x " << height << " pixels; expected at least 1 x 1 and at most "
                         << kMaxImagePixels << " pixels (PIL's decompression-bomb limit)");
  return {width, height};
}

// libjpeg reports errors by calling error_exit, which must not return: it jumps back to decode's
// setjmp. Its warnings (a truncated or corrupt stream, which it would fill with grey) are errors
// here too, except extraneous bytes between markers (harmless, and common in camera files).
struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void on_jpeg_error(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

void on_jpeg_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code != JWRN_EXTRANEOUS_DATA) on_jpeg_error(cinfo);
}

struct JpegDecoder {
  JpegErrors errors;
  jpeg_decompress_struct cinfo;
  JpegDecoder() {
    cinfo.err = jpeg_std_error(&errors.manager);
    errors.manager.error_exit = on_jpeg_error;
    errors.manager.emit_message = on_jpeg_message;
    jpeg_create_decompress(&cinfo);
  }
  ~JpegDecoder() { jpeg_destroy_decompress(&cinfo); }
};

// Reads the header of the JPEG `f`; refuses colour spaces other than grey, YCbCr and RGB.
void read_jpeg_header(JpegDecoder& d, FILE* f, const std::string& path) {
  jpeg_stdio_src(&d.cinfo, f);
  jpeg_read_header(&d.cinfo, TRUE);
  const J_COLOR_SPACE space = d.cinfo.jpeg_color_space;
  if (space != JCS_GRAYSCALE && space != JCS_YCbCr && space != JCS_RGB)
    VDNN_THROW("image '" << path << "': a " << d.cinfo.num_components
                         << "-component JPEG (CMYK or YCCK); expected grey or colour (YCbCr, RGB)");
}

DecodedImage decode_jpeg(FILE* f, const std::string& path, int channels, const RegionChooser& choose,
                         int64_t min_width, int64_t min_height) {
  DecodedImage out;
  JpegDecoder d;
  if (setjmp(d.errors.jump)) VDNN_THROW("image '" << path << "': not a readable JPEG (" << d.errors.message << ")");
  read_jpeg_header(d, f, path);
  out.source = checked_size(path, d.cinfo.image_width, d.cinfo.image_height);
  out.region = choose(out.source);
  const ImageRegion& region = out.region;
  // The coarsest DCT scale at which the region keeps twice the pixels asked for: the resampler
  // still downscales by 2 or more after it, so its filter (not the DCT's block averaging) shapes
  // the result (within 1-2 levels of PIL's full decode, where scaling to exactly the size would
  // differ by up to 50 at hard edges).
  int scale = 8;
  while (scale > 1 && (region.width / scale < 2.0 * static_cast<double>(min_width) ||
                       region.height / scale < 2.0 * static_cast<double>(min_height)))
    scale /= 2;
  d.cinfo.scale_num = 1;
  d.cinfo.scale_denom = static_cast<unsigned>(scale);
  d.cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&d.cinfo);
  // The region at this scale, with a margin for the resampling filter's taps beyond its edge.
  const double per_pixel = std::max(region.width / scale / static_cast<double>(std::max<int64_t>(min_width, 1)),
                                    region.height / scale / static_cast<double>(std::max<int64_t>(min_height, 1)));
  const int64_t margin = 2 + static_cast<int64_t>(std::ceil(per_pixel));
  const int64_t full_w = d.cinfo.output_width, full_h = d.cinfo.output_height;
  const int64_t x0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(region.x / scale)) - margin, 0, full_w - 1);
  const int64_t x1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((region.x + region.width) / scale)) + margin,
                                         x0 + 1, full_w);
  const int64_t y0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(region.y / scale)) - margin, 0, full_h - 1);
  const int64_t y1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((region.y + region.height) / scale)) + margin,
                                         y0 + 1, full_h);
  JDIMENSION crop_x = static_cast<JDIMENSION>(x0), crop_w = static_cast<JDIMENSION>(x1 - x0);
  if (crop_w < d.cinfo.output_width) jpeg_crop_scanline(&d.cinfo, &crop_x, &crop_w);  // widened to whole iMCUs
  if (y0 > 0) jpeg_skip_scanlines(&d.cinfo, static_cast<JDIMENSION>(y0));
  out.width = d.cinfo.output_width;
  out.height = y1 - y0;
  out.channels = channels;
  out.scale = scale;
  out.x_offset = static_cast<double>(crop_x) * scale;
  out.y_offset = static_cast<double>(y0) * scale;
  out.pixels.resize(static_cast<size_t>(out.width * out.height * channels));
  for (int64_t y = 0; y < out.height; ++y) {
    JSAMPROW row = out.pixels.data() + y * out.width * channels;
    jpeg_read_scanlines(&d.cinfo, &row, 1);
  }
  if (d.cinfo.output_scanline == d.cinfo.output_height)
    jpeg_finish_decompress(&d.cinfo);
  else
    jpeg_abort_decompress(&d.cinfo);
  return out;
}

// libpng's simplified API converts any PNG (palette, 16-bit, alpha composited on black) to the
// format asked for.
DecodedImage decode_png(FILE* f, const std::string& path, int channels, const RegionChooser& choose) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_stdio(&image, f))
    VDNN_THROW("image '" << path << "': not a readable PNG (" << image.message << ")");
  try {
    checked_size(path, image.width, image.height);
  } catch (...) {
    png_image_free(&image);
    throw;
  }
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  DecodedImage out;
  out.width = image.width;
  out.height = image.height;
  out.channels = channels;
  out.source = {out.width, out.height};
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    const std::string message = image.message;
    png_image_free(&image);
    VDNN_THROW("image '" << path << "': not a readable PNG (" << message << ")");
  }
  out.region = choose(out.source);
  return out;
}

}  // namespace

ImageSize read_image_size(const std::string& path) {
  ImageFormat format;
  File f = open_image(path, &format);
  if (format == ImageFormat::kPng) {
    png_image image;
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_stdio(&image, f.get()))
      VDNN_THROW("image '" << path << "': not a readable PNG (" << image.message << ")");
    png_image_free(&image);
    return checked_size(path, image.width, image.height);
  }
  JpegDecoder d;
  if (setjmp(d.errors.jump)) VDNN_THROW("image '" << path << "': not a readable JPEG (" << d.errors.message << ")");
  read_jpeg_header(d, f.get(), path);
  return checked_size(path, d.cinfo.image_width, d.cinfo.image_height);
}

DecodedImage decode_image(const std::string& path, int channels, const RegionChooser& choose, int64_t min_width,
                          int64_t min_height) {
  VDNN_CHECK(channels == 1 || channels == 3, "image '" << path << "': " << channels << " channels asked for; expected 1 or 3");
  ImageFormat format;
  File f = open_image(path, &format);
  return format == ImageFormat::kJpeg ? decode_jpeg(f.get(), path, channels, choose, min_width, min_height)
                                      : decode_png(f.get(), path, channels, choose);
}

}  // namespace vdnn
