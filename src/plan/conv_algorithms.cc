#include "plan/conv_algorithms.h"

#include <algorithm>
#include <cmath>

#include "layers/conv.h"

namespace vdnn {
namespace {

constexpr double kFloatBytes = 4;    // fp32
constexpr double kComplexBytes = 8;  // complex fp32

double d(int64_t x) { return static_cast<double>(x); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// --- Winograd F(m x m, 3x3): each m x m output tile costs (m + 2)^2 products per input channel
// instead of 9 m^2. The input/output transforms' arithmetic is left out: it is small next to the
// products, and the non-fused variant's transform traffic is counted through its workspace.
int64_t winograd_tiles(const ConvProblem& p, int64_t m) { return ceil_div(p.oh, m) * ceil_div(p.ow, m); }

double winograd_flops(const ConvProblem& p, int64_t m) {
  const int64_t alpha = m + 2;
  return 2.0 * d(p.n) * d(p.k) * d(p.c / p.groups) * d(winograd_tiles(p, m)) * d(alpha * alpha);
}

bool is_3x3_stride_1(const ConvProblem& p) {
  return p.kh == 3 && p.kw == 3 && p.sh == 1 && p.sw == 1 && p.dh == 1 && p.dw == 1;
}

// --- FFT: every input channel, filter and output channel is transformed once to a padded
// Hf x Wf grid (a power of two, the size cuFFT handles best), products are taken per frequency
// bin, and the outputs are transformed back. A real-to-complex FFT of P points keeps P/2+1 bins
// per row and costs about 2.5 P log2 P flops (half of a complex FFT's 5 P log2 P).
int64_t next_power_of_two(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

struct FftGrid {
  double points, bins;
};

FftGrid fft_grid(const ConvProblem& p) {
  const int64_t hf = next_power_of_two(p.h + p.ph + p.pb), wf = next_power_of_two(p.w + p.pw + p.pr);
  return {d(hf * wf), d(hf * (wf / 2 + 1))};
}

double fft_spectra(const ConvProblem& p) {  // input channels + filters + output channels
  return d(p.n * p.c) + d(p.k * (p.c / p.groups)) + d(p.n * p.k);
}

double fft_flops(const ConvProblem& p) {
  const FftGrid g = fft_grid(p);
  const double transforms = 2.5 * g.points * std::log2(g.points) * fft_spectra(p);
  const double products = 8.0 * d(p.n) * d(p.k) * d(p.c / p.groups) * g.bins;  // complex MAC
  return transforms + products;
}

// cuDNN's documented conditions for its FFT algorithm.
bool fft_applies(const ConvProblem& p) {
  return p.sh == 1 && p.sw == 1 && p.dh == 1 && p.dw == 1 && p.h + p.ph + p.pb <= 256 && p.w + p.pw + p.pr <= 256 &&
         p.kh > std::max(p.ph, p.pb) && p.kw > std::max(p.pw, p.pr);
}

struct Algorithm {
  const char* name;
  bool (*applies)(const ConvProblem&);
  double (*flops)(const ConvProblem&);
  double (*workspace_bytes)(const ConvProblem&);
  double (*gemm_outputs)(const ConvProblem&);
};

bool always(const ConvProblem&) { return true; }
double direct(const ConvProblem& p) { return p.direct_flops; }
// The output elements of an algorithm's GEMMs, the work its tiles are cut from
// (plan/batch_efficiency.h): the convolution's outputs for the GEMMs; (m + 2)^2 transformed
// positions per m x m tile for Winograd; one complex product per frequency bin for FFT.
double outputs(const ConvProblem& p) { return d(p.n) * d(p.k) * d(p.oh) * d(p.ow); }
double winograd_outputs(const ConvProblem& p, int64_t m) {
  return d(p.n) * d(p.k) * d(winograd_tiles(p, m)) * d((m + 2) * (m + 2));
}

// The workspace formulas are the model's assumptions (cuDNN reports its own sizes at run time).
const Algorithm kAlgorithms[] = {
    {"implicit_gemm", always, direct, [](const ConvProblem&) { return 0.0; }, outputs},
    // One 32-bit input offset per filter tap.
    {"implicit_precomp_gemm", always, direct,
     [](const ConvProblem& p) { return 4.0 * d(p.c / p.groups) * d(p.kh * p.kw); }, outputs},
    // The im2col matrix of the whole batch: (C kh kw) x (OH OW) per image.
    {"gemm", always, direct,
     [](const ConvProblem& p) { return kFloatBytes * d(p.n) * d(p.c * p.kh * p.kw) * d(p.oh * p.ow); }, outputs},
    // Spectra of every input channel, filter and output channel.
    {"fft", fft_applies, fft_flops,
     [](const ConvProblem& p) { return kComplexBytes * fft_spectra(p) * fft_grid(p).bins; },
     [](const ConvProblem& p) { return d(p.n) * d(p.k) * fft_grid(p).bins; }},
    // Fused F(2x2,3x3): the transformed filters, 4x4 per (output, input) channel pair.
    {"winograd", is_3x3_stride_1, [](const ConvProblem& p) { return winograd_flops(p, 2); },
     [](const ConvProblem& p) { return kFloatBytes * 16.0 * d(p.k) * d(p.c / p.groups); },
     [](const ConvProblem& p) { return winograd_outputs(p, 2); }},
    // Non-fused F(4x4,3x3): transformed inputs, filters and outputs, 6x6 per tile.
    {"winograd_nonfused", is_3x3_stride_1, [](const ConvProblem& p) { return winograd_flops(p, 4); },
     [](const ConvProblem& p) {
       const double tiles = d(winograd_tiles(p, 4));
       return kFloatBytes * 36.0 * (d(p.n * p.c) * tiles + d(p.k * (p.c / p.groups)) + d(p.n * p.k) * tiles);
     },
     [](const ConvProblem& p) { return winograd_outputs(p, 4); }},
};

}  // namespace

ConvProblem ConvProblem::of(const ConvLayer& layer, const Shape& in, const Shape& out, int64_t batch) {
  const ConvLayer::Params& q = layer.p();
  ConvProblem p;
  p.n = batch, p.c = in.channels(), p.h = in.height(), p.w = in.width();
  p.k = out.channels(), p.oh = out.height(), p.ow = out.width();
  p.kh = q.kh, p.kw = q.kw, p.sh = q.sh, p.sw = q.sw, p.ph = q.ph, p.pw = q.pw, p.groups = q.groups;
  p.pb = q.pb(), p.pr = q.pr(), p.dh = q.dh, p.dw = q.dw;
  p.direct_flops = layer.forward_flops({in}, out) * d(batch);
  return p;
}

ConvProblem ConvProblem::with_batch(int64_t batch) const {
  ConvProblem p = *this;
  p.direct_flops = direct_flops / d(n) * d(batch);
  p.n = batch;
  return p;
}

const std::vector<std::string>& conv_algorithm_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Algorithm& a : kAlgorithms) out.push_back(a.name);
    return out;
  }();
  return names;
}

std::vector<ConvAlgoEstimate> conv_algorithms(const ConvProblem& p) {
  std::vector<ConvAlgoEstimate> out;
  for (const Algorithm& a : kAlgorithms)
    if (a.applies(p))
      out.push_back(
          {a.name, a.flops(p), static_cast<size_t>(std::llround(a.workspace_bytes(p))), 1, a.gemm_outputs(p)});
  return out;
}

std::vector<ConvAlgoEstimate> conv_algorithms_with_sub_batches(const ConvProblem& p) {
  std::vector<ConvAlgoEstimate> out = conv_algorithms(p);
  const size_t whole = out.size();
  for (int k : {2, 4, 8, 16}) {
    if (p.n % k != 0) continue;
    for (ConvAlgoEstimate a : conv_algorithms(p.with_batch(p.n / k)))
      for (size_t i = 0; i < whole; ++i)
        if (out[i].name == a.name && a.workspace_bytes < out[i].workspace_bytes) {
          a.sub_batches = k;
          out.push_back(a);
        }
  }
  return out;
}

}  // namespace vdnn
