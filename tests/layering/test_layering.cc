// Which folder of src/ may include which: the layering of docs/design.md ("Layering"), checked on
// every #include of every file under src/. A file that includes a folder above its own fails here
// with the file, the line and what its folder may include.
//
// Model: folders form layers, each including only folders below it —
//   util, core, layers, io (file formats), rewrites (graph rewrites), interop (ONNX), data, device,
//   comm, memory, plan, backend_api (what a backend implements), the backends (cpu; cuda and
//   cuda_target, the CUDA target's plain-C++ sizes), the registry (backends/backend_targets.*,
//   which sees them all), runtime (backend-neutral: it reaches a backend only through the
//   registry), planning (what plans with a target or a live run: plan sources, planned policies,
//   step calibration, the plan report) and report (what a run or plan shows).
// `vdnn/` (include/vdnn, the public headers) may be included from anywhere. tools/ and tests/ sit
// above everything.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace test_layering {

namespace fs = std::filesystem;

// The folder a path under src/ belongs to: its first part, or two parts below backends/.
std::string component(const std::string& path) {
  const size_t slash = path.find('/');
  if (slash == std::string::npos) return "";
  const std::string first = path.substr(0, slash);
  if (first != "backends") return first;
  const size_t second = path.find('/', slash + 1);
  return second == std::string::npos ? first : path.substr(0, second);
}

// What each folder may include besides itself and vdnn/ (one line per layer, bottom up).
const std::map<std::string, std::set<std::string>>& allowed() {
  static const std::map<std::string, std::set<std::string>> table = [] {
    std::map<std::string, std::set<std::string>> t;
    std::set<std::string> below;
    auto layer = [&](const std::string& name, std::set<std::string> extra = {}) {
      t[name] = below;
      t[name].insert(extra.begin(), extra.end());
      below.insert(name);
    };
    layer("util");
    layer("core");
    layer("layers");
    layer("io");
    layer("rewrites");  // graph rewrites (inference folding, fc split, slice runs): graph + weights
    layer("interop");   // ONNX import/export, PyTorch names (libonnx)
    layer("data");
    layer("device");
    layer("comm");  // data-parallel ranks and collectives (MPI)
    layer("memory");
    layer("plan");
    layer("backend_api");
    const std::set<std::string> neutral = below;  // what every backend may see
    t["backends/cpu"] = neutral;
    t["backends/cuda"] = neutral;
    t["backends/cuda"].insert("backends/cuda_target");
    t["backends/cuda_target"] = neutral;
    t["backends/cuda_target"].insert("backends/cuda");  // instantiate(), only where CUDA is built
    layer("backends", {"backends/cpu", "backends/cuda", "backends/cuda_target"});  // the registry
    layer("runtime");
    layer("planning");  // plans that need a target or a live run (plan sources, planned policies, ...)
    layer("report");
    return t;
  }();
  return table;
}

TEST(Layering, EveryIncludeUnderSrcGoesDownTheLayers) {
  const fs::path src = fs::path(VDNN_SOURCE_DIR) / "src";
  const std::regex include_line(R"(^\s*#\s*include\s+"([^"]+)\")");
  int files = 0, includes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc" && ext != ".cu" && ext != ".cuh")) continue;
    const std::string file = fs::relative(entry.path(), src).generic_string();
    const std::string from = component(file);
    ASSERT_TRUE(allowed().count(from)) << "src/" << file << ": folder '" << from
                                       << "' has no place in the layering (add it to this test and to docs/design.md)";
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string to = component(m[1].str());
      if (to.empty() || to == from || to == "vdnn") continue;
      ++includes;
      const auto& may = allowed().at(from);
      std::string list;
      for (const std::string& s : may) list += (list.empty() ? "" : ", ") + s;
      EXPECT_TRUE(may.count(to)) << "src/" << file << ":" << number << " includes \"" << m[1].str() << "\": '" << from
                                 << "' may include only " << (list.empty() ? "vdnn/" : list);
    }
  }
  EXPECT_GT(files, 100) << "the source tree was not found at " << src;
  EXPECT_GT(includes, 100);
}

// The build's half (CMakeLists.txt, vdnn_component): each library compiles against an include view
// holding links to its own folders. Every folder of the table is in exactly one view, so no folder
// is compiled where the table does not place it, and none is left out of the libraries.
TEST(Layering, EachLibraryOfTheBuildSeesOnlyItsOwnFolders) {
  const fs::path views = fs::path(VDNN_BINARY).parent_path() / "include_views";
  ASSERT_TRUE(fs::is_directory(views)) << views << " is missing: the build no longer makes include views";
  std::map<std::string, std::string> library_of;  // folder -> the library whose view holds it
  for (const auto& library : fs::directory_iterator(views)) {
    for (const auto& entry : fs::directory_iterator(library.path())) {
      std::vector<std::string> folders;
      const std::string name = entry.path().filename().string();
      if (name != "backends") {
        folders.push_back(name);
      } else {
        for (const auto& inner : fs::directory_iterator(entry.path()))
          folders.push_back(fs::is_directory(inner.path()) ? "backends/" + inner.path().filename().string()
                                                           : "backends");
      }
      for (const std::string& folder : folders) {
        const std::string lib = library.path().filename().string();
        EXPECT_TRUE(allowed().count(folder))
            << "library " << lib << " compiles folder '" << folder << "', which has no place in the layering";
        const auto [it, fresh] = library_of.emplace(folder, lib);
        EXPECT_TRUE(fresh || it->second == lib)
            << "folder '" << folder << "' is in two libraries: " << it->second << " and " << lib;
      }
    }
  }
  for (const auto& [folder, may] : allowed()) {
    if (folder == "backends/cuda" && !library_of.count(folder)) continue;  // built only where nvcc is
    EXPECT_TRUE(library_of.count(folder)) << "folder '" << folder << "' is in no library's include view";
  }
}

TEST(Layering, AnIncludeGoingUpIsFound) {
  // The table itself: a file format may not see the runtime, the runtime may not see a backend.
  EXPECT_FALSE(allowed().at("io").count("runtime"));
  EXPECT_FALSE(allowed().at("runtime").count("backends/cpu"));
  EXPECT_TRUE(allowed().at("runtime").count("backends"));
  EXPECT_FALSE(allowed().at("backends/cpu").count("runtime"));
  EXPECT_FALSE(allowed().at("backend_api").count("backends"));
  EXPECT_FALSE(allowed().at("core").count("layers"));
  EXPECT_FALSE(allowed().at("report").count("backends/cuda"));
  EXPECT_TRUE(allowed().at("plan").count("io"));
  EXPECT_FALSE(allowed().at("io").count("rewrites"));  // io reads and writes files; rewrites use it
  EXPECT_TRUE(allowed().at("rewrites").count("io"));
  EXPECT_FALSE(allowed().at("runtime").count("planning"));  // what picks a Net's options sits above it
  EXPECT_TRUE(allowed().at("planning").count("runtime"));   // step calibration trains a Net
  EXPECT_EQ(component("backends/cpu/kernel.h"), "backends/cpu");
  EXPECT_EQ(component("backends/backend_targets.cc"), "backends");
  EXPECT_EQ(component("runtime/net.h"), "runtime");
}

}  // namespace test_layering
