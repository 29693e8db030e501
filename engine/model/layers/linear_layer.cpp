// LinearLayer: tensor declaration from LayerFormats, and the backend's linear ops.
#include "model/layers/linear_layer.h"

#include <optional>

#include "error.h"
#include "model/init.h"
#include "model/tensor_slot.h"

namespace mantissa {

LinearLayer::LinearLayer(std::string name, SampleShape input, std::int64_t out, double init_std)
    : MatmulLayer(std::move(name), input, SampleShape{out, 1, 1}), m_in(input.numel()), m_out(out),
      m_init_std(init_std) {}

std::int64_t LinearLayer::parameter_count() const { return m_in * m_out + m_out; }

void LinearLayer::declare(const DeclareContext& c) {
    const LayerFormats& f = m_formats;
    const std::string& n = name();
    const std::int64_t B = c.capacity;
    const Format operand = f.compute;  // fp8_e4m3 for fp8 layers
    using MC = MemoryCategory;
    const MC store_category = f.master() ? MC::master_weights : MC::parameters;
    Backend& b = c.backend;

    ensure_tensor(b, m_weight, tensor_desc(n + ".weight", m_out, m_in, f.weight_store, store_category), true);
    ensure_tensor(b, m_bias, tensor_desc(n + ".bias", 1, m_out, f.weight_store, store_category), true);
    ensure_tensor(b, m_weight_compute,
                  f.weight_copy ? std::optional(tensor_desc(n + ".weight_compute", m_out, m_in, operand, MC::parameters))
                                : std::nullopt,
                  false);
    ensure_tensor(b, m_bias_compute,
                  f.bias_copy ? std::optional(tensor_desc(n + ".bias_compute", 1, m_out, f.output, MC::parameters))
                              : std::nullopt,
                  false);
    ensure_tensor(b, m_grad_weight, tensor_desc(n + ".grad_weight", m_out, m_in, f.output, MC::gradients), false);
    ensure_tensor(b, m_grad_bias, tensor_desc(n + ".grad_bias", 1, m_out, f.output, MC::gradients), false);
    ensure_tensor(b, m_saved_input,
                  needs_saved_input(c.input_format)
                      ? std::optional(tensor_desc(n + ".saved_input", B, m_in, operand, MC::activations))
                      : std::nullopt,
                  false);
    ensure_tensor(b, m_y, tensor_desc(n + ".z", B, m_out, f.output, MC::activations), false);
    ensure_tensor(b, m_dx,
                  c.input_grad ? std::optional(tensor_desc(n + ".dx", B, m_in, f.output, MC::workspace)) : std::nullopt,
                  false);
    declare_fp8(c);
}

double LinearLayer::declared_values(std::int64_t capacity, Format input_format, bool input_grad) const {
    const double B = static_cast<double>(capacity), in = static_cast<double>(m_in),
                 out = static_cast<double>(m_out), w = in * out;
    double values = w + out;                                                   // weight, bias (stored)
    values += (m_formats.weight_copy ? w : 0) + (m_formats.bias_copy ? out : 0);  // their compute copies
    values += w + out;                                                         // gradients
    values += (needs_saved_input(input_format) ? B * in : 0) + B * out /* z */ + (input_grad ? B * in : 0);
    return values;
}

void LinearLayer::forward(Backend& backend, const Tensor& x, std::int64_t batch, bool training) {
    LinearTensors t = matmul_tensors<LinearTensors>();
    backend.linear_forward(t, x, *m_y, batch, training);
}

void LinearLayer::backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t batch,
                           std::vector<RoundingStats>* weight_stats) {
    show_operands(backend, x, dy, batch, m_in, m_out, std::nullopt, weight_stats);
    LinearTensors t = matmul_tensors<LinearTensors>();
    backend.linear_backward(t, x, dy, m_dx.get(), batch, stats_entry(weight_stats));
}

void LinearLayer::initialise(Backend& backend, std::uint64_t seed, int index) {
    std::vector<float> w, bias;
    if (m_init_std > 0) {
        w.resize(static_cast<std::size_t>(m_in * m_out));
        init_normal(seed, index, m_init_std, w);
        bias.assign(static_cast<std::size_t>(m_out), 0.0f);
    } else {
        init_linear(seed, index, static_cast<int>(m_in), static_cast<int>(m_out), w, bias);
    }
    backend.upload(*m_weight, w.data(), m_weight->numel());
    backend.upload(*m_bias, bias.data(), m_bias->numel());
}

}  // namespace mantissa
