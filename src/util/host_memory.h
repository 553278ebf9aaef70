// util/host_memory.h — how much host memory a new allocation can take now, as Linux reports it.
//
// Model: MemAvailable from /proc/meminfo (free memory plus what the page cache can give back), the
// kernel's own estimate of what can be allocated without swapping. The CPU backend's device arena
// is host memory taken at once, so `vdnn train --device-memory` above this figure is refused.
//
//   if (size_t avail = vdnn::available_host_memory(); avail && budget > avail) ...  // 0: unknown
#pragma once

#include <cstddef>
#include <string>

namespace vdnn {

// MemAvailable in bytes; 0 when /proc/meminfo cannot be read or has no such line.
size_t available_host_memory(const std::string& meminfo_path = "/proc/meminfo");

// The one line for an allocation the host refused (std::bad_alloc), the CLI's and the Python
// API's alike: "out of host memory: an allocation failed with 1.20 GiB available (MemAvailable in
// /proc/meminfo); ...".
std::string out_of_host_memory_message();

}  // namespace vdnn
