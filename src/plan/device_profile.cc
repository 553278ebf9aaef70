#include "plan/device_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "io/json_text.h"
#include "plan/conv_algorithms.h"
#include "plan/physical_limits.h"
#include "util/did_you_mean.h"
#include "util/file_kind.h"
#include "util/json_dump.h"
#include "util/mapped_file.h"
#include "util/text_list.h"
#include "vdnn/data_dir.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

enum class Range { kPositive, kNonNegative, kFraction, kByteCount, kRate, kOverhead };

// The largest memory_bytes accepted: 1 EiB. Without a limit, 1e300 became 2^63 bytes through
// llround's out-of-range result (found while fuzzing).
constexpr double kMaxByteCount = 1152921504606846976.0;  // 2^60

const char* describe(Range r) {
  switch (r) {
    case Range::kPositive:
      return "a number > 0";
    case Range::kNonNegative:
      return "a number >= 0";
    case Range::kFraction:
      return "a number in (0, 1]";
    case Range::kByteCount:
      return "a byte count in [1, 2^60]";
    case Range::kRate:
      return "a rate per second in [1e3, 1e18] (plan/physical_limits.h)";
    case Range::kOverhead:
      return "seconds in [0, 1] (plan/physical_limits.h)";
  }
  return "?";
}

bool in_range(double x, Range r) {
  if (!std::isfinite(x)) return false;
  switch (r) {
    case Range::kPositive:
      return x > 0;
    case Range::kNonNegative:
      return x >= 0;
    case Range::kFraction:
      return x > 0 && x <= 1;
    case Range::kByteCount:
      return x >= 1 && x <= kMaxByteCount;
    case Range::kRate:
      return within_rate(x);
    case Range::kOverhead:
      return x >= 0 && x <= kMaxOverheadSeconds;
  }
  return false;
}

// Checked, typed reads of one JSON object of a profile file. Errors name the file and the field
// ("efficiency.memory"); a field nobody read is unknown and finish() rejects it.
class Fields {
 public:
  Fields(const json& j, std::string file, std::string prefix = "")
      : j_(j), file_(std::move(file)), prefix_(std::move(prefix)) {
    if (!j_.is_object()) VDNN_THROW(file_ << ": " << label() << " must be a JSON object, got " << j_.type_name());
  }

  bool has(const std::string& key) {
    if (std::find(read_.begin(), read_.end(), key) == read_.end()) read_.push_back(key);
    return j_.contains(key);
  }
  const json& required(const std::string& key) {
    if (!has(key)) VDNN_THROW(file_ << ": missing field '" << prefix_ << key << "'");
    return j_.at(key);
  }
  std::string text(const std::string& key) {
    const json& v = required(key);
    if (!v.is_string()) wrong(key, "a string");
    return v.get<std::string>();
  }
  double number(const std::string& key, Range range) {
    const json& v = required(key);
    if (!v.is_number() || !in_range(v.get<double>(), range)) wrong(key, describe(range));
    return v.get<double>();
  }
  bool flag(const std::string& key) {
    const json& v = required(key);
    if (!v.is_boolean()) wrong(key, "true or false");
    return v.get<bool>();
  }
  // Optional; false when absent.
  bool optional_flag(const std::string& key) { return has(key) && flag(key); }
  // Optional; 0 when absent.
  double optional_number(const std::string& key, Range range) { return has(key) ? number(key, range) : 0.0; }
  // Optional; empty when absent.
  std::vector<std::string> optional_texts(const std::string& key) {
    if (!has(key)) return {};
    const json& v = j_.at(key);
    if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); }))
      wrong(key, "an array of strings");
    return v.get<std::vector<std::string>>();
  }
  Fields object(const std::string& key) { return Fields(required(key), file_, prefix_ + key + "."); }

  void finish() const {
    for (const auto& [key, value] : j_.items())
      if (std::find(read_.begin(), read_.end(), key) == read_.end())
        VDNN_THROW(file_ << ": unknown field '" << prefix_ << key << "' (valid: " << join_list(read_) << ")");
  }
  [[noreturn]] void wrong(const std::string& key, const std::string& expected) const {
    VDNN_THROW(file_ << ": field '" << prefix_ << key << "' must be " << expected << ", got " << dump_json(j_.at(key)));
  }

 private:
  std::string label() const {  // "the file" or "field 'efficiency'"
    return prefix_.empty() ? "the file" : "field '" + prefix_.substr(0, prefix_.size() - 1) + "'";
  }

  const json& j_;
  std::string file_, prefix_;
  std::vector<std::string> read_;  // in reading order, for the list of valid fields
};

