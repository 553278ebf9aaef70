// io/json_text.h — JSON text to nlohmann::json, every failure a vdnn::Error naming the source.
//
// Model: nlohmann's parser throws parse_error for bad syntax but out_of_range (406) for a number
// no double holds ("1e400"), which a `catch (parse_error)` lets escape (found by fuzz/); this one
// entry point catches both. It also refuses nesting deeper than kMaxJsonDepth: parsing is
// iterative, but copying and dumping a json value recurse, so 100000 nested brackets would
// overflow the stack when an error message prints the value. vdnn's files nest 4 levels at most.
// The model, profile, cost and safetensors readers parse through it.
//
//   nlohmann::json j = parse_json_text(file.text(), "my.json");  // "my.json: not valid JSON (...)"
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vdnn {

inline constexpr int kMaxJsonDepth = 64;

// Throws vdnn::Error "<source>: not valid JSON (<nlohmann's message>)", or naming the depth.
nlohmann::json parse_json_text(std::string_view text, const std::string& source);

}  // namespace vdnn
