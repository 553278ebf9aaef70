#include "backends/cuda/cudnn_conv_algos.h"

#include <algorithm>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

// The three passes behind one interface: how cuDNN lists, times and sizes their algorithms.
struct ForwardPass {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr const char* kName = "forward";
  static int max_count(cudnnHandle_t h) {
    int n = 0;
    VDNN_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &n));
    return n;
  }
  static void heuristic(cudnnHandle_t h, const ConvDescriptors& d, int n, int* got, Perf* p) {
    VDNN_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, n, got, p));
  }
  static void measure(cudnnHandle_t h, const ConvDescriptors& d, int n, int* got, Perf* p) {
    VDNN_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithm(h, d.x, d.w, d.conv, d.y, n, got, p));
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvDescriptors& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y,
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
  }
  static const char* name(int algo) {
    static const char* names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
                                  "winograd",      "winograd_nonfused"};
    return algo >= 0 && algo < 8 ? names[algo] : "unknown";
  }
  static bool is_winograd(int algo) {
    return algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
  }
};

struct BackwardDataPass {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr const char* kName = "backward-data";
  static int max_count(cudnnHandle_t h) {
    int n = 0;
    VDNN_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &n));
    return n;
  }
  static void heuristic(cudnnHandle_t h, const ConvDescriptors& d, int n, int* got, Perf* p) {
    VDNN_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, n, got, p));
  }
  static void measure(cudnnHandle_t h, const ConvDescriptors& d, int n, int* got, Perf* p) {
    VDNN_CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(h, d.w, d.y, d.conv, d.x, n, got, p));
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvDescriptors& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x,
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
  }
  static const char* name(int algo) {
    static const char* names[] = {"algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"};
    return algo >= 0 && algo < 6 ? names[algo] : "unknown";
  }
  static bool is_winograd(int algo) {
    return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
           algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
  }
};

struct BackwardFilterPass {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr const char* kName = "backward-filter";
  static int max_count(cudnnHandle_t h) {
    int n = 0;
    VDNN_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &n));
    return n;
  }
  static void heuristic(cudnnHandle_t h, const ConvDescriptors& d, int n, int* got, Perf* p) {
    VDNN_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, n, got, p));
  }
  static void measure(cudnnHandle_t h, const ConvDescriptors& d, int n, int* got, Perf* p) {
    VDNN_CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(h, d.x, d.y, d.conv, d.w, n, got, p));
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const ConvDescriptors& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w,
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
  static const char* name(int algo) {
    static const char* names[] = {"algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling"};
    return algo >= 0 && algo < 7 ? names[algo] : "unknown";
  }
  static bool is_winograd(int algo) { return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED; }
};

template <typename Pass>
ConvAlgoChoice choose(cudnnHandle_t h, const ConvDescriptors& d, ConvAlgo want, size_t limit,
                      const std::string& layer) {
  const bool measure = want == ConvAlgo::kAuto;
  int got = 0;
  std::vector<typename Pass::Perf> perf(static_cast<size_t>(Pass::max_count(h)));
  if (measure)
    Pass::measure(h, d, static_cast<int>(perf.size()), &got, perf.data());
  else
    Pass::heuristic(h, d, static_cast<int>(perf.size()), &got, perf.data());
  // Candidates in cuDNN's order (measured: fastest first; heuristic: most promising first). Entries
  // for FMA math (what the descriptor asks for) first; cuDNN also lists CUDNN_DEFAULT_MATH runs,
  // which on Ampere and later may be TF32 — taken only when no FMA entry qualifies (the kernel
  // still runs with the descriptor's FMA math).
  std::vector<ConvAlgoChoice> ok;
  size_t least_over = 0;  // the least workspace asked beyond the limit, for the error
  for (cudnnMathType_t math : {CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH}) {
    for (int i = 0; i < got; ++i) {
      const auto& p = perf[static_cast<size_t>(i)];
      const int algo = static_cast<int>(p.algo);
      if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC || p.mathType != math) continue;
      if (std::any_of(ok.begin(), ok.end(), [&](const ConvAlgoChoice& c) { return c.algo == algo; })) continue;
      size_t bytes = 0;  // on the final descriptors (fp32 FMA math)
      if (Pass::workspace(h, d, algo, &bytes) != CUDNN_STATUS_SUCCESS) continue;
      if (bytes > limit) {
        least_over = least_over == 0 ? bytes : std::min(least_over, bytes);
        continue;
      }
      ok.push_back({algo, Pass::name(algo), bytes, measure ? p.time : -1.0f});
    }
    if (!ok.empty()) break;
  }
  if (ok.empty() && least_over > 0)
    VDNN_THROW("layer '" << layer << "' (conv): every deterministic fp32 " << Pass::kName
                         << " algorithm cuDNN offers needs more workspace than the " << format_bytes(limit)
                         << " the plan reserves for this algorithm choice (" << format_bytes(least_over)
                         << " at least); try another --conv-algo");
  if (ok.empty())
    VDNN_THROW("layer '" << layer << "' (conv): cuDNN offers no deterministic fp32 " << Pass::kName
                         << " algorithm for it");
  if (measure) return ok.front();
  if (want == ConvAlgo::kWinograd)
    for (const ConvAlgoChoice& c : ok)
      if (Pass::is_winograd(c.algo)) return c;
  return *std::min_element(ok.begin(), ok.end(), [](const ConvAlgoChoice& a, const ConvAlgoChoice& b) {
    return a.workspace_bytes < b.workspace_bytes;
  });
}

}  // namespace

size_t ConvAlgos::workspace_bytes() const {
  return std::max({forward.workspace_bytes, backward_data.workspace_bytes, backward_filter.workspace_bytes});
}

std::string ConvAlgos::to_string() const {
  auto one = [](const char* pass, const ConvAlgoChoice& c) {
    return VDNN_MSG(pass << " " << c.name << " " << format_bytes(c.workspace_bytes)
                         << (c.measured_ms >= 0 ? VDNN_MSG(" " << c.measured_ms << " ms") : std::string()));
  };
  return one("fwd", forward) + ", " + one("bwd data", backward_data) + ", " + one("bwd filter", backward_filter);
}

ConvAlgos choose_conv_algos(cudnnHandle_t cudnn, const ConvDescriptors& d, ConvAlgo want, bool need_data_grad,
                            size_t workspace_limit, const std::string& layer) {
  ConvAlgos a;
  a.forward = choose<ForwardPass>(cudnn, d, want, workspace_limit, layer);
  if (need_data_grad) {
    a.backward_data = choose<BackwardDataPass>(cudnn, d, want, workspace_limit, layer);
  } else {
    a.backward_data.name = "none";
  }
  a.backward_filter = choose<BackwardFilterPass>(cudnn, d, want, workspace_limit, layer);
  return a;
}

}  // namespace vdnn
