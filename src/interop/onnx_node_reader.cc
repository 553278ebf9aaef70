#include "interop/onnx_node_reader.h"

#include <cmath>
#include <cstring>

#include "core/shape.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

const char* type_name(int32_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT:
      return "FLOAT";
    case onnx::TensorProto::DOUBLE:
      return "DOUBLE";
    case onnx::TensorProto::FLOAT16:
      return "FLOAT16";
    case onnx::TensorProto::BFLOAT16:
      return "BFLOAT16";
    case onnx::TensorProto::INT64:
      return "INT64";
    case onnx::TensorProto::INT32:
      return "INT32";
    case onnx::TensorProto::BOOL:
      return "BOOL";
    default:
      return "another type";
  }
}

int64_t element_count(const onnx::TensorProto& t, const std::string& where) {
  int64_t n = 1;
  for (int64_t d : onnx_dims(t, where)) n *= d;
  return n;
}

// The raw little-endian bytes of `n` elements of `size` bytes, checked; nullptr if not raw.
const char* raw_bytes(const onnx::TensorProto& t, int64_t n, size_t size, const std::string& where) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
    VDNN_THROW(where << ": its data is in an external file, which vdnn does not read (export the "
                        "model into one file: torch.onnx.export keeps models under 2 GB in one)");
  if (!t.has_raw_data()) return nullptr;
  if (t.raw_data().size() != static_cast<size_t>(n) * size)
    VDNN_THROW(where << ": raw data holds " << t.raw_data().size() << " bytes, its shape needs "
                     << static_cast<size_t>(n) * size);
  return t.raw_data().data();
}

void check_count(int64_t have, int64_t need, const std::string& where) {
  if (have != need) VDNN_THROW(where << ": holds " << have << " values, its shape needs " << need);
}

}  // namespace

std::vector<int64_t> onnx_dims(const onnx::TensorProto& t, const std::string& where) {
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxTensorElements / d))
      VDNN_THROW(where << ": dims must be >= 0 with at most 2^36 elements in all");
    n *= d;
  }
  return dims;
}

std::vector<float> onnx_floats(const onnx::TensorProto& t, const std::string& where) {
  if (t.data_type() != onnx::TensorProto::FLOAT)
    VDNN_THROW(where << ": is " << type_name(t.data_type()) << ", vdnn reads FLOAT (float32) tensors here");
  const int64_t n = element_count(t, where);
  // The data's size is checked against the shape before anything is allocated for it.
  if (const char* raw = raw_bytes(t, n, sizeof(float), where)) {
    std::vector<float> out(n);
    std::memcpy(out.data(), raw, out.size() * sizeof(float));  // little-endian, as x86 is
    return out;
  }
  check_count(t.float_data_size(), n, where);
  return {t.float_data().begin(), t.float_data().end()};
}

std::vector<int64_t> onnx_integers(const onnx::TensorProto& t, const std::string& where) {
  const int64_t n = element_count(t, where);
  switch (t.data_type()) {
    case onnx::TensorProto::INT64:
      if (const char* raw = raw_bytes(t, n, sizeof(int64_t), where)) {
        std::vector<int64_t> out(n);
        std::memcpy(out.data(), raw, out.size() * sizeof(int64_t));
        return out;
      }
      check_count(t.int64_data_size(), n, where);
      return {t.int64_data().begin(), t.int64_data().end()};
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::BOOL: {
      const size_t size = t.data_type() == onnx::TensorProto::BOOL ? 1 : sizeof(int32_t);
      if (const char* raw = raw_bytes(t, n, size, where)) {
        std::vector<int64_t> out(n);
        for (int64_t i = 0; i < n; ++i) {
          int32_t v = 0;
          std::memcpy(&v, raw + i * size, size);
          out[i] = size == 1 ? static_cast<int8_t>(v) : v;
        }
        return out;
      }
      check_count(t.int32_data_size(), n, where);  // ONNX keeps BOOL and INT32 in int32_data
      return {t.int32_data().begin(), t.int32_data().end()};
    }
    default:
      VDNN_THROW(where << ": is " << type_name(t.data_type()) << ", expected INT64, INT32 or BOOL");
  }
}

OnnxConstants::OnnxConstants(onnx::GraphProto& graph, const std::string& source) {
  for (auto& t : *graph.mutable_initializer()) {
    if (t.name().empty()) VDNN_THROW(source << ": an initializer has no name");
    if (!tensors_.emplace(t.name(), &t).second)
      VDNN_THROW(source << ": initializer '" << t.name() << "' is defined twice");
    initializers_.insert(t.name());
  }
  for (auto& node : *graph.mutable_node()) {
    if (node.op_type() != "Constant" || node.output_size() != 1) continue;
    for (auto& a : *node.mutable_attribute())
      if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) tensors_[node.output(0)] = a.mutable_t();
  }
}

