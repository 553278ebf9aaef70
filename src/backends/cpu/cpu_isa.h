// backends/cpu/cpu_isa.h — whether this CPU runs bf16 (and Winograd) natively, as oneDNN sees it.
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
// Whether oneDNN runs AVX-512 kernels here (avx512_core): 16 floats a vector, so its direct
// convolutions take channels in blocks of 16 (nChw16c; AVX2's in blocks of 8).
bool cpu_has_avx512();
// Whether oneDNN has Winograd convolutions here: oneDNN 2.6 implements them for AVX-512 only, so on
// an AVX2 CPU `--conv-algo winograd` finds none and `auto` runs direct or GEMM-based kernels.
bool cpu_has_winograd();
void require_native_bf16();
// `precision`, checked before any kernel, fact or cost is made: bf16 needs require_native_bf16.
Precision runnable(Precision precision);

}  // namespace vdnn
