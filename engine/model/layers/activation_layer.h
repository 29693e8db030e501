// relu, gelu, tanh: an elementwise activation, in its input's format (autocast runs it in the
// format it is given). Backward takes the derivative as torch does (relu and tanh from the output,
// gelu from the input: Backend::activation_backward).
//
// Tensors: a (B, n) the output, kept for backward; dx (B, n) the gradient of the input.
#pragma once

#include <memory>

#include "model/layer.h"

namespace mantissa {

class ActivationLayer final : public Layer {
public:
    ActivationLayer(std::string name, SampleShape shape, Activation activation);
    const char* kind() const override;
    Activation activation() const { return m_activation; }
    std::string unsupported(const Backend& backend) const override {
        return backend.unsupported(BackendOp::activation, Format::fp32);
    }

    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    Format output_format() const override { return m_format; }
    const Tensor& output() const override { return *m_a; }
    const Tensor* input_grad() const override { return m_dx.get(); }
    void forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                  std::vector<RoundingStats>* weight_stats) override;

private:
    Activation m_activation;
    Format m_format = Format::fp32;
    std::unique_ptr<Tensor> m_a, m_dx;
};

}  // namespace mantissa
