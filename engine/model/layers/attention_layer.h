// causal_self_attention: multi-head causal self-attention as PyTorch's eager autocast computes
// it (nanoGPT's manual path), over rows that are positions, T rows per sample:
//   qkv  = x·Wqkvᵀ + b                       the child linear `<name>.qkv` (dim -> 3·dim)
//   S    = rnd_S(rnd_S(Q_h·K_hᵀ) / √d_h)     per sample and head, a batched matmul in the matmul
//                                            class's format (the autocast type; AlphaPoint::output:
//                                            the product is rounded, then scaled, as `(q @ kᵀ) *
//                                            (1/√d)` is in eager PyTorch)
//   P    = softmax(S) over j ≤ i             FP32 arithmetic, written in the softmax class's
//                                            format (FP32 under autocast: its FP32 list)
//   O_h  = P·V_h                             batched matmul in the matmul class's format
//   y    = O·Wprojᵀ + b                      the child linear `<name>.proj` (dim -> dim)
// The heads are read straight out of the packed qkv output (columns [0, dim), [dim, 2·dim),
// [2·dim, 3·dim), head h at h·d_h of each) and written straight into O, through strided views.
//
// The matmul class is the autocast type under autocast, else the format qkv writes; scores and
// O are in it. Backward, in the same formats: dP = dO·Vᵀ (matmul format), dS = rnd_S(rnd_S(P ⊙
// (dP − Σ dP⊙P)) / √d_h) (Backend::softmax_backward with the scale), dV = Pᵀ·dO, dQ = dS·K, dK =
// dSᵀ·Q, each written into its columns of dqkv in qkv's output format. Masked entries of P and
// dS are exactly zero.
//
// A softmax class narrower than S's format and not FP32 (precision.ops.softmax fp16 over BF16
// scores, say) reads S cast to its format first, as autocast casts an op's inputs: a logit beyond
// FP16's 65504 becomes +inf and its row NaN. Its backward reads dP cast to that format and writes
// dS in it (scaled there), cast back to S's format. With √d_h a power of two the scaling is exact
// and this is PyTorch's order; otherwise PyTorch scales after the cast back (one rounding apart).
//
// Each training forward keeps the largest |S| over the unmasked entries the softmax saw
// (logit_amax()), and how many were inf or NaN: the attention logit that overflows FP16 first.
//
// Tensors (rows = samples·T): S, P, dP, dS (samples·heads·T, T); O (rows, dim); dqkv (rows, 3·dim);
// the children's own.
#pragma once

#include <memory>
#include <optional>

#include "backend/transformer_ops.h"
#include "model/layers/linear_layer.h"

namespace mantissa {

class AttentionLayer final : public Layer {
public:
    // positions: T. init_std: the children's weights (proj_init_std for proj), see LinearLayer.
    AttentionLayer(std::string name, SampleShape input, std::int64_t heads, std::int64_t positions, double init_std,
                   double proj_init_std);
    const char* kind() const override { return "causal_self_attention"; }
    std::vector<Layer*> children() override { return {m_qkv.get(), m_proj.get()}; }
    std::int64_t parameter_count() const override { return m_qkv->parameter_count() + m_proj->parameter_count(); }
    void set_op_formats(const OpFormats& ops) override { m_ops = ops; }
    std::string unsupported(const Backend& backend) const override;

    void declare(const DeclareContext& context) override;
    double declared_values(std::int64_t capacity, Format input_format, bool input_grad) const override;
    Format planned_output_format(Format) const override { return m_proj->formats().output; }
    Format output_format() const override { return m_proj->output_format(); }
    const Tensor& output() const override { return m_proj->output(); }
    const Tensor* input_grad() const override { return m_qkv->input_grad(); }
    void forward(Backend& backend, const Tensor& x, std::int64_t rows, bool training) override;
    void backward(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t rows,
                  std::vector<RoundingStats>* weight_stats) override;

    // The largest |attention logit| the softmax saw in the last training forward (S after the
    // 1/√d_h scale, and after the cast to the softmax's format when it casts), and how many were
    // inf or NaN.
    float logit_amax() const { return m_stats.amax; }
    std::int64_t logit_nonfinite() const { return m_stats.nonfinite; }
    // The formats in effect after declare: Q·Kᵀ and P·V (matmul class), and P (softmax class).
    Format matmul_format() const { return m_matmul_format; }
    Format softmax_format() const { return m_softmax_format; }

private:
    std::int64_t samples(std::int64_t rows) const;
    BatchedMatmul product(std::int64_t samples, std::int64_t m, std::int64_t n, std::int64_t k) const;

    std::int64_t m_dim, m_heads, m_head_dim, m_positions;
    std::unique_ptr<LinearLayer> m_qkv, m_proj;
    OpFormats m_ops;
    Format m_matmul_format = Format::fp32, m_softmax_format = Format::fp32;
    SoftmaxStats m_stats;
    std::unique_ptr<Tensor> m_scores, m_probs, m_out, m_dprobs, m_dscores, m_dqkv;
    std::unique_ptr<Tensor> m_scores_cast, m_dprobs_cast, m_dscores_cast;  // only while the softmax casts
};

}  // namespace mantissa
