// CpuBatchedMatmul on oneDNN (2.x and 3.x APIs): a cache of 4-D strided matmul primitives.
#include "backend/cpu/cpu_batched_matmul.h"

#include <array>
#include <map>
#include <vector>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

namespace mantissa {

namespace {

using dt = dnnl::memory::data_type;

// Counts and strides of the three views: the primitive's identity.
using Key = std::array<std::int64_t, 17>;

struct Entry {
    bool ok = false;  // oneDNN made a primitive for this layout
    dnnl::matmul prim;
    dnnl::memory a, b, c, scratch;
    std::vector<unsigned char> scratch_bytes;
};

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
    std::map<Key, Entry> cache;
};

CpuBatchedMatmul::CpuBatchedMatmul() : m_impl(std::make_unique<Impl>()) {}
CpuBatchedMatmul::~CpuBatchedMatmul() = default;

bool CpuBatchedMatmul::multiply(std::int64_t outer, std::int64_t inner, std::int64_t m, std::int64_t n,
                                std::int64_t k, const float* a, const CpuStrided& as, const float* b,
                                const CpuStrided& bs, float* c, const CpuStrided& cs, int threads) {
    const auto sa = strides_of(as, outer, inner, m, k);
    const auto sb = strides_of(bs, outer, inner, k, n);
    const auto sc = strides_of(cs, outer, inner, m, n);
    const Key key = {outer, inner, m, n, k, sa[0], sa[1], sa[2], sa[3], sb[0], sb[1], sb[2], sb[3],
                     sc[0], sc[1], sc[2], sc[3]};
    auto it = m_impl->cache.find(key);
    if (it == m_impl->cache.end()) {
        Entry e;
        try {
            const dnnl::memory::desc a_md({outer, inner, m, k}, dt::f32, sa);
            const dnnl::memory::desc b_md({outer, inner, k, n}, dt::f32, sb);
            const dnnl::memory::desc c_md({outer, inner, m, n}, dt::f32, sc);
            dnnl::primitive_attr attr;
            attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
#if DNNL_VERSION_MAJOR >= 3
            dnnl::matmul::primitive_desc pd(m_impl->engine, a_md, b_md, c_md, attr);
#else
            dnnl::matmul::desc desc(a_md, b_md, c_md);
            dnnl::matmul::primitive_desc pd(desc, attr, m_impl->engine);
#endif
            e.prim = dnnl::matmul(pd);
            e.a = dnnl::memory(a_md, m_impl->engine, DNNL_MEMORY_NONE);
            e.b = dnnl::memory(b_md, m_impl->engine, DNNL_MEMORY_NONE);
            e.c = dnnl::memory(c_md, m_impl->engine, DNNL_MEMORY_NONE);
            const auto sp_md = pd.scratchpad_desc();
            e.scratch_bytes.resize(sp_md.get_size() + 1);
            e.scratch = dnnl::memory(sp_md, m_impl->engine, e.scratch_bytes.data());
            e.ok = true;
        } catch (const dnnl::error&) {
            e.ok = false;  // remembered: the caller packs this layout every time
        }
        it = m_impl->cache.emplace(key, std::move(e)).first;
    }
    Entry& e = it->second;
    if (!e.ok) return false;
    if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
    e.a.set_data_handle(const_cast<float*>(a));
    e.b.set_data_handle(const_cast<float*>(b));
    e.c.set_data_handle(c);
    e.prim.execute(m_impl->stream, {{DNNL_ARG_SRC, e.a},
                                    {DNNL_ARG_WEIGHTS, e.b},
                                    {DNNL_ARG_DST, e.c},
                                    {DNNL_ARG_SCRATCHPAD, e.scratch}});
    m_impl->stream.wait();
    return true;
}

}  // namespace mantissa
