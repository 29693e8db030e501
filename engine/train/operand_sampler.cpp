#include "train/operand_sampler.h"

#include <algorithm>

#include "error.h"

namespace mantissa {

namespace {

// The distinct samples (rows of a (batch, ...) tensor) the patch rows `indices` fall in, in order.
std::vector<std::int64_t> samples_of(const std::vector<std::int64_t>& indices, std::int64_t per_sample) {
    std::vector<std::int64_t> samples;
    for (std::int64_t i : indices)
        if (samples.empty() || samples.back() != i / per_sample) samples.push_back(i / per_sample);
    return samples;
}

// v's first n values, to be written: v only grows, so that the samplers' buffers, taken in turn by
// layers of different sizes, are not zeroed again on every call (a statistics step's memset).
float* first_values(std::vector<float>& v, std::size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
}

// The position in `samples` of sample s (indices are increasing, so a forward search).
std::size_t slot_of(const std::vector<std::int64_t>& samples, std::int64_t s, std::size_t from) {
    while (from < samples.size() && samples[from] != s) ++from;
    return from;
}

}  // namespace

std::int64_t sample_row_count(std::int64_t total, std::int64_t row_len, std::int64_t max_elements) {
    std::int64_t count = total;
    if (max_elements > 0 && row_len > 0)
        count = std::clamp<std::int64_t>(max_elements / row_len, 1, std::max<std::int64_t>(total, 1));
    return std::max<std::int64_t>(std::min(count, total), 0);
}

std::vector<std::int64_t> sample_row_indices(std::int64_t total, std::int64_t row_len, std::int64_t max_elements) {
    const std::int64_t count = sample_row_count(total, row_len, max_elements);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) rows[static_cast<std::size_t>(i)] = i * total / count;
    return rows;
}

OperandSampler::Samples OperandSampler::take(Backend& backend, const MatmulOperands& o, SampleLimits limits) {
    Samples s;
    // The rows `rows` of t, (total, K): every row read in place where the backend keeps t in host
    // memory (a block-scale view of a whole operand copies nothing), else copied into `buffer`.
    const auto sample = [&backend, &limits](const Tensor& t, std::int64_t total, std::int64_t K,
                                            const std::vector<std::int64_t>& rows, std::vector<float>& buffer) {
        const std::int64_t n = total * K;
        const float* values = static_cast<std::int64_t>(rows.size()) == total ? backend.host_values(t) : nullptr;
        Backend::RowSample magnitudes;
        if (values) {
            if (limits.magnitudes) magnitudes = backend.sample_rows(t, n, K, {}, nullptr);  // the magnitudes alone
        } else {
            float* copy = first_values(buffer, rows.size() * static_cast<std::size_t>(K));
            magnitudes = backend.sample_rows(t, n, K, rows, copy);
            values = copy;
        }
        return OperandSample{values, static_cast<std::int64_t>(rows.size()), K, total, rows, magnitudes};
    };

    // W: rows of (out, K) in both kinds, K = the forward's reduction.
    if (limits.x_and_w) {
        m_w_rows = sample_row_indices(o.weight.desc().rows, o.in, limits.w);
        s.w = sample(o.weight, o.weight.desc().rows, o.in, m_w_rows, m_w);
    }

    if (!o.conv) {
        if (limits.x_and_w) {
            m_x_rows = sample_row_indices(o.rows, o.in, limits.x);
            s.x = sample(o.x, o.rows, o.in, m_x_rows, m_x);
        }
        m_dy_rows = sample_row_indices(o.rows, o.out, limits.dy);
        s.dy = sample(o.dy, o.rows, o.out, m_dy_rows, m_dy);
        return s;
    }

    // The forward multiplies W by the patches under the kernel (im2col: (c, ky, kx) order, zeros
    // in the padding); dgrad reads dy along the output channels at each position.
    const Conv2dGeometry& g = *o.conv;
    const std::int64_t P = g.out_h() * g.out_w(), patch = g.patch();
    if (limits.x_and_w) {
        m_x_rows = sample_row_indices(o.rows * P, patch, limits.x);
        std::vector<std::int64_t> images = samples_of(m_x_rows, P);
        float* whole = first_values(m_whole, images.size() * static_cast<std::size_t>(g.in_size()));
        const Backend::RowSample mx = backend.sample_rows(o.x, o.rows * g.in_size(), g.in_size(), images, whole);
        first_values(m_x, m_x_rows.size() * static_cast<std::size_t>(patch));
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
        s.x = OperandSample{m_x.data(), static_cast<std::int64_t>(m_x_rows.size()), patch, o.rows * P, m_x_rows, mx};
    }

    const std::int64_t Co = g.out_channels;
    m_dy_rows = sample_row_indices(o.rows * P, Co, limits.dy);
    const std::vector<std::int64_t> images = samples_of(m_dy_rows, P);
    float* whole = first_values(m_whole, images.size() * static_cast<std::size_t>(g.out_size()));
    const Backend::RowSample mdy = backend.sample_rows(o.dy, o.rows * g.out_size(), g.out_size(), images, whole);
    first_values(m_dy, m_dy_rows.size() * static_cast<std::size_t>(Co));
    std::size_t slot = 0;
    for (std::size_t r = 0; r < m_dy_rows.size(); ++r) {
        const std::int64_t image = m_dy_rows[r] / P, p = m_dy_rows[r] % P;
        slot = slot_of(images, image, slot);
        const float* d = m_whole.data() + static_cast<std::int64_t>(slot) * g.out_size();
        for (std::int64_t c = 0; c < Co; ++c)
            m_dy[r * static_cast<std::size_t>(Co) + static_cast<std::size_t>(c)] = d[c * P + p];
    }
    s.dy = OperandSample{m_dy.data(), static_cast<std::int64_t>(m_dy_rows.size()), Co, o.rows * P, m_dy_rows, mdy};
    return s;
}

