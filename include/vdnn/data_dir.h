// vdnn/data_dir.h — where the shipped models (models/) and device/link profiles (profiles/) are found.
//
// Model: a data directory holds models/ and profiles/ (`cmake --install` puts them in
// <prefix>/share/vdnn). A folder is looked up in this order, the first that has it wins:
//   1. set_data_dir(dir) in this process, else $VDNN_DATA_DIR — when either is given it is the only
//      place looked in (a given directory without the folder is an error, never a silent fallback);
//   2. the source tree, when the running program lies in the build tree it was built in;
//   3. <the running executable's folder>/../share/vdnn (an installed `vdnn`, or a program installed
//      next to it; read from /proc/self/exe);
//   4. the installed package the program was compiled against (<vdnn/vdnn.h> records it from the
//      vdnn::vdnn target of find_package(vdnn), so a moved install prefix still works);
//   5. the install prefix vdnn was configured with (CMAKE_INSTALL_PREFIX/share/vdnn).
// $VDNN_MODELS_DIR and $VDNN_PROFILES_DIR still replace the one folder each (before all of this).
// When no place has the folder, data_folder() throws vdnn::Error listing every place it looked.
//
//   vdnn::set_data_dir("/opt/vdnn/share/vdnn");           // optional: pin it
//   std::string models = vdnn::data_folder("models");     // "/opt/vdnn/share/vdnn/models"
//   for (const auto& place : vdnn::data_dir_candidates()) std::cout << place << "\n";
#pragma once

#include <string>
#include <vector>

namespace vdnn {

// Pins the data directory for this process (empty: back to the lookup order above).
void set_data_dir(const std::string& dir);
// The folder `name` ("models" or "profiles") of the first data directory that has it.
std::string data_folder(const std::string& name);
// Every place looked in, in order, each as "<dir> (<why>)".
std::vector<std::string> data_dir_candidates();

namespace detail {
// Called by <vdnn/vdnn.h> with the installed package's data directory (step 4 above).
bool register_package_data_dir(const char* dir);
}  // namespace detail

}  // namespace vdnn
