#include "io/json_text.h"

#include "vdnn/error.h"

namespace vdnn {

namespace {

// Whether `text` opens more than kMaxJsonDepth arrays or objects at once (brackets inside strings do
// not count). One linear pass: nlohmann's callback parser, which could check the depth as it goes,
// scans a whole object at each member's end, so 100,000 tensors in a safetensors header took minutes.
bool nested_too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& source, size_t max_bytes) {
  if (text.size() > max_bytes)
    VDNN_THROW(source << ": " << text.size() << " bytes of JSON, above the " << (max_bytes >> 20)
                      << " MiB limit (vdnn's JSON files are far smaller)");
  if (nested_too_deep(text)) VDNN_THROW(source << ": JSON nested deeper than " << kMaxJsonDepth << " levels");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e400
    VDNN_THROW(source << ": not valid JSON (" << e.what() << ")");
  }
}

}  // namespace vdnn
