// data/image_decode.cc — libjpeg-turbo (region and DCT-scaled decoding) and libpng's simplified API.
#include "data/image_decode.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
// clang-format off: jpeglib.h needs <cstdio> (FILE) first
#include <jerror.h>
#include <jpeglib.h>
// clang-format on
#include <png.h>

#include "util/file_kind.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

enum class ImageFormat { kJpeg, kPng };

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

// Opens `path` and tells its format by its first bytes; the file is left at its start. Only a
// regular file is opened: a FIFO named x.png would block the reader forever (util/file_kind.h).
File open_image(const std::string& path, ImageFormat* format) {
  const int fd = open_regular_file(path);
  File f(::fdopen(fd, "rb"));
  if (!f) {
    const int error = errno;
    ::close(fd);
    VDNN_THROW("image '" << path << "': cannot be read (" << std::strerror(error) << ")");
  }
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

// PIL's conversion of RGB to grey ("L"): ITU-R 601-2 luma in 16-bit fixed point, rounded.
uint8_t luma(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
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
// setjmp. Its warnings about the data (a truncated or corrupt stream, which it would fill with
// grey) are errors here too; those about odd but harmless headers are not.
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
  if (level != -1) return;  // trace messages
  switch (cinfo->err->msg_code) {
    case JWRN_EXTRANEOUS_DATA:    // bytes between markers
    case JWRN_JFIF_MAJOR:         // a JFIF version libjpeg does not know
    case JWRN_ADOBE_XFORM:        // an unknown Adobe colour transform
    case JWRN_BOGUS_PROGRESSION:  // an odd but decodable progressive scan script
      return;                     // PIL decodes these files too
    default:
      on_jpeg_error(cinfo);  // a truncated or corrupt stream: libjpeg would fill it with grey
  }
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

// Reads the header of the JPEG `f`.
void read_jpeg_header(JpegDecoder& d, FILE* f) {
  jpeg_stdio_src(&d.cinfo, f);
  jpeg_read_header(&d.cinfo, TRUE);
}

bool is_cmyk(const jpeg_decompress_struct& cinfo) {
  return cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
}

// One row of CMYK to RGB or grey, as PIL converts it. PIL reads every CMYK JPEG as stored inverted
// (rawmode "CMYK;I": Adobe's convention, which Photoshop's files follow), marker or not; so do we.
void cmyk_row_to(const uint8_t* cmyk, int64_t width, int channels, uint8_t* out) {
  for (int64_t x = 0; x < width; ++x) {
    const uint8_t* p = cmyk + 4 * x;
    const int nk = p[3];  // 255 - K, K stored inverted
    uint8_t rgb[3];
    for (int c = 0; c < 3; ++c) rgb[c] = static_cast<uint8_t>((p[c] * nk + 127) / 255);
    if (channels == 1)
      out[x] = luma(rgb);
    else
      std::copy(rgb, rgb + 3, out + 3 * x);
  }
}

DecodedImage decode_jpeg(FILE* f, const std::string& path, int channels, const RegionChooser& choose, int64_t min_width,
                         int64_t min_height) {
  DecodedImage out;
  std::vector<uint8_t> row_buffer;  // before setjmp: nothing with a destructor may begin after it
  JpegDecoder d;
  if (setjmp(d.errors.jump)) VDNN_THROW("image '" << path << "': not a readable JPEG (" << d.errors.message << ")");
  read_jpeg_header(d, f);
  out.source = checked_size(path, d.cinfo.image_width, d.cinfo.image_height);
  out.region = choose(out.source);
  const ImageRegion& region = out.region;
  // The coarsest DCT scale at which the region keeps twice the pixels asked for: the resampler
  // still downscales by 2 or more after it, so its filter (not the DCT's block averaging) shapes
  // the result (bench/image_fidelity.py: within 1 level of torchvision's samples at 224, 6 at 64;
  // scaling to exactly the size differed far more at hard edges).
  int scale = 8;
  while (scale > 1 && (region.width / scale < 2.0 * static_cast<double>(min_width) ||
                       region.height / scale < 2.0 * static_cast<double>(min_height)))
    scale /= 2;
  d.cinfo.scale_num = 1;
  d.cinfo.scale_denom = static_cast<unsigned>(scale);
  // Colour to grey is PIL's luma of the decoded RGB (as torchvision's convert('RGB') + Grayscale),
  // not the file's Y plane; CMYK is converted here too.
  const bool cmyk = is_cmyk(d.cinfo);
  const bool colour_to_grey = channels == 1 && !cmyk && d.cinfo.jpeg_color_space != JCS_GRAYSCALE;
  d.cinfo.out_color_space = cmyk ? JCS_CMYK : channels == 1 && !colour_to_grey ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&d.cinfo);
  // The region at this scale, with a margin for the resampling filter's taps beyond its edge.
  const double per_pixel = std::max(region.width / scale / static_cast<double>(std::max<int64_t>(min_width, 1)),
                                    region.height / scale / static_cast<double>(std::max<int64_t>(min_height, 1)));
  const int64_t margin = 2 + static_cast<int64_t>(std::ceil(per_pixel));
  const int64_t full_w = d.cinfo.output_width, full_h = d.cinfo.output_height;
  const int64_t x0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(region.x / scale)) - margin, 0, full_w - 1);
  const int64_t x1 =
      std::clamp<int64_t>(static_cast<int64_t>(std::ceil((region.x + region.width) / scale)) + margin, x0 + 1, full_w);
  const int64_t y0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(region.y / scale)) - margin, 0, full_h - 1);
  const int64_t y1 =
      std::clamp<int64_t>(static_cast<int64_t>(std::ceil((region.y + region.height) / scale)) + margin, y0 + 1, full_h);
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
  if (cmyk || colour_to_grey) row_buffer.resize(static_cast<size_t>(out.width * (cmyk ? 4 : 3)));
  for (int64_t y = 0; y < out.height; ++y) {
    uint8_t* pixels = out.pixels.data() + y * out.width * channels;
    JSAMPROW row = row_buffer.empty() ? pixels : row_buffer.data();
    jpeg_read_scanlines(&d.cinfo, &row, 1);
    if (cmyk) {
      cmyk_row_to(row, out.width, channels, pixels);
    } else if (colour_to_grey) {
      for (int64_t x = 0; x < out.width; ++x) pixels[x] = luma(row + 3 * x);
    }
  }
  if (d.cinfo.output_scanline == d.cinfo.output_height)
    jpeg_finish_decompress(&d.cinfo);
  else
    jpeg_abort_decompress(&d.cinfo);
  return out;
}

