// LayerNormLayer: FP32 statistics and parameters, the output in the layernorm class's format.
#include "model/layers/layernorm_layer.h"

#include "model/tensor_slot.h"

namespace mantissa {

LayerNormLayer::LayerNormLayer(std::string name, SampleShape shape, double eps)
    : Layer(std::move(name), shape, shape), m_eps(eps) {}

void LayerNormLayer::declare(const DeclareContext& c) {
    m_format = op_output_format(m_class, c.input_format);
    const bool casts = op_casts_input(m_class, c.input_format);
    const std::string& n = name();
    const std::int64_t dim = input_shape().numel(), rows = c.capacity;
    using MC = MemoryCategory;
    Backend& b = c.backend;
    ensure_tensor(b, m_weight, tensor_desc(n + ".weight", 1, dim, Format::fp32, MC::parameters), true);
    ensure_tensor(b, m_bias, tensor_desc(n + ".bias", 1, dim, Format::fp32, MC::parameters), true);
    ensure_tensor(b, m_grad_weight, tensor_desc(n + ".grad_weight", 1, dim, Format::fp32, MC::gradients), false);
    ensure_tensor(b, m_grad_bias, tensor_desc(n + ".grad_bias", 1, dim, Format::fp32, MC::gradients), false);
    ensure_tensor(b, m_saved_mean, tensor_desc(n + ".saved_mean", rows, 1, Format::fp32, MC::activations), false);
    ensure_tensor(b, m_saved_invstd, tensor_desc(n + ".saved_invstd", rows, 1, Format::fp32, MC::activations), false);
    ensure_tensor(b, m_y, tensor_desc(n + ".y", rows, dim, m_format, MC::activations), false);
    // Always declared: the op computes γ's and β's gradients along with it.
    ensure_tensor(b, m_dx, tensor_desc(n + ".dx", rows, dim, c.input_format, MC::workspace), false);
    // The input cast to the class's format, and the gradient in that format before it is cast back.
    std::optional<TensorDesc> x_cast, dx_cast;
    if (casts) {
        x_cast = tensor_desc(n + ".x_cast", rows, dim, m_format, MC::activations);
        dx_cast = tensor_desc(n + ".dx_cast", rows, dim, m_format, MC::workspace);
    }
    ensure_tensor(b, m_x_cast, x_cast, false);
    ensure_tensor(b, m_dx_cast, dx_cast, false);
}

double LayerNormLayer::declared_values(std::int64_t capacity, Format input_format, bool) const {
    const double dim = static_cast<double>(input_shape().numel()), rows = static_cast<double>(capacity);
    return 4 * dim + 2 * rows + (op_casts_input(m_class, input_format) ? 4 : 2) * rows * dim;
}

LayerNormTensors LayerNormLayer::tensors() {
    LayerNormTensors t;
    t.dim = input_shape().numel();
    t.eps = m_eps;
    t.weight = m_weight.get();
    t.bias = m_bias.get();
    t.grad_weight = m_grad_weight.get();
    t.grad_bias = m_grad_bias.get();
    t.saved_mean = m_saved_mean.get();
    t.saved_invstd = m_saved_invstd.get();
    return t;
}

void LayerNormLayer::forward(Backend& backend, const Tensor& x, std::int64_t rows, bool training) {
    LayerNormTensors t = tensors();
    LayerNormStats stats;
    if (m_x_cast) backend.cast(x, *m_x_cast);
    backend.layernorm_forward(t, m_x_cast ? *m_x_cast : x, *m_y, rows, training ? &stats : nullptr);
    if (training) m_min_variance = stats.min_variance;
}

void LayerNormLayer::backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t rows,
                              std::vector<RoundingStats>* weight_stats) {
    LayerNormTensors t = tensors();
    if (m_x_cast) {  // the op's backward on what its forward read, then the cast's backward
        backend.layernorm_backward(t, *m_x_cast, dy, *m_dx_cast, rows);
        backend.cast(*m_dx_cast, *m_dx);
    } else {
        backend.layernorm_backward(t, x, dy, *m_dx, rows);
    }
    (void)weight_stats;  // γ's gradient is FP32: nothing rounds it
}

std::vector<Parameter> LayerNormLayer::parameters() {
    return {{m_weight.get(), m_grad_weight.get(), true}, {m_bias.get(), m_grad_bias.get(), false}};
}

void LayerNormLayer::initialise(Backend& backend, std::uint64_t, int) {
    backend.fill(*m_weight, 1.0f);
    backend.fill(*m_bias, 0.0f);
}

}  // namespace mantissa
