// conv2d: a 2-D convolution over NCHW samples (square kernel, stride, zero padding), its weight of
// shape (out_channels, in_channels, k, k) as PyTorch's nn.Conv2d (stored flattened: one row per
// output channel). Computes in the format its LayerFormats give, with the rounding points of a
// linear layer (docs/numerics.md, "Convolutional ops"): operands cast to the compute format,
// products exact, FP32 accumulation, the output and every gradient in the output format.
//
// Tensors (capacity B rows, one sample a row):
//   weight (out_c, in_c·k·k) / bias (1, out_c)   stored, updated by the optimizer (no bias: bias false)
//   weight_compute / bias_compute                the cast copies the forward reads (when needed)
//   grad_weight / grad_bias                      in the layer's output format
//   saved_input (B, in_c·H·W)                    x cast to the operand format (when x is not in it)
//   y (B, out_c·H'·W')                           the output
//   dx (B, in_c·H·W)                             the gradient of the input (not for the first layer)
#pragma once

#include <memory>

#include "backend/conv_ops.h"
#include "model/layers/matmul_layer.h"

namespace mantissa {

class Conv2dLayer final : public MatmulLayer {
public:
    Conv2dLayer(std::string name, SampleShape input, const Conv2dGeometry& geometry, bool bias);
    const char* kind() const override { return "conv2d"; }
    const Conv2dGeometry& geometry() const { return m_geometry; }
    std::int64_t parameter_count() const override;
    std::string unsupported(const Backend& backend) const override {
        return unsupported_matmul(backend, BackendOp::conv2d);
    }

    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    void forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                  std::vector<RoundingStats>* weight_stats) override;
    void initialise(Backend& backend, std::uint64_t seed, int index) override;
    // weight (out_c, in_c, k, k), as nn.Conv2d's (the stored (out_c, in_c·k·k) rows are its
    // row-major layout), and bias (out_c) when the convolution has one.
    std::vector<StateEntry> state() override {
        const Conv2dGeometry& g = m_geometry;
        std::vector<StateEntry> s{{name() + ".weight", {g.out_channels, g.in_channels, g.kernel, g.kernel}, m_weight.get()}};
        if (m_has_bias) s.push_back({name() + ".bias", {g.out_channels}, m_bias.get()});
        return s;
    }

private:
    std::int64_t weight_cols() const { return m_geometry.in_channels * m_geometry.kernel * m_geometry.kernel; }

    Conv2dGeometry m_geometry;
};

}  // namespace mantissa
