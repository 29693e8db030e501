// The token and position embeddings (see embedding_layers.h).
#include "model/layers/embedding_layers.h"

#include <cmath>

#include "error.h"
#include "model/init.h"
#include "model/tensor_slot.h"

namespace mantissa {

EmbeddingTableLayer::EmbeddingTableLayer(std::string name, SampleShape input, std::int64_t rows, std::int64_t dim,
                                         double init_std)
    : Layer(std::move(name), input, SampleShape{dim, 1, 1}), m_rows(rows), m_dim(dim), m_init_std(init_std) {}

void EmbeddingTableLayer::declare_table(const DeclareContext& c) {
    using MC = MemoryCategory;
    const std::string& n = name();
    ensure_tensor(c.backend, m_weight, tensor_desc(n + ".weight", m_rows, m_dim, Format::fp32, MC::parameters), true);
    ensure_tensor(c.backend, m_grad_weight, tensor_desc(n + ".grad_weight", m_rows, m_dim, Format::fp32, MC::gradients),
                  false);
    ensure_tensor(c.backend, m_y, tensor_desc(n + ".y", c.capacity, m_dim, Format::fp32, MC::activations), false);
}

void EmbeddingTableLayer::initialise(Backend& backend, std::uint64_t seed, int index) {
    std::vector<float> w(static_cast<std::size_t>(m_rows * m_dim));
    init_normal(seed, index, m_init_std, w);
    backend.upload(*m_weight, w.data(), m_weight->numel());
}

// ---- wte

TokenEmbeddingLayer::TokenEmbeddingLayer(std::string name, std::int64_t vocab, std::int64_t dim, double init_std)
    : EmbeddingTableLayer(std::move(name), SampleShape{1, 1, 1}, vocab, dim, init_std) {}

void TokenEmbeddingLayer::declare(const DeclareContext& c) { declare_table(c); }

double TokenEmbeddingLayer::declared_values(std::int64_t capacity, Format, bool) const {
    return 2.0 * static_cast<double>(m_rows * m_dim) + static_cast<double>(capacity * m_dim);
}

void TokenEmbeddingLayer::forward(Backend& backend, const Tensor& x, std::int64_t rows, bool) {
    if (x.cols() != 1) throw Error(name() + ": the input holds " + std::to_string(x.cols()) + " values per row, not one token id.");
    m_values.resize(static_cast<std::size_t>(rows));
    m_ids.resize(static_cast<std::size_t>(rows));
    backend.download(x, m_values.data(), rows);
    for (std::size_t r = 0; r < m_values.size(); ++r) {
        const float v = m_values[r];
        if (!(v >= 0) || v >= static_cast<float>(m_rows) || v != std::floor(v))
            throw Error(name() + ": input row " + std::to_string(r) + " holds " + std::to_string(v) +
                        ", not a token id in 0.." + std::to_string(m_rows - 1) + ".");
        m_ids[r] = static_cast<std::int32_t>(v);
    }
    backend.embedding_forward(*m_weight, m_ids.data(), *m_y, rows);
}

void TokenEmbeddingLayer::backward(Backend& backend, const Tensor&, const Tensor& dy, std::int64_t rows,
                                   std::vector<RoundingStats>*) {
    backend.embedding_backward(m_ids.data(), dy, *m_grad_weight, rows, m_tied);
}

// ---- wpe

PositionEmbeddingLayer::PositionEmbeddingLayer(std::string name, SampleShape input, std::int64_t context,
                                               std::int64_t positions, double init_std)
    : EmbeddingTableLayer(std::move(name), input, context, input.numel(), init_std), m_positions(positions) {}

void PositionEmbeddingLayer::declare(const DeclareContext& c) {
    declare_table(c);
    ensure_tensor(c.backend, m_looked_up,
                  tensor_desc(name() + ".rows", c.capacity, m_dim, Format::fp32, MemoryCategory::workspace), false);
    m_position_ids.resize(static_cast<std::size_t>(c.capacity));
    for (std::size_t r = 0; r < m_position_ids.size(); ++r)
        m_position_ids[r] = static_cast<std::int32_t>(static_cast<std::int64_t>(r) % m_positions);
}

double PositionEmbeddingLayer::declared_values(std::int64_t capacity, Format, bool) const {
    return 2.0 * static_cast<double>(m_rows * m_dim) + 2.0 * static_cast<double>(capacity * m_dim);
}

void PositionEmbeddingLayer::forward(Backend& backend, const Tensor& x, std::int64_t rows, bool) {
    if (rows % m_positions != 0)
        throw Error(name() + ": " + std::to_string(rows) + " rows are not whole samples of " +
                    std::to_string(m_positions) + " positions.");
    backend.embedding_forward(*m_weight, m_position_ids.data(), *m_looked_up, rows);
    backend.add(x, *m_looked_up, *m_y, rows);
}

void PositionEmbeddingLayer::backward(Backend& backend, const Tensor&, const Tensor& dy, std::int64_t rows,
                                      std::vector<RoundingStats>*) {
    backend.embedding_backward(m_position_ids.data(), dy, *m_grad_weight, rows, false);
    m_dx = &dy;
}

}  // namespace mantissa
