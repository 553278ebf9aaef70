#include "util/gzip_reader.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "vdnn/error.h"

namespace vdnn {

namespace {

constexpr uint8_t kGzipMagic0 = 0x1f, kGzipMagic1 = 0x8b;
constexpr int kGzipWindowBits = 15 + 16;       // 32 KiB window, gzip wrapper only
constexpr size_t kMaxChunk = size_t{1} << 30;  // zlib counts in unsigned int

bool starts_with_gzip_magic(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == kGzipMagic0 && bytes[1] == kGzipMagic1;
}

}  // namespace

GzipReader::GzipReader(std::span<const uint8_t> input, std::string source)
    : input_(input), source_(std::move(source)), gzip_(starts_with_gzip_magic(input)) {
  if (!gzip_) return;
  if (inflateInit2(&z_, kGzipWindowBits) != Z_OK) fail("out of memory starting zlib");
  stream_open_ = true;
}

GzipReader::~GzipReader() {
  if (stream_open_) inflateEnd(&z_);
}

void GzipReader::fail(const std::string& what) const {
  VDNN_THROW(source_ << ": corrupt or unreadable gzip data near decompressed byte " << produced_ << ": " << what
                     << " (expected a valid .gz or plain file)");
}

size_t GzipReader::read(void* dst, size_t bytes) {
  auto* out = static_cast<uint8_t*>(dst);
  return gzip_ ? inflate_into(out, bytes) : read_plain(out, bytes);
}

size_t GzipReader::read_plain(uint8_t* dst, size_t bytes) {
  const size_t n = std::min(bytes, input_.size() - consumed_);
  if (n > 0) std::memcpy(dst, input_.data() + consumed_, n);
  consumed_ += n;
  produced_ += n;
  return n;
}

// Hands zlib the next slice of input once it has used up the previous one.
void GzipReader::feed_input() {
  if (z_.avail_in > 0 || consumed_ == input_.size()) return;
  const size_t n = std::min(input_.size() - consumed_, kMaxChunk);
  z_.next_in = const_cast<Bytef*>(input_.data() + consumed_);
  z_.avail_in = static_cast<uInt>(n);
  consumed_ += n;
}

// A member ended: another member may follow; anything else after it is an error.
void GzipReader::next_member_or_end() {
  const size_t left = z_.avail_in + (input_.size() - consumed_);
  if (left == 0) {
    ended_ = true;
    return;
  }
  const size_t at = input_.size() - left;
  if (!starts_with_gzip_magic(input_.subspan(at)))
    fail(std::to_string(left) + " bytes after the end of the gzip stream are not another gzip member");
  if (inflateReset(&z_) != Z_OK) fail("zlib could not start the next gzip member");
}

size_t GzipReader::inflate_into(uint8_t* dst, size_t bytes) {
  size_t done = 0;
  while (done < bytes && !ended_ && !cut_short_) {
    feed_input();
    if (z_.avail_in == 0) {
      cut_short_ = true;
      break;
    }
    const size_t want = std::min(bytes - done, kMaxChunk);
    z_.next_out = dst + done;
    z_.avail_out = static_cast<uInt>(want);
    const uInt in_before = z_.avail_in;
    const int rc = inflate(&z_, Z_NO_FLUSH);
    done += want - z_.avail_out;
    produced_ += want - z_.avail_out;  // before any error, which names it
    const bool stalled = z_.avail_in == in_before && z_.avail_out == want;
    if (rc == Z_STREAM_END) {
      next_member_or_end();
    } else if (rc == Z_NEED_DICT) {
      fail("the stream asks for a preset dictionary");
    } else if (rc == Z_MEM_ERROR) {
      fail("out of memory");
    } else if ((rc != Z_OK && rc != Z_BUF_ERROR) || stalled) {
      fail(z_.msg != nullptr ? z_.msg : "zlib error " + std::to_string(rc));
    }
  }
  return done;
}

std::string GzipReader::short_read_note() const {
  return cut_short_ ? " (gzip stream cut short: the .gz file is incomplete)" : "";
}

}  // namespace vdnn
