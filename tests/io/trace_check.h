// tests/io/trace_check.h — what every Chrome trace vdnn writes must hold, predicted or measured.
//
//   expect_step_trace(nlohmann::json::parse(text), /*offloads=*/true);
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace vdnn::test {

// A JSON object with "traceEvents": three thread tracks named compute, d2h and h2d ("M"
// thread_name); ops ("X") on those tracks with ts >= 0 and dur >= 0, kernels on compute; device
// memory counters ("C") with one series per memory class. With `offloads`: offload events on d2h
// and prefetch events on h2d, as many of each.
inline void expect_step_trace(const nlohmann::json& j, bool offloads) {
  ASSERT_TRUE(j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array()) << j.dump().substr(0, 200);
  std::map<int, std::string> tracks;
  std::map<std::string, int> ops_on;  // "compute forward", "d2h offload", ...
  int counters = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "thread_name") tracks[e.at("tid").get<int>()] = e.at("args").at("name");
    if (ph == "C") {
      ++counters;
      for (const char* cls :
           {"weights", "weight_grads", "optimizer_state", "feature_maps", "gradient_maps", "workspace"})
        EXPECT_TRUE(e.at("args").contains(cls)) << cls << " missing in " << e.dump();
    }
  }
  std::set<std::string> names;
  for (const auto& [tid, name] : tracks) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"compute", "d2h", "h2d", "comm"}));
  for (const auto& e : j["traceEvents"]) {
    if (e.at("ph") != "X") continue;
    ASSERT_TRUE(tracks.count(e.at("tid").get<int>())) << e.dump();
    EXPECT_GE(e.at("dur").get<double>(), 0.0) << e.dump();
    EXPECT_GE(e.at("ts").get<double>(), 0.0) << e.dump();
    const std::string name = e.at("name"), kind = name.substr(0, name.find(' '));
    ++ops_on[tracks[e.at("tid").get<int>()] + " " + kind];
  }
  EXPECT_GT(ops_on["compute forward"], 0);
  EXPECT_EQ(ops_on["compute forward"], ops_on["compute backward"]) << "every layer has both passes";
  EXPECT_GT(counters, 2) << "device memory counters";
  if (offloads) {
    EXPECT_GT(ops_on["d2h offload"], 0);
    EXPECT_EQ(ops_on["d2h offload"], ops_on["h2d prefetch"]) << "each offloaded tensor comes back once";
  }
}

}  // namespace vdnn::test
