#include "data/data_source.h"

#include <algorithm>

#include "data/cifar.h"
#include "data/fashion_mnist.h"
#include "data/synthetic.h"

namespace vdnn {

Dataset load_data(const DataSource& source, const Graph& graph, Split split) {
  if (source.data == "synthetic") {
    const Shape& s = graph.input_shape();
    const int64_t samples =
        split == Split::kTrain ? source.synthetic_samples : std::max<int64_t>(source.synthetic_samples / 4, 1);
    return make_synthetic(samples, s.channels(), s.height(), s.width(), graph.classes(), source.seed,
                          /*split=*/split == Split::kTrain ? 0 : 1);
  }
  const std::string dir = source.data == "fashion-mnist" ? kFashionMnistDefaultDir : source.data;
  if (source.data != "fashion-mnist" && is_cifar_folder(dir)) return load_cifar(dir, /*train=*/split == Split::kTrain);
  return load_fashion_mnist(dir, /*train=*/split == Split::kTrain);
}

}  // namespace vdnn
