#include "io/json_text.h"

#include "vdnn/error.h"

namespace vdnn {

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  const auto limit_depth = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (depth >= kMaxJsonDepth && (event == nlohmann::json::parse_event_t::object_start ||
                                   event == nlohmann::json::parse_event_t::array_start))
      VDNN_THROW(source << ": JSON nested deeper than " << kMaxJsonDepth << " levels");
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit_depth);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e400
    VDNN_THROW(source << ": not valid JSON (" << e.what() << ")");
  }
}

}  // namespace vdnn
