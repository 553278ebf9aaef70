// io/json_text.h — JSON text to nlohmann::json, every failure a vdnn::Error naming the source.
//
// Model: nlohmann's parser throws parse_error for bad syntax but out_of_range (406) for a number
// no double holds ("1e400"), which a `catch (parse_error)` lets escape (found by fuzz/); this one
// entry point catches both. It also refuses nesting deeper than kMaxJsonDepth: parsing is
// iterative, but copying and dumping a json value recurse, so 100000 nested brackets would
// overflow the stack when an error message prints the value. vdnn's files nest 4 levels at most.
// The depth is checked by a linear pre-scan, not a parser callback: nlohmann's callback parser
// scans the whole enclosing object at every member's end (quadratic in the members).
// The model, profile, cost and safetensors readers parse through it. Text longer than max_bytes
// (64 MiB unless the caller's format says otherwise) is refused before parsing: vdnn's JSON files
// are kilobytes, and a parsed document takes several times its text in memory.
//
//   nlohmann::json j = parse_json_text(file.text(), "my.json");  // "my.json: not valid JSON (...)"
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vdnn {

inline constexpr int kMaxJsonDepth = 64;
inline constexpr size_t kMaxJsonTextBytes = size_t{64} << 20;

// Throws vdnn::Error "<source>: not valid JSON (<nlohmann's message>)", or naming the depth or size.
nlohmann::json parse_json_text(std::string_view text, const std::string& source, size_t max_bytes = kMaxJsonTextBytes);

}  // namespace vdnn
