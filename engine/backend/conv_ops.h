// The plain structs of the convolutional ops of the Backend interface (backend.h, "convolutional
// ops"): a convolution's and a pool's geometry, the tensors of a convolution and of a batch norm.
// Kept apart from backend.h so a layer that only describes shapes needs no more than this.
//
// Images travel as the other tensors do: one sample per row, NCHW flattened (cols = C·H·W, as
// config/sample_shape.h describes a sample). Square kernels, zero padding, PyTorch's floor rule
// for the output size. docs/numerics.md, "Convolutional ops", has the rounding points.
#pragma once

#include <cstdint>

#include <optional>

#include "numeric/block_format.h"
#include "numeric/compute_format.h"
#include "numeric/format.h"

namespace mantissa {

class Tensor;    // backend.h
class Fp8State;  // backend.h

// One sample: (in_channels, in_h, in_w) -> (out_channels, out_h, out_w). The backend checks that
// every size is positive, stride >= 1, padding >= 0 and that the kernel fits the padded input.
struct Conv2dGeometry {
    std::int64_t in_channels = 0, in_h = 0, in_w = 0, out_channels = 0;
    std::int64_t kernel = 1, stride = 1, padding = 0;  // square kernels, zero padding
    std::int64_t out_h() const { return (in_h + 2 * padding - kernel) / stride + 1; }
    std::int64_t out_w() const { return (in_w + 2 * padding - kernel) / stride + 1; }
    std::int64_t in_size() const { return in_channels * in_h * in_w; }         // x's cols
    std::int64_t out_size() const { return out_channels * out_h() * out_w(); }  // y's cols
    std::int64_t patch() const { return in_channels * kernel * kernel; }       // weight's cols
};

// The tensors of one convolution y = W ⋆ x + b, like LinearTensors (backend.h) and with the same
// roles. Owned by the caller; the backend reads their declared formats to know what to round to.
struct ConvTensors {
    Conv2dGeometry geometry;
    Format compute = Format::fp32;       // fp32, tf32, fp16, bf16 or fp8_e4m3 (e5m2 gradients)
    Tensor* weight = nullptr;            // (out_channels, in_channels·k·k): PyTorch's
                                         //   (out, in, kh, kw) flattened row-major
    Tensor* weight_compute = nullptr;    // same shape, the operand copy, or null (required for fp8)
    Tensor* bias = nullptr;              // (1, out_channels), or null: a convolution without bias
    Tensor* bias_compute = nullptr;      // (1, out_channels) the bias in the output's format, or null
    Tensor* grad_weight = nullptr;       // (out_channels, in_channels·k·k)
    Tensor* grad_bias = nullptr;         // (1, out_channels); required when bias is set
    Tensor* saved_input = nullptr;       // (batch, C·H·W) x cast to the operand format, or null
                                         //   (fp8 always needs one)
    Fp8State* fp8 = nullptr;             // required when compute is fp8_e4m3
    std::optional<BlockFormat> block;    // a block-scaled convolution, as LinearTensors::block
    std::optional<ComputeFormat> dgrad, wgrad;  // per GEMM, as LinearTensors::dgrad and wgrad
    bool fp16_accumulation = false;      // as LinearTensors's: refused for convolutions (MatmulLayer)
    bool stochastic_gradients = false;   // as LinearTensors's
};

// A max or average pool over square windows; padding at most half the kernel (as PyTorch).
struct Pool2dGeometry {
    std::int64_t channels = 0, in_h = 0, in_w = 0, kernel = 2, stride = 2, padding = 0;
    std::int64_t out_h() const { return (in_h + 2 * padding - kernel) / stride + 1; }
    std::int64_t out_w() const { return (in_w + 2 * padding - kernel) / stride + 1; }
    std::int64_t in_size() const { return channels * in_h * in_w; }
    std::int64_t out_size() const { return channels * out_h() * out_w(); }
};

// Per channel; all FP32 (autocast keeps norms' statistics in FP32). Every tensor is (1, channels)
// and required. The backend writes the statistics rounded to their tensors' formats (FP32 ones
// keep them exactly).
struct BatchNormTensors {
    std::int64_t channels = 0, spatial = 1;  // spatial = H·W (1 after a flatten: BatchNorm1d)
    double momentum = 0.1, eps = 1e-5;       // PyTorch's defaults
    Tensor* weight = nullptr;                // gamma
    Tensor* bias = nullptr;                  // beta
    Tensor* grad_weight = nullptr;
    Tensor* grad_bias = nullptr;
    Tensor* running_mean = nullptr;          // buffers, updated by training forwards
    Tensor* running_var = nullptr;           //   (unbiased variance, as PyTorch)
    Tensor* saved_mean = nullptr;            // the batch's mean and 1/sqrt(var + eps), written by
    Tensor* saved_invstd = nullptr;          //   a training forward for the backward
};

}  // namespace mantissa
