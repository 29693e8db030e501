// TiedHeadLayer: a linear over the embedding table's weight (see tied_head_layer.h).
#include "model/layers/tied_head_layer.h"

#include <optional>

#include "error.h"
#include "model/layers/embedding_layers.h"
#include "model/tensor_slot.h"

namespace mantissa {

TiedHeadLayer::TiedHeadLayer(std::string name, SampleShape input, std::int64_t vocab)
    : Layer(std::move(name), input, SampleShape{vocab, 1, 1}), m_vocab(vocab), m_dim(input.numel()) {
    m_formats = resolve_layer_formats(LayerPrecision::automatic, Autocast::off, true);
}

void TiedHeadLayer::set_op_formats(const OpFormats& ops) {
    // As a linear layer left at auto with master weights: the table stays the FP32 master.
    m_formats = resolve_layer_formats(LayerPrecision::automatic, ops.autocast, true);
}

void TiedHeadLayer::link(const std::vector<Layer*>& layers) {
    for (Layer* l : layers)
        if (auto* table = dynamic_cast<TokenEmbeddingLayer*>(l)) {
            if (table->table_rows() != m_vocab || table->dim() != m_dim)
                throw Error(name() + ": it is tied to " + table->name() + ", a table of " +
                            std::to_string(table->table_rows()) + "\u00d7" + std::to_string(table->dim()) +
                            ", but it maps " + std::to_string(m_dim) + " features to " + std::to_string(m_vocab) +
                            " logits.");
            m_table = table;
            table->set_tied(true);
            return;
        }
    throw Error(name() + ": a tied head needs the model's token embedding, and the model has none.");
}

std::vector<StateEntry> TiedHeadLayer::state() {
    if (!m_table) return {};
    return {{name() + ".weight", {m_vocab, m_dim}, &m_table->weight(), StateEntry::Kind::alias}};
}

bool TiedHeadLayer::needs_saved_input(Format input_format) const {
    const Format operand = m_formats.compute;
    return (operand == Format::fp16 || operand == Format::bf16) && !format_contains(operand, input_format);
}

void TiedHeadLayer::declare(const DeclareContext& c) {
    if (!m_table) throw Error(name() + ": declared before it was linked to its embedding.");
    const LayerFormats& f = m_formats;
    const std::string& n = name();
    using MC = MemoryCategory;
    Backend& b = c.backend;
    const auto when = [](bool yes, TensorDesc d) { return yes ? std::optional(std::move(d)) : std::nullopt; };
    ensure_tensor(b, m_weight_compute, when(f.weight_copy, tensor_desc(n + ".weight_compute", m_vocab, m_dim, f.compute, MC::parameters)),
                  false);
    ensure_tensor(b, m_grad_weight, tensor_desc(n + ".grad_weight", m_vocab, m_dim, f.output, MC::gradients), false);
    ensure_tensor(b, m_bias, tensor_desc(n + ".bias", 1, m_vocab, f.output, MC::parameters), false);
    ensure_tensor(b, m_grad_bias, tensor_desc(n + ".grad_bias", 1, m_vocab, f.output, MC::workspace), false);
    ensure_tensor(b, m_saved_input,
                  when(needs_saved_input(c.input_format), tensor_desc(n + ".saved_input", c.capacity, m_dim, f.compute, MC::activations)),
                  false);
    ensure_tensor(b, m_y, tensor_desc(n + ".z", c.capacity, m_vocab, f.output, MC::activations), false);
    ensure_tensor(b, m_dx, when(c.input_grad, tensor_desc(n + ".dx", c.capacity, m_dim, f.output, MC::workspace)), false);
}

double TiedHeadLayer::declared_values(std::int64_t capacity, Format input_format, bool input_grad) const {
    const double rows = static_cast<double>(capacity), w = static_cast<double>(m_vocab * m_dim);
    const double V = static_cast<double>(m_vocab), d = static_cast<double>(m_dim);
    return (m_formats.weight_copy ? w : 0) + w + 2 * V + (needs_saved_input(input_format) ? rows * d : 0) + rows * V +
           (input_grad ? rows * d : 0);
}

LinearTensors TiedHeadLayer::tensors() {
    LinearTensors t;
    t.compute = m_formats.compute;
    t.weight = &m_table->weight();
    t.weight_compute = m_weight_compute.get();
    t.bias = m_bias.get();
    t.grad_weight = m_grad_weight.get();
    t.grad_bias = m_grad_bias.get();
    t.saved_input = m_saved_input.get();
    return t;
}

void TiedHeadLayer::forward(Backend& backend, const Tensor& x, std::int64_t rows, bool training) {
    LinearTensors t = tensors();
    backend.linear_forward(t, x, *m_y, rows, training);
}

void TiedHeadLayer::backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t rows,
                             std::vector<RoundingStats>*) {
    LinearTensors t = tensors();
    backend.linear_backward(t, x, dy, m_dx.get(), rows, nullptr);
    backend.cast(*m_grad_weight, m_table->grad_weight());
}

void TiedHeadLayer::initialise(Backend& backend, std::uint64_t, int) { backend.fill(*m_bias, 0.0f); }

}  // namespace mantissa
