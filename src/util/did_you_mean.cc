#include "util/did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace vdnn {

int edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  auto same = [&](size_t i, size_t j) {
    return std::tolower(static_cast<unsigned char>(a[i])) == std::tolower(static_cast<unsigned char>(b[j]));
  };
  // d[i][j]: the distance between a's first i and b's first j characters.
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (same(i - 1, j - 1) ? 0 : 1)});
      if (i > 1 && j > 1 && same(i - 1, j - 2) && same(i - 2, j - 1)) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::vector<std::string> closest_names(const std::string& typed, const std::vector<std::string>& known) {
  constexpr size_t kMaxNames = 3, kMinPrefix = 3;
  constexpr int kPrefix = 1 << 20;            // a prefix ranks after every typo
  std::vector<std::pair<int, size_t>> close;  // (rank, index in known)
  for (size_t i = 0; i < known.size(); ++i) {
    const std::string& name = known[i];
    if (name.empty() || name == typed) continue;
    const int distance = edit_distance(typed, name);
    const int allowed = std::max<int>(1, static_cast<int>(std::max(typed.size(), name.size()) / 3));
    if (distance <= allowed)
      close.emplace_back(distance, i);
    else if (typed.size() >= kMinPrefix && name.size() > typed.size() && name.compare(0, typed.size(), typed) == 0)
      close.emplace_back(kPrefix + static_cast<int>(name.size()), i);
  }
  std::stable_sort(close.begin(), close.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [rank, i] : close) {
    const bool typo = close.front().first < kPrefix;  // then only the closest typos, else the shortest prefixes
    if (out.size() == kMaxNames || (typo && rank > close.front().first)) break;
    if (std::find(out.begin(), out.end(), known[i]) == out.end()) out.push_back(known[i]);
  }
  return out;
}

std::string did_you_mean(const std::string& typed, const std::vector<std::string>& known) {
  const std::vector<std::string> names = closest_names(typed, known);
  if (names.empty()) return "";
  std::string out = "did you mean ";
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("'" + names[i] + "'");
  return out + "?";
}

}  // namespace vdnn
