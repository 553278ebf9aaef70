// data/char_text.h — a UTF-8 text file as character tokens, as nanoGPT's shakespeare_char reads it.
//
// Model: the tokens are the file's characters — Unicode code points, decoded as RFC 3629 UTF-8
// (util/utf8.h) — taken as they are (no newline translation: "\r\n" is two characters, where
// Python's text mode reads one). The vocabulary is the sorted set of the characters of the whole
// file (id = position, as prepare.py's sorted(list(set(data)))), so both splits share it; the first
// int(n * 0.9) of the n characters train and the rest, the last 10%, are held out for evaluation, as
// prepare.py splits. Samples are windows of T + 1 characters (data/token_windows.h). Refused, each
// in one error naming the file and the byte offset: an empty file, bytes that are not UTF-8, more
// than 65536 distinct characters (ids are stored as uint16, as in nanoGPT's .bin files), a split of
// fewer than T + 1 characters; and anything that is not a regular file (a folder, a FIFO). The
// vocabulary (Dataset::vocabulary: each id's character as UTF-8) decodes the ids a model
// generates; write_vocabulary saves it as JSON (what nanoGPT's meta.pkl holds: vocab_size, itos).
//
//   CharTextOptions o{.window = 256, .train = true};
//   Dataset train = load_char_text("input.txt", o, "shakespeare-train");
//   const std::string& smallest = train.vocabulary[0];   // e.g. "\n"; train.classes characters
//   write_vocabulary("run.vocab.json", train.vocabulary, "input.txt");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace vdnn {

inline constexpr int64_t kMaxCharVocabulary = 65536;  // ids are uint16

struct CharText {
  std::vector<std::string> vocabulary;  // sorted by code point; each character as UTF-8
  std::vector<uint8_t> ids;             // 2 bytes a character, little-endian (token_windows.h's layout)
  int64_t characters = 0;
  int64_t split = 0;       // the first held-out character: int(characters * 0.9)
  int64_t split_byte = 0;  // its byte offset in the file
  int64_t bytes = 0;       // the file's size
};

// The characters of `bytes`, read from `file` (named in errors). Throws vdnn::Error naming the
// file and the byte offset when it is empty, not UTF-8, or holds too many distinct characters.
CharText parse_char_text(std::string_view bytes, const std::string& file);

struct CharTextOptions {
  int64_t window = 0;  // T: the model's per-sample input [T]
  bool train = true;   // the first 90%, random windows; else the last 10%, consecutive windows
};

// The split's windows as a Dataset named `name` (classes and vocabulary: the whole file's).
Dataset load_char_text(const std::string& path, const CharTextOptions& options, const std::string& name);

// Writes {"source": source, "vocab_size": N, "itos": [characters]} to `path` (JSON, UTF-8).
void write_vocabulary(const std::string& path, const std::vector<std::string>& vocabulary, const std::string& source);

}  // namespace vdnn
