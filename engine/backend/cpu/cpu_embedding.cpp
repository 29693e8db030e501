// CpuBackend: embedding lookup and its backward (docs/numerics.md, "Transformer ops").
//
// forward   y[r] = rnd_y(W[ids[r]]): a copy, exact when y's format holds W's (autocast runs the
//           embedding in the weight's format, so PyTorch's y is W's values).
// backward  the rows are sorted by id (stable: equal ids keep their order) and each id's sum
//           S[v] = Σ_{r: ids[r] = v} dy[r] is taken in FP32 from +0 in ascending r, so the result
//           does not depend on anything but the ids; then grad_weight[v] = rnd(S[v]) (the other
//           rows zeroed), or rnd(grad_weight[v] + S[v]) with accumulate (the other rows kept).
// The forward shares its rows out over the backend's threads (cpu_parallel.h, a thread per 2^16
// values: each row a copy, the same on any thread); the backward runs on one (each id's sum keeps
// its order of rows). The ids were checked by the wrapper. Scratch: the sum of one id (slot 10).
// Training thread only.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_parallel.h"
#include "backend/cpu/cpu_tensor_access.h"
#include "numeric/convert.h"

namespace mantissa {

namespace {

enum Slot { slot_sum = 10 };

}  // namespace

void CpuBackend::embedding_forward_impl(const Tensor& weight, const std::int32_t* ids, Tensor& y_out,
                                        std::int64_t rows) {
    const std::int64_t dim = weight.cols();
    const float* w = cpu(weight).data();
    float* y = cpu(y_out).data();
    cpu_detail::for_ranges(rows, pass_threads(rows * dim, cpu_detail::elementwise_min_per_thread), 1,
                           [&](std::int64_t r0, std::int64_t r1, int) {
                               for (std::int64_t r = r0; r < r1; ++r)  // copy and round (fp32: a plain copy)
                                   round_array(y_out.format(), w + static_cast<std::int64_t>(ids[r]) * dim,
                                               y + r * dim, static_cast<std::size_t>(dim));
                           });
}

void CpuBackend::embedding_backward_impl(const std::int32_t* ids, const Tensor& dy_in, Tensor& grad_weight,
                                         std::int64_t rows, bool accumulate) {
    const std::int64_t dim = grad_weight.cols();
    const float* dy = cpu(dy_in).data();
    float* gw = cpu(grad_weight).data();
    if (!accumulate) std::fill_n(gw, grad_weight.numel(), 0.0f);
    if (rows == 0 || dim == 0) return;
    m_order.resize(static_cast<std::size_t>(rows));
    std::iota(m_order.begin(), m_order.end(), std::int64_t{0});
    std::stable_sort(m_order.begin(), m_order.end(),
                     [ids](std::int64_t a, std::int64_t b) { return ids[a] < ids[b]; });
    float* sum = scratch(slot_sum, dim);
    const Format f = grad_weight.format();
    for (std::size_t first = 0; first < m_order.size();) {
        const std::int32_t id = ids[m_order[first]];
        std::fill_n(sum, dim, 0.0f);
        std::size_t last = first;
        for (; last < m_order.size() && ids[m_order[last]] == id; ++last) {
            const float* row = dy + m_order[last] * dim;
            for (std::int64_t j = 0; j < dim; ++j) sum[j] += row[j];
        }
        float* target = gw + static_cast<std::int64_t>(id) * dim;
        if (accumulate)
            for (std::int64_t j = 0; j < dim; ++j) target[j] += sum[j];
        else
            std::memcpy(target, sum, static_cast<std::size_t>(dim) * sizeof(float));
        if (f != Format::fp32) round_array(f, target, static_cast<std::size_t>(dim));
        first = last;
    }
}

}  // namespace mantissa
