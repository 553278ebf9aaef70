// util/json_dump.h — nlohmann::json to text for every file and message vdnn writes, never throwing
// on a string that is not UTF-8.
//
// Model: nlohmann's dump() throws type_error 316 on a string (or key) that is not valid UTF-8, so
// one ONNX node named with such bytes aborted `--report`, `--trace`, `--save` after a whole run.
// dump_json writes the same text as dump() when every string is UTF-8, and otherwise writes each
// string and key through escape_invalid_utf8 (util/utf8.h: invalid bytes as `\xNN`), the rule every
// writer shares. Files that must give back the exact bytes they were given (the image folder's
// list cache) use dump() and its error instead.
//
//   write_text_file("run.json", dump_json(report, 2) + "\n");
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vdnn {

// As j.dump(indent), with strings that are not UTF-8 escaped instead of throwing.
std::string dump_json(const nlohmann::json& j, int indent = -1);

}  // namespace vdnn
