// vdnn/version.h — which vdnn this is: the project version of CMakeLists.txt's project() (the one
// source of truth: `vdnn --version`, Python's vdnn.__version__ and the pip package's version are
// all read from it), as "MAJOR.MINOR.PATCH".
//
//   std::printf("vdnn %s\n", vdnn::version());   // "vdnn 0.16.0"
#pragma once

namespace vdnn {

const char* version();

}  // namespace vdnn
