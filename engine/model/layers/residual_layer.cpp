// ResidualLayer: a branch and a shortcut summed in the wider format.
#include "model/layers/residual_layer.h"

#include <optional>

#include "error.h"
#include "model/tensor_slot.h"

namespace mantissa {

Format wider_format(Format a, Format b) {
    if (format_contains(a, b)) return a;
    if (format_contains(b, a)) return b;
    return Format::fp32;
}

ResidualLayer::ResidualLayer(std::string name, SampleShape input, std::vector<std::unique_ptr<Layer>> branch,
                             std::vector<std::unique_ptr<Layer>> projection)
    : Layer(std::move(name), input, branch.back()->output_shape()), m_branch(std::move(branch)),
      m_projection(std::move(projection)) {}

std::vector<Layer*> ResidualLayer::children() {
    std::vector<Layer*> c;
    for (auto& l : m_branch) c.push_back(l.get());
    for (auto& l : m_projection) c.push_back(l.get());
    return c;
}

std::int64_t ResidualLayer::parameter_count() const {
    std::int64_t n = 0;
    for (const auto& l : m_branch) n += l->parameter_count();
    for (const auto& l : m_projection) n += l->parameter_count();
    return n;
}

Format ResidualLayer::planned_chain(const std::vector<std::unique_ptr<Layer>>& chain, Format input_format) {
    for (const auto& l : chain) input_format = l->planned_output_format(input_format);
    return input_format;
}

Format ResidualLayer::planned_output_format(Format input_format) const {
    return wider_format(planned_chain(m_branch, input_format), planned_chain(m_projection, input_format));
}

Format ResidualLayer::declare_chain(std::vector<std::unique_ptr<Layer>>& chain, const DeclareContext& c) {
    Format f = c.input_format;
    for (std::size_t i = 0; i < chain.size(); ++i) {
        chain[i]->declare(DeclareContext{c.backend, c.capacity, f, i > 0 || c.input_grad, c.fp8_recipe});
        f = chain[i]->output_format();
    }
    return f;
}

void ResidualLayer::declare(const DeclareContext& c) {
    m_branch_format = declare_chain(m_branch, c);
    m_shortcut_format = m_projection.empty() ? c.input_format : declare_chain(m_projection, c);
    m_format = wider_format(m_branch_format, m_shortcut_format);
    const std::int64_t B = c.capacity, out = output_shape().numel(), in = input_shape().numel();
    using MC = MemoryCategory;
    const auto when = [](bool yes, TensorDesc d) { return yes ? std::optional(std::move(d)) : std::nullopt; };
    Backend& b = c.backend;
    ensure_tensor(b, m_y, tensor_desc(name() + ".y", B, out, m_format, MC::activations), false);
    ensure_tensor(b, m_dbranch,
                  when(m_branch_format != m_format, tensor_desc(name() + ".dbranch", B, out, m_branch_format, MC::workspace)),
                  false);
    ensure_tensor(b, m_dshortcut,
                  when(!m_projection.empty() && m_shortcut_format != m_format,
                       tensor_desc(name() + ".dshortcut", B, out, m_shortcut_format, MC::workspace)),
                  false);
    ensure_tensor(b, m_dx, when(c.input_grad, tensor_desc(name() + ".dx", B, in, c.input_format, MC::workspace)), false);
}

double ResidualLayer::declared_values(std::int64_t capacity, Format input_format, bool input_grad) const {
    const double B = static_cast<double>(capacity), out = static_cast<double>(output_shape().numel());
    double values = 0;
    Format f = input_format;
    for (std::size_t i = 0; i < m_branch.size(); ++i) {
        values += m_branch[i]->declared_values(capacity, f, i > 0 || input_grad);
        f = m_branch[i]->planned_output_format(f);
    }
    const Format branch = f;
    f = input_format;
    for (std::size_t i = 0; i < m_projection.size(); ++i) {
        values += m_projection[i]->declared_values(capacity, f, i > 0 || input_grad);
        f = m_projection[i]->planned_output_format(f);
    }
    const Format sum = wider_format(branch, f);
    values += B * out;                                                    // y
    values += (branch != sum ? B * out : 0) + (!m_projection.empty() && f != sum ? B * out : 0);
    return values + (input_grad ? B * static_cast<double>(input_shape().numel()) : 0);
}

void ResidualLayer::forward_chain(std::vector<std::unique_ptr<Layer>>& chain, Backend& b, const Tensor& x,
                                  std::int64_t batch, bool training) {
    const Tensor* in = &x;
    for (auto& l : chain) {
        l->forward(b, *in, batch, training);
        in = &l->output();
    }
}

void ResidualLayer::forward(Backend& b, const Tensor& x, std::int64_t batch, bool training) {
    forward_chain(m_branch, b, x, batch, training);
    forward_chain(m_projection, b, x, batch, training);
    const Tensor& shortcut = m_projection.empty() ? x : m_projection.back()->output();
    b.add(m_branch.back()->output(), shortcut, *m_y, batch);
}

const Tensor* ResidualLayer::backward_chain(std::vector<std::unique_ptr<Layer>>& chain, Backend& b, const Tensor& x,
                                            const Tensor& dy, std::int64_t batch, std::vector<RoundingStats>* stats) {
    const Tensor* grad = &dy;
    for (std::size_t i = chain.size(); i-- > 0;) {
        chain[i]->backward(b, i == 0 ? x : chain[i - 1]->output(), *grad, batch, stats);
        grad = chain[i]->input_grad();
        if (!grad && i > 0) throw Error("Network: " + chain[i]->name() + " wrote no input gradient.");
    }
    return grad;
}

// The cast covers the whole tensor (rows past the batch are never read).
const Tensor& ResidualLayer::gradient_in(Backend& b, const Tensor& dy, Format format, std::unique_ptr<Tensor>& slot) {
    if (!slot || format == dy.format()) return dy;
    b.cast(dy, *slot);
    return *slot;
}

void ResidualLayer::backward(Backend& b, const Tensor& x, const Tensor& dy, std::int64_t batch,
                             std::vector<RoundingStats>* weight_stats) {
    const Tensor& dbranch = gradient_in(b, dy, m_branch_format, m_dbranch);
    const Tensor* dx_branch = backward_chain(m_branch, b, x, dbranch, batch, weight_stats);
    const Tensor* dx_shortcut = &dy;  // identity: the gradient of x is dy itself
    if (!m_projection.empty()) {
        const Tensor& dshortcut = gradient_in(b, dy, m_shortcut_format, m_dshortcut);
        dx_shortcut = backward_chain(m_projection, b, x, dshortcut, batch, weight_stats);
    }
    if (m_dx) b.add(*dx_branch, *dx_shortcut, *m_dx, batch);
}

}  // namespace mantissa
