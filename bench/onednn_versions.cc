// bench/onednn_versions.cc — the convolutions of a vdnn training step (forward, backward data,
// backward weights; blocked layouts chosen by oneDNN, format_tag::any) timed with whichever oneDNN
// this file is compiled against: Debian's 2.6 (the ::desc API) or PyPI's 3.x (primitive_desc built
// directly). bench/onednn_versions.sh builds it twice and runs the two interleaved.
//
//   g++ -O2 -std=c++20 bench/onednn_versions.cc -ldnnl -o /tmp/conv26 && /tmp/conv26 resnet18 5
//   {"onednn": "2.6.3", "net": "resnet18", "conv_ms": 98.1, "layers": [...]}
//   /tmp/conv26 vgg_cifar 5 bf16   # activations in bf16, weight gradients in f32, as vdnn's --precision bf16
//
// Each layer runs its three primitives `reps` times after one warm-up; the layer's time is the
// median per primitive summed, times how often the layer occurs in the net. The nets are vdnn's
// resnet18 at 3x64x64, batch 32 and vgg_cifar at batch 64 (the convolutions of bench case 7).
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Conv {
  const char* name;
  int64_t batch, in_c, out_c, side, kernel, stride, count;
};

std::vector<Conv> net(const std::string& name) {
  if (name == "resnet18")  // 3x64x64: conv1 to 32x32, max pool to 16x16, then four stages
    return {{"conv1", 32, 3, 64, 64, 7, 2, 1},           {"layer1 3x3", 32, 64, 64, 16, 3, 1, 4},
            {"layer2 3x3 s2", 32, 64, 128, 16, 3, 2, 1}, {"layer2 3x3", 32, 128, 128, 8, 3, 1, 3},
            {"layer2 down", 32, 64, 128, 16, 1, 2, 1},   {"layer3 3x3 s2", 32, 128, 256, 8, 3, 2, 1},
            {"layer3 3x3", 32, 256, 256, 4, 3, 1, 3},    {"layer3 down", 32, 128, 256, 8, 1, 2, 1},
            {"layer4 3x3 s2", 32, 256, 512, 4, 3, 2, 1}, {"layer4 3x3", 32, 512, 512, 2, 3, 1, 3},
            {"layer4 down", 32, 256, 512, 4, 1, 2, 1}};
  return {{"conv1_1", 64, 3, 64, 32, 3, 1, 1},   {"conv1_2", 64, 64, 64, 32, 3, 1, 1},
          {"conv2_1", 64, 64, 128, 16, 3, 1, 1}, {"conv2_2", 64, 128, 128, 16, 3, 1, 1},
          {"conv3_1", 64, 128, 256, 8, 3, 1, 1}, {"conv3_2", 64, 256, 256, 8, 3, 1, 1}};
}

double median_ms(const std::function<void()>& run, stream& s, int reps) {
  run();
  s.wait();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    s.wait();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "resnet18";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string precision = argc > 3 ? argv[3] : "f32";
  if (precision != "f32" && precision != "bf16") {
    std::fprintf(stderr, "precision: expected f32 or bf16, got '%s'\n", precision.c_str());
    return 2;
  }
  const dt act = precision == "bf16" ? dt::bf16 : dt::f32;  // weights read in it too; their gradient f32
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const dnnl_version_t* v = dnnl_version();
  std::printf("{\"onednn\": \"%d.%d.%d\", \"net\": \"%s\", \"precision\": \"%s\", \"layers\": [", v->major, v->minor,
              v->patch, which.c_str(), precision.c_str());
  double total = 0;
  bool first = true;
  for (const Conv& c : net(which)) {
    const int64_t pad = c.kernel / 2, out = (c.side + 2 * pad - c.kernel) / c.stride + 1;
    const memory::dims src_d{c.batch, c.in_c, c.side, c.side}, wei_d{c.out_c, c.in_c, c.kernel, c.kernel},
        bias_d{c.out_c}, dst_d{c.batch, c.out_c, out, out}, strides{c.stride, c.stride}, pads{pad, pad};
    const memory::desc src(src_d, act, tag::any), wei(wei_d, act, tag::any), bias(bias_d, dt::f32, tag::a),
        dst(dst_d, act, tag::any), dwei(wei_d, dt::f32, tag::any);
#if DNNL_VERSION_MAJOR >= 3
    convolution_forward::primitive_desc fwd(eng, prop_kind::forward_training, algorithm::convolution_direct, src, wei,
                                            bias, dst, strides, pads, pads);
    convolution_backward_data::primitive_desc bwd_data(eng, algorithm::convolution_direct, src, wei, dst, strides, pads,
                                                       pads, fwd);
    convolution_backward_weights::primitive_desc bwd_weights(eng, algorithm::convolution_direct, src, dwei, bias, dst,
                                                             strides, pads, pads, fwd);
#else
    convolution_forward::primitive_desc fwd(
        {prop_kind::forward_training, algorithm::convolution_direct, src, wei, bias, dst, strides, pads, pads}, eng);
    convolution_backward_data::primitive_desc bwd_data(
        {algorithm::convolution_direct, src, wei, dst, strides, pads, pads}, eng, fwd);
    convolution_backward_weights::primitive_desc bwd_weights(
        {algorithm::convolution_direct, src, dwei, bias, dst, strides, pads, pads}, eng, fwd);
#endif
    memory x(fwd.src_desc(), eng), w(fwd.weights_desc(), eng), b(fwd.bias_desc(), eng), y(fwd.dst_desc(), eng);
    memory dy(bwd_data.diff_dst_desc(), eng), dx(bwd_data.diff_src_desc(), eng), wb(bwd_data.weights_desc(), eng);
    memory dw(bwd_weights.diff_weights_desc(), eng), db(bwd_weights.diff_bias_desc(), eng),
        xw(bwd_weights.src_desc(), eng), dyw(bwd_weights.diff_dst_desc(), eng);
    for (memory* m : {&x, &w, &b, &dy, &wb, &xw, &dyw})
      std::memset(m->get_data_handle(), 0x3c, m->get_desc().get_size());  // 0x3c3c3c3c: 0.0115, finite
    convolution_forward f(fwd);
    convolution_backward_data bd(bwd_data);
    convolution_backward_weights bw(bwd_weights);
    const double f_ms = median_ms(
        [&] {
          f.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}});
        },
        s, reps);
    const double d_ms = median_ms(
        [&] {
          bd.execute(s, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, wb}, {DNNL_ARG_DIFF_SRC, dx}});
        },
        s, reps);
    const double w_ms = median_ms(
        [&] {
          bw.execute(
              s, {{DNNL_ARG_SRC, xw}, {DNNL_ARG_DIFF_DST, dyw}, {DNNL_ARG_DIFF_WEIGHTS, dw}, {DNNL_ARG_DIFF_BIAS, db}});
        },
        s, reps);
    total += (f_ms + d_ms + w_ms) * static_cast<double>(c.count);
    std::printf(
        "%s{\"layer\": \"%s\", \"count\": %lld, \"forward_ms\": %.3f, \"backward_data_ms\": %.3f, "
        "\"backward_weights_ms\": %.3f, \"forward_impl\": \"%s\", \"backward_data_impl\": \"%s\", "
        "\"backward_weights_impl\": \"%s\"}",
        first ? "" : ", ", c.name, static_cast<long long>(c.count), f_ms, d_ms, w_ms, fwd.impl_info_str(),
        bwd_data.impl_info_str(), bwd_weights.impl_info_str());
    first = false;
  }
  std::printf("], \"conv_ms\": %.3f}\n", total);
  return 0;
}
