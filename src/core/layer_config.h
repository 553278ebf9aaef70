// core/layer_config.h — typed, checked access to one layer's fields in a model description.
//
// Model: a layer's JSON object is read only through LayerConfig, which knows where it came from
// ("models/x.json: layer 'conv1'") so every error names the file, the layer, the field and what would
// be valid. Fields nobody read are reported by check_all_used() — a typo never passes silently.
// Every field a layer reads is remembered with the value it got (the fallback when the field is
// absent), so settings() lists what the layer was configured with, whatever its type: the graph's
// digest (core/graph_digest.h) holds it, and a dropout rate or an epsilon tells two networks apart.
// Integers are at most kMaxLayerInteger (2^31 - 1): no layer needs more, and shape arithmetic on
// them (H + 2 * pad, fan-in products) then stays far from int64_t overflow.
//
//   LayerConfig cfg(json_obj, "models/x.json: layer 'conv1'");
//   int64_t out = cfg.positive_int("channels");
//   auto [kh, kw] = cfg.pair("kernel", /*fallback=*/{3, 3});
//   bool bias = cfg.boolean("bias", true);
//   cfg.check_all_used();
//   cfg.settings();   // "bias=true;channels=64;kernel=[3,3]" (by name; fallbacks included)
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace vdnn {

inline constexpr int64_t kMaxLayerInteger = (int64_t{1} << 31) - 1;

class LayerConfig {
 public:
  LayerConfig(nlohmann::json fields, std::string where);

  const std::string& where() const { return where_; }
  bool has(const std::string& key) const { return fields_.contains(key); }

  // A required integer in [1, kMaxLayerInteger].
  int64_t positive_int(const std::string& key);
  // An integer in [min_value, kMaxLayerInteger]; `fallback` when absent.
  int64_t integer(const std::string& key, int64_t fallback, int64_t min_value);
  // An int (same for both) or [h, w], each in [min_value, kMaxLayerInteger].
  std::pair<int64_t, int64_t> pair(const std::string& key, std::pair<int64_t, int64_t> fallback, int64_t min_value = 1);
  // A number in [lo, hi] (finite bounds): NaN and infinities are refused.
  double number(const std::string& key, double fallback, double lo, double hi);
  bool boolean(const std::string& key, bool fallback);
  std::string text(const std::string& key, const std::string& fallback, const std::set<std::string>& allowed);

  // Throws if a field was never read (unknown or misspelled), listing the valid ones.
  void check_all_used() const;

  // Every field read so far with the value the layer got, "name=value" joined by ';' in name
  // order (numbers in their shortest exact text): equal exactly when two layers read the same
  // fields and got the same values, whether a value was written or fell back to its default.
  std::string settings() const;

  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

 private:
  const nlohmann::json* find(const std::string& key);
  static bool is_integer_in(const nlohmann::json& v, int64_t min_value);
  static std::string integer_range(int64_t min_value);
  template <typename T>
  T got(const std::string& key, T value);  // remembers `value` as the setting `key`; returns it

  nlohmann::json fields_;
  std::string where_;
  std::set<std::string> used_;
  std::map<std::string, std::string> got_;  // settings(): each field read, with the value it gave
};

}  // namespace vdnn
