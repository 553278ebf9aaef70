#include "io/npy.h"

#include <cstring>
#include <string_view>

#include "core/shape.h"
#include "util/atomic_file.h"
#include "util/mapped_file.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// The value after `'key':` in the header dict, from its first non-blank character.
std::string_view value_of(std::string_view header, std::string_view key, const std::string& source) {
  const std::string quoted = "'" + std::string(key) + "'";
  size_t at = header.find(quoted);
  if (at == std::string_view::npos) VDNN_THROW(source << ": .npy header has no " << quoted << ": " << header);
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos) VDNN_THROW(source << ": .npy header is malformed: " << header);
  std::string_view rest = header.substr(at + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest;
}

std::vector<int64_t> parse_shape_tuple(std::string_view v, const std::string& source) {
  if (v.empty() || v.front() != '(') VDNN_THROW(source << ": .npy 'shape' is not a tuple: " << v);
  const size_t close = v.find(')');
  if (close == std::string_view::npos) VDNN_THROW(source << ": .npy 'shape' is not closed: " << v);
  std::vector<int64_t> shape;
  int64_t dim = -1;
  for (char c : v.substr(1, close - 1)) {
    if (c >= '0' && c <= '9') {
      if (dim > (int64_t{1} << 40)) VDNN_THROW(source << ": .npy 'shape' has a dimension too large: " << v);
      dim = (dim < 0 ? 0 : dim * 10) + (c - '0');
    } else if (c == ',' || c == ' ') {
      if (c == ',' && dim < 0) VDNN_THROW(source << ": .npy 'shape' is malformed: " << v.substr(0, close + 1));
      if (dim >= 0) shape.push_back(dim);
      dim = -1;
    } else {
      VDNN_THROW(source << ": .npy 'shape' is malformed: " << v.substr(0, close + 1));
    }
  }
  if (dim >= 0) shape.push_back(dim);
  return shape;
}

}  // namespace

NpyArray parse_npy(std::span<const uint8_t> bytes, const std::string& source) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.size() < 10 || text.substr(0, kMagic.size()) != kMagic)
    VDNN_THROW(source << ": not a NumPy .npy file (no \\x93NUMPY magic)");
  const int major = bytes[6];
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = bytes[8] | (size_t{bytes[9]} << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (text.size() < 12) VDNN_THROW(source << ": .npy file is truncated in its header");
    header_len = bytes[8] | (size_t{bytes[9]} << 8) | (size_t{bytes[10]} << 16) | (size_t{bytes[11]} << 24);
    start = 12;
  } else {
    VDNN_THROW(source << ": .npy version " << major << " is not one of 1, 2, 3");
  }
  if (header_len > text.size() - start) VDNN_THROW(source << ": .npy file is truncated in its header");
  const std::string_view header = text.substr(start, header_len);
  const std::string_view descr = value_of(header, "descr", source);
  if (descr.substr(0, 5) != "'<f4'")
    VDNN_THROW(source << ": .npy dtype is " << descr.substr(0, descr.find(',')) << ", expected '<f4' (float32; "
                      << "use array.astype(numpy.float32))");
  if (value_of(header, "fortran_order", source).substr(0, 5) != "False")
    VDNN_THROW(source << ": .npy array is in Fortran order, expected C order (numpy.ascontiguousarray)");
  NpyArray a;
  a.shape = parse_shape_tuple(value_of(header, "shape", source), source);
  const int64_t n = elements_up_to(a.shape);
  const size_t data_bytes = text.size() - start - header_len;
  if (n < 0 || static_cast<uint64_t>(n) * sizeof(float) != data_bytes)
    VDNN_THROW(source << ": .npy shape " << Shape(a.shape).to_string() << " needs "
                      << (n < 0 ? std::string("too many") : std::to_string(n * sizeof(float)))
                      << " bytes of data, the file has " << data_bytes);
  a.data.resize(static_cast<size_t>(n));
  if (n > 0) std::memcpy(a.data.data(), bytes.data() + start + header_len, data_bytes);
  return a;
}

NpyArray read_npy(const std::string& path) {
  MappedFile f(path);
  return parse_npy(f.bytes(), path);
}

void write_npy(const std::string& path, const std::vector<int64_t>& shape, std::span<const float> data) {
  std::string dims;  // "3," for one dimension (a Python tuple), "3, 4" for more
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t total = kMagic.size() + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  VDNN_CHECK(header.size() <= 0xffff, "npy header of " << header.size() << " bytes");
  std::string prefix(kMagic);
  prefix += '\x01';
  prefix += '\x00';
  prefix += static_cast<char>(header.size() & 0xff);
  prefix += static_cast<char>(header.size() >> 8);
  AtomicFile out(path);
  out.write(prefix.data(), prefix.size());
  out.write(header.data(), header.size());
  out.write(data.data(), data.size_bytes());
  out.commit();
}

}  // namespace vdnn
