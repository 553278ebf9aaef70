#include "plan_sweep.h"

#include <cstdio>

#include "util/size_parse.h"

namespace vdnn::cli {
namespace {

// `text` right-aligned in `width` columns; counts characters, not bytes ("—" is three bytes).
std::string right(const std::string& text, size_t width) {
  size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
  return std::string(width > chars ? width - chars : 0, ' ') + text;
}

std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", seconds * 1e3);
  return buf;
}

}  // namespace

void print_sweep_table(const BudgetSweep& s, size_t device_budget) {
  std::printf(
      "budget sweep: %zu budgets from %s (the largest smallest budget) down to %s (the floor: the least "
      "any policy trains in); predicted ms per step, \u2014 where it does not fit\n",
      s.budgets.size(), format_bytes(s.top).c_str(), format_bytes(s.floor).c_str());
  size_t width = 10;
  for (const SweepColumn& c : s.columns) width = std::max(width, c.name.size() + 2);
  std::string line = right("budget", 12);
  for (const SweepColumn& c : s.columns) line += right(c.name, width);
  std::printf("%s%s\n", line.c_str(), right("oracle", width).c_str());
  bool marked = false, carried = false;
  for (size_t r = 0; r < s.budgets.size(); ++r) {
    const bool device = s.budgets[r] == device_budget;
    marked |= device;
    line = right(format_bytes(s.budgets[r]) + (device ? "*" : " "), 12);
    for (const SweepCell& cell : s.cells[r]) {
      carried |= cell.fits && cell.found_at;
      line += right(cell.fits ? ms(cell.step_seconds) + (cell.found_at ? "^" : "") : "\u2014", width);
    }
    std::printf("%s%s\n", line.c_str(), right(ms(s.oracle_seconds), width).c_str());
  }
  std::string smallest;
  bool ahead = false;
  for (const SweepColumn& c : s.columns)
    if (c.prefetch == Prefetch::kVdnn)
      smallest += (smallest.empty() ? "" : ", ") + c.name + " " + format_bytes(c.smallest_budget);
    else
      ahead = true;
  std::printf("smallest budget by policy: %s%s%s%s\n", smallest.c_str(),
              ahead ? " (/ahead: the same, prefetching as far ahead as each budget allows)" : "",
              marked ? "; * the device's budget" : "",
              carried ? "; ^ the plan found at a smaller budget (the search's own was slower here)" : "");
}

nlohmann::json sweep_json(const BudgetSweep& s, const NetworkCosts& costs) {
  nlohmann::json columns = nlohmann::json::array(), rows = nlohmann::json::array();
  for (const SweepColumn& c : s.columns)
    columns.push_back({{"name", c.name}, {"prefetch", to_string(c.prefetch)}, {"smallest_budget", c.smallest_budget}});
  for (size_t r = 0; r < s.budgets.size(); ++r) {
    nlohmann::json seconds = nlohmann::json::object(), configs = seconds, depths = seconds, found_at = seconds;
    for (size_t c = 0; c < s.columns.size(); ++c) {
      const SweepCell& cell = s.cells[r][c];
      const std::string& name = s.columns[c].name;
      seconds[name] = cell.fits ? nlohmann::json(cell.step_seconds) : nlohmann::json(nullptr);
      if (!cell.fits) continue;
      configs[name] = describe(cell.config, s.columns[c].costs_or(costs));
      if (cell.prefetch == Prefetch::kAhead) depths[name] = cell.prefetch_depth;
      if (cell.found_at) found_at[name] = cell.found_at;
    }
    rows.push_back({{"budget", s.budgets[r]},
                    {"step_seconds", seconds},
                    {"configurations", configs},
                    {"prefetch_depth", depths},
                    {"found_at", found_at}});
  }
  return {
      {"top", s.top}, {"floor", s.floor}, {"oracle_seconds", s.oracle_seconds}, {"columns", columns}, {"rows", rows}};
}

}  // namespace vdnn::cli
