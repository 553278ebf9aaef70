#include "data/token_file.h"

#include <memory>

#include "util/mapped_file.h"
#include "vdnn/error.h"

namespace vdnn {

Dataset parse_token_bytes(TokenSequence tokens, const TokenFileOptions& options, const std::string& name) {
  const std::span<const uint8_t> bytes = tokens.bytes;
  if (bytes.empty())
    VDNN_THROW(tokens.file << ": empty (no token at byte offset 0); expected token ids, 2 bytes each (little-endian "
                           << "uint16, as nanoGPT's prepare.py writes train.bin and val.bin)");
  if (bytes.size() % 2 != 0)
    VDNN_THROW(tokens.file << ": " << bytes.size() << " bytes, an odd count: the last token id, at byte offset "
                           << bytes.size() - 1 << ", is cut (a truncated file? token ids are 2 bytes each)");
  auto windows = std::make_shared<const TokenWindows>(std::move(tokens), options.window, options.vocab, options.train);
  if (bytes.size() <= options.scan_bytes)
    check_token_ids(windows->sequence(), 0, windows->sequence().tokens(), options.vocab);
  return token_dataset(std::move(windows), name);
}

Dataset load_token_file(const std::string& path, const TokenFileOptions& options, const std::string& name) {
  auto file = std::make_shared<const MappedFile>(path);  // a folder or FIFO: refused naming it
  return parse_token_bytes({.bytes = file->bytes(), .owner = file, .file = path}, options, name);
}

}  // namespace vdnn
