// batchnorm2d: per-channel normalisation of NCHW samples (and of flat ones, as BatchNorm1d), as
// PyTorch's nn.BatchNorm2d: in training the batch's statistics (mean and biased variance over the
// batch and the positions) normalise, and the running statistics follow them with `momentum`
// (the unbiased variance); in evaluation the running statistics normalise. Statistics, the affine
// parameters (weight γ = 1, bias β = 0 at the start) and their gradients are FP32 whatever the
// autocast, and the output is in its input's format (cuDNN's behaviour under autocast), so the
// layer takes no precision setting.
//
// Tensors: weight, bias, grad_weight, grad_bias (1, C) FP32; running_mean, running_var (1, C) FP32
// buffers (counted with the parameters; not updated by the optimizer); saved_mean, saved_invstd
// (1, C) for backward; y (B, C·H·W) the output; dx (B, C·H·W) the gradient of the input.
#pragma once

#include <memory>

#include "backend/conv_ops.h"
#include "model/layer.h"

namespace mantissa {

class BatchNorm2dLayer final : public Layer {
public:
    BatchNorm2dLayer(std::string name, SampleShape shape, double momentum, double eps);
    const char* kind() const override { return "batchnorm2d"; }
    bool has_parameters() const override { return true; }
    std::int64_t parameter_count() const override { return 2 * input_shape().channels; }
    std::string unsupported(const Backend& backend) const override {
        return backend.unsupported(BackendOp::batchnorm2d, Format::fp32);
    }

    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    Format output_format() const override { return m_format; }
    const Tensor& output() const override { return *m_y; }
    const Tensor* input_grad() const override { return m_dx.get(); }
    void forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                  std::vector<RoundingStats>* weight_stats) override;
    std::vector<Parameter> parameters() override;
    void initialise(Backend& backend, std::uint64_t seed, int index) override;
    // nn.BatchNorm2d's: weight, bias (C), the buffers running_mean, running_var (C), and
    // num_batches_tracked, which this layer does not keep (its momentum is a number, so the count
    // changes nothing here, as in PyTorch with a momentum).
    std::vector<StateEntry> state() override {
        using K = StateEntry::Kind;
        const std::int64_t C = input_shape().channels;
        return {{name() + ".weight", {C}, m_weight.get(), K::parameter},
                {name() + ".bias", {C}, m_bias.get(), K::parameter},
                {name() + ".running_mean", {C}, m_running_mean.get(), K::buffer},
                {name() + ".running_var", {C}, m_running_var.get(), K::buffer},
                {name() + ".num_batches_tracked", {}, nullptr, K::count}};
    }

private:
    BatchNormTensors tensors();

    double m_momentum, m_eps;
    Format m_format = Format::fp32;
    std::unique_ptr<Tensor> m_weight, m_bias, m_grad_weight, m_grad_bias, m_running_mean, m_running_var;
    std::unique_ptr<Tensor> m_saved_mean, m_saved_invstd, m_y, m_dx;
};

}  // namespace mantissa
