// ActivationLayer: the backend's activation ops, in the input's format.
#include "model/layers/activation_layer.h"

#include <optional>

#include "model/tensor_slot.h"

namespace mantissa {

ActivationLayer::ActivationLayer(std::string name, SampleShape shape, Activation activation)
    : Layer(std::move(name), shape, shape), m_activation(activation) {}

const char* ActivationLayer::kind() const { return activation_name(m_activation); }

void ActivationLayer::declare(const DeclareContext& c) {
    m_format = c.input_format;
    const std::int64_t n = input_shape().numel();
    using MC = MemoryCategory;
    ensure_tensor(c.backend, m_a, tensor_desc(name() + ".a", c.capacity, n, m_format, MC::activations), false);
    ensure_tensor(c.backend, m_dx,
                  c.input_grad ? std::optional(tensor_desc(name() + ".dx", c.capacity, n, m_format, MC::workspace))
                               : std::nullopt,
                  false);
}

double ActivationLayer::declared_values(std::int64_t capacity, Format, bool input_grad) const {
    const double rows = static_cast<double>(capacity) * static_cast<double>(input_shape().numel());
    return rows + (input_grad ? rows : 0);
}

void ActivationLayer::forward(Backend& backend, const Tensor& x, std::int64_t batch, bool) {
    backend.activation_forward(m_activation, x, *m_a, batch);
}

void ActivationLayer::backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                               std::vector<RoundingStats>*) {
    if (m_dx) backend.activation_backward(m_activation, x, *m_a, dy, *m_dx, batch);
}

}  // namespace mantissa
