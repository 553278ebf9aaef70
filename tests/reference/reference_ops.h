// tests/reference/reference_ops.h — plain reference implementations of vdnn's layers, for tests.
//
// Model: every operation is a set of nested loops that reads like its textbook formula, accumulates
// in double and rounds to float once per output element. Nothing here is fast or clever; it is the
// yardstick the oneDNN layers are compared against. Shapes are checked and a bad one throws
// std::invalid_argument naming the operation, so a wrong test fails loudly instead of reading
// garbage.
//
// Layout: every tensor is a Tensor4 — dense NCHW float data in a std::vector<float>, element
// (n, c, h, w) at index ((n*C + c)*H + h)*W + w. A 2-D (N, C) tensor is a Tensor4 with h = w = 1,
// so its data is the same row-major (N, C) matrix. Convolution weights are a Tensor4 in OIHW order
// (n = O output channels, c = I = in_channels / groups, h = KH, w = KW). Vectors (bias, gamma,
// beta, per-channel statistics, FC weights) are plain std::vector<float>.
//
//   vdnn::ref::Tensor4 x(2, 3, 5, 7);                 // zero-filled
//   x.at(1, 2, 4, 6) = 1.0f;
//   vdnn::ref::Conv2dParams p{.groups = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 0, .pb = 2, .pr = 1};
//   vdnn::ref::Tensor4 y = vdnn::ref::conv2d_forward(x, w, bias, p);
//   vdnn::ref::Conv2dGrads g = vdnn::ref::conv2d_backward(x, w, dy, p);
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace vdnn::ref {

// Dense NCHW float tensor. The fields are public and plain; `v.size()` must equal n*c*h*w (the
// constructors guarantee it; code that edits the fields directly must keep it so).
struct Tensor4 {
  int64_t n = 0, c = 0, h = 0, w = 0;
  std::vector<float> v;

  Tensor4() = default;
  Tensor4(int64_t n, int64_t c, int64_t h, int64_t w, float fill = 0.0f);
  // Takes `data` as the NCHW contents; throws std::invalid_argument if its size is not n*c*h*w.
  Tensor4(int64_t n, int64_t c, int64_t h, int64_t w, std::vector<float> data);

  int64_t size() const { return n * c * h * w; }
  int64_t index(int64_t in, int64_t ic, int64_t ih, int64_t iw) const { return ((in * c + ic) * h + ih) * w + iw; }
  // Unchecked element access (use plain indices you computed from the shape).
  float& at(int64_t in, int64_t ic, int64_t ih, int64_t iw) { return v[index(in, ic, ih, iw)]; }
  const float& at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const { return v[index(in, ic, ih, iw)]; }
  bool same_shape(const Tensor4& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
};

// floor((in + pad_lo + pad_hi - k) / stride) + 1: the output extent of a convolution or pooling
// window sweep. Throws std::invalid_argument if the padded input is smaller than the kernel.
int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t pad_lo, int64_t pad_hi);

// ---------------------------------------------------------------------------------------------
// 2-D convolution (cross-correlation, as in every DL framework), grouped, strided, dilated, padded
// with zeros. Input channels C = groups * I, output channels O divisible by groups; output
// channel o belongs to group g = o / (O / groups) and reads input channels [g*I, (g+1)*I).
//   y[n,o,oh,ow] = bias[o]
//       + sum_{i,kh,kw} x[n, g*I+i, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw] * w[o,i,kh,kw]
// with out-of-range input positions contributing zero. The output extent is out_size with the
// dilated kernel extent dh*(KH-1)+1 (and likewise for the width).
struct Conv2dParams {
  int64_t groups = 1;
  int64_t sh = 1, sw = 1;                  // strides
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;  // padding: top, left, bottom, right
  int64_t dh = 1, dw = 1;                  // dilation (1: dense)
};

// `bias` is empty (no bias) or has O entries.
Tensor4 conv2d_forward(const Tensor4& x, const Tensor4& w, const std::vector<float>& bias, const Conv2dParams& p);

struct Conv2dGrads {
  Tensor4 dx;             // shape of x
  Tensor4 dw;             // shape of w (OIHW)
  std::vector<float> db;  // O entries: sum of dy over n, oh, ow (always computed)
};
// Gradients of conv2d_forward given dy (shape of its output). The bias does not affect them.
Conv2dGrads conv2d_backward(const Tensor4& x, const Tensor4& w, const Tensor4& dy, const Conv2dParams& p);

// ---------------------------------------------------------------------------------------------
// 2-D pooling over each (n, c) plane. Window for output (oh, ow) covers input rows
// oh*sh - pt .. oh*sh - pt + kh - 1 and the analogous columns. Padded positions are never read:
//   max                  : max over the real cells (padding never wins, even over negative values);
//                          backward routes dy to the FIRST maximal cell in row-major window order.
//   avg_include_padding  : sum of real cells / (number of window cells inside the padded input,
//                          rows -pt .. H+eh-1, columns -pl .. W+ew-1), as Caffe and PyTorch
//                          (count_include_pad). eh/ew are the declared bottom/right padding
//                          (ONNX's pads end; -1: pt/pl, symmetric padding); pb/pr beyond them are
//                          ceil mode's overhang (they only fix the output size), and overhanging
//                          cells do not count. Without overhang the divisor is kh * kw.
//   avg_exclude_padding  : sum of real cells / (number of real cells in the window)
//                          (oneDNN pooling_avg_exclude_padding)
// A window with no real cell (only possible when padding >= kernel) throws std::invalid_argument.
enum class PoolKind { max, avg_include_padding, avg_exclude_padding };

struct Pool2dParams {
  PoolKind kind = PoolKind::max;
  int64_t kh = 2, kw = 2;
  int64_t sh = 2, sw = 2;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t eh = -1, ew = -1;  // where the padded input ends for avg_include_padding; -1: pt / pl
};

Tensor4 pool2d_forward(const Tensor4& x, const Pool2dParams& p);
// dx (shape of x) given x and dy (shape of the forward output).
Tensor4 pool2d_backward(const Tensor4& x, const Tensor4& dy, const Pool2dParams& p);

// ---------------------------------------------------------------------------------------------
// Local response normalization across channels, exactly as oneDNN 2.x (lrn_across_channels):
//   y[n,c,h,w] = x[n,c,h,w] * (k + alpha / size * sum_{c' in window(c)} x[n,c',h,w]^2)^(-beta)
//   window(c) = [c - (size-1)/2, c + (size-1)/2] (integer division) clipped to [0, C).
// The divisor is always `size`, also at the channel borders where fewer channels are summed.
// This is oneDNN's reference kernel (src/cpu/ref_lrn.cpp: half_size = (size-1)/2, channels
// [c-half_size, c+half_size]) and its documented sum bounds i = -(size-1)/2 .. (size+1)/2 - 1 in
// integer arithmetic. For odd size (the usual 5) it is the centered window of `size` channels; for
// an EVEN size it sums only size-1 channels (NOT c-(size-1)/2 .. c+size/2), so prefer odd sizes in
// tests against optimized kernels.
struct LrnParams {
  int64_t size = 5;
  double alpha = 1e-4;
  double beta = 0.75;
  double k = 1.0;
};

Tensor4 lrn_forward(const Tensor4& x, const LrnParams& p);
// dx given x and dy (exact derivative of lrn_forward, including the window-sum terms).
Tensor4 lrn_backward(const Tensor4& x, const Tensor4& dy, const LrnParams& p);

// ---------------------------------------------------------------------------------------------
// Batch normalization, training mode: per-channel statistics over (N, H, W),
//   mean[c] = E[x],  var[c] = E[(x - mean)^2]  (biased: divide by N*H*W),
//   y = gamma[c] * (x - mean[c]) / sqrt(var[c] + eps) + beta[c].
// gamma and beta must have C entries (pass 1s and 0s for "no scale/shift").
struct BatchNormForward {
  Tensor4 y;
  std::vector<float> mean;  // C entries
  std::vector<float> var;   // C entries, biased
};
BatchNormForward batchnorm_forward_training(const Tensor4& x, const std::vector<float>& gamma,
                                            const std::vector<float>& beta, double eps);

// Inference mode: same formula with the given (running) mean and var instead of batch statistics.
Tensor4 batchnorm_forward_inference(const Tensor4& x, const std::vector<float>& gamma, const std::vector<float>& beta,
                                    const std::vector<float>& mean, const std::vector<float>& var, double eps);

struct BatchNormGrads {
  Tensor4 dx;                 // shape of x
  std::vector<float> dgamma;  // sum over (n,h,w) of dy * xhat
  std::vector<float> dbeta;   // sum over (n,h,w) of dy
};
// Full training-mode gradient (mean and var depend on x):
//   dx = gamma / sqrt(var + eps) * (dy - mean(dy) - xhat * mean(dy * xhat)),
// means over (N, H, W) of each channel. Batch mean/var are recomputed from x in double (they equal
// batchnorm_forward_training's up to float rounding), so no saved statistics are needed.
BatchNormGrads batchnorm_backward_training(const Tensor4& x, const Tensor4& dy, const std::vector<float>& gamma,
                                           double eps);

// ---------------------------------------------------------------------------------------------
// Fully connected (inner product). x is read as an (N, K) matrix with K = c*h*w (the NCHW flatten
// of each sample), w is an (M, K) row-major matrix (w.size() must be a multiple of K; M =
// w.size()/K), bias is empty or M entries. y[n, m] = bias[m] + sum_k x[n, k] * w[m, k]; y is
// returned as a Tensor4 of shape (N, M, 1, 1).
Tensor4 fc_forward(const Tensor4& x, const std::vector<float>& w, const std::vector<float>& bias);

struct FcGrads {
  Tensor4 dx;             // shape of x (the gradient of the flattened input, unflattened)
  std::vector<float> dw;  // (M, K) row-major
  std::vector<float> db;  // M entries (always computed)
};
// dy has shape (N, M, 1, 1) (any shape with dy.n == N and dy.c*dy.h*dy.w == M is accepted).
FcGrads fc_backward(const Tensor4& x, const std::vector<float>& w, const Tensor4& dy);

// ---------------------------------------------------------------------------------------------
// ReLU: y = min(max(x, 0), ceiling), the ceiling infinite by default (6 for ReLU6). Backward:
// dx = dy where 0 < x < ceiling, else 0 — at x == 0 and x == ceiling the gradient is 0, as in
// oneDNN's eltwise_relu backward with alpha = 0 and PyTorch's hardtanh_backward for ReLU6.
Tensor4 relu_forward(const Tensor4& x, float ceiling = std::numeric_limits<float>::infinity());
Tensor4 relu_backward(const Tensor4& x, const Tensor4& dy, float ceiling = std::numeric_limits<float>::infinity());

// ---------------------------------------------------------------------------------------------
// Softmax over the classes of each sample. `logits` must be (N, C, 1, 1); throws otherwise.
// Computed as exp(z - max z) / sum exp(z - max z).
Tensor4 softmax_forward(const Tensor4& logits);

// Mean over the batch of -log softmax(logits[n])[labels[n]]; labels has N entries in [0, C).
double softmax_cross_entropy(const Tensor4& logits, const std::vector<int64_t>& labels);
// d(loss)/d(logits) = (softmax(logits) - onehot(labels)) / N, shape (N, C, 1, 1).
Tensor4 softmax_cross_entropy_backward(const Tensor4& logits, const std::vector<int64_t>& labels);

// ---------------------------------------------------------------------------------------------
// Concatenation along channels: all inputs share n, h, w; output channels are the inputs' channels
// in order. Backward splits dy back into pieces with the given channel counts.
Tensor4 concat_channels(const std::vector<Tensor4>& xs);
std::vector<Tensor4> concat_channels_backward(const Tensor4& dy, const std::vector<int64_t>& channels);

// Elementwise sum of two same-shape tensors (the backward of add passes dy to both inputs).
Tensor4 add(const Tensor4& a, const Tensor4& b);

// ---------------------------------------------------------------------------------------------
// Multi-head scaled dot-product self-attention (layers/attention.h). x is [N, T, 3C] row-major:
// q, k, v packed along the last axis, head h of each at columns [h*D, (h+1)*D), D = C / heads.
//   S[n,h,i,j] = sum_d q[n,i,h*D+d] * k[n,j,h*D+d] / sqrt(D),  -inf where causal and j > i
//   P = softmax_j(S),  y[n,i,h*D+d] = sum_j P[n,h,i,j] * drop[n,h,i,j] * v[n,j,h*D+d]
// y is [N, T, C]. `drop` is empty (no dropout) or N*H*T*T factors (0 or 1/(1-rate)) multiplied onto
// the probabilities after the softmax. Everything in double, rounded once per output element.
struct AttentionParams {
  int64_t n = 1, t = 1, c = 1, heads = 1;
  bool causal = true;
};
std::vector<float> attention_forward(const std::vector<float>& x, const AttentionParams& p,
                                     const std::vector<float>& drop = {});
// dx ([N, T, 3C]: dq | dk | dv) given x and dy ([N, T, C]), the exact derivative of attention_forward.
std::vector<float> attention_backward(const std::vector<float>& x, const std::vector<float>& dy,
                                      const AttentionParams& p, const std::vector<float>& drop = {});
// Sequences. A [N, T, C] value is the (N*T, C, 1, 1) Tensor4 of its rows (one per token); a
// linear layer over its last axis is fc_forward / fc_backward on those rows.
//
// embedding: row r of y is row ids[r] of table (V, C); ids each in [0, V). Backward: dW (V, C),
// row v the sum of dy's rows whose id is v.
Tensor4 embedding_forward(const std::vector<int64_t>& ids, const Tensor4& table);
Tensor4 embedding_backward(const std::vector<int64_t>& ids, const Tensor4& dy, int64_t vocab);
// position embedding: y[n*T + t] = x[n*T + t] + table[t] (table (P, C), P >= T). Backward: dx = dy,
// dW row t < T the sum over n of dy[n*T + t], rows >= T zero.
Tensor4 position_embedding_forward(const Tensor4& x, int64_t positions, const Tensor4& table);
Tensor4 position_embedding_backward(const Tensor4& dy, int64_t positions, int64_t max_positions);
// layer norm over each row: y = (x - mean) / sqrt(var + eps) * gamma + beta (biased variance);
// empty gamma and beta: no affine transform (gamma 1, beta 0).
Tensor4 layer_norm_forward(const Tensor4& x, const std::vector<float>& gamma, const std::vector<float>& beta,
                           double eps);
struct LayerNormGrads {
  Tensor4 dx;
  std::vector<float> dgamma, dbeta;  // C entries each
};
LayerNormGrads layer_norm_backward(const Tensor4& x, const Tensor4& dy, const std::vector<float>& gamma, double eps);
// GELU: x * Phi(x) (erf), or 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with `tanh`.
Tensor4 gelu_forward(const Tensor4& x, bool tanh);
Tensor4 gelu_backward(const Tensor4& x, const Tensor4& dy, bool tanh);
// Cross-entropy per row of logits (R, V): the mean over rows whose label is not ignore_index of
// -log softmax(row)[label] (0 when every row is ignored); others' labels must be in [0, V).
double token_cross_entropy(const Tensor4& logits, const std::vector<int64_t>& labels, int64_t ignore_index);
// Its gradient: (softmax(row) - onehot(label)) / count for the rows counted, 0 for ignored rows.
Tensor4 token_cross_entropy_backward(const Tensor4& logits, const std::vector<int64_t>& labels, int64_t ignore_index);

}  // namespace vdnn::ref
