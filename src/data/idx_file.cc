// data/idx_file.cc — IDX reader on top of util/gzip_reader.h (gzip or plain bytes in memory).
#include "data/idx_file.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "util/file_kind.h"
#include "util/gzip_reader.h"
#include "util/mapped_file.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

constexpr uint8_t kTypeUnsignedByte = 0x08;

const char* type_name(uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "unknown";
  }
}

std::string hex_byte(uint8_t b) {
  static const char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[b >> 4] + kHex[b & 0xF];
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += 'x';
    s += std::to_string(dims[i]);
  }
  return s;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  if (const std::string why = not_a_regular_file(path); !why.empty())
    VDNN_THROW(path << ": " << why << " (expected an IDX file, optionally gzip-compressed)");
  const MappedFile file(path);
  return parse_idx(file.bytes(), path);
}

IdxArray parse_idx(std::span<const uint8_t> bytes, const std::string& source) {
  GzipReader in(bytes, source);

  uint8_t magic[4];
  const size_t magic_got = in.read(magic, 4);
  if (magic_got < 4) {
    VDNN_THROW(source << ": truncated: file holds " << magic_got << " bytes, an IDX header needs at least 4"
                      << in.short_read_note());
  }
  if (magic[0] != 0 || magic[1] != 0) {
    VDNN_THROW(source << ": bad magic " << hex_byte(magic[0]) << " " << hex_byte(magic[1])
                      << " (expected an IDX file starting with 0x00 0x00)");
  }
  if (magic[2] != kTypeUnsignedByte) {
    VDNN_THROW(source << ": unsupported IDX element type " << hex_byte(magic[2]) << " (" << type_name(magic[2])
                      << "); only 0x08 (unsigned byte) is supported");
  }
  const int ndims = magic[3];
  if (ndims == 0) VDNN_THROW(source << ": IDX header declares 0 dimensions (expected at least 1)");

  std::vector<uint8_t> dim_bytes(4 * static_cast<size_t>(ndims));
  const size_t dims_got = in.read(dim_bytes.data(), dim_bytes.size());
  if (dims_got < dim_bytes.size()) {
    VDNN_THROW(source << ": truncated: header declares " << ndims << " dimensions (" << dim_bytes.size()
                      << " bytes of sizes), file holds " << dims_got << in.short_read_note());
  }

  IdxArray out;
  int64_t elements = 1;
  for (int i = 0; i < ndims; ++i) {
    const uint8_t* b = &dim_bytes[4 * static_cast<size_t>(i)];
    const int64_t d = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    out.dims.push_back(d);
    if (d == 0) {
      VDNN_THROW(source << ": dimension " << i << " is 0 (expected every dimension >= 1)");
    }
    elements *= d;  // d < 2^32 and elements <= 2^31 before, so no overflow
    if (elements > kIdxMaxElements) {
      VDNN_THROW(source << ": absurd dimensions " << dims_text(out.dims) << "... (more than 2^31"
                        << " elements; the header is probably corrupt)");
    }
  }

  // Grow the buffer as data arrives so a lying header cannot force a huge allocation up front.
  const auto total = static_cast<size_t>(elements);
  size_t filled = 0;
  while (filled < total) {
    const size_t step = std::min(total - filled, std::max(filled, size_t{1} << 20));
    out.data.resize(filled + step);
    const size_t got = in.read(out.data.data() + filled, step);
    filled += got;
    if (got < step) break;
  }
  if (filled < total) {
    VDNN_THROW(source << ": truncated: header says " << dims_text(out.dims) << " (" << total
                      << " bytes of data), file holds " << filled << in.short_read_note());
  }

  uint8_t extra[256];
  const size_t extra_got = in.read(extra, sizeof(extra));
  if (extra_got > 0) {
    VDNN_THROW(source << ": trailing garbage: " << (extra_got < sizeof(extra) ? "" : "at least ") << extra_got
                      << " bytes after the " << total << " data bytes declared by dims " << dims_text(out.dims)
                      << " (expected the file to end there)");
  }
  return out;
}

}  // namespace vdnn
