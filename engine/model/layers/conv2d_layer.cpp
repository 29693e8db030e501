// Conv2dLayer: tensor declaration from LayerFormats, and the backend's conv2d ops.
#include "model/layers/conv2d_layer.h"

#include <optional>

#include "model/init.h"
#include "model/tensor_slot.h"

namespace mantissa {

Conv2dLayer::Conv2dLayer(std::string name, SampleShape input, const Conv2dGeometry& g, bool bias)
    : MatmulLayer(std::move(name), input, SampleShape{g.out_channels, g.out_h(), g.out_w()}), m_geometry(g) {
    m_has_bias = bias;
}

std::int64_t Conv2dLayer::parameter_count() const {
    return m_geometry.out_channels * weight_cols() + (m_has_bias ? m_geometry.out_channels : 0);
}

void Conv2dLayer::declare(const DeclareContext& c) {
    const LayerFormats& f = m_formats;
    const std::string& n = name();
    const std::int64_t B = c.capacity, oc = m_geometry.out_channels, k = weight_cols();
    const std::int64_t in = input_shape().numel(), out = output_shape().numel();
    using MC = MemoryCategory;
    const MC store_category = f.master() ? MC::master_weights : MC::parameters;
    Backend& b = c.backend;
    const auto when = [](bool yes, TensorDesc d) { return yes ? std::optional(std::move(d)) : std::nullopt; };

    ensure_tensor(b, m_weight, tensor_desc(n + ".weight", oc, k, f.weight_store, store_category), true);
    ensure_tensor(b, m_bias, when(m_has_bias, tensor_desc(n + ".bias", 1, oc, f.weight_store, store_category)), true);
    ensure_tensor(b, m_weight_compute,
                  when(f.weight_copy, tensor_desc(n + ".weight_compute", oc, k, f.compute, MC::parameters)), false);
    ensure_tensor(b, m_bias_compute,
                  when(m_has_bias && f.bias_copy, tensor_desc(n + ".bias_compute", 1, oc, f.output, MC::parameters)), false);
    ensure_tensor(b, m_grad_weight, tensor_desc(n + ".grad_weight", oc, k, f.output, MC::gradients), false);
    ensure_tensor(b, m_grad_bias, when(m_has_bias, tensor_desc(n + ".grad_bias", 1, oc, f.output, MC::gradients)), false);
    ensure_tensor(b, m_saved_input,
                  when(needs_saved_input(c.input_format), tensor_desc(n + ".saved_input", B, in, f.compute, MC::activations)),
                  false);
    ensure_tensor(b, m_y, tensor_desc(n + ".y", B, out, f.output, MC::activations), false);
    ensure_tensor(b, m_dx, when(c.input_grad, tensor_desc(n + ".dx", B, in, f.output, MC::workspace)), false);
    declare_fp8(c);
}

double Conv2dLayer::declared_values(std::int64_t capacity, Format input_format, bool input_grad) const {
    const double B = static_cast<double>(capacity), in = static_cast<double>(input_shape().numel()),
                 out = static_cast<double>(output_shape().numel());
    const double w = static_cast<double>(m_geometry.out_channels * weight_cols());
    const double bias = m_has_bias ? static_cast<double>(m_geometry.out_channels) : 0;
    double values = w + bias;                                                      // stored
    values += (m_formats.weight_copy ? w : 0) + (m_formats.bias_copy ? bias : 0);  // compute copies
    values += w + bias;                                                            // gradients
    values += (needs_saved_input(input_format) ? B * in : 0) + B * out + (input_grad ? B * in : 0);
    return values;
}

void Conv2dLayer::forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) {
    ConvTensors t = matmul_tensors<ConvTensors>();
    t.geometry = m_geometry;
    backend.conv2d_forward(t, x, *m_y, batch, training);
}

void Conv2dLayer::backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                           std::vector<RoundingStats>* weight_stats) {
    show_operands(backend, x, dy, batch, weight_cols(), m_geometry.out_channels, m_geometry, weight_stats);
    ConvTensors t = matmul_tensors<ConvTensors>();
    t.geometry = m_geometry;
    backend.conv2d_backward(t, x, dy, m_dx.get(), batch, stats_entry(weight_stats));
}

void Conv2dLayer::initialise(Backend& backend, std::uint64_t seed, int index) {
    // nn.Conv2d's default: kaiming_uniform_(a = √5), U(±1/√fan_in) with fan_in = in_c·k·k, and the
    // bias from the same bound: init_linear's scheme over the flattened weight.
    std::vector<float> w, bias;
    init_linear(seed, index, static_cast<int>(weight_cols()), static_cast<int>(m_geometry.out_channels), w, bias);
    backend.upload(*m_weight, w.data(), m_weight->numel());
    if (m_has_bias) backend.upload(*m_bias, bias.data(), m_bias->numel());
}

}  // namespace mantissa
