// One oneDNN matmul primitive (2.x and 3.x APIs) with its own scratchpad, as CpuMatmul
// (cpu_matmul.cpp) and CpuBatchedMatmul (cpu_batched_matmul.cpp) keep one per shape: made once
// from the operands' memory descriptors, then run with the operand pointers of each call. Only
// for the sources that link oneDNN (it includes dnnl.hpp). Training thread only.
#pragma once

#include <vector>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

namespace mantissa {

struct OneDnnMatmul {
    dnnl::matmul prim;
    dnnl::memory a, b, c, scratch;  // a, b, c: no data until run() sets their handles
    std::vector<unsigned char> scratch_bytes;
};

// The primitive for C = A·B on these descriptors, with a user scratchpad (one byte more than
// oneDNN asks, so a zero-size one still has an address). Throws dnnl::error when oneDNN has no
// matmul for them.
inline OneDnnMatmul make_onednn_matmul(const dnnl::engine& engine, const dnnl::memory::desc& a_md,
                                       const dnnl::memory::desc& b_md, const dnnl::memory::desc& c_md) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
#if DNNL_VERSION_MAJOR >= 3
    dnnl::matmul::primitive_desc pd(engine, a_md, b_md, c_md, attr);
#else
    dnnl::matmul::desc desc(a_md, b_md, c_md);
    dnnl::matmul::primitive_desc pd(desc, attr, engine);
#endif
    OneDnnMatmul mm;
    mm.prim = dnnl::matmul(pd);
    mm.a = dnnl::memory(a_md, engine, DNNL_MEMORY_NONE);
    mm.b = dnnl::memory(b_md, engine, DNNL_MEMORY_NONE);
    mm.c = dnnl::memory(c_md, engine, DNNL_MEMORY_NONE);
    const auto sp_md = pd.scratchpad_desc();
    mm.scratch_bytes.resize(sp_md.get_size() + 1);
    mm.scratch = dnnl::memory(sp_md, engine, mm.scratch_bytes.data());
    return mm;
}

// C = A·B on `threads` OpenMP threads (the process-wide count is changed only when it differs),
// waiting for the stream: c is written when this returns. a and b hold values of the types the
// descriptors named.
inline void run_onednn_matmul(OneDnnMatmul& mm, dnnl::stream& stream, const void* a, const void* b, float* c,
                              int threads) {
    if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
    mm.a.set_data_handle(const_cast<void*>(a));
    mm.b.set_data_handle(const_cast<void*>(b));
    mm.c.set_data_handle(c);
    mm.prim.execute(stream, {{DNNL_ARG_SRC, mm.a},
                             {DNNL_ARG_WEIGHTS, mm.b},
                             {DNNL_ARG_DST, mm.c},
                             {DNNL_ARG_SCRATCHPAD, mm.scratch}});
    stream.wait();
}

}  // namespace mantissa
