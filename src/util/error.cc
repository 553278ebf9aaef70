#include "vdnn/error.h"

#include "util/utf8.h"

namespace vdnn::detail {

void throw_internal(const char* file, int line, const std::string& what) {
  throw InternalError(VDNN_MSG(file << ":" << line << ": " << what));
}

std::string utf8_message(const std::string& what) { return escape_invalid_utf8(what); }

}  // namespace vdnn::detail
