// plan/device_profile.h — a GPU and its host link as small JSON files, for predicting a training
// step on a device we do not have (the roofline model, plan/roofline.h).
//
// Model: a device profile gives the device's memory, peak fp32 arithmetic, memory bandwidth, kernel
// launch overhead, its default host link, whether the CPU shares its memory ("unified_memory"), and
// the fraction of peak each kind of kernel reaches ("efficiency": per convolution algorithm, fully
// connected GEMMs, other layers, memory traffic), optionally how that fraction falls at small
// batches ("batch_efficiency", plan/batch_efficiency.h) and which convolution algorithms its library
// offers ("conv_algorithms": a cuDNN version's set; all of conv_algorithm_names() when absent).
// A link profile gives the effective one-direction bandwidth and per-copy latency. A network
// profile (data parallel, plan/collectives.h) gives the network between ranks: one-direction
// bandwidth per rank, latency per message, and whether its traffic crosses the host link the
// offload copies use (a PCIe NIC: yes; NVLink: no). Shipped files live in profiles/devices/,
// profiles/links/ and profiles/networks/ of the data directory ($VDNN_PROFILES_DIR overrides the folder); users write
// their own (docs/device-profiles.md). Every field is required unless marked optional; unknown fields
// are errors, so a typo never passes silently.
//
//   DeviceProfile gpu = load_device_profile("titan-x-maxwell");  // or "my/gpu.json"
//   LinkProfile link = load_link_profile(gpu.link);              // or "pcie4", "my/link.json"
//   NetworkProfile net = load_network_profile("hdr-infiniband");  // or "my/net.json"
//   TargetFacts f = backend_target("cuda").facts(graph, 64, {});   // backend_api/backend_target.h
//   NetworkCosts costs = roofline_costs(graph, 64, f.value_bytes, f.facts, gpu, link);
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "plan/batch_efficiency.h"

namespace vdnn {

struct LinkProfile {
  std::string name;
  std::string description;
  double bytes_per_second = 0;              // effective, one direction, pinned host memory
  double theoretical_bytes_per_second = 0;  // optional: the signalling rate; 0 when not given
  double latency_seconds = 0;               // per copy
  std::vector<std::string> sources;         // optional: where the figures come from
};

struct NetworkProfile {
  std::string name;
  std::string description;
  double bytes_per_second = 0;              // effective, one direction, per rank
  double theoretical_bytes_per_second = 0;  // optional: the signalling rate; 0 when not given
  double latency_seconds = 0;               // per message (one step of a ring)
  bool shares_host_link = false;            // its traffic crosses the host link (PCIe) copies use
  std::vector<std::string> sources;         // optional: where the figures come from
};

// Fraction of the peak that kernels reach, each in (0, 1].
struct KernelEfficiency {
  std::map<std::string, double> conv;  // of peak fp32, per algorithm (conv_algorithm_names())
  double fc = 0;                       // of peak fp32, fully connected layers (one GEMM)
  double other = 0;                    // of peak fp32, every other layer's arithmetic
  double memory = 0;                   // of memory bandwidth, every kernel's traffic
};

struct DeviceProfile {
  std::string name;
  std::string description;
  size_t memory_bytes = 0;
  double peak_fp32_flops = 0;
  // Optional (0: none): dense bf16 arithmetic (tensor cores), what --precision bf16 plans with; a
  // device without it refuses bf16 plans.
  double peak_bf16_flops = 0;
  double memory_bytes_per_second = 0;
  // Optional (0: not given): the memory bandwidth of the host such a board sits in, at which the
  // host's CPU updates optimizer state kept in host memory (--optimizer-state host needs it).
  double host_memory_bytes_per_second = 0;
  std::string link;                  // the default host link: a link profile name or path
  double kernel_launch_seconds = 0;  // added to every kernel
  // Optional (false): memory_bytes is the board's memory, shared by the CPU and the GPU (a Jetson),
  // so the host copies of offloaded tensors take from the same memory as the device budget.
  bool unified_memory = false;
  KernelEfficiency efficiency;  // efficiency.conv has an entry per offered algorithm
  // Optional (off): the efficiencies above hold at batch_efficiency.reference_batch and fall with
  // a kernel's work below it (plan/batch_efficiency.h).
  BatchEfficiency batch_efficiency;
  // Optional (empty: all): the convolution algorithms the library offers, in conv_algorithm_names()
  // order; always includes implicit_gemm, the one that applies to every convolution.
  std::vector<std::string> conv_algorithms;
  std::vector<std::string> sources;  // optional: where the figures come from

  bool offers(const std::string& conv_algorithm) const;
};

// The folder with devices/, links/ and networks/ ($VDNN_PROFILES_DIR, else the data directory's profiles/,
// vdnn/data_dir.h; throws vdnn::Error listing where it looked when there is none).
std::string profiles_dir();

// A name from profiles/devices/ (links/), or a path: one containing '/' or ending in ".json".
// Throws vdnn::Error in one line: an unknown name lists the known ones; a bad file names the file
// and the field (missing, wrong type, out of range, unknown; a device's unknown link).
DeviceProfile load_device_profile(const std::string& name_or_path);
LinkProfile load_link_profile(const std::string& name_or_path);
NetworkProfile load_network_profile(const std::string& name_or_path);
// The same from a profile's JSON text; `source` names it in errors. A device's "link" is only
// checked to be a string here; load_device_profile() also loads that link.
DeviceProfile parse_device_profile(std::string_view json_text, const std::string& source);
LinkProfile parse_link_profile(std::string_view json_text, const std::string& source);
NetworkProfile parse_network_profile(std::string_view json_text, const std::string& source);

std::vector<std::string> device_profile_names();  // sorted
std::vector<std::string> link_profile_names();
std::vector<std::string> network_profile_names();

}  // namespace vdnn
