#include "vdnn/error.h"

namespace vdnn::detail {

void throw_internal(const char* file, int line, const std::string& what) {
  throw InternalError(VDNN_MSG(file << ":" << line << ": " << what));
}

}  // namespace vdnn::detail
