#include "util/json_dump.h"

#include "util/utf8.h"

namespace vdnn {

namespace {

// A copy of `j` whose strings and keys are valid UTF-8 (escape_invalid_utf8). Recursion is bounded
// by the depth of what vdnn writes (parse_json_text refuses more than 64 levels of what it reads).
nlohmann::json with_utf8_strings(const nlohmann::json& j) {
  if (j.is_string()) return escape_invalid_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(with_utf8_strings(v));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[escape_invalid_utf8(it.key())] = with_utf8_strings(it.value());
    return out;
  }
  return j;
}

constexpr int kInvalidUtf8 = 316;  // nlohmann's type_error id for a string that is not UTF-8

}  // namespace

std::string dump_json(const nlohmann::json& j, int indent) {
  try {
    return j.dump(indent);
  } catch (const nlohmann::json::type_error& e) {
    if (e.id != kInvalidUtf8) throw;
  }
  return with_utf8_strings(j).dump(indent);
}

}  // namespace vdnn
