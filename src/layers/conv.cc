#include "layers/conv.h"

#include "vdnn/error.h"

namespace vdnn {

std::unique_ptr<Layer> ConvLayer::parse(const std::string& name, LayerConfig& cfg) {
  Params p;
  p.channels = cfg.positive_int("channels");
  if (!cfg.has("kernel")) cfg.fail("kernel", "an integer >= 1 or a pair [h, w] of them");
  std::tie(p.kh, p.kw) = cfg.pair("kernel", {1, 1});
  std::tie(p.sh, p.sw) = cfg.pair("stride", {1, 1});
  std::tie(p.dh, p.dw) = cfg.pair("dilation", {1, 1});
  std::tie(p.ph, p.pw) = cfg.pair("pad", {0, 0}, 0);
  std::tie(p.ph_end, p.pw_end) = cfg.pair("pad_end", {p.ph, p.pw}, 0);
  p.groups = cfg.integer("groups", 1, 1);
  p.bias = cfg.boolean("bias", true);
  if (p.channels % p.groups != 0) cfg.fail("groups", VDNN_MSG("a divisor of channels (" << p.channels << ")"));
  return std::make_unique<ConvLayer>(name, p);
}

Shape ConvLayer::infer_shape(const std::vector<Shape>& in) const {
  const Shape& x = in[0];
  if (!x.is_image()) fail("needs an image input CxHxW, got " + x.to_string());
  if (x.channels() % p_.groups != 0)
    fail(VDNN_MSG("input channels " << x.channels() << " are not divisible by groups " << p_.groups));
  const int64_t padded_h = x.height() + p_.ph + p_.pb(), padded_w = x.width() + p_.pw + p_.pr();
  if (padded_h < p_.span_h() || padded_w < p_.span_w())
    fail(VDNN_MSG("kernel " << p_.kh << "x" << p_.kw << " (dilation " << p_.dh << "x" << p_.dw
                            << ") does not fit input " << x.to_string() << " with pad " << p_.ph << "x" << p_.pw
                            << ", pad_end " << p_.pb() << "x" << p_.pr()));
  const int64_t oh = (padded_h - p_.span_h()) / p_.sh + 1;
  const int64_t ow = (padded_w - p_.span_w()) / p_.sw + 1;
  return Shape{p_.channels, oh, ow};
}

std::vector<ParamSpec> ConvLayer::params(const std::vector<Shape>& in) const {
  const int64_t ic_per_group = in[0].channels() / p_.groups;
  ParamSpec w{"weight", {}, ParamSpec::Init::kHeNormal, 1, true, true};
  if (p_.groups > 1) {  // goihw for the backends; PyTorch's [O, I/groups, kh, kw] (same bytes) in files
    w.dims = {p_.groups, p_.channels / p_.groups, ic_per_group, p_.kh, p_.kw};
    w.file_shape = {p_.channels, ic_per_group, p_.kh, p_.kw};
  } else {
    w.dims = {p_.channels, ic_per_group, p_.kh, p_.kw};
  }
  if (elements_up_to(w.dims) < 0)  // before fan_in, whose product could overflow
    fail(VDNN_MSG("its weight " << Shape(w.dims).to_string() << " has more than 2^36 elements"));
  w.fan_in = ic_per_group * p_.kh * p_.kw;
  std::vector<ParamSpec> out{w};
  if (p_.bias) out.push_back({"bias", {p_.channels}, ParamSpec::Init::kZero, 1, true, false});
  return out;
}

// Dilation spreads the taps without adding any: the count is kernel taps x outputs either way.
double ConvLayer::forward_flops(const std::vector<Shape>& in, const Shape& out) const {
  const double macs_per_output = static_cast<double>(in[0].channels() / p_.groups) * p_.kh * p_.kw;
  return 2.0 * macs_per_output * static_cast<double>(out.elements());
}

}  // namespace vdnn
