// backends/cpu/cpu_isa.h — whether this CPU runs bf16 natively, as oneDNN sees it.
//
// Model: oneDNN dispatches on the instruction set it detects (capped by DNNL_MAX_CPU_ISA). Without
// AVX512_BF16 (or AMX) it emulates bf16 in fp32 registers, slower than fp32 itself, so vdnn refuses
// bf16 there instead of running a slow fallback.
//
//   require_native_bf16();   // throws vdnn::Error naming --precision and the ISA found otherwise
#pragma once

#include <string>

namespace vdnn {

// oneDNN's effective instruction set, e.g. "avx512_core_bf16" (DNNL_MAX_CPU_ISA applied).
std::string cpu_isa_name();
bool cpu_has_native_bf16();
void require_native_bf16();

}  // namespace vdnn
