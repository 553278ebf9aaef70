// fuzz/fuzz_safetensors.cc — bytes -> parse_safetensors, what read_safetensors() runs.
//
//   build-fuzz/fuzz/fuzz_safetensors -dict=fuzz/safetensors.dict /tmp/new-inputs fuzz/corpus/safetensors
// (bash scripts/fuzz.sh runs every target; new inputs go to the first folder, which must exist.)
#include "fuzz/expect_vdnn_error.h"
#include "io/safetensors.h"

// Integer tensors whose name starts with 'n' are accepted, so both the integer conversion and the
// refusal of the others are reached.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const vdnn::SafeTensorsReadOptions options{
      .accept_integer = [](const std::string& name) { return !name.empty() && name[0] == 'n'; }};
  return vdnn::fuzz::expect_vdnn_error([&] { vdnn::parse_safetensors({data, size}, "fuzz.safetensors", options); });
}