std::vector<std::string> names_in(const std::string& kind) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(profiles_dir()) / kind, ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// `kind` is the folder ("devices", "links"), `what` its name in errors ("device profile").
fs::path resolve(const std::string& name_or_path, const std::string& kind, const std::string& what) {
  std::error_code ec;
  const bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  if (is_path) {
    if (const std::string why = not_a_regular_file(name_or_path); !why.empty())
      VDNN_THROW(what << " file '" << name_or_path << "' " << why);
    return name_or_path;
  }
  const fs::path path = fs::path(profiles_dir()) / kind / (name_or_path + ".json");
  if (!fs::is_regular_file(path, ec)) {
    const std::vector<std::string> known = names_in(kind);
    const std::string hint = did_you_mean(name_or_path, known);
    VDNN_THROW("unknown " << what << " '" << name_or_path << "' (" << (hint.empty() ? "" : hint + " ")
                          << "known: " << join_list(known) << "; or give a path to a .json file; looked in "
                          << (fs::path(profiles_dir()) / kind).string() << ")");
  }
  return path;
}

// One efficiency per convolution algorithm the device offers (`offered`; empty: all of them).
KernelEfficiency read_efficiency(Fields f, const std::vector<std::string>& offered) {
  KernelEfficiency e;
  Fields conv = f.object("conv");
  for (const std::string& algo : offered.empty() ? conv_algorithm_names() : offered)
    e.conv[algo] = conv.number(algo, Range::kFraction);
  conv.finish();
  e.fc = f.number("fc", Range::kFraction);
  e.other = f.number("other", Range::kFraction);
  e.memory = f.number("memory", Range::kFraction);
  f.finish();
  return e;
}

// "conv_algorithms": known names, no repeats, implicit_gemm among them; returned in the order of
// conv_algorithm_names(). Absent: empty (every algorithm).
std::vector<std::string> read_conv_algorithms(Fields& f, const std::string& source) {
  if (!f.has("conv_algorithms")) return {};
  const std::vector<std::string> given = f.optional_texts("conv_algorithms");
  const std::vector<std::string>& known = conv_algorithm_names();
  for (const std::string& name : given)
    if (std::find(known.begin(), known.end(), name) == known.end())
      VDNN_THROW(source << ": field 'conv_algorithms': unknown algorithm '" << name << "' (valid: " << join_list(known)
                        << ")");
  std::vector<std::string> offered;
  for (const std::string& name : known)
    if (std::count(given.begin(), given.end(), name) > 0) offered.push_back(name);
  if (offered.size() != given.size()) f.wrong("conv_algorithms", "a list of distinct algorithm names");
  if (offered.empty() || offered.front() != "implicit_gemm")
    VDNN_THROW(source << ": field 'conv_algorithms' must include implicit_gemm (the algorithm that applies to every "
                         "convolution), got "
                      << join_list(given));
  return offered;
}

BatchEfficiency read_batch_efficiency(Fields f) {
  BatchEfficiency b;
  const double batch = f.number("reference_batch", Range::kPositive);
  if (batch != std::floor(batch) || batch > 1e9) f.wrong("reference_batch", "a whole number in [1, 1e9]");
  b.reference_batch = static_cast<int64_t>(batch);
  b.half_saturation_outputs = f.number("half_saturation_outputs", Range::kNonNegative);
  f.finish();
  return b;
}

}  // namespace

bool DeviceProfile::offers(const std::string& conv_algorithm) const {
  return conv_algorithms.empty() ||
         std::find(conv_algorithms.begin(), conv_algorithms.end(), conv_algorithm) != conv_algorithms.end();
}

