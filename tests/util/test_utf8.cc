// Names are bytes until proven UTF-8 (util/utf8.h, util/json_dump.h, vdnn::Error): valid UTF-8 is
// kept as it is, every other byte becomes \xNN, and so a JSON file, an SVG picture or a message can
// always hold a name — an ONNX node named with bytes that are not UTF-8 aborted --report, --trace,
// --save, --save-weights and `profile --json` with nlohmann's type_error 316 after a whole run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "error_of.h"
#include "report/svg.h"
#include "util/json_dump.h"
#include "util/utf8.h"

namespace vdnn {
namespace test_utf8 {

TEST(Utf8, ValidTextIsKeptAndEveryOtherByteIsWrittenAsHex) {
  EXPECT_EQ(escape_invalid_utf8("conv1"), "conv1");
  EXPECT_EQ(escape_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(escape_invalid_utf8("conv\xff"), "conv\\xff");
  EXPECT_EQ(escape_invalid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));  // NUL is UTF-8
  // Each rule of RFC 3629: a lone continuation byte, a truncated sequence, an overlong form, a
  // surrogate, a code point above U+10FFFF, bytes no sequence starts with.
  EXPECT_EQ(escape_invalid_utf8("\x80"), "\\x80");
  EXPECT_EQ(escape_invalid_utf8("x\xe2\x82"), "x\\xe2\\x82");
  EXPECT_EQ(escape_invalid_utf8("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(escape_invalid_utf8("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
  EXPECT_EQ(escape_invalid_utf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(escape_invalid_utf8("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(escape_invalid_utf8("\xf8\xfe"), "\\xf8\\xfe");
  // What follows an invalid byte is read afresh: the valid sequence after it is kept.
  EXPECT_EQ(escape_invalid_utf8("\xe2\xc3\xa9"), "\\xe2\xc3\xa9");
  for (const char* s : {"conv\xff", "\xed\xa0\x80", "\xe2\x82", "ok"})
    EXPECT_TRUE(is_utf8(escape_invalid_utf8(s))) << s;
  EXPECT_FALSE(is_utf8("\xff"));
  EXPECT_TRUE(is_utf8(""));
}

TEST(Utf8, JsonWithAStringOrKeyThatIsNotUtf8IsWrittenWithItEscaped) {
  const nlohmann::json j = {{"layer", "conv\xff"}, {"list", {"ok", "\xfe"}}, {"k\xc3", 1}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what every writer did before
  const std::string text = dump_json(j);
  EXPECT_EQ(text, R"({"k\\xc3":1,"layer":"conv\\xff","list":["ok","\\xfe"]})");
  EXPECT_EQ(nlohmann::json::parse(text)["layer"], "conv\\xff");
  const nlohmann::json utf8 = {{"a", "caf\xc3\xa9"}};
  EXPECT_EQ(dump_json(utf8, 2), utf8.dump(2));  // UTF-8: as dump()
}

TEST(Utf8, ErrorMessagesAreUtf8WhateverBytesTheyQuote) {
  const std::string what = test::error_of([] {
    VDNN_THROW("node '"
               << "n\xff"
               << "' is bad");
  });
  EXPECT_EQ(what, "node 'n\\xff' is bad");
}

TEST(Utf8, SvgTextHoldsNoByteXmlCannotRead) {
  EXPECT_EQ(xml_escape("a\xff<b"), "a\\xff&lt;b");
  EXPECT_EQ(xml_escape("bell\x07tab\t"), "bell\\x07tab\t");  // XML 1.0 has no control characters
  EXPECT_EQ(xml_escape("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(Utf8, AsOneLineWritesLineBreaksAndControlCharactersAsEscapes) {
  EXPECT_EQ(as_one_line("plain: caf\xc3\xa9\ttab"), "plain: caf\xc3\xa9\ttab");
  EXPECT_EQ(as_one_line("a\nb.png: bad"), "a\\nb.png: bad");
  EXPECT_EQ(as_one_line("cr\r bell\a del\x7f"), "cr\\r bell\\x07 del\\x7f");
}

}  // namespace test_utf8
}  // namespace vdnn
