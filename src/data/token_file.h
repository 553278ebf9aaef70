// data/token_file.h — nanoGPT's token files (train.bin, val.bin) as language-model samples.
//
// Model: a file of token ids, each a little-endian uint16 (what nanoGPT's prepare.py writes with
// np.array(ids, dtype=np.uint16).tofile(...): GPT-2's BPE ids for openwebtext and shakespeare,
// character ids for shakespeare_char), no header. The file is memory-mapped (util/mapped_file.h)
// and its windows are read on demand by data/token_windows.h, so a 17 GB train.bin costs page
// cache, not a copy. Its vocabulary size is not in the file (nanoGPT keeps it in meta.pkl, a Python
// pickle vdnn does not read): the caller gives it (`--vocab`, by default the model's class count,
// 50257 for GPT-2). Refused, each in one error naming the file and the byte offset: an empty file,
// an odd byte count (a truncated last id), fewer than T + 1 tokens, a token id >= vocab (the whole
// file is scanned when it holds at most scan_bytes, else each window as it is read), and anything
// that is not a regular file (a folder, a FIFO: never waited on).
//
//   TokenFileOptions o{.window = 256, .vocab = 65, .train = true};
//   Dataset train = load_token_file("data/shakespeare_char/train.bin", o, "shakespeare_char-train");
//   // train.count == floor(tokens / 256) windows, each 256 ids and the next 256 as labels
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "data/dataset.h"
#include "data/token_windows.h"

namespace vdnn {

inline constexpr int64_t kGpt2Vocab = 50257;                // GPT-2's BPE: nanoGPT's default
inline constexpr size_t kTokenScanBytes = size_t{1} << 30;  // files up to 1 GiB are checked at once

struct TokenFileOptions {
  int64_t window = 0;                   // T: the model's per-sample input [T]
  int64_t vocab = kGpt2Vocab;           // ids must be below it
  bool train = true;                    // random windows (training); else consecutive (evaluation)
  size_t scan_bytes = kTokenScanBytes;  // larger files: ids checked window by window as read
};

// The windows of token bytes (`tokens.owner` keeps them alive) as a Dataset named `name`: the
// in-memory entry point load_token_file calls on the mapped file (and fuzz/ on its input). Throws
// vdnn::Error naming tokens.file and the byte offset when the bytes are refused.
Dataset parse_token_bytes(TokenSequence tokens, const TokenFileOptions& options, const std::string& name);

// The file's windows as a Dataset named `name` (data/token_windows.h). Throws vdnn::Error naming
// the file (and the byte offset) when it cannot be read or is refused.
Dataset load_token_file(const std::string& path, const TokenFileOptions& options, const std::string& name);

}  // namespace vdnn
