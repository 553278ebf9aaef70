// fuzz/fuzz_npy.cc — bytes -> parse_npy, what read_npy() runs (`vdnn infer --images`).
//
//   build-fuzz/fuzz/fuzz_npy /tmp/new-inputs fuzz/corpus/npy
// (bash scripts/fuzz.sh runs every target; new inputs go to the first folder, which must exist.)
#include "fuzz/expect_vdnn_error.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return vdnn::fuzz::expect_vdnn_error([&] { vdnn::parse_npy({data, size}, "fuzz.npy"); });
}
