// The layers that reshape without parameters, each in its input's format:
//   maxpool2d        the largest value of each window (an exact selection; backward sends the
//                    gradient to the first largest position, as PyTorch)
//   avgpool2d        the mean of each window (summed in FP32, then rounded), zero padding counted
//   global_avgpool   the mean of each channel over its positions: (C, H, W) -> (C, 1, 1)
//   flatten          (C, H, W) -> (C·H·W, 1, 1): the same rows, so it allocates nothing; its
//                    output is its input tensor and its input gradient the gradient it is given
// Tensors (pools): y (B, out) the output; dx (B, in) the gradient of the input.
#pragma once

#include <memory>

#include "backend/conv_ops.h"
#include "model/layer.h"
#include "model/layers/activation_layer.h"

namespace mantissa {

class Pool2dLayer final : public Layer {
public:
    enum class Mode { max, average, global_average };
    Pool2dLayer(std::string name, SampleShape input, Mode mode, const Pool2dGeometry& geometry);
    const char* kind() const override;
    std::string unsupported(const Backend& backend) const override;

    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    Format output_format() const override { return m_format; }
    const Tensor& output() const override { return *m_y; }
    const Tensor* input_grad() const override { return m_dx.get(); }
    void forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                  std::vector<RoundingStats>* weight_stats) override;

    // A max pool straight after a ReLU: whether the two can run as one op each way
    // (Backend::maxpool2d_relu_forward, _backward) on the ReLU's input z, and those ops. The
    // forward writes this layer's output and never the ReLU's; the backward writes the ReLU's
    // input gradient into this layer's input_grad(). Network runs them in place of both layers'.
    bool fuses_with(const ActivationLayer& relu, const Backend& backend) const;
    void forward_through_relu(Backend& backend, const Tensor& z, std::int64_t batch);
    void backward_through_relu(Backend& backend, const Tensor& z, const Tensor& dy, std::int64_t batch);

private:
    Mode m_mode;
    Pool2dGeometry m_geometry;
    Format m_format = Format::fp32;
    std::unique_ptr<Tensor> m_y, m_dx;
};

class FlattenLayer final : public Layer {
public:
    FlattenLayer(std::string name, SampleShape input);
    const char* kind() const override { return "flatten"; }
    void declare(const DeclareContext& context) override { m_format = context.input_format; }
    double declared_values(std::int64_t, Format, bool) const override { return 0; }
    Format output_format() const override { return m_format; }
    const Tensor& output() const override;
    const Tensor* input_grad() const override { return m_dy; }
    void forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                  std::vector<RoundingStats>* weight_stats) override;

private:
    Format m_format = Format::fp32;
    const Tensor* m_x = nullptr;   // the input of the last forward, which is this layer's output
    const Tensor* m_dy = nullptr;  // the gradient of the last backward, which is the input's
};

}  // namespace mantissa
