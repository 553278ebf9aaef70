// data/idx_file.cc — IDX reader on top of zlib's gz* stream API.
#include "data/idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "vdnn/error.h"

namespace vdnn {
namespace {

constexpr uint8_t kTypeUnsignedByte = 0x08;
constexpr size_t kReadChunk = size_t{1} << 24;  // gzread takes an unsigned int length

const char* type_name(uint8_t type) {
  switch (type) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
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

// Owns a gzFile and reads through it, turning zlib failures into vdnn::Error.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) {
      VDNN_THROW(path << ": file not found (expected an IDX file, optionally gzip-compressed)");
    }
    if (std::filesystem::is_directory(status)) {
      VDNN_THROW(path << ": is a directory (expected an IDX file, optionally gzip-compressed)");
    }
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      VDNN_THROW(path << ": cannot open: " << (errno ? std::strerror(errno) : "out of memory"));
    }
  }
  ~GzReader() {
    if (file_ != nullptr) gzclose(file_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to `bytes` bytes; returns how many arrived (fewer only at end of file).
  size_t read(void* dst, size_t bytes) {
    auto* out = static_cast<uint8_t*>(dst);
    size_t done = 0;
    while (done < bytes) {
      const auto want = static_cast<unsigned>(std::min(bytes - done, kReadChunk));
      const int got = gzread(file_, out + done, want);
      if (got < 0) {
        int code = 0;
        std::string msg = gzerror(file_, &code);
        if (msg.starts_with(path_ + ": "))
          msg.erase(0, path_.size() + 2);  // zlib prefixes the path
        VDNN_THROW(path_ << ": corrupt or unreadable gzip data near decompressed byte "
                         << offset_ + done << ": " << msg
                         << " (expected a valid .gz or plain file)");
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    offset_ += done;
    return done;
  }

  // After a short read: " (gzip stream cut short)" when zlib saw the compressed data end early.
  std::string short_read_note() {
    int code = Z_OK;
    gzerror(file_, &code);
    return code == Z_BUF_ERROR ? " (gzip stream cut short: the .gz file is incomplete)" : "";
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  size_t offset_ = 0;
};

}  // namespace

IdxArray read_idx(const std::string& path) {
  GzReader in(path);

  uint8_t magic[4];
  const size_t magic_got = in.read(magic, 4);
  if (magic_got < 4) {
    VDNN_THROW(path << ": truncated: file holds " << magic_got
                    << " bytes, an IDX header needs at least 4" << in.short_read_note());
  }
  if (magic[0] != 0 || magic[1] != 0) {
    VDNN_THROW(path << ": bad magic " << hex_byte(magic[0]) << " " << hex_byte(magic[1])
                    << " (expected an IDX file starting with 0x00 0x00)");
  }
  if (magic[2] != kTypeUnsignedByte) {
    VDNN_THROW(path << ": unsupported IDX element type " << hex_byte(magic[2]) << " ("
                    << type_name(magic[2]) << "); only 0x08 (unsigned byte) is supported");
  }
  const int ndims = magic[3];
  if (ndims == 0) VDNN_THROW(path << ": IDX header declares 0 dimensions (expected at least 1)");

  std::vector<uint8_t> dim_bytes(4 * static_cast<size_t>(ndims));
  const size_t dims_got = in.read(dim_bytes.data(), dim_bytes.size());
  if (dims_got < dim_bytes.size()) {
    VDNN_THROW(path << ": truncated: header declares " << ndims << " dimensions ("
                    << dim_bytes.size() << " bytes of sizes), file holds " << dims_got
                    << in.short_read_note());
  }

  IdxArray out;
  int64_t elements = 1;
  for (int i = 0; i < ndims; ++i) {
    const uint8_t* b = &dim_bytes[4 * static_cast<size_t>(i)];
    const int64_t d = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    out.dims.push_back(d);
    if (d == 0) {
      VDNN_THROW(path << ": dimension " << i << " is 0 (expected every dimension >= 1)");
    }
    elements *= d;  // d < 2^32 and elements <= 2^31 before, so no overflow
    if (elements > kIdxMaxElements) {
      VDNN_THROW(path << ": absurd dimensions " << dims_text(out.dims) << "... (more than 2^31"
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
    VDNN_THROW(path << ": truncated: header says " << dims_text(out.dims) << " (" << total
                    << " bytes of data), file holds " << filled << in.short_read_note());
  }

  uint8_t extra[256];
  const size_t extra_got = in.read(extra, sizeof(extra));
  if (extra_got > 0) {
    VDNN_THROW(path << ": trailing garbage: " << (extra_got < sizeof(extra) ? "" : "at least ")
                    << extra_got << " bytes after the " << total << " data bytes declared by dims "
                    << dims_text(out.dims) << " (expected the file to end there)");
  }
  return out;
}

}  // namespace vdnn
