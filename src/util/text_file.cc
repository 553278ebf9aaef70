#include "util/text_file.h"

#include "util/atomic_file.h"

namespace vdnn {

void write_text_file(const std::string& path, const std::string& text) {
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace vdnn
