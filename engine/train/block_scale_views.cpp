#include "train/block_scale_views.h"

#include <algorithm>
#include <utility>

#include "model/layer.h"
#include "numeric/block_format.h"

namespace mantissa {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The values of a sample that hold `max_blocks` blocks of `block` values in rows of K (0: all).
std::int64_t values_for_blocks(std::int64_t max_blocks, std::int64_t K, int block) {
    if (max_blocks <= 0 || K <= 0) return 0;
    return std::max<std::int64_t>(max_blocks / ceil_div(K, block), 1) * K;
}

// A record of `rows` of a tensor's rows_total rows of K values in `format`, its exponents to fill.
BlockScaleRecord sized_record(BlockFormat format, std::int64_t rows_total, std::int64_t rows, std::int64_t K) {
    BlockScaleRecord r;
    r.format = format;
    r.rows_total = rows_total;
    r.rows = rows;
    r.row_length = K;
    r.blocks_per_row = ceil_div(K, block_format_info(format).block_size);
    r.exponents.resize(static_cast<std::size_t>(rows * r.blocks_per_row));
    return r;
}

}  // namespace

static_assert(BlockScaleRecord::zero_block == block_exponent_zero && BlockScaleRecord::nan_block == block_exponent_nan,
              "the record keeps the quantiser's block exponent sentinels");

std::int16_t block_scale_exponent(BlockFormat format, float tensor_scale, const float* values, std::size_t count) {
    std::int16_t e = 0;
    block_decode_exponents(format, tensor_scale, values, 1, count, &e);
    return e;
}

BlockScaleRecord kept_block_scales(BlockFormat format, const Backend::KeptBlockExponents& kept, std::int64_t rows_total,
                                   std::int64_t K, std::int64_t max_values) {
    const std::vector<std::int64_t> rows = sample_row_indices(rows_total, K, max_values);
    BlockScaleRecord r = sized_record(format, rows_total, static_cast<std::int64_t>(rows.size()), K);
    const auto per_row = static_cast<std::size_t>(r.blocks_per_row);
    for (std::size_t i = 0; i < rows.size(); ++i)
        std::copy_n(kept.values + static_cast<std::size_t>(rows[i]) * per_row, per_row, r.exponents.begin() + i * per_row);
    return r;
}

BlockScaleRecord view_block_scales(BlockFormat format, const OperandSample& s, bool stochastic) {
    const float tensor_scale = format == BlockFormat::nvfp4 ? nvfp4_tensor_scale(s.magnitudes.finite_amax) : 1.0f;
    BlockScaleRecord r = sized_record(format, s.rows_total, s.rows, s.K);
    block_decode_exponents(format, tensor_scale, s.values, static_cast<std::size_t>(r.rows),
                           static_cast<std::size_t>(s.K), r.exponents.data(), stochastic);
    return r;
}

void BlockScaleViews::begin_step(std::int64_t step, StepPipeline* later) {
    m_steps.begin(step, later);
}

std::vector<BlockScaleRecord> BlockScaleViews::take() {
    return m_steps.take();
}

std::vector<BlockScaleRecord> BlockScaleViews::take_collected(std::int64_t step, std::span<const float> samples) {
    std::vector<BlockScaleRecord> rows;
    for (const Observed& layer : m_steps.take_pending(step, "block-scale views"))
        view(layer, m_sampler.resolve(layer.samples, samples), true, step, rows);
    return rows;
}

void BlockScaleViews::label(BlockScaleRecord& r, const Observed& layer, MatmulOperand operand, std::int64_t step) {
    r.step = step;
    r.layer = layer.layer;
    r.name = layer.name;
    r.operand = operand;
    r.own = operand == MatmulOperand::grad_output ? layer.own_dgrad : layer.own_forward;
}

