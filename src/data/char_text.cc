#include "data/char_text.h"

#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "data/token_windows.h"
#include "util/json_dump.h"
#include "util/mapped_file.h"
#include "util/text_file.h"
#include "util/utf8.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

// The code point at bytes[*at], moving past it; throws naming the file and the offset if none.
char32_t next_character(std::string_view bytes, size_t* at, const std::string& file) {
  char32_t c = 0;
  if (!next_code_point(bytes, at, &c))
    VDNN_THROW(file << ": not UTF-8 at byte offset " << *at << " (byte 0x" << std::hex
                    << static_cast<unsigned>(static_cast<uint8_t>(bytes[*at])) << std::dec
                    << "); text data is read as UTF-8 characters (convert it with iconv -t UTF-8)");
  return c;
}

}  // namespace

CharText parse_char_text(std::string_view bytes, const std::string& file) {
  if (bytes.empty()) VDNN_THROW(file << ": empty (no character at byte offset 0); expected UTF-8 text");
  // Pass 1: every character valid, the set of characters (each as its bytes at first sight).
  std::vector<bool> seen;  // by code point, up to the largest seen (ASCII text: 128 entries)
  std::map<char32_t, std::string> first;
  CharText out;
  for (size_t at = 0; at < bytes.size(); ++out.characters) {
    const size_t start = at;
    const char32_t c = next_character(bytes, &at, file);
    if (c >= seen.size()) seen.resize(static_cast<size_t>(c) + 1);
    if (seen[c]) continue;
    seen[c] = true;
    first.emplace(c, std::string(bytes.substr(start, at - start)));
    if (static_cast<int64_t>(first.size()) > kMaxCharVocabulary)
      VDNN_THROW(file << ": more than " << kMaxCharVocabulary << " distinct characters (the one at byte offset "
                      << start << " is the next); character ids are 16 bits (use a tokenizer's .bin instead)");
  }
  std::vector<uint16_t> id_of(seen.size());
  for (const auto& [c, text] : first) {
    id_of[c] = static_cast<uint16_t>(out.vocabulary.size());
    out.vocabulary.push_back(text);
  }
  // Pass 2: the ids, and where the held-out tail starts (prepare.py's int(n * 0.9)).
  out.split = static_cast<int64_t>(static_cast<double>(out.characters) * 0.9);
  out.ids.resize(static_cast<size_t>(2 * out.characters));
  size_t at = 0;
  for (int64_t i = 0; i < out.characters; ++i) {
    if (i == out.split) out.split_byte = static_cast<int64_t>(at);
    const uint16_t id = id_of[next_character(bytes, &at, file)];
    out.ids[static_cast<size_t>(2 * i)] = static_cast<uint8_t>(id & 0xff);
    out.ids[static_cast<size_t>(2 * i + 1)] = static_cast<uint8_t>(id >> 8);
  }
  out.bytes = static_cast<int64_t>(bytes.size());
  if (out.split == out.characters) out.split_byte = out.bytes;
  return out;
}

Dataset load_char_text(const std::string& path, const CharTextOptions& options, const std::string& name) {
  std::shared_ptr<const CharText> text;
  {
    const MappedFile file(path);  // a folder or FIFO: refused naming it
    text = std::make_shared<const CharText>(parse_char_text(file.text(), path));
  }
  const bool train = options.train;
  const int64_t begin = train ? 0 : text->split, end = train ? text->split : text->characters;
  if (end - begin < options.window + 1)
    VDNN_THROW(path << ": " << (train ? "its first 90%" : "its last 10%") << " (from byte offset "
                    << (train ? 0 : text->split_byte) << (train ? " to " : " to its end at ")
                    << (train ? text->split_byte : text->bytes) << ") holds " << end - begin
                    << " characters, fewer than the " << options.window + 1
                    << " one window needs (T = " << options.window << " inputs and the character after them)");
  TokenSequence tokens{.bytes = std::span<const uint8_t>(text->ids).subspan(static_cast<size_t>(2 * begin),
                                                                            static_cast<size_t>(2 * (end - begin))),
                       .owner = text,
                       .file = path};
  const int64_t vocab = static_cast<int64_t>(text->vocabulary.size());
  Dataset d = token_dataset(std::make_shared<const TokenWindows>(tokens, options.window, vocab, train), name);
  d.vocabulary = text->vocabulary;
  return d;
}

void write_vocabulary(const std::string& path, const std::vector<std::string>& vocabulary, const std::string& source) {
  const nlohmann::json j = {{"source", source}, {"vocab_size", vocabulary.size()}, {"itos", vocabulary}};
  write_text_file(path, dump_json(j, 1) + "\n");
}

}  // namespace vdnn
