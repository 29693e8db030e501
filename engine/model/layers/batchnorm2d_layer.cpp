// BatchNorm2dLayer: FP32 statistics and parameters, the output in the input's format.
#include "model/layers/batchnorm2d_layer.h"

#include "model/tensor_slot.h"

namespace mantissa {

BatchNorm2dLayer::BatchNorm2dLayer(std::string name, SampleShape shape, double momentum, double eps)
    : Layer(std::move(name), shape, shape), m_momentum(momentum), m_eps(eps) {}

void BatchNorm2dLayer::declare(const DeclareContext& c) {
    m_format = c.input_format;
    const std::string& n = name();
    const std::int64_t C = input_shape().channels, values = input_shape().numel();
    using MC = MemoryCategory;
    Backend& b = c.backend;
    const auto vec = [&](std::unique_ptr<Tensor>& slot, const char* what, MC category, bool keep) {
        ensure_tensor(b, slot, tensor_desc(n + what, 1, C, Format::fp32, category), keep);
    };
    vec(m_weight, ".weight", MC::parameters, true);
    vec(m_bias, ".bias", MC::parameters, true);
    vec(m_running_mean, ".running_mean", MC::parameters, true);
    vec(m_running_var, ".running_var", MC::parameters, true);
    vec(m_grad_weight, ".grad_weight", MC::gradients, false);
    vec(m_grad_bias, ".grad_bias", MC::gradients, false);
    vec(m_saved_mean, ".saved_mean", MC::activations, false);
    vec(m_saved_invstd, ".saved_invstd", MC::activations, false);
    ensure_tensor(b, m_y, tensor_desc(n + ".y", c.capacity, values, m_format, MC::activations), false);
    // The gradient of the input even for a first layer: the op computes γ's and β's gradients with it.
    ensure_tensor(b, m_dx, tensor_desc(n + ".dx", c.capacity, values, m_format, MC::workspace), false);
}

double BatchNorm2dLayer::declared_values(std::int64_t capacity, Format, bool) const {
    const double C = static_cast<double>(input_shape().channels);
    const double rows = static_cast<double>(capacity) * static_cast<double>(input_shape().numel());
    return 8 * C + 2 * rows;
}

BatchNormTensors BatchNorm2dLayer::tensors() {
    BatchNormTensors t;
    t.channels = input_shape().channels;
    t.spatial = input_shape().height * input_shape().width;
    t.momentum = m_momentum;
    t.eps = m_eps;
    t.weight = m_weight.get();
    t.bias = m_bias.get();
    t.grad_weight = m_grad_weight.get();
    t.grad_bias = m_grad_bias.get();
    t.running_mean = m_running_mean.get();
    t.running_var = m_running_var.get();
    t.saved_mean = m_saved_mean.get();
    t.saved_invstd = m_saved_invstd.get();
    return t;
}

void BatchNorm2dLayer::forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) {
    BatchNormTensors t = tensors();
    backend.batchnorm2d_forward(t, x, *m_y, batch, training);
}

void BatchNorm2dLayer::backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                                std::vector<RoundingStats>* weight_stats) {
    BatchNormTensors t = tensors();
    backend.batchnorm2d_backward(t, x, dy, *m_dx, batch);
    // γ's gradient is FP32: nothing rounds it, so nothing underflows (the entry stays zeros).
    (void)weight_stats;
}

std::vector<Parameter> BatchNorm2dLayer::parameters() {
    return {{m_weight.get(), m_grad_weight.get(), true}, {m_bias.get(), m_grad_bias.get(), false}};
}

void BatchNorm2dLayer::initialise(Backend& backend, std::uint64_t, int) {
    backend.fill(*m_weight, 1.0f);
    backend.fill(*m_bias, 0.0f);
    backend.fill(*m_running_mean, 0.0f);
    backend.fill(*m_running_var, 1.0f);
}

}  // namespace mantissa
