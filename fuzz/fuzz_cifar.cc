// fuzz/fuzz_cifar.cc — bytes -> append_cifar_records, what load_cifar() runs on each batch file,
// read as CIFAR-10 and as CIFAR-100 records.
//
//   build-fuzz/fuzz/fuzz_cifar /tmp/new-inputs fuzz/corpus/cifar
// (bash scripts/fuzz.sh runs every target; new inputs go to the first folder, which must exist.)
#include "data/cifar.h"
#include "fuzz/expect_vdnn_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (vdnn::CifarKind kind : {vdnn::CifarKind::kCifar10, vdnn::CifarKind::kCifar100}) {
    vdnn::Dataset out;
    vdnn::fuzz::expect_vdnn_error([&] { vdnn::append_cifar_records({data, size}, kind, "fuzz.bin", out); });
  }
  return 0;
}