PendingSamples OperandSampler::request(StepPipeline& later, const MatmulOperands& o, SampleLimits limits) {
    PendingSamples p;
    const auto ask = [&later](PendingSamples::Operand& into, const Tensor& t, std::int64_t n, SampledRows rows,
                              std::int64_t max_elements) {
        rows.count = sample_row_count(rows.total, rows.K, max_elements);
        into.rows = rows;
        into.offset = later.sample_rows_later(t, n, rows);
    };
    SampledRows rows;  // as take() reads them
    if (limits.x_and_w) {
        rows.total = o.weight.desc().rows;
        rows.K = o.in;
        ask(p.w, o.weight, rows.total * rows.K, rows, limits.w);
    }
    if (!o.conv) {
        rows.total = o.rows;
        if (limits.x_and_w) {
            rows.K = o.in;
            ask(p.x, o.x, o.rows * o.in, rows, limits.x);
        }
        rows.K = o.out;
        ask(p.dy, o.dy, o.rows * o.out, rows, limits.dy);
        return p;
    }
    const Conv2dGeometry& g = *o.conv;
    rows.channels = g.in_channels;
    rows.height = g.in_h;
    rows.width = g.in_w;
    rows.kernel = g.kernel;
    rows.stride = g.stride;
    rows.padding = g.padding;
    rows.out_h = g.out_h();
    rows.out_w = g.out_w();
    rows.total = o.rows * rows.out_h * rows.out_w;
    if (limits.x_and_w) {
        rows.kind = SampledRows::Kind::conv_patches;
        rows.K = g.patch();
        ask(p.x, o.x, o.rows * g.in_size(), rows, limits.x);
    }
    rows.kind = SampledRows::Kind::conv_channels;
    rows.K = g.out_channels;
    ask(p.dy, o.dy, o.rows * g.out_size(), rows, limits.dy);
    return p;
}

OperandSampler::Samples OperandSampler::resolve(const PendingSamples& pending, std::span<const float> samples) {
    const auto one = [&samples](const PendingSamples::Operand& o, std::vector<std::int64_t>& indices) {
        if (o.offset < 0) return OperandSample{};
        const auto at = static_cast<std::size_t>(o.offset);
        if (at + 2 + static_cast<std::size_t>(o.rows.values()) > samples.size())
            throw Error("The step's operand samples end before the rows asked of them.");
        indices.resize(static_cast<std::size_t>(o.rows.count));
        for (std::int64_t i = 0; i < o.rows.count; ++i) indices[static_cast<std::size_t>(i)] = o.rows.row(i);
        OperandSample s{samples.data() + at + 2, o.rows.count, o.rows.K, o.rows.total, indices, {}};
        s.magnitudes.amax = samples[at];
        s.magnitudes.finite_amax = samples[at + 1];
        return s;
    };
    Samples s;
    s.x = one(pending.x, m_x_rows);
    s.w = one(pending.w, m_w_rows);
    s.dy = one(pending.dy, m_dy_rows);
    return s;
}

}  // namespace mantissa
