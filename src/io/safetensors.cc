#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "io/json_text.h"
#include "util/atomic_file.h"
#include "util/file_kind.h"
#include "util/json_dump.h"
#include "util/mapped_file.h"
#include "vdnn/error.h"

namespace vdnn {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian numbers; this reader copies them as they are");

namespace {

constexpr uint64_t kMaxHeaderBytes = 100 << 20;  // the reference implementation's limit
constexpr const char* kMetadataKey = "__metadata__";
constexpr uint64_t kMaxElements = uint64_t{1} << 60;

int64_t elements_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A dtype safetensors defines: its element size and how vdnn reads it.
struct Dtype {
  const char* name;
  uint64_t bytes;
  enum Kind { kFloat, kSigned, kUnsigned, kUnsupported } kind;
};

constexpr Dtype kDtypes[] = {
    {"F32", 4, Dtype::kFloat},        {"F16", 2, Dtype::kFloat},           {"BF16", 2, Dtype::kFloat},
    {"F64", 8, Dtype::kFloat},        {"I8", 1, Dtype::kSigned},           {"I16", 2, Dtype::kSigned},
    {"I32", 4, Dtype::kSigned},       {"I64", 8, Dtype::kSigned},          {"U8", 1, Dtype::kUnsigned},
    {"U16", 2, Dtype::kUnsigned},     {"U32", 4, Dtype::kUnsigned},        {"U64", 8, Dtype::kUnsigned},
    {"BOOL", 1, Dtype::kUnsupported}, {"F8_E5M2", 1, Dtype::kUnsupported}, {"F8_E4M3", 1, Dtype::kUnsupported}};

const Dtype* dtype_named(const std::string& name) {
  for (const Dtype& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

// Where one tensor's bytes are, as the header says.
struct Entry {
  std::string name;
  std::vector<int64_t> shape;
  const Dtype* dtype = nullptr;
  uint64_t begin = 0, end = 0;
};

class HeaderReader {
 public:
  HeaderReader(const std::string& path, uint64_t data_bytes, const SafeTensorsReadOptions& options)
      : path_(path), data_bytes_(data_bytes), options_(options) {}

  [[noreturn]] void fail(const std::string& what) const { VDNN_THROW(path_ << ": " << what); }

  Entry entry(const std::string& name, const nlohmann::json& j) const {
    const std::string t = "tensor '" + name + "'";
    if (!j.is_object()) fail(t + ": expected an object with dtype, shape and data_offsets");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!j.contains(key)) fail(t + ": field '" + key + "' is missing");
    if (!j["dtype"].is_string()) fail(t + ": dtype must be a string such as \"F32\"");
    Entry e{name, shape(t, j["shape"]), dtype(t, name, j["dtype"].get<std::string>()), 0, 0};
    const nlohmann::json& off = j["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail(t + ": data_offsets must be [begin, end], two non-negative integers");
    e.begin = off[0].get<uint64_t>();
    e.end = off[1].get<uint64_t>();
    if (e.end < e.begin)
      fail(t + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] run backwards");
    if (e.end > data_bytes_)
      fail("truncated: " + t + " ends at data byte " + std::to_string(e.end) + " but only " +
           std::to_string(data_bytes_) + " data bytes follow the header");
    // elements <= 2^60 and bytes <= 8: no overflow
    const uint64_t expected = static_cast<uint64_t>(elements_of(e.shape)) * e.dtype->bytes;
    if (e.end - e.begin != expected)
      fail(t + ": shape " + shape_text(e.shape) + " needs " + std::to_string(expected) + " bytes of " + e.dtype->name +
           " but data_offsets span " + std::to_string(e.end - e.begin));
    return e;
  }

 private:
  const Dtype* dtype(const std::string& t, const std::string& name, const std::string& text) const {
    const Dtype* d = dtype_named(text);
    if (!d) fail(t + ": unknown dtype '" + text + "' (vdnn reads F32, F16, BF16, F64 and integer dtypes)");
    if (d->kind == Dtype::kUnsupported)
      fail(t + ": dtype " + text + " is not supported (vdnn reads F32, F16, BF16 and F64 as floats)");
    if (d->kind != Dtype::kFloat && !(options_.accept_integer && options_.accept_integer(name)))
      fail(t + ": dtype " + text +
           " holds integers, which vdnn takes only where it knows their meaning "
           "(a batch norm's num_batches_tracked); parameters must be F32, F16, BF16 or F64");
    return d;
  }

  // Dimensions are checked as they multiply, so the byte count cannot overflow.
  std::vector<int64_t> shape(const std::string& t, const nlohmann::json& j) const {
    if (!j.is_array()) fail(t + ": shape must be an array of non-negative integers");
    std::vector<int64_t> s;
    uint64_t elements = 1;
    for (const nlohmann::json& d : j) {
      if (!d.is_number_unsigned()) fail(t + ": shape must be an array of non-negative integers");
      const uint64_t v = d.get<uint64_t>();
      if (v > kMaxElements || (v > 0 && elements > kMaxElements / v))
        fail(t + ": shape " + dump_json(j) + " has more than 2^60 elements");
      elements *= v;
      s.push_back(static_cast<int64_t>(v));
    }
    return s;
  }

  const std::string& path_;
  uint64_t data_bytes_;
  const SafeTensorsReadOptions& options_;
};

std::map<std::string, std::string> read_metadata(const HeaderReader& r, const nlohmann::json& j) {
  if (!j.is_object()) r.fail(std::string(kMetadataKey) + " must be an object of strings");
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) r.fail(std::string(kMetadataKey) + " entry '" + k + "' is not a string");
    m[k] = v.get<std::string>();
  }
  return m;
}

// The tensors must tile the data exactly: no overlaps, no bytes that belong to no tensor.
void check_tiling(const HeaderReader& r, std::vector<Entry>& entries, uint64_t data_bytes) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t at = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < at)
      r.fail("tensors '" + previous->name + "' and '" + e.name + "' overlap (data bytes " + std::to_string(e.begin) +
             ".." + std::to_string(at) + ")");
    if (e.begin > at)
      r.fail("data bytes " + std::to_string(at) + ".." + std::to_string(e.begin) + " before tensor '" + e.name +
             "' belong to no tensor");
    at = e.end;
    previous = &e;
  }
  if (at != data_bytes) r.fail(std::to_string(data_bytes - at) + " bytes after the last tensor belong to no tensor");
}

