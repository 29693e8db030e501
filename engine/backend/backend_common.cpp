// Small helpers of the backend interface shared by every backend: names, format inclusion, and
// the defaults of the ops a backend may lack (they throw its unsupported() sentence). The CUDA
// module compiles its own copy of this file (cuda/CMakeLists.txt); the checked wrappers, which
// only the engine calls, are in backend_checks.cpp.
#include "backend/backend.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include <limits>
#include "backend/step_pipeline.h"
#include "error.h"

namespace mantissa {

const char* memory_category_name(MemoryCategory c) {
    switch (c) {
    case MemoryCategory::parameters: return "parameters";
    case MemoryCategory::master_weights: return "master_weights";
    case MemoryCategory::gradients: return "gradients";
    case MemoryCategory::optimizer_state: return "optimizer_state";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::workspace: return "workspace";
    }
    return "workspace";
}

const char* fp8_role_name(Fp8Role r) {
    switch (r) {
    case Fp8Role::input: return "input";
    case Fp8Role::weight: return "weight";
    case Fp8Role::grad_output: return "grad_output";
    }
    return "input";
}

const char* backend_op_name(BackendOp op) {
    switch (op) {
    case BackendOp::linear: return "linear";
    case BackendOp::conv2d: return "conv2d";
    case BackendOp::maxpool2d: return "maxpool2d";
    case BackendOp::avgpool2d: return "avgpool2d";
    case BackendOp::global_avgpool: return "global_avgpool";
    case BackendOp::batchnorm2d: return "batchnorm2d";
    case BackendOp::add: return "add";
    case BackendOp::activation: return "activation";
    case BackendOp::bmm: return "bmm";
    case BackendOp::softmax: return "softmax";
    case BackendOp::layernorm: return "layernorm";
    case BackendOp::embedding: return "embedding";
    case BackendOp::block_scaled: return "block-scaled linear layer";
    case BackendOp::block_scaled_conv: return "block-scaled convolution";
    case BackendOp::per_gemm: return "per-GEMM precision";
    case BackendOp::per_gemm_conv: return "per-GEMM precision in a convolution";
    case BackendOp::fp8_recipe: return "FP8 current scaling";
    case BackendOp::fp16_accumulation: return "FP16 accumulation";
    case BackendOp::stochastic_gradients: return "stochastic rounding of a linear layer's gradients";
    case BackendOp::stochastic_conv_gradients: return "stochastic rounding of a convolution's gradients";
    case BackendOp::stochastic_weights: return "stochastic rounding of weights";
    case BackendOp::kahan_updates: return "Kahan-compensated update";
    case BackendOp::what_if: return "what-if statistics";
    }
    return "linear";
}

bool format_contains(Format outer, Format inner) {
    if (outer == inner || outer == Format::fp32) return true;
    const FormatInfo& o = format_info(outer);
    const FormatInfo& i = format_info(inner);
    // Enough fraction bits, range and subnormal reach, and inf stays inf.
    return o.mantissa_bits >= i.mantissa_bits && o.max_finite >= i.max_finite &&
           o.min_subnormal <= i.min_subnormal && (o.has_infinity || !i.has_infinity);
}

std::unique_ptr<StepPipeline> Backend::create_pipeline(const LossScalingSpec& spec) {
    (void)spec;
    return nullptr;
}

// ---- the ops a backend may lack

namespace {

[[noreturn]] void lacks(const Backend& b, BackendOp op, Format format) {
    std::string why = b.unsupported(op, format);
    if (why.empty())
        why = "The " + b.name() + " backend has no " + backend_op_name(op) +
              " yet; use the CPU backend (backend: cpu).";
    throw Error(why);
}

[[noreturn]] void no_fusion(const Backend& b) {
    throw Error("The " + b.name() + " backend does not fuse a ReLU with the max pool after it: "
                "activation and maxpool2d run them one after the other.");
}

}  // namespace

void Backend::conv2d_forward_impl(ConvTensors& conv, const Tensor&, Tensor&, std::int64_t, bool) {
    lacks(*this, BackendOp::conv2d, conv.compute);
}
void Backend::conv2d_backward_impl(ConvTensors& conv, const Tensor&, const Tensor&, Tensor*, std::int64_t,
                                   RoundingStats*) {
    lacks(*this, BackendOp::conv2d, conv.compute);
}
void Backend::maxpool2d_forward_impl(const Pool2dGeometry&, const Tensor&, Tensor& y, std::int64_t) {
    lacks(*this, BackendOp::maxpool2d, y.format());
}
void Backend::maxpool2d_backward_impl(const Pool2dGeometry&, const Tensor&, const Tensor&, const Tensor&,
                                      Tensor& dx, std::int64_t) {
    lacks(*this, BackendOp::maxpool2d, dx.format());
}
void Backend::maxpool2d_relu_forward_impl(const Pool2dGeometry&, const Tensor&, Tensor&, std::int64_t) {
    no_fusion(*this);
}
void Backend::maxpool2d_relu_backward_impl(const Pool2dGeometry&, const Tensor&, const Tensor&, const Tensor&,
                                           Tensor&, std::int64_t) {
    no_fusion(*this);
}
void Backend::avgpool2d_forward_impl(const Pool2dGeometry&, const Tensor&, Tensor& y, std::int64_t) {
    lacks(*this, BackendOp::avgpool2d, y.format());
}
void Backend::avgpool2d_backward_impl(const Pool2dGeometry&, const Tensor&, Tensor& dx, std::int64_t) {
    lacks(*this, BackendOp::avgpool2d, dx.format());
}
void Backend::global_avgpool_forward_impl(std::int64_t, std::int64_t, const Tensor&, Tensor& y, std::int64_t) {
    lacks(*this, BackendOp::global_avgpool, y.format());
}
void Backend::global_avgpool_backward_impl(std::int64_t, std::int64_t, const Tensor&, Tensor& dx, std::int64_t) {
    lacks(*this, BackendOp::global_avgpool, dx.format());
}
void Backend::batchnorm2d_forward_impl(BatchNormTensors&, const Tensor&, Tensor& y, std::int64_t, bool) {
    lacks(*this, BackendOp::batchnorm2d, y.format());
}
void Backend::batchnorm2d_backward_impl(BatchNormTensors&, const Tensor&, const Tensor&, Tensor& dx,
                                        std::int64_t) {
    lacks(*this, BackendOp::batchnorm2d, dx.format());
}
void Backend::add_impl(const Tensor&, const Tensor&, Tensor& y, std::int64_t) {
    lacks(*this, BackendOp::add, y.format());
}
void Backend::batched_matmul_impl(const BatchedMatmul& op, const Tensor&, const StridedMatrix&, const Tensor&,
                                  const StridedMatrix&, Tensor&, const StridedMatrix&) {
    lacks(*this, BackendOp::bmm, op.compute);
}
void Backend::softmax_forward_impl(const Tensor&, Tensor& y, std::int64_t, bool, SoftmaxStats*) {
    lacks(*this, BackendOp::softmax, y.format());
}
void Backend::softmax_backward_impl(const Tensor&, const Tensor&, Tensor& dx, std::int64_t, bool, float) {
    lacks(*this, BackendOp::softmax, dx.format());
}
void Backend::layernorm_forward_impl(LayerNormTensors&, const Tensor&, Tensor& y, std::int64_t, LayerNormStats*) {
    lacks(*this, BackendOp::layernorm, y.format());
}
void Backend::layernorm_backward_impl(LayerNormTensors&, const Tensor&, const Tensor&, Tensor& dx, std::int64_t) {
    lacks(*this, BackendOp::layernorm, dx.format());
}
void Backend::embedding_forward_impl(const Tensor&, const std::int32_t*, Tensor& y, std::int64_t) {
    lacks(*this, BackendOp::embedding, y.format());
}
void Backend::embedding_backward_impl(const std::int32_t*, const Tensor&, Tensor& grad_weight, std::int64_t, bool) {
    lacks(*this, BackendOp::embedding, grad_weight.format());
}

Backend::RowSample Backend::sample_rows(const Tensor& t, std::int64_t n, std::int64_t row_len,
                                        std::span<const std::int64_t> rows, float* out) const {
    // A device's tensor comes to the host whole: the download costs more than this scalar pass.
    std::vector<float> all(static_cast<std::size_t>(n));
    download(t, all.data(), n);
    for (std::size_t i = 0; i < rows.size(); ++i)
        std::copy_n(all.data() + rows[i] * row_len, row_len, out + static_cast<std::int64_t>(i) * row_len);
    RowSample s;
    bool nan = false;
    for (float v : all) {
        const float m = std::fabs(v);
        nan = nan || std::isnan(m);
        s.amax = std::max(s.amax, m);  // inf kept; NaN below
        if (m <= FLT_MAX) s.finite_amax = std::max(s.finite_amax, m);
    }
    if (nan) s.amax = std::numeric_limits<float>::quiet_NaN();
    return s;
}

}  // namespace mantissa
