// data/idx_file.h — reader for the IDX array format used by (Fashion-)MNIST.
//
// Model: an IDX file is a 4-byte magic (0x00 0x00 <type> <ndims>), ndims big-endian uint32
// dimension sizes, then the elements in row-major order. read_idx() reads it through zlib, so the
// same call works for .gz and uncompressed files. Only element type 0x08 (unsigned byte) is
// supported. Anything malformed (missing file, bad magic, other type, zero or absurd dimensions,
// truncated data, bytes after the last element) throws vdnn::Error naming the path and the problem.
// parse_idx() reads the same from bytes in memory (read_idx maps the file and calls it).
//
//   vdnn::IdxArray a = vdnn::read_idx("/data/train-images-idx3-ubyte.gz");
//   // a.dims == {60000, 28, 28}; a.data.size() == 60000 * 28 * 28
//   int64_t n = a.dims[0];
//   uint8_t first_pixel = a.data[0];
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vdnn {

struct IdxArray {
  std::vector<int64_t> dims;  // outermost first, each >= 1
  std::vector<uint8_t> data;  // product(dims) elements, row-major
};

// Largest element count read_idx() accepts (2^31); anything larger is treated as a corrupt header.
inline constexpr int64_t kIdxMaxElements = int64_t{1} << 31;

// Reads a whole unsigned-byte IDX file (gzip-compressed or plain). Throws vdnn::Error on any
// problem.
IdxArray read_idx(const std::string& path);
// The same from the file's bytes (gzip-compressed or plain); `source` names them in errors.
IdxArray parse_idx(std::span<const uint8_t> bytes, const std::string& source);

}  // namespace vdnn
