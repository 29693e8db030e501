// linear: y = x·Wᵀ + b over a flat input (features × 1 × 1), W of shape (out, in) as PyTorch's
// nn.Linear. Computes in the format its LayerFormats give (layer_formats.h); the backend's
// linear_forward/linear_backward hold the rounding points (docs/numerics.md).
//
// In a transformer every row is one position: B is then the batch's samples × positions.
//
// Tensors (capacity B rows):
//   weight (out, in) / bias (1, out)     stored, updated by the optimizer
//   weight_compute / bias_compute        the cast copies the forward reads (when needed)
//   grad_weight / grad_bias              in the layer's output format
//   saved_input (B, in)                  x cast to the operand format (when x is not in it)
//   z (B, out)                           the output
//   dx (B, in)                           the gradient of the input (not for the first layer)
#pragma once

#include <memory>

#include "model/layers/matmul_layer.h"

namespace mantissa {

class LinearLayer final : public MatmulLayer {
public:
    // init_std > 0: the weight from N(0, init_std²) and the bias 0 (GPT-style); 0: nn.Linear's
    // default (init.h).
    LinearLayer(std::string name, SampleShape input, std::int64_t out, double init_std = 0);
    const char* kind() const override { return "linear"; }
    std::int64_t parameter_count() const override;
    std::string unsupported(const Backend& backend) const override {
        return unsupported_matmul(backend, BackendOp::linear);
    }

    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    void forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                  std::vector<RoundingStats>* weight_stats) override;
    void initialise(Backend& backend, std::uint64_t seed, int index) override;
    // weight (out, in) and bias (out), as nn.Linear's: the stored tensors (FP32 masters, or the
    // weights in their store format).
    std::vector<StateEntry> state() override {
        return {{name() + ".weight", {m_out, m_in}, m_weight.get()}, {name() + ".bias", {m_out}, m_bias.get()}};
    }

private:
    std::int64_t m_in, m_out;
    double m_init_std;
};

}  // namespace mantissa
