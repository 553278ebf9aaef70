// util/data_dir.cc — the data-directory lookup of vdnn/data_dir.h.
//
// The build fills in, for this file only (CMakeLists.txt): VDNN_SOURCE_DIR and VDNN_BUILD_DIR (the
// trees it was built from and in), VDNN_EXE_TO_DATA (the install's bin → share/vdnn, relative) and
// VDNN_INSTALL_DATA_DIR (CMAKE_INSTALL_PREFIX's share/vdnn).
#include "vdnn/data_dir.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "vdnn/error.h"

#ifndef VDNN_EXE_TO_DATA
#define VDNN_EXE_TO_DATA "../share/vdnn"
#endif

namespace vdnn {
namespace fs = std::filesystem;

namespace {

struct Place {
  fs::path dir;
  std::string why;
};

std::mutex& lock() {
  static std::mutex m;
  return m;
}
std::string& pinned() {  // set_data_dir
  static std::string dir;
  return dir;
}
std::string& package() {  // detail::register_package_data_dir
  static std::string dir;
  return dir;
}

fs::path running_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

// True when `path` lies under `dir` (both made canonical where they exist).
bool lies_under(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  const std::string p = fs::weakly_canonical(path, ec).string();
  std::string d = fs::weakly_canonical(dir, ec).string();
  if (!d.ends_with('/')) d += '/';
  return p.starts_with(d);
}

// The places of the lookup order (vdnn/data_dir.h); a given directory is the only one.
std::vector<Place> places() {
  {
    std::lock_guard<std::mutex> g(lock());
    if (!pinned().empty()) return {{pinned(), "set_data_dir"}};
  }
  if (const char* env = std::getenv("VDNN_DATA_DIR"); env && *env) return {{env, "$VDNN_DATA_DIR"}};
  std::vector<Place> out;
  const fs::path exe = running_executable();
#if defined(VDNN_SOURCE_DIR) && defined(VDNN_BUILD_DIR)
  if (!exe.empty() && lies_under(exe, VDNN_BUILD_DIR))
    out.push_back({VDNN_SOURCE_DIR, "the source tree; the program runs in its build tree"});
#endif
  if (!exe.empty())
    out.push_back(
        {(exe.parent_path() / VDNN_EXE_TO_DATA).lexically_normal(), "next to the running executable " + exe.string()});
  {
    std::lock_guard<std::mutex> g(lock());
    if (!package().empty()) out.push_back({package(), "the installed package this program was built against"});
  }
#ifdef VDNN_INSTALL_DATA_DIR
  out.push_back({VDNN_INSTALL_DATA_DIR, "the configured install prefix"});
#endif
  return out;
}

}  // namespace

void set_data_dir(const std::string& dir) {
  std::lock_guard<std::mutex> g(lock());
  pinned() = dir;
}

std::vector<std::string> data_dir_candidates() {
  std::vector<std::string> out;
  for (const Place& p : places()) out.push_back(p.dir.string() + " (" + p.why + ")");
  return out;
}

std::string data_folder(const std::string& name) {
  const std::vector<Place> all = places();
  std::error_code ec;
  for (const Place& p : all)
    if (fs::is_directory(p.dir / name, ec)) return (p.dir / name).string();
  std::string looked;
  for (const Place& p : all) looked += (looked.empty() ? "" : "; ") + p.dir.string() + " (" + p.why + ")";
  VDNN_THROW("no data directory with a " << name << "/ folder (looked in: " << looked
                                         << "); set VDNN_DATA_DIR to the folder holding models/ and "
                                            "profiles/ (cmake --install puts it in <prefix>/share/vdnn)");
}

namespace detail {
bool register_package_data_dir(const char* dir) {
  std::lock_guard<std::mutex> g(lock());
  package() = dir ? dir : "";
  return true;
}
}  // namespace detail

}  // namespace vdnn