// libpng's simplified API reads any PNG (palette, 16-bit, grey or colour with alpha) as 8-bit
// grey + alpha or RGBA; the alpha is dropped, as PIL's convert('RGB') does (the stored colour, not a
// composite), and colour becomes grey by PIL's luma. Where this is not PIL: a gAMA chunk other than
// sRGB's is applied (PIL ignores it), 16-bit samples are rounded to 8 bits (PIL keeps the high
// byte: at most 1 level apart; 16-bit grey, which PIL clips to 255, is scaled).
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
  const bool colour = (image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  image.format = colour ? PNG_FORMAT_RGBA : PNG_FORMAT_GA;
  const int64_t stored = colour ? 4 : 2;
  std::vector<uint8_t> raw(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, raw.data(), 0, nullptr)) {
    const std::string message = image.message;
    png_image_free(&image);
    VDNN_THROW("image '" << path << "': not a readable PNG (" << message << ")");
  }
  DecodedImage out;
  out.width = image.width;
  out.height = image.height;
  out.channels = channels;
  out.source = {out.width, out.height};
  out.pixels.resize(static_cast<size_t>(out.width * out.height * channels));
  for (int64_t i = 0; i < out.width * out.height; ++i) {
    const uint8_t* in = raw.data() + i * stored;
    uint8_t* px = out.pixels.data() + i * channels;
    if (channels == 1)
      px[0] = colour ? luma(in) : in[0];
    else
      for (int c = 0; c < 3; ++c) px[c] = in[colour ? c : 0];
  }
  out.region = choose(out.source);
  return out;
}

}  // namespace

ImageHeader read_image_header(const std::string& path) {
  ImageFormat format;
  File f = open_image(path, &format);
  if (format == ImageFormat::kPng) {
    png_image image;
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_stdio(&image, f.get()))
      VDNN_THROW("image '" << path << "': not a readable PNG (" << image.message << ")");
    png_image_free(&image);
    const bool colour = (image.format & PNG_FORMAT_FLAG_COLOR) != 0,
               alpha = (image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
    return {checked_size(path, image.width, image.height), colour ? (alpha ? "RGBA" : "RGB") : (alpha ? "LA" : "L")};
  }
  JpegDecoder d;
  if (setjmp(d.errors.jump)) VDNN_THROW("image '" << path << "': not a readable JPEG (" << d.errors.message << ")");
  read_jpeg_header(d, f.get());
  return {checked_size(path, d.cinfo.image_width, d.cinfo.image_height), is_cmyk(d.cinfo) ? "CMYK"
                                                                         : d.cinfo.jpeg_color_space == JCS_GRAYSCALE
                                                                             ? "L"
                                                                             : "RGB"};
}

ImageSize read_image_size(const std::string& path) { return read_image_header(path).size; }

DecodedImage decode_image(const std::string& path, int channels, const RegionChooser& choose, int64_t min_width,
                          int64_t min_height) {
  VDNN_CHECK(channels == 1 || channels == 3,
             "image '" << path << "': " << channels << " channels asked for; expected 1 or 3");
  ImageFormat format;
  File f = open_image(path, &format);
  return format == ImageFormat::kJpeg ? decode_jpeg(f.get(), path, channels, choose, min_width, min_height)
                                      : decode_png(f.get(), path, channels, choose);
}

}  // namespace vdnn
