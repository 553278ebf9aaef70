// fuzz/fuzz_profiles.cc — JSON text -> parse_device_profile and parse_link_profile.
//
// Both readers see every input: the corpus holds device and link profiles, and each kind is a
// near miss for the other reader.
//
//   build-fuzz/fuzz/fuzz_profiles -dict=fuzz/profiles.dict /tmp/new-inputs fuzz/corpus/profiles
// (bash scripts/fuzz.sh runs every target; new inputs go to the first folder, which must exist.)
#include "fuzz/expect_vdnn_error.h"
#include "plan/device_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = vdnn::fuzz::as_text(data, size);
  vdnn::fuzz::expect_vdnn_error([&] { vdnn::parse_device_profile(text, "fuzz-device.json"); });
  return vdnn::fuzz::expect_vdnn_error([&] { vdnn::parse_link_profile(text, "fuzz-link.json"); });
}
