#include "train/operand_sampler.h"

#include <algorithm>

namespace mantissa {

namespace {

// The distinct samples (rows of a (batch, ...) tensor) the patch rows `indices` fall in, in order.
std::vector<std::int64_t> samples_of(const std::vector<std::int64_t>& indices, std::int64_t per_sample) {
    std::vector<std::int64_t> samples;
    for (std::int64_t i : indices)
        if (samples.empty() || samples.back() != i / per_sample) samples.push_back(i / per_sample);
    return samples;
}

// The position in `samples` of sample s (indices are increasing, so a forward search).
std::size_t slot_of(const std::vector<std::int64_t>& samples, std::int64_t s, std::size_t from) {
    while (from < samples.size() && samples[from] != s) ++from;
    return from;
}

}  // namespace

std::vector<std::int64_t> sample_row_indices(std::int64_t total, std::int64_t row_len, std::int64_t max_elements) {
    std::int64_t count = total;
    if (max_elements > 0 && row_len > 0)
        count = std::clamp<std::int64_t>(max_elements / row_len, 1, std::max<std::int64_t>(total, 1));
    count = std::min(count, total);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
    for (std::int64_t i = 0; i < count; ++i) rows[static_cast<std::size_t>(i)] = i * total / count;
    return rows;
}

OperandSampler::Samples OperandSampler::take(Backend& backend, const MatmulOperands& o, SampleLimits limits) {
    Samples s;
    const auto sample = [](const std::vector<float>& values, const std::vector<std::int64_t>& rows, std::int64_t K,
                           std::int64_t total, Backend::RowSample magnitudes) {
        return OperandSample{values.data(), static_cast<std::int64_t>(rows.size()), K, total, rows, magnitudes};
    };

    // W: rows of (out, K) in both kinds, K = the forward's reduction.
    {
        const std::int64_t rows = o.weight.desc().rows, K = o.in;
        m_w_rows = sample_row_indices(rows, K, limits.w);
        m_w.resize(m_w_rows.size() * static_cast<std::size_t>(K));
        s.w = sample(m_w, m_w_rows, K, rows, backend.sample_rows(o.weight, rows * K, K, m_w_rows, m_w.data()));
    }

    if (!o.conv) {
        m_x_rows = sample_row_indices(o.rows, o.in, limits.x);
        m_x.resize(m_x_rows.size() * static_cast<std::size_t>(o.in));
        s.x = sample(m_x, m_x_rows, o.in, o.rows, backend.sample_rows(o.x, o.rows * o.in, o.in, m_x_rows, m_x.data()));
        m_dy_rows = sample_row_indices(o.rows, o.out, limits.dy);
        m_dy.resize(m_dy_rows.size() * static_cast<std::size_t>(o.out));
        s.dy = sample(m_dy, m_dy_rows, o.out, o.rows,
                      backend.sample_rows(o.dy, o.rows * o.out, o.out, m_dy_rows, m_dy.data()));
        return s;
    }

    // The forward multiplies W by the patches under the kernel (im2col: (c, ky, kx) order, zeros
    // in the padding); dgrad reads dy along the output channels at each position.
    const Conv2dGeometry& g = *o.conv;
    const std::int64_t P = g.out_h() * g.out_w(), patch = g.patch();
    m_x_rows = sample_row_indices(o.rows * P, patch, limits.x);
    std::vector<std::int64_t> images = samples_of(m_x_rows, P);
    m_whole.resize(images.size() * static_cast<std::size_t>(g.in_size()));
    const Backend::RowSample mx = backend.sample_rows(o.x, o.rows * g.in_size(), g.in_size(), images, m_whole.data());
    m_x.resize(m_x_rows.size() * static_cast<std::size_t>(patch));
    std::size_t slot = 0;
    for (std::size_t r = 0; r < m_x_rows.size(); ++r) {
        const std::int64_t image = m_x_rows[r] / P, p = m_x_rows[r] % P;
        slot = slot_of(images, image, slot);
        const float* img = m_whole.data() + static_cast<std::int64_t>(slot) * g.in_size();
        const std::int64_t oy = p / g.out_w(), ox = p % g.out_w();
        float* row = m_x.data() + static_cast<std::int64_t>(r) * patch;
        for (std::int64_t c = 0; c < g.in_channels; ++c)
            for (std::int64_t ky = 0; ky < g.kernel; ++ky)
                for (std::int64_t kx = 0; kx < g.kernel; ++kx) {
                    const std::int64_t iy = oy * g.stride - g.padding + ky, ix = ox * g.stride - g.padding + kx;
                    const bool inside = iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w;
                    *row++ = inside ? img[(c * g.in_h + iy) * g.in_w + ix] : 0.0f;
                }
    }
    s.x = sample(m_x, m_x_rows, patch, o.rows * P, mx);

    const std::int64_t Co = g.out_channels;
    m_dy_rows = sample_row_indices(o.rows * P, Co, limits.dy);
    images = samples_of(m_dy_rows, P);
    m_whole.resize(images.size() * static_cast<std::size_t>(g.out_size()));
    const Backend::RowSample mdy = backend.sample_rows(o.dy, o.rows * g.out_size(), g.out_size(), images, m_whole.data());
    m_dy.resize(m_dy_rows.size() * static_cast<std::size_t>(Co));
    slot = 0;
    for (std::size_t r = 0; r < m_dy_rows.size(); ++r) {
        const std::int64_t image = m_dy_rows[r] / P, p = m_dy_rows[r] % P;
        slot = slot_of(images, image, slot);
        const float* d = m_whole.data() + static_cast<std::int64_t>(slot) * g.out_size();
        for (std::int64_t c = 0; c < Co; ++c)
            m_dy[r * static_cast<std::size_t>(Co) + static_cast<std::size_t>(c)] = d[c * P + p];
    }
    s.dy = sample(m_dy, m_dy_rows, Co, o.rows * P, mdy);
    return s;
}

}  // namespace mantissa
