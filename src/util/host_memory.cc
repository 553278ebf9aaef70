#include "util/host_memory.h"

#include <fstream>
#include <sstream>

#include "util/size_parse.h"

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

std::string out_of_host_memory_message() {
  const size_t available = available_host_memory();
  return "out of host memory: an allocation failed with " +
         (available ? format_bytes(available) : std::string("an unknown amount")) +
         " available (MemAvailable in /proc/meminfo); lower the batch, the budgets or the data held in memory";
}

}  // namespace vdnn
