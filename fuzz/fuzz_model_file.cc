// fuzz/fuzz_model_file.cc — model-file text -> parse_model_text -> the graph's sizes.
//
// A model that parses must also be safe to measure: parameter count, FLOPs and feature-map bytes
// are what `vdnn models` and the planner compute first, from the shapes the parser accepted.
//
//   build-fuzz/fuzz/fuzz_model_file -dict=fuzz/model_file.dict /tmp/new-inputs fuzz/corpus/model_file
// (bash scripts/fuzz.sh runs every target; new inputs go to the first folder, which must exist.)
#include "fuzz/expect_vdnn_error.h"
#include "io/model_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return vdnn::fuzz::expect_vdnn_error([&] {
    const vdnn::Graph graph = vdnn::parse_model_text(vdnn::fuzz::as_text(data, size), "fuzz.json");
    (void)graph.parameter_count(false);
    (void)graph.forward_flops_per_sample();
    (void)graph.feature_map_bytes_per_sample();
  });
}
