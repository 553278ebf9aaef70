#include "core/layer_config.h"

#include <charconv>
#include <cmath>

#include "util/json_dump.h"
#include "vdnn/error.h"

namespace vdnn {

LayerConfig::LayerConfig(nlohmann::json fields, std::string where)
    : fields_(std::move(fields)), where_(std::move(where)) {
  // Fields every layer may carry; the graph reads them, not the layer.
  used_ = {"name", "type", "inputs", "input"};
}

const nlohmann::json* LayerConfig::find(const std::string& key) {
  used_.insert(key);
  auto it = fields_.find(key);
  return it == fields_.end() ? nullptr : &*it;
}

namespace {

// A field's value as an error quotes it: JSON, but NaN and infinities as such (JSON writes null).
std::string quoted_field_value(const nlohmann::json& v) {
  if (v.is_number_float() && !std::isfinite(v.get<double>())) return VDNN_MSG(v.get<double>());
  return dump_json(v);
}

// A setting's value as settings() lists it.
std::string setting_text(int64_t v) { return std::to_string(v); }
std::string setting_text(bool v) { return v ? "true" : "false"; }
std::string setting_text(const std::string& v) { return dump_json(v); }  // quoted: "a;b" stays one value
std::string setting_text(const std::pair<int64_t, int64_t>& v) {
  return "[" + std::to_string(v.first) + "," + std::to_string(v.second) + "]";
}
std::string setting_text(double v) {  // the shortest text that reads back as v
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof text, v).ptr);
}

}  // namespace

template <typename T>
T LayerConfig::got(const std::string& key, T value) {
  got_[key] = setting_text(value);
  return value;
}

std::string LayerConfig::settings() const {
  std::string out;
  for (const auto& [key, value] : got_) {
    if (!out.empty()) out += ';';
    out.append(key).append(1, '=').append(value);
  }
  return out;
}

void LayerConfig::fail(const std::string& key, const std::string& expected) const {
  std::string got = fields_.contains(key) ? quoted_field_value(fields_.at(key)) : "nothing";
  VDNN_THROW(where_ << ": field '" << key << "': expected " << expected << ", got " << got);
}

bool LayerConfig::is_integer_in(const nlohmann::json& v, int64_t min_value) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxLayerInteger)) return false;
  return v.get<int64_t>() >= min_value && v.get<int64_t>() <= kMaxLayerInteger;
}

std::string LayerConfig::integer_range(int64_t min_value) {
  return "an integer in [" + std::to_string(min_value) + ", " + std::to_string(kMaxLayerInteger) + "]";
}

int64_t LayerConfig::positive_int(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v || !is_integer_in(*v, 1)) fail(key, integer_range(1));
  return got(key, v->get<int64_t>());
}

int64_t LayerConfig::integer(const std::string& key, int64_t fallback, int64_t min_value) {
  const nlohmann::json* v = find(key);
  if (!v) return got(key, fallback);
  if (!is_integer_in(*v, min_value)) fail(key, integer_range(min_value));
  return got(key, v->get<int64_t>());
}

std::pair<int64_t, int64_t> LayerConfig::pair(const std::string& key, std::pair<int64_t, int64_t> fallback,
                                              int64_t min_value) {
  const nlohmann::json* v = find(key);
  if (!v) return got(key, fallback);
  const std::string expected = integer_range(min_value) + " or a pair [h, w] of them";
  auto ok = [&](const nlohmann::json& x) { return is_integer_in(x, min_value); };
  if (ok(*v)) return got(key, std::pair{v->get<int64_t>(), v->get<int64_t>()});
  if (v->is_array() && v->size() == 2 && ok((*v)[0]) && ok((*v)[1]))
    return got(key, std::pair{(*v)[0].get<int64_t>(), (*v)[1].get<int64_t>()});
  fail(key, expected);
}

double LayerConfig::number(const std::string& key, double fallback, double lo, double hi) {
  const nlohmann::json* v = find(key);
  if (!v) return got(key, fallback);
  // Written so that NaN fails it (NaN passes `x < lo || x > hi`); the bounds are finite.
  if (!v->is_number() || !(v->get<double>() >= lo && v->get<double>() <= hi))
    fail(key, VDNN_MSG("a number in [" << lo << ", " << hi << "]"));
  return got(key, v->get<double>());
}

bool LayerConfig::boolean(const std::string& key, bool fallback) {
  const nlohmann::json* v = find(key);
  if (!v) return got(key, fallback);
  if (!v->is_boolean()) fail(key, "true or false");
  return got(key, v->get<bool>());
}

std::string LayerConfig::text(const std::string& key, const std::string& fallback,
                              const std::set<std::string>& allowed) {
  const nlohmann::json* v = find(key);
  if (!v) return got(key, fallback);
  std::string options;
  for (const auto& a : allowed) options += (options.empty() ? "" : ", ") + a;
  if (!v->is_string() || !allowed.count(v->get<std::string>())) fail(key, "one of " + options);
  return got(key, v->get<std::string>());
}

void LayerConfig::check_all_used() const {
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    if (used_.count(it.key())) continue;
    std::string valid;
    for (const auto& u : used_) valid += (valid.empty() ? "" : ", ") + u;
    VDNN_THROW(where_ << ": unknown field '" << it.key() << "' (valid fields here: " << valid << ")");
  }
}

}  // namespace vdnn
