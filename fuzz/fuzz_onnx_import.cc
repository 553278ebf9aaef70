// fuzz/fuzz_onnx_import.cc — ONNX bytes -> import_onnx_bytes -> the graph it describes.
//
// What imports must also build: the model description goes through parse_model (the path every
// `--model file.onnx` takes) and its sizes are measured, as `vdnn models` does; and it must be
// writable as it is: nlohmann's own dump() throws on a string that is not UTF-8, so a name the
// importer let through unescaped is a finding (issue 42: reports and checkpoints aborted). Seeds:
// fuzz/corpus/onnx_import, made by fuzz/make_onnx_seeds.py (names that are not UTF-8, NaN
// attributes among them).
//
//   build-fuzz/fuzz/fuzz_onnx_import -dict=fuzz/onnx_import.dict /tmp/new-inputs fuzz/corpus/onnx_import
#include "fuzz/expect_vdnn_error.h"
#include "interop/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return vdnn::fuzz::expect_vdnn_error([&] {
    const vdnn::ImportedModel m = vdnn::import_onnx_bytes(vdnn::fuzz::as_text(data, size), "fuzz.onnx");
    (void)m.model.dump();
    const vdnn::Graph graph = vdnn::parse_model(m.model, "fuzz.onnx");
    (void)graph.parameter_count(false);
    (void)graph.forward_flops_per_sample();
  });
}