void BlockScaleViews::view(const Observed& layer, const OperandSampler::Samples& s, bool x_and_w, std::int64_t step,
                           std::vector<BlockScaleRecord>& out) {
    const auto add = [&](MatmulOperand operand, const std::optional<BlockFormat>& fmt, const OperandSample& sample) {
        if (!fmt) return;
        // dy is quantised stochastically with stochastic gradients (docs/numerics.md), x and W never.
        const bool stochastic = operand == MatmulOperand::grad_output && layer.stochastic_dy;
        BlockScaleRecord r = view_block_scales(*fmt, sample, stochastic);
        label(r, layer, operand, step);
        out.push_back(std::move(r));
    };
    if (x_and_w) {
        add(MatmulOperand::input, layer.x_format, s.x);
        add(MatmulOperand::weight, layer.x_format, s.w);
    }
    add(MatmulOperand::grad_output, layer.dy_format, s.dy);
}

void BlockScaleViews::observe(Backend& backend, const MatmulOperands& o) {
    if (!m_steps.active || !m_spec.enabled || o.layer.index() < 0) return;
    // Each operand in the block format of the matmul that quantises it, else the spec's.
    const LayerFormats& f = o.layer.formats();
    const std::optional<BlockFormat> forward = f.compute_format().block, dgrad = f.dgrad.block;
    Observed layer;
    layer.layer = o.layer.index();
    layer.name = o.layer.name();
    layer.x_format = forward ? forward : m_spec.format;
    layer.dy_format = dgrad ? dgrad : m_spec.format;
    layer.own_forward = forward.has_value();
    layer.own_dgrad = dgrad.has_value();
    layer.stochastic_dy = f.stochastic_gradients;
    if (!layer.x_format && !layer.dy_format) return;

    const std::int64_t K_dy = o.conv ? o.conv->out_channels : o.out;
    const auto limit = [&](const std::optional<BlockFormat>& fmt, std::int64_t K) {
        // An operand not viewed still gets one row sampled: the sampler takes all three.
        return fmt ? values_for_blocks(m_spec.max_blocks, K, block_format_info(*fmt).block_size) : K;
    };
    // A linear layer's own x and W: the exponents its forward's quantiser kept (the CPU backend),
    // the rows a sample would take; otherwise found again from the operands (always after the step).
    const std::int64_t w_rows = o.weight.desc().rows;
    Backend::KeptBlockExponents kept_x, kept_w;
    if (forward && !o.conv && !m_steps.later) {
        kept_x = backend.kept_block_exponents(o.x, *forward, o.in);
        kept_w = backend.kept_block_exponents(o.weight, *forward, o.in);
    }
    const bool kept = kept_x.values && kept_x.rows >= o.rows && kept_w.values && kept_w.rows >= w_rows;
    // Only NVFP4's scales depend on the tensor's amax (its tensor scale).
    const bool nvfp4 = (layer.x_format == BlockFormat::nvfp4 && !kept) || layer.dy_format == BlockFormat::nvfp4;
    const SampleLimits limits{limit(layer.x_format, o.in), limit(layer.x_format, o.in), limit(layer.dy_format, K_dy),
                              nvfp4, !kept};
    if (m_steps.later) {
        layer.samples = OperandSampler::request(*m_steps.later, o, limits);
        m_steps.pending.add(std::move(layer));
        return;
    }
    const OperandSampler::Samples s = m_sampler.take(backend, o, limits);
    if (kept) {
        BlockScaleRecord x = kept_block_scales(*forward, kept_x, o.rows, o.in, limits.x);
        label(x, layer, MatmulOperand::input, m_steps.step);
        m_steps.rows.push_back(std::move(x));
        BlockScaleRecord w = kept_block_scales(*forward, kept_w, w_rows, o.in, limits.w);
        label(w, layer, MatmulOperand::weight, m_steps.step);
        m_steps.rows.push_back(std::move(w));
    }
    view(layer, s, !kept, m_steps.step, m_steps.rows);
}

}  // namespace mantissa
