#include "util/host_memory.h"

#include <fstream>
#include <sstream>

namespace vdnn {

size_t available_host_memory(const std::string& meminfo_path) {
  std::ifstream in(meminfo_path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    unsigned long long kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB") return static_cast<size_t>(kib) * 1024;
    return 0;
  }
  return 0;
}

}  // namespace vdnn
