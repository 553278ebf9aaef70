#include "vdnn/version.h"

namespace vdnn {

// VDNN_VERSION: CMakeLists.txt's PROJECT_VERSION (a compile definition of this file alone).
const char* version() { return VDNN_VERSION; }

}  // namespace vdnn
