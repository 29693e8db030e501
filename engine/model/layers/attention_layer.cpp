// AttentionLayer: the children linears around two batched matmuls and a causal softmax (see
// attention_layer.h for the formats and the rounding points).
#include "model/layers/attention_layer.h"

#include <cmath>

#include "error.h"
#include "model/tensor_slot.h"

namespace mantissa {

AttentionLayer::AttentionLayer(std::string name, SampleShape input, std::int64_t heads, std::int64_t positions,
                               double init_std, double proj_init_std)
    : Layer(name, input, input), m_dim(input.numel()), m_heads(heads), m_head_dim(input.numel() / heads),
      m_positions(positions) {
    if (heads < 1 || m_dim % heads != 0)
        throw Error(this->name() + ": " + std::to_string(heads) + " heads do not divide its " + std::to_string(m_dim) +
                    " features into equal heads.");
    m_qkv = std::make_unique<LinearLayer>(name + ".qkv", input, 3 * m_dim, init_std);
    m_proj = std::make_unique<LinearLayer>(name + ".proj", input, m_dim, proj_init_std);
}

std::string AttentionLayer::unsupported(const Backend& backend) const {
    for (BackendOp op : {BackendOp::bmm, BackendOp::softmax})
        if (std::string why = backend.unsupported(op, Format::fp32); !why.empty()) return why;
    return {};
}

std::int64_t AttentionLayer::samples(std::int64_t rows) const {
    if (rows % m_positions != 0)
        throw Error(name() + ": " + std::to_string(rows) + " rows are not whole samples of " +
                    std::to_string(m_positions) + " positions.");
    return rows / m_positions;
}

void AttentionLayer::declare(const DeclareContext& c) {
    m_qkv->declare(c);
    const Format qkv_format = m_qkv->output_format();
    m_matmul_format = m_ops.matmul ? *m_ops.matmul : qkv_format;
    m_softmax_format = op_output_format(m_ops.softmax, m_matmul_format);
    const bool casts = op_casts_input(m_ops.softmax, m_matmul_format);
    const std::int64_t rows = c.capacity, score_rows = rows / m_positions * m_heads * m_positions;
    using MC = MemoryCategory;
    Backend& b = c.backend;
    const std::string& n = name();
    const std::int64_t T = m_positions;
    ensure_tensor(b, m_scores, tensor_desc(n + ".scores", score_rows, T, m_matmul_format, MC::workspace), false);
    ensure_tensor(b, m_probs, tensor_desc(n + ".probs", score_rows, T, m_softmax_format, MC::activations), false);
    ensure_tensor(b, m_out, tensor_desc(n + ".heads", rows, m_dim, m_matmul_format, MC::activations), false);
    ensure_tensor(b, m_dprobs, tensor_desc(n + ".dprobs", score_rows, T, m_matmul_format, MC::workspace), false);
    ensure_tensor(b, m_dscores, tensor_desc(n + ".dscores", score_rows, T, m_matmul_format, MC::workspace), false);
    ensure_tensor(b, m_dqkv, tensor_desc(n + ".dqkv", rows, 3 * m_dim, qkv_format, MC::workspace), false);
    // A softmax class narrower than the scores' format reads them cast to it; its backward reads dP
    // cast to it and writes dS in it, cast back to the scores' format (op_casts_input).
    std::optional<TensorDesc> scores_cast, dprobs_cast, dscores_cast;
    if (casts) {
        scores_cast = tensor_desc(n + ".scores_cast", score_rows, T, m_softmax_format, MC::workspace);
        dprobs_cast = tensor_desc(n + ".dprobs_cast", score_rows, T, m_softmax_format, MC::workspace);
        dscores_cast = tensor_desc(n + ".dscores_cast", score_rows, T, m_softmax_format, MC::workspace);
    }
    ensure_tensor(b, m_scores_cast, scores_cast, false);
    ensure_tensor(b, m_dprobs_cast, dprobs_cast, false);
    ensure_tensor(b, m_dscores_cast, dscores_cast, false);
    m_proj->declare(DeclareContext{c.backend, c.capacity, m_matmul_format, true, c.fp8_recipe});
}

double AttentionLayer::declared_values(std::int64_t capacity, Format input_format, bool input_grad) const {
    const double rows = static_cast<double>(capacity), T = static_cast<double>(m_positions);
    const double scores = rows * static_cast<double>(m_heads) * T;  // (samples·heads·T, T)
    const Format matmul = m_ops.matmul ? *m_ops.matmul : m_qkv->formats().output;
    return m_qkv->declared_values(capacity, input_format, input_grad) + m_proj->declared_values(capacity, matmul, true) +
           (op_casts_input(m_ops.softmax, matmul) ? 7 : 4) * scores + rows * static_cast<double>(m_dim) +
           rows * 3.0 * static_cast<double>(m_dim);
}

BatchedMatmul AttentionLayer::product(std::int64_t samples, std::int64_t m, std::int64_t n, std::int64_t k) const {
    BatchedMatmul op;
    op.outer_count = samples;
    op.inner_count = m_heads;
    op.m = m;
    op.n = n;
    op.k = k;
    op.compute = m_matmul_format;
    return op;
}

void AttentionLayer::forward(Backend& b, const Tensor& x, std::int64_t rows, bool training) {
    const std::int64_t S = samples(rows), T = m_positions, d = m_dim, hd = m_head_dim;
    m_qkv->forward(b, x, rows, training);
    const Tensor& qkv = m_qkv->output();
    BatchedMatmul scores = product(S, T, T, hd);
    scores.alpha = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
    scores.alpha_point = AlphaPoint::output;
    b.batched_matmul(scores, qkv, head_view(T, 3 * d, 0, hd), qkv, head_view(T, 3 * d, d, hd, true), *m_scores,
                     packed_view(T, T, m_heads));
    SoftmaxStats stats;
    if (m_scores_cast) b.cast(*m_scores, *m_scores_cast);
    b.softmax_forward(m_scores_cast ? *m_scores_cast : *m_scores, *m_probs, S * m_heads * T, true,
                      training ? &stats : nullptr);
    if (training) m_stats = stats;
    b.batched_matmul(product(S, T, hd, T), *m_probs, packed_view(T, T, m_heads), qkv, head_view(T, 3 * d, 2 * d, hd),
                     *m_out, head_view(T, d, 0, hd));
    m_proj->forward(b, *m_out, rows, training);
}

void AttentionLayer::backward(Backend& b, const Tensor& x, const Tensor& dy, std::int64_t rows,
                              std::vector<RoundingStats>* weight_stats) {
    const std::int64_t S = samples(rows), T = m_positions, d = m_dim, hd = m_head_dim;
    m_proj->backward(b, *m_out, dy, rows, weight_stats);
    const Tensor& dout = *m_proj->input_grad();
    const Tensor& qkv = m_qkv->output();
    // dP = dO·Vᵀ, then through the softmax and the scale.
    b.batched_matmul(product(S, T, T, hd), dout, head_view(T, d, 0, hd), qkv, head_view(T, 3 * d, 2 * d, hd, true),
                     *m_dprobs, packed_view(T, T, m_heads));
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
    if (m_scores_cast) {
        b.cast(*m_dprobs, *m_dprobs_cast);
        b.softmax_backward(*m_probs, *m_dprobs_cast, *m_dscores_cast, S * m_heads * T, true, scale);
        b.cast(*m_dscores_cast, *m_dscores);
    } else {
        b.softmax_backward(*m_probs, *m_dprobs, *m_dscores, S * m_heads * T, true, scale);
    }
    // dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q, each into its columns of dqkv.
    b.batched_matmul(product(S, T, hd, T), *m_probs, packed_view(T, T, m_heads, true), dout, head_view(T, d, 0, hd),
                     *m_dqkv, head_view(T, 3 * d, 2 * d, hd));
    b.batched_matmul(product(S, T, hd, T), *m_dscores, packed_view(T, T, m_heads), qkv, head_view(T, 3 * d, d, hd),
                     *m_dqkv, head_view(T, 3 * d, 0, hd));
    b.batched_matmul(product(S, T, hd, T), *m_dscores, packed_view(T, T, m_heads, true), qkv,
                     head_view(T, 3 * d, 0, hd), *m_dqkv, head_view(T, 3 * d, d, hd));
    m_qkv->backward(b, x, *m_dqkv, rows, weight_stats);
}

}  // namespace mantissa