void OnnxConstants::release(const std::string& name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end() || !initializers_.count(name)) return;
  onnx::TensorProto& t = *it->second;
  std::string().swap(*t.mutable_raw_data());  // clear() would keep the capacity
  google::protobuf::RepeatedField<float>().Swap(t.mutable_float_data());
}

const onnx::TensorProto* OnnxConstants::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : it->second;
}

OnnxNodeReader::OnnxNodeReader(const onnx::NodeProto& node, const OnnxConstants& constants, const std::string& source)
    : node_(node),
      constants_(constants),
      where_(VDNN_MSG(source << ": node '" << node.name() << "' (" << node.op_type() << ")")) {}

const onnx::AttributeProto* OnnxNodeReader::find(const std::string& name, onnx::AttributeProto::AttributeType type) {
  for (const auto& a : node_.attribute()) {
    if (a.name() != name) continue;
    used_.insert(name);
    if (a.type() != type && a.type() != onnx::AttributeProto::UNDEFINED)
      fail(VDNN_MSG("attribute '" << name << "' has the wrong type ("
                                  << onnx::AttributeProto::AttributeType_Name(a.type()) << ", expected "
                                  << onnx::AttributeProto::AttributeType_Name(type) << ")"));
    return &a;
  }
  return nullptr;
}

bool OnnxNodeReader::has(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return true;
  return false;
}

std::vector<int64_t> OnnxNodeReader::ints(const std::string& name, std::vector<int64_t> fallback, size_t count) {
  const auto* a = find(name, onnx::AttributeProto::INTS);
  std::vector<int64_t> out = a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
  if (count > 0 && out.size() != count)
    fail(VDNN_MSG("attribute '" << name << "' has " << out.size() << " values, expected " << count));
  return out;
}

int64_t OnnxNodeReader::integer(const std::string& name, int64_t fallback) {
  const auto* a = find(name, onnx::AttributeProto::INT);
  return a ? a->i() : fallback;
}

float OnnxNodeReader::real(const std::string& name, float fallback) {
  const auto* a = find(name, onnx::AttributeProto::FLOAT);
  if (a && std::isnan(a->f())) fail(VDNN_MSG("attribute '" << name << "' is NaN; expected a number"));
  return a ? a->f() : fallback;
}

std::string OnnxNodeReader::text(const std::string& name, const std::string& fallback) {
  const auto* a = find(name, onnx::AttributeProto::STRING);
  return a ? a->s() : fallback;
}

const onnx::TensorProto* OnnxNodeReader::tensor(const std::string& name) {
  const auto* a = find(name, onnx::AttributeProto::TENSOR);
  return a ? &a->t() : nullptr;
}

std::string OnnxNodeReader::input(int i) const { return i < node_.input_size() ? node_.input(i) : std::string(); }

const onnx::TensorProto* OnnxNodeReader::constant_input(int i) const {
  const std::string name = input(i);
  return name.empty() ? nullptr : constants_.find(name);
}

const onnx::TensorProto& OnnxNodeReader::require_constant(int i, const std::string& what) const {
  const onnx::TensorProto* t = constant_input(i);
  if (!t)
    fail(VDNN_MSG("input " << i << " (" << what << ", '" << input(i)
                           << "') must be an initializer or a Constant, not computed at run time"));
  return *t;
}

double OnnxNodeReader::scalar_input(int i, double fallback, const std::string& what) const {
  if (input(i).empty()) return fallback;
  const onnx::TensorProto& t = require_constant(i, what);
  const std::string at = VDNN_MSG(where_ << ": input " << i << " (" << what << ")");
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    const std::vector<float> v = onnx_floats(t, at);
    if (v.size() != 1) fail(VDNN_MSG("input " << i << " (" << what << ") must be one value"));
    if (std::isnan(v[0])) fail(VDNN_MSG("input " << i << " (" << what << ") is NaN; expected a number"));
    return v[0];
  }
  const std::vector<int64_t> v = onnx_integers(t, at);
  if (v.size() != 1) fail(VDNN_MSG("input " << i << " (" << what << ") must be one value"));
  return static_cast<double>(v[0]);
}

void OnnxNodeReader::check_attributes_used() const {
  for (const auto& a : node_.attribute()) {
    if (used_.count(a.name())) continue;
    std::string valid;
    for (const auto& u : used_) valid += (valid.empty() ? "" : ", ") + u;
    fail(VDNN_MSG("attribute '" << a.name() << "' is not supported (read here: " << (valid.empty() ? "none" : valid)
                                << ")"));
  }
}

void OnnxNodeReader::fail(const std::string& what) const { VDNN_THROW(where_ << ": " << what); }

}  // namespace vdnn
