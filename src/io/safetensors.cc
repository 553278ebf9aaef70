#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "io/json_text.h"
#include "util/atomic_file.h"
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

// Where one tensor's bytes are, as the header says.
struct Entry {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

bool is_known_dtype(const std::string& d) {
  static const std::set<std::string> known = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3", "I16", "U16",
                                              "F16",  "BF16", "I32", "U32",     "F32",     "F64", "I64",
                                              "U64"};
  return known.count(d) > 0;
}

class HeaderReader {
 public:
  HeaderReader(const std::string& path, uint64_t data_bytes) : path_(path), data_bytes_(data_bytes) {}

  [[noreturn]] void fail(const std::string& what) const { VDNN_THROW(path_ << ": " << what); }

  Entry entry(const std::string& name, const nlohmann::json& j) const {
    const std::string t = "tensor '" + name + "'";
    if (!j.is_object()) fail(t + ": expected an object with dtype, shape and data_offsets");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!j.contains(key)) fail(t + ": field '" + key + "' is missing");
    if (!j["dtype"].is_string()) fail(t + ": dtype must be a string such as \"F32\"");
    const std::string dtype = j["dtype"].get<std::string>();
    if (dtype != "F32")
      fail(t + (is_known_dtype(dtype) ? ": dtype " + dtype + " is not supported (vdnn reads F32 only)"
                                      : ": unknown dtype '" + dtype + "' (vdnn reads F32)"));
    Entry e{name, shape(t, j["shape"]), 0, 0};
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
    const uint64_t expected = static_cast<uint64_t>(elements_of(e.shape)) * sizeof(float);
    if (e.end - e.begin != expected)
      fail(t + ": shape " + shape_text(e.shape) + " needs " + std::to_string(expected) +
           " bytes of F32 but data_offsets span " + std::to_string(e.end - e.begin));
    return e;
  }

 private:
  // Dimensions are checked as they multiply, so the byte count cannot overflow.
  std::vector<int64_t> shape(const std::string& t, const nlohmann::json& j) const {
    if (!j.is_array()) fail(t + ": shape must be an array of non-negative integers");
    std::vector<int64_t> s;
    uint64_t elements = 1;
    for (const nlohmann::json& d : j) {
      if (!d.is_number_unsigned()) fail(t + ": shape must be an array of non-negative integers");
      const uint64_t v = d.get<uint64_t>();
      if (v > kMaxElements || (v > 0 && elements > kMaxElements / v))
        fail(t + ": shape " + j.dump() + " has more than 2^60 elements");
      elements *= v;
      s.push_back(static_cast<int64_t>(v));
    }
    return s;
  }

  const std::string& path_;
  uint64_t data_bytes_;
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
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < at)
      r.fail("tensors '" + previous->name + "' and '" + e.name + "' overlap (data bytes " +
             std::to_string(e.begin) + ".." + std::to_string(at) + ")");
    if (e.begin > at)
      r.fail("data bytes " + std::to_string(at) + ".." + std::to_string(e.begin) + " before tensor '" +
             e.name + "' belong to no tensor");
    at = e.end;
    previous = &e;
  }
  if (at != data_bytes)
    r.fail(std::to_string(data_bytes - at) + " bytes after the last tensor belong to no tensor");
}

uint64_t read_u64_le(const uint8_t* b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

}  // namespace

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
    VDNN_CHECK(static_cast<int64_t>(t.data.size()) == elements_of(t.shape),
               "tensor '" << t.name << "' holds " << t.data.size() << " floats for shape " << shape_text(t.shape));
    const uint64_t bytes = t.data.size() * sizeof(float);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - (text.size() % 8)) % 8, ' ');  // the data starts 8-byte aligned
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  AtomicFile out(path);
  out.write(length, sizeof length);
  out.write(text.data(), text.size());
  for (const SafeTensor& t : file.tensors) out.write(t.data.data(), t.data.size() * sizeof(float));
  out.commit();
}

SafeTensors read_safetensors(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) VDNN_THROW(path << ": no such file");
  if (std::filesystem::is_directory(path, ec)) VDNN_THROW(path << ": is a folder, expected a .safetensors file");
  const MappedFile file(path);
  return parse_safetensors(file.bytes(), path);
}

SafeTensors parse_safetensors(std::span<const uint8_t> bytes, const std::string& source) {
  const uint64_t size = bytes.size();
  if (size < 8)
    VDNN_THROW(source << ": truncated: " << size << " bytes, shorter than the 8-byte header length");
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
  const HeaderReader reader(source, data_bytes);
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
    SafeTensor t{e.name, e.shape, std::vector<float>(static_cast<size_t>(elements_of(e.shape)))};
    if (e.end > e.begin) std::memcpy(t.data.data(), data.data() + e.begin, e.end - e.begin);
    file.tensors.push_back(std::move(t));
  }
  return file;
}

}  // namespace vdnn
