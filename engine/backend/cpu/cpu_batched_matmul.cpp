// CpuBatchedMatmul on oneDNN (onednn_matmul.h): a cache of 4-D strided matmul primitives.
#include "backend/cpu/cpu_batched_matmul.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/onednn_matmul.h"

namespace mantissa {

namespace {

using dt = dnnl::memory::data_type;

// The operands' type (1: bf16), counts and strides of the three views, and the threads asked for
// (the primitive is made for them, or fewer: make_onednn_matmul): the primitive's identity.
using Key = std::array<std::int64_t, 19>;

// A dimension of extent 1 is given the stride oneDNN's plain layouts would give it (its value is
// never used to address anything), so equal layouts share a primitive.
dnnl::memory::dims strides_of(const CpuStrided& s, std::int64_t outer, std::int64_t inner, std::int64_t rows,
                              std::int64_t cols) {
    const std::int64_t span = 1 + (outer - 1) * s.outer_stride + (inner - 1) * s.inner_stride +
                              (rows - 1) * s.row_stride + (cols - 1) * s.col_stride;
    return {outer > 1 ? s.outer_stride : span, inner > 1 ? s.inner_stride : span, rows > 1 ? s.row_stride : span,
            cols > 1 ? s.col_stride : span};
}

}  // namespace

struct CpuBatchedMatmul::Impl {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    std::map<Key, std::optional<OneDnnMatmul>> cache;  // empty: oneDNN has no primitive for this layout
};

CpuBatchedMatmul::CpuBatchedMatmul() : m_impl(std::make_unique<Impl>()) {}
CpuBatchedMatmul::~CpuBatchedMatmul() = default;

bool CpuBatchedMatmul::multiply(std::int64_t outer, std::int64_t inner, std::int64_t m, std::int64_t n,
                                std::int64_t k, const float* a, const CpuStrided& as, const float* b,
                                const CpuStrided& bs, float* c, const CpuStrided& cs, int threads) {
    return run(false, outer, inner, m, n, k, a, as, b, bs, c, cs, threads);
}

bool CpuBatchedMatmul::multiply(std::int64_t outer, std::int64_t inner, std::int64_t m, std::int64_t n,
                                std::int64_t k, const std::uint16_t* a, const CpuStrided& as,
                                const std::uint16_t* b, const CpuStrided& bs, float* c, const CpuStrided& cs,
                                int threads) {
    return run(true, outer, inner, m, n, k, a, as, b, bs, c, cs, threads);
}

bool CpuBatchedMatmul::run(bool bf16, std::int64_t outer, std::int64_t inner, std::int64_t m, std::int64_t n,
                           std::int64_t k, const void* a, const CpuStrided& as, const void* b,
                           const CpuStrided& bs, float* c, const CpuStrided& cs, int threads) {
    const auto sa = strides_of(as, outer, inner, m, k);
    const auto sb = strides_of(bs, outer, inner, k, n);
    const auto sc = strides_of(cs, outer, inner, m, n);
    const Key key = {bf16 ? 1 : 0, outer, inner, m, n, k, sa[0], sa[1], sa[2], sa[3], sb[0], sb[1], sb[2], sb[3],
                     sc[0], sc[1], sc[2], sc[3], std::max(1, threads)};
    auto it = m_impl->cache.find(key);
    if (it == m_impl->cache.end()) {
        const dt type = bf16 ? dt::bf16 : dt::f32;
        std::optional<OneDnnMatmul> mm;
        try {
            mm = make_onednn_matmul(m_impl->engine, dnnl::memory::desc({outer, inner, m, k}, type, sa),
                                    dnnl::memory::desc({outer, inner, k, n}, type, sb),
                                    dnnl::memory::desc({outer, inner, m, n}, dt::f32, sc), threads);
        } catch (const dnnl::error&) {
            // mm stays empty, remembered: the caller packs this layout every time
        }
        it = m_impl->cache.emplace(key, std::move(mm)).first;
    }
    if (!it->second) return false;
    run_onednn_matmul(*it->second, m_impl->stream, a, b, c);
    return true;
}

}  // namespace mantissa
