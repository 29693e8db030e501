#include "train/accumulation_error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "backend/cpu/cpu_fp16_accumulate.h"
#include "model/layer.h"
#include "numeric/convert.h"

namespace mantissa {

namespace {

// Rows (or columns) taken of each side of a layer's sums: 16 × 16 = 256 sums a layer and matmul.
constexpr std::int64_t sums_per_side = 16;

// Whether a matmul in `f` reads operands rounded to a tensor format (the ones rounded here).
bool rounds_operands(const ComputeFormat& f) {
    return !f.block && f.format != Format::fp8_e4m3 && f.format != Format::fp8_e5m2;
}

// `count` indices spread evenly over [0, total), as sample_row_indices spreads rows.
std::vector<std::int64_t> spread(std::int64_t total, std::int64_t count) {
    return sample_row_indices(total, 1, std::min(count, total));
}

double median_of(std::vector<double>& v) {
    if (v.empty()) return 0.0;
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    if (v.size() % 2 == 1) return *mid;
    const double upper = *mid;
    return (*std::max_element(v.begin(), mid) + upper) / 2;
}

}  // namespace

double dot_accumulation_error(const float* a, std::int64_t stride_a, const float* b, std::int64_t stride_b,
                              std::int64_t K, bool fp16, std::vector<float>& scratch) {
    double exact = 0, magnitude = 0;
    for (std::int64_t k = 0; k < K; ++k) {
        const double p = static_cast<double>(a[k * stride_a]) * b[k * stride_b];  // exact: 24 + 24 bits
        exact += p;
        magnitude += std::fabs(p);
    }
    float s = 0.0f;
    if (fp16) {  // the backend's own FP16 accumulation, on the two runs made contiguous
        scratch.resize(static_cast<std::size_t>(2 * K));
        float* ra = scratch.data();
        float* rb = ra + K;
        for (std::int64_t k = 0; k < K; ++k) {
            ra[k] = a[k * stride_a];
            rb[k] = b[k * stride_b];
        }
        std::vector<float> pack;
        fp16_accumulate_multiply(ra, false, rb, false, &s, 1, 1, K, pack);
    } else {
        // rnd32 of the exact product, then of the exact sum: each through FP64, which holds a
        // product of two floats exactly and rounds a sum of two once more harmlessly (53 >= 2·24 + 2),
        // so no fused multiply-add can creep in.
        for (std::int64_t k = 0; k < K; ++k) {
            const float p = static_cast<float>(static_cast<double>(a[k * stride_a]) * b[k * stride_b]);
            s = static_cast<float>(static_cast<double>(s) + p);
        }
    }
    if (!std::isfinite(s)) return std::numeric_limits<double>::infinity();
    if (magnitude == 0) return 0.0;
    return std::fabs(static_cast<double>(s) - exact) / magnitude;
}

void AccumulationErrorStatistics::begin_step(std::int64_t step, StepPipeline* later) {
    m_steps.begin(step, later);
}

std::vector<OpStepRecord> AccumulationErrorStatistics::take() {
    return m_steps.take();
}

std::vector<OpStepRecord> AccumulationErrorStatistics::take_collected(std::int64_t step,
                                                                      std::span<const float> samples) {
    std::vector<OpStepRecord> rows;
    for (const Observed& layer : m_steps.take_pending(step, "accumulation-error statistics"))
        measure(layer, m_sampler.resolve(layer.samples, samples), step, rows);
    return rows;
}

void AccumulationErrorStatistics::observe(Backend& backend, const MatmulOperands& o) {
    if (!m_steps.active || o.layer.index() < 0) return;
    const LayerFormats& f = o.layer.formats();
    Observed layer;
    layer.name = o.layer.name();
    layer.forward = f.compute_format();
    layer.wgrad = f.wgrad;
    layer.fp16 = f.fp16_accumulation;
    layer.linear = !o.conv;
    layer.K = o.in;
    layer.out = o.out;

    // x: every row for a linear layer (the weight gradient sums over them), 16 patches for a
    // convolution; W: 16 rows; dy: every row for a linear layer, one (unused) for a convolution.
    const std::int64_t K = o.in;
    const SampleLimits limits{.x = layer.linear ? 0 : sums_per_side * K, .w = sums_per_side * K,
                              .dy = layer.linear ? 0 : 1};
    if (m_steps.later) {
        layer.samples = OperandSampler::request(*m_steps.later, o, limits);
        m_steps.pending.add(std::move(layer));
        return;
    }
    measure(layer, m_sampler.take(backend, o, limits), m_steps.step, m_steps.rows);
}

void AccumulationErrorStatistics::measure(const Observed& layer, const OperandSampler::Samples& s, std::int64_t step,
                                          std::vector<OpStepRecord>& out) {
    const bool fp16 = layer.fp16;
    const std::int64_t K = layer.K;

    // The forward: sampled rows of x by sampled rows of W, both along K.
    const ComputeFormat& forward = layer.forward;
    const std::vector<std::int64_t> x_rows = spread(s.x.rows, sums_per_side);
    m_x.resize(x_rows.size() * static_cast<std::size_t>(K));
    for (std::size_t r = 0; r < x_rows.size(); ++r)
        std::copy_n(s.x.values + x_rows[r] * K, K, m_x.data() + r * static_cast<std::size_t>(K));
    m_w.assign(s.w.values, s.w.values + s.w.rows * K);
    if (rounds_operands(forward)) {
        round_array(forward.format, m_x.data(), m_x.size());
        round_array(forward.format, m_w.data(), m_w.size());
    }
    m_errors.clear();
    for (std::size_t r = 0; r < x_rows.size(); ++r)
        for (std::int64_t j = 0; j < s.w.rows; ++j)
            m_errors.push_back(dot_accumulation_error(m_x.data() + r * static_cast<std::size_t>(K), 1,
                                                      m_w.data() + j * K, 1, K, fp16, m_scratch));
    out.push_back({step, layer.name, accumulation_error_stat, median_of(m_errors)});
    if (!layer.linear || s.x.rows == 0) return;

    // The weight gradient dW[j, i] = Σ_r dy[r, j]·x[r, i]: columns of dy and x, K = the rows.
    const std::int64_t rows = s.x.rows, outputs = layer.out;
    const ComputeFormat& wgrad = layer.wgrad;
    m_x.assign(s.x.values, s.x.values + rows * K);
    m_dy.assign(s.dy.values, s.dy.values + rows * outputs);
    if (rounds_operands(wgrad)) {
        round_array(wgrad.format, m_x.data(), m_x.size());
        round_array(wgrad.format, m_dy.data(), m_dy.size());
    }
    m_errors.clear();
    for (std::int64_t j : spread(outputs, sums_per_side))
        for (std::int64_t i : spread(K, sums_per_side))
            m_errors.push_back(
                dot_accumulation_error(m_dy.data() + j, outputs, m_x.data() + i, K, rows, fp16, m_scratch));
    out.push_back({step, layer.name, accumulation_error_wgrad_stat, median_of(m_errors)});
}

}  // namespace mantissa
