// backends/cpu/cpu_isa.h — whether this CPU runs bf16 natively, as oneDNN sees it.
//
// Model: oneDNN dispatches on the instruction set it detects (capped by DNNL_MAX_CPU_ISA). Without
// AVX512_BF16 (or AMX) it emulates bf16 in fp32 registers, slower than fp32 itself, so vdnn refuses
// bf16 there instead of running a slow fallback.
//
//   require_native_bf16();   // throws vdnn::Error naming --precision and the ISA found otherwise
//   Precision p = runnable(Precision::kFp32);  // p itself; bf16 only where it is native
#pragma once

#include <string>

#include "core/precision.h"

namespace vdnn {

// oneDNN's effective instruction set, e.g. "avx512_core_bf16" (DNNL_MAX_CPU_ISA applied).
std::string cpu_isa_name();
bool cpu_has_native_bf16();
void require_native_bf16();
// `precision`, checked before any kernel, fact or cost is made: bf16 needs require_native_bf16.
Precision runnable(Precision precision);

}  // namespace vdnn
