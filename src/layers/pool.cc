#include "layers/pool.h"

#include "vdnn/error.h"

namespace vdnn {

std::unique_ptr<Layer> PoolLayer::parse(const std::string& name, const std::string& type, LayerConfig& cfg) {
  Params p;
  p.max = type == "max_pool";
  p.global = cfg.boolean("global", false);
  if (!p.global) {
    if (!cfg.has("kernel")) cfg.fail("kernel", "an integer >= 1 or a pair [h, w] (or \"global\": true)");
    std::tie(p.kh, p.kw) = cfg.pair("kernel", {1, 1});
    std::tie(p.sh, p.sw) = cfg.pair("stride", {p.kh, p.kw});
    std::tie(p.ph, p.pw) = cfg.pair("pad", {0, 0}, 0);
    std::tie(p.ph_end, p.pw_end) = cfg.pair("pad_end", {p.ph, p.pw}, 0);
    p.ceil = cfg.boolean("ceil", false);
    if (p.ph >= p.kh || p.pw >= p.kw) cfg.fail("pad", "less than the kernel size");
    if (p.ph_end >= p.kh || p.pw_end >= p.kw) cfg.fail("pad_end", "less than the kernel size");
  }
  if (!p.max) p.exclude_padding = cfg.boolean("exclude_padding", true);
  return std::make_unique<PoolLayer>(name, type, p);
}

static int64_t output_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t pad_end, bool ceil) {
  const int64_t span = in + pad + pad_end - k;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + pad) --out;  // the last window must start inside the input
  return out;
}

PoolLayer::Window PoolLayer::window(const Shape& in) const {
  Window w{};
  if (p_.global) {
    w = {in.height(), in.width(), 1, 1, 0, 0, 0, 0, 1, 1, 0, 0};
    return w;
  }
  w.kh = p_.kh, w.kw = p_.kw, w.sh = p_.sh, w.sw = p_.sw, w.pt = p_.ph, w.pl = p_.pw, w.eh = p_.pb(), w.ew = p_.pr();
  w.oh = output_size(in.height(), p_.kh, p_.sh, p_.ph, p_.pb(), p_.ceil);
  w.ow = output_size(in.width(), p_.kw, p_.sw, p_.pw, p_.pr(), p_.ceil);
  // Bottom/right padding so that the last window ends inside the padded input (oneDNN's rule).
  w.pb = std::max<int64_t>(0, (w.oh - 1) * w.sh + w.kh - in.height() - w.pt);
  w.pr = std::max<int64_t>(0, (w.ow - 1) * w.sw + w.kw - in.width() - w.pl);
  return w;
}

Shape PoolLayer::infer_shape(const std::vector<Shape>& in) const {
  const Shape& x = in[0];
  if (!x.is_image()) fail("needs an image input CxHxW, got " + x.to_string());
  if (!p_.global && (x.height() + p_.ph + p_.pb() < p_.kh || x.width() + p_.pw + p_.pr() < p_.kw))
    fail(VDNN_MSG("kernel " << p_.kh << "x" << p_.kw << " does not fit input " << x.to_string()));
  Window w = window(x);
  return Shape{x.channels(), w.oh, w.ow};
}

double PoolLayer::forward_flops(const std::vector<Shape>& in, const Shape& out) const {
  Window w = window(in[0]);
  return static_cast<double>(out.elements()) * w.kh * w.kw;
}

}  // namespace vdnn
