// util/utf8.h — names are bytes until proven UTF-8.
//
// Model: names and paths reach vdnn as bytes — ONNX files' strings (protobuf does not check them),
// folder and file names, command lines — while JSON, SVG (XML) and Python's str need UTF-8. Every
// writer of those passes text through escape_invalid_utf8: valid UTF-8 (RFC 3629: shortest forms,
// no surrogates, nothing above U+10FFFF) stays as it is, and each byte that does not belong to a
// valid sequence becomes the four ASCII characters `\xNN` (lower-case hex, as Python's
// "backslashreplace"). The result is valid UTF-8, readable, and the same wherever it is shown:
// messages (vdnn::Error), JSON files (util/json_dump.h), SVG text (report/svg.h) and the names
// the ONNX importer gives layers (so a state_dict saved from them loads back by the same names).
// It is not a reversible encoding ("\xff" may have been those four characters already); where
// names must stay distinct, the reader that escapes them keeps them distinct (the ONNX importer
// renames a repeated layer name).
//
//   escape_invalid_utf8("conv\xff");     // "conv\\xff" (the text conv\xff)
//   escape_invalid_utf8("caf\xc3\xa9");  // unchanged: valid UTF-8 ("café")
//   is_utf8("\xed\xa0\x80");             // false: a surrogate
//   as_one_line("a\nb.png: not an image");  // "a\\nb.png: not an image": one error, one line
//   size_t at = 0; char32_t c = 0;
//   next_code_point("\xc3\xa9!", &at, &c);  // true: c == U'\u00e9', at == 2
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vdnn {

// Whether `bytes` is valid UTF-8 (RFC 3629).
bool is_utf8(std::string_view bytes);
// `bytes` with every byte outside a valid UTF-8 sequence written as `\xNN`.
std::string escape_invalid_utf8(std::string_view bytes);
// `text` with its line breaks and other control characters (below 0x20 but tab, and 0x7f) written
// as `\n`, `\r` or `\xNN`, so an error that quotes a file name holding a newline stays one line.
std::string as_one_line(std::string_view text);
// Decodes the valid UTF-8 sequence starting at bytes[*at] into *code_point and moves *at past it;
// false, changing nothing, when none starts there (or *at is the end).
bool next_code_point(std::string_view bytes, size_t* at, char32_t* code_point);

}  // namespace vdnn
