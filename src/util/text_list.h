// util/text_list.h — items joined into one line of a message ("conv1, conv2, fc6").
//
//   std::string s = vdnn::join_list({"conv1", "conv2"});   // "conv1, conv2"
//   std::string t = vdnn::join_list({"a", "b"}, " | ");     // "a | b"
#pragma once

#include <string>
#include <vector>

namespace vdnn {

inline std::string join_list(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace vdnn
