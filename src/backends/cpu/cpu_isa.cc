#include "backends/cpu/cpu_isa.h"

#include <cstdlib>

#include <oneapi/dnnl/dnnl.hpp>

#include "vdnn/error.h"

namespace vdnn {

std::string cpu_isa_name() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41:
      return "sse41";
    case isa::avx:
      return "avx";
    case isa::avx2:
      return "avx2";
    case isa::avx2_vnni:
      return "avx2_vnni";
    case isa::avx512_mic:
      return "avx512_mic";
    case isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case isa::avx512_core:
      return "avx512_core";
    case isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "unknown";
  }
}

namespace {

// The ISA values are bit masks, each containing the ones below it.
bool has_isa(dnnl::cpu_isa isa) {
  const unsigned have = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const unsigned need = static_cast<unsigned>(isa);
  return (have & need) == need;
}

}  // namespace

bool cpu_has_native_bf16() { return has_isa(dnnl::cpu_isa::avx512_core_bf16); }

bool cpu_has_avx512() { return has_isa(dnnl::cpu_isa::avx512_core); }

bool cpu_has_winograd() { return cpu_has_avx512(); }

void require_native_bf16() {
  if (cpu_has_native_bf16()) return;
  VDNN_THROW("--precision bf16 needs a CPU with native bfloat16 instructions (AVX512_BF16 or AMX); oneDNN reports "
             << cpu_isa_name() << " here" << (std::getenv("DNNL_MAX_CPU_ISA") ? " (DNNL_MAX_CPU_ISA is set)" : "")
             << ", where bf16 is emulated and slower than fp32; use --precision fp32");
}

Precision runnable(Precision precision) {
  if (precision != Precision::kFp32) require_native_bf16();
  return precision;
}

}  // namespace vdnn