uint64_t read_u64_le(const uint8_t* b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

// One little-endian element of `bytes` bytes, zero-extended.
uint64_t read_le(const uint8_t* b, uint64_t bytes) {
  uint64_t v = 0;
  for (uint64_t i = bytes; i-- > 0;) v = (v << 8) | b[i];
  return v;
}

// IEEE half precision to float: exact (every half is a float; subnormal halves are normal floats).
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // Inf, NaN
  if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal: exact
  return sign ? -magnitude : magnitude;
}

// The elements of one tensor, converted: floats into t.data, integers into t.integers.
void convert(const HeaderReader& r, const Entry& e, const uint8_t* bytes, SafeTensor& t) {
  const size_t n = static_cast<size_t>(elements_of(e.shape));
  const uint64_t size = e.dtype->bytes;
  const std::string name = e.dtype->name;
  if (e.dtype->kind != Dtype::kFloat) {
    t.integers.resize(n);
    const unsigned shift = static_cast<unsigned>(64 - 8 * size);
    for (size_t k = 0; k < n; ++k) {
      const uint64_t v = read_le(bytes + k * size, size);
      if (e.dtype->kind == Dtype::kSigned) {
        t.integers[k] = static_cast<int64_t>(v << shift) >> shift;  // sign-extend
      } else {
        if (v > static_cast<uint64_t>(INT64_MAX))
          r.fail("tensor '" + e.name + "' element " + std::to_string(k) + " is " + std::to_string(v) +
                 ", beyond the int64 range vdnn keeps integers in");
        t.integers[k] = static_cast<int64_t>(v);
      }
    }
    return;
  }
  t.data.resize(n);
  if (name == "F32") {
    if (n) std::memcpy(t.data.data(), bytes, n * sizeof(float));
  } else if (name == "F16") {
    for (size_t k = 0; k < n; ++k) t.data[k] = half_to_float(static_cast<uint16_t>(read_le(bytes + 2 * k, 2)));
  } else if (name == "BF16") {  // the top half of a float
    for (size_t k = 0; k < n; ++k)
      t.data[k] = std::bit_cast<float>(static_cast<uint32_t>(read_le(bytes + 2 * k, 2)) << 16);
  } else {  // F64: to the nearest float (ties to even)
    for (size_t k = 0; k < n; ++k) {
      const double d = std::bit_cast<double>(read_le(bytes + 8 * k, 8));
      t.data[k] = static_cast<float>(d);
      if (std::isfinite(d) && !std::isfinite(t.data[k]))
        r.fail("tensor '" + e.name + "' element " + std::to_string(k) + " is " + VDNN_MSG(d) +
               ", beyond the range of float (F64 is read as float)");
    }
  }
}

}  // namespace

