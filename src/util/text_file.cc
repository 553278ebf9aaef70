#include "util/text_file.h"

#include "util/atomic_file.h"
#include "util/mapped_file.h"
#include "vdnn/error.h"

namespace vdnn {

void write_text_file(const std::string& path, const std::string& text) {
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

std::string read_text_file(const std::string& path, size_t max_bytes) {
  const MappedFile file(path);
  if (file.bytes().size() > max_bytes)
    VDNN_THROW(path << ": " << file.bytes().size() << " bytes, above the " << (max_bytes >> 20)
                    << " MiB limit for a text file (vdnn's JSON files are far smaller)");
  return std::string(file.text());
}

}  // namespace vdnn