std::string profiles_dir() {
  if (const char* env = std::getenv("VDNN_PROFILES_DIR")) return env;
  return data_folder("profiles");
}

std::vector<std::string> device_profile_names() { return names_in("devices"); }
std::vector<std::string> link_profile_names() { return names_in("links"); }
std::vector<std::string> network_profile_names() { return names_in("networks"); }

LinkProfile load_link_profile(const std::string& name_or_path) {
  const fs::path path = resolve(name_or_path, "links", "link profile");
  return parse_link_profile(MappedFile(path.string()).text(), path.string());
}

namespace {

// A link's or a network's bandwidth and latency (`shares_host_link`: a network's flag, read in
// field order after the latency). The effective bandwidth may not exceed the signalling rate.
template <class Profile>
Profile parse_wire(std::string_view json_text, const std::string& source) {
  const json j = parse_json_text(json_text, source);
  Fields f(j, source);
  Profile l;
  l.name = f.text("name");
  l.description = f.text("description");
  l.bytes_per_second = f.number("bytes_per_second", Range::kRate);
  l.theoretical_bytes_per_second = f.optional_number("theoretical_bytes_per_second", Range::kRate);
  l.latency_seconds = f.number("latency_seconds", Range::kOverhead);
  if constexpr (requires { l.shares_host_link; }) l.shares_host_link = f.flag("shares_host_link");
  l.sources = f.optional_texts("sources");
  f.finish();
  if (l.theoretical_bytes_per_second > 0 && l.bytes_per_second > l.theoretical_bytes_per_second)
    VDNN_THROW(source << ": field 'bytes_per_second' (" << l.bytes_per_second
                      << ") exceeds 'theoretical_bytes_per_second' (" << l.theoretical_bytes_per_second << ")");
  return l;
}

}  // namespace

LinkProfile parse_link_profile(std::string_view json_text, const std::string& source) {
  return parse_wire<LinkProfile>(json_text, source);
}

NetworkProfile load_network_profile(const std::string& name_or_path) {
  const fs::path path = resolve(name_or_path, "networks", "network profile");
  return parse_network_profile(MappedFile(path.string()).text(), path.string());
}

NetworkProfile parse_network_profile(std::string_view json_text, const std::string& source) {
  return parse_wire<NetworkProfile>(json_text, source);
}

DeviceProfile load_device_profile(const std::string& name_or_path) {
  const fs::path path = resolve(name_or_path, "devices", "device profile");
  DeviceProfile d = parse_device_profile(MappedFile(path.string()).text(), path.string());
  try {
    load_link_profile(d.link);
  } catch (const Error& e) {
    VDNN_THROW(path.string() << ": field 'link': " << e.what());
  }
  return d;
}

DeviceProfile parse_device_profile(std::string_view json_text, const std::string& source) {
  const json j = parse_json_text(json_text, source);
  Fields f(j, source);
  DeviceProfile d;
  d.name = f.text("name");
  d.description = f.text("description");
  d.memory_bytes = static_cast<size_t>(std::llround(f.number("memory_bytes", Range::kByteCount)));
  d.peak_fp32_flops = f.number("peak_fp32_flops", Range::kRate);
  d.peak_bf16_flops = f.optional_number("peak_bf16_flops", Range::kRate);
  d.memory_bytes_per_second = f.number("memory_bytes_per_second", Range::kRate);
  d.host_memory_bytes_per_second = f.optional_number("host_memory_bytes_per_second", Range::kRate);
  d.link = f.text("link");
  d.kernel_launch_seconds = f.number("kernel_launch_seconds", Range::kOverhead);
  d.unified_memory = f.optional_flag("unified_memory");
  d.conv_algorithms = read_conv_algorithms(f, source);
  d.efficiency = read_efficiency(f.object("efficiency"), d.conv_algorithms);
  if (f.has("batch_efficiency")) d.batch_efficiency = read_batch_efficiency(f.object("batch_efficiency"));
  d.sources = f.optional_texts("sources");
  f.finish();
  return d;
}

}  // namespace vdnn