bool SafeTensor::is_integer() const { return !dtype.empty() && (dtype[0] == 'I' || dtype[0] == 'U'); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const SafeTensor* SafeTensors::find(const std::string& name) const {
  for (const SafeTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const SafeTensor& SafeTensors::require(const std::string& name, const std::vector<int64_t>& shape,
                                       const std::string& what) const {
  const std::string file = path.empty() ? "safetensors" : path;
  const SafeTensor* t = find(name);
  if (!t) VDNN_THROW(file << ": tensor '" << name << "' that " << what << " needs is missing");
  if (t->is_integer())
    VDNN_THROW(file << ": tensor '" << name << "' has dtype " << t->dtype << " (integers) but " << what
                    << " needs floating-point values (F32, F16, BF16 or F64)");
  if (t->shape != shape)
    VDNN_THROW(file << ": tensor '" << name << "' has shape " << shape_text(t->shape) << " but " << what
                    << " needs shape " << shape_text(shape));
  return *t;
}

void write_safetensors(const std::string& path, const SafeTensors& file) {
  nlohmann::json header = nlohmann::json::object();
  if (!file.metadata.empty()) header[kMetadataKey] = file.metadata;
  uint64_t offset = 0;
  for (const SafeTensor& t : file.tensors) {
    VDNN_CHECK(t.name != kMetadataKey && !header.contains(t.name), "tensor name '" << t.name << "' twice");
    const size_t count = t.is_integer() ? t.integers.size() : t.data.size();
    VDNN_CHECK(static_cast<int64_t>(count) == elements_of(t.shape),
               "tensor '" << t.name << "' holds " << count << (t.is_integer() ? " integers" : " floats")
                          << " for shape " << shape_text(t.shape));
    const uint64_t bytes = count * (t.is_integer() ? sizeof(int64_t) : sizeof(float));
    header[t.name] = {
        {"dtype", t.is_integer() ? "I64" : "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = dump_json(header);
  text.append((8 - (text.size() % 8)) % 8, ' ');  // the data starts 8-byte aligned
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  AtomicFile out(path);
  out.write(length, sizeof length);
  out.write(text.data(), text.size());
  for (const SafeTensor& t : file.tensors) {
    if (t.is_integer())
      out.write(t.integers.data(), t.integers.size() * sizeof(int64_t));
    else
      out.write(t.data.data(), t.data.size() * sizeof(float));
  }
  out.commit();
}

SafeTensors read_safetensors(const std::string& path, const SafeTensorsReadOptions& options) {
  if (const std::string why = not_a_regular_file(path); !why.empty())
    VDNN_THROW(path << ": " << why << " (expected a .safetensors file)");
  const MappedFile file(path);
  return parse_safetensors(file.bytes(), path, options);
}

SafeTensors parse_safetensors(std::span<const uint8_t> bytes, const std::string& source,
                              const SafeTensorsReadOptions& options) {
  const uint64_t size = bytes.size();
  if (size < 8) VDNN_THROW(source << ": truncated: " << size << " bytes, shorter than the 8-byte header length");
  const uint64_t n = read_u64_le(bytes.data());
  if (n > size - 8)
    VDNN_THROW(source << ": truncated or not safetensors: the header length " << n << " goes beyond the end of the "
                      << size << "-byte file");
  if (n > kMaxHeaderBytes) VDNN_THROW(source << ": header length " << n << " is above safetensors' 100 MiB limit");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, n);
  const nlohmann::json header = parse_json_text(text, source + ": header", kMaxHeaderBytes);
  if (!header.is_object()) VDNN_THROW(source << ": header is not a JSON object");

  const uint64_t data_bytes = size - 8 - n;
  const auto data = bytes.subspan(8 + n);
  const HeaderReader reader(source, data_bytes, options);
  SafeTensors file;
  file.path = source;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey)
      file.metadata = read_metadata(reader, value);
    else
      entries.push_back(reader.entry(name, value));
  }
  check_tiling(reader, entries, data_bytes);
  for (const Entry& e : entries) {
    SafeTensor t{e.name, e.shape, {}, e.dtype->name, {}};
    convert(reader, e, data.data() + e.begin, t);
    file.tensors.push_back(std::move(t));
  }
  return file;
}

}  // namespace vdnn
