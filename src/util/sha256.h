// util/sha256.h — SHA-256 message digest (FIPS 180-4), streaming and one-shot.
//
// Model: a Sha256 object absorbs bytes in any chunking through update(); hex_digest() pads the
// message, finalizes, and returns the 64-character lowercase hex digest. After hex_digest() the
// object is finished: further update() calls are an internal error. Used to fingerprint data files
// and checkpoints; no OpenSSL dependency.
//
//   vdnn::Sha256 h;
//   h.update("ab", 2);
//   h.update("c", 1);
//   std::string hex = h.hex_digest();   // "ba7816bf...15ad"
//   assert(hex == vdnn::sha256_hex("abc", 3));
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace vdnn {

class Sha256 {
 public:
  Sha256();

  // Absorbs `bytes` bytes from `data` (may be null when bytes == 0).
  void update(const void* data, size_t bytes);

  // Pads, finalizes and returns the digest as 64 lowercase hex characters. Call once.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;       // bytes waiting in buffer_
  uint64_t total_bytes_ = 0;  // message length so far
  bool finished_ = false;
};

// One-shot digest of a byte range.
std::string sha256_hex(const void* data, size_t bytes);

}  // namespace vdnn
