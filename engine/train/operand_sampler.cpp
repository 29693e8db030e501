#include "train/operand_sampler.h"

#include <algorithm>

#include "error.h"

namespace mantissa {

namespace {

// v's first n values, to be written: v only grows, so that the samplers' buffers, taken in turn by
// layers of different sizes, are not zeroed again on every call (a statistics step's memset).
float* first_values(std::vector<float>& v, std::size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
}

// A convolution's rows for SampledRows (kind and K to be set): one per output position of each
// of `batch` images.
SampledRows conv_rows(const Conv2dGeometry& g, std::int64_t batch) {
    SampledRows r;
    r.channels = g.in_channels;
    r.height = g.in_h;
    r.width = g.in_w;
    r.kernel = g.kernel;
    r.stride = g.stride;
    r.padding = g.padding;
    r.out_h = g.out_h();
    r.out_w = g.out_w();
    r.total = batch * r.out_h * r.out_w;
    return r;
}

// out(rows.count, rows.K) = the values SampledRows::source names, 0 for the padding: the rule
// followed a row at a time (the divisions once per row, not per value).
void gather_rows(const SampledRows& r, const float* values, float* out) {
    const std::int64_t positions = r.out_h * r.out_w;
    for (std::int64_t i = 0; i < r.count; ++i, out += r.K) {
        const std::int64_t row = r.row(i);
        if (r.kind == SampledRows::Kind::rows) {
            std::copy_n(values + row * r.K, r.K, out);
            continue;
        }
        const std::int64_t image = row / positions, p = row % positions;
        if (r.kind == SampledRows::Kind::conv_channels) {
            const float* d = values + image * r.K * positions + p;
            for (std::int64_t c = 0; c < r.K; ++c) out[c] = d[c * positions];
            continue;
        }
        const std::int64_t y0 = p / r.out_w * r.stride - r.padding, x0 = p % r.out_w * r.stride - r.padding;
        const float* img = values + image * r.channels * r.height * r.width;
        float* o = out;
        for (std::int64_t c = 0; c < r.channels; ++c)
            for (std::int64_t ky = 0; ky < r.kernel; ++ky) {
                const std::int64_t iy = y0 + ky;
                if (iy < 0 || iy >= r.height) {
                    o = std::fill_n(o, r.kernel, 0.0f);
                    continue;
                }
                const float* line = img + (c * r.height + iy) * r.width;
                for (std::int64_t kx = 0; kx < r.kernel; ++kx) {
                    const std::int64_t ix = x0 + kx;
                    *o++ = ix >= 0 && ix < r.width ? line[ix] : 0.0f;
                }
            }
    }
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
    // in the padding); dgrad reads dy along the output channels at each position. Each is
    // gathered by SampledRows' rule (as a GPU gathers it: gather_rows) from the tensor in place
    // where the backend keeps it in host memory, else from a copy of its whole.
    const SampledRows conv = conv_rows(*o.conv, o.rows);
    const auto gather = [&](const Tensor& t, std::int64_t n, SampledRows rows, std::int64_t max_elements,
                            std::vector<float>& buffer, std::vector<std::int64_t>& indices) {
        rows.count = sample_row_count(rows.total, rows.K, max_elements);
        const float* values = backend.host_values(t);
        Backend::RowSample magnitudes;
        if (values) {
            if (limits.magnitudes) magnitudes = backend.sample_rows(t, n, n, {}, nullptr);  // the magnitudes alone
        } else {
            const std::int64_t all = 0;
            magnitudes = backend.sample_rows(t, n, n, {&all, 1}, first_values(m_whole, static_cast<std::size_t>(n)));
            values = m_whole.data();
        }
        gather_rows(rows, values, first_values(buffer, static_cast<std::size_t>(rows.values())));
        indices.resize(static_cast<std::size_t>(rows.count));
        for (std::int64_t i = 0; i < rows.count; ++i) indices[static_cast<std::size_t>(i)] = rows.row(i);
        return OperandSample{buffer.data(), rows.count, rows.K, rows.total, indices, magnitudes};
    };
    const Conv2dGeometry& g = *o.conv;
    if (limits.x_and_w) {
        SampledRows patches = conv;
        patches.kind = SampledRows::Kind::conv_patches;
        patches.K = g.patch();
        s.x = gather(o.x, o.rows * g.in_size(), patches, limits.x, m_x, m_x_rows);
    }
    SampledRows channels = conv;
    channels.kind = SampledRows::Kind::conv_channels;
    channels.K = g.out_channels;
    s.dy = gather(o.dy, o.rows * g.out_size(), channels, limits.dy, m_dy, m_dy_rows);
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
    rows = conv_rows(g, o.rows);
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
