#include "core/layer.h"

#include "vdnn/error.h"

namespace vdnn {

void Layer::fail(const std::string& what) const { VDNN_THROW("layer '" << name_ << "' (" << type_ << "): " << what); }

}  // namespace vdnn
