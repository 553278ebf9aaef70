// fuzz/fuzz_idx_file.cc — bytes (gzip-compressed or plain) -> parse_idx, what read_idx() runs.
//
//   build-fuzz/fuzz/fuzz_idx_file /tmp/new-inputs fuzz/corpus/idx_file
// (bash scripts/fuzz.sh runs every target; new inputs go to the first folder, which must exist.)
#include "data/idx_file.h"
#include "fuzz/expect_vdnn_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return vdnn::fuzz::expect_vdnn_error([&] { vdnn::parse_idx({data, size}, "fuzz.idx"); });
}
