// Layer: what a layer without a precision setting reports as its formats.
#include "model/layer.h"

namespace mantissa {

const LayerFormats& Layer::formats() const {
    // FP32 throughout: batchnorm's statistics and affine parameters, and the layers without
    // parameters, whose output follows their input (output_format()).
    static const LayerFormats fp32{};
    return fp32;
}

}  // namespace mantissa
