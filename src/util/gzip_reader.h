// util/gzip_reader.h — reads bytes held in memory, inflating them when they are gzip-compressed.
//
// Model: what zlib's gzread() does for a file, for a span: input starting with the gzip magic
// (0x1f 0x8b) is inflated (several concatenated members are one stream, as gzip defines), anything
// else is passed through as it is. A pull reader: read() hands out the decompressed bytes in order,
// so a caller can grow its buffer as data arrives and a lying size field cannot force a huge
// allocation. Corrupt data (bad CRC, bad block), bytes after the last member that are not another
// member, and out-of-memory throw vdnn::Error naming `source`; a stream that is cut short simply ends
// early, and short_read_note() says so.
//
//   GzipReader in(mapped.bytes(), "train-images-idx3-ubyte.gz");
//   uint8_t magic[4];
//   if (in.read(magic, 4) < 4) throw Error("truncated" + in.short_read_note());
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace vdnn {

class GzipReader {
 public:
  GzipReader(std::span<const uint8_t> input, std::string source);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Reads up to `bytes` bytes; returns how many arrived (fewer only at the end of the data).
  size_t read(void* dst, size_t bytes);
  // After a short read: " (gzip stream cut short: the .gz file is incomplete)" when the compressed
  // data ended inside a member, else "".
  std::string short_read_note() const;

 private:
  size_t read_plain(uint8_t* dst, size_t bytes);
  size_t inflate_into(uint8_t* dst, size_t bytes);
  void feed_input();
  void next_member_or_end();
  [[noreturn]] void fail(const std::string& what) const;

  std::span<const uint8_t> input_;
  std::string source_;
  bool gzip_ = false;
  size_t consumed_ = 0;  // input bytes handed to zlib (gzip) or copied out (plain)
  size_t produced_ = 0;  // bytes handed out so far
  bool stream_open_ = false;
  bool ended_ = false;      // the last member's trailer was read
  bool cut_short_ = false;  // the input ended inside a member
  z_stream z_{};
};

}  // namespace vdnn
