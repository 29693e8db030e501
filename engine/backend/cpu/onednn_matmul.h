// One oneDNN matmul primitive (2.x and 3.x APIs) with its own scratchpad, as CpuMatmul
// (cpu_matmul.cpp) and CpuBatchedMatmul (cpu_batched_matmul.cpp) keep one per shape and thread count: made once
// from the operands' memory descriptors, then run with the operand pointers of each call. Only
// for the sources that link oneDNN (it includes dnnl.hpp). Training thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

namespace mantissa {

struct OneDnnMatmul {
    dnnl::matmul prim;
    dnnl::memory a, b, c, scratch;  // a, b, c: no data until run() sets their handles
    std::vector<unsigned char> scratch_bytes;
    int threads = 1;  // the OpenMP threads it was made for, and runs on
};

// The most scratchpad one primitive may take: the bytes of its operands and result, or 64 MiB
// where that is more. oneDNN's matmul cuts the reduction between threads when the result has too
// few blocks for them all, and each part of the cut sums into an FP32 copy of the whole result of
// its own: on a 2-core machine asked for 256 threads, a 4096 x 4096 weight gradient wanted 17 GB
// of scratchpad, where 64 threads want 22 MB.
inline std::size_t onednn_matmul_scratch_budget(const dnnl::memory::desc& a_md, const dnnl::memory::desc& b_md,
                                                const dnnl::memory::desc& c_md) {
    return std::max<std::size_t>(std::size_t{64} << 20, a_md.get_size() + b_md.get_size() + c_md.get_size());
}

// The primitive for C = A·B on these descriptors, made for `threads` OpenMP threads (oneDNN cuts
// the work, and sizes the scratchpad, when it makes a primitive, for the threads OpenMP offers
// then: made for other threads than it runs on, it runs on those), or for half as many, and half
// again, while its scratchpad would pass onednn_matmul_scratch_budget. So the threads, and with
// them the order of its sums, follow from the shape and `threads` alone. A user scratchpad (one
// byte more than oneDNN asks, so a zero-size one still has an address). Throws dnnl::error when
// oneDNN has no matmul for them. The calling thread's OpenMP threads are as they were after it.
inline OneDnnMatmul make_onednn_matmul(const dnnl::engine& engine, const dnnl::memory::desc& a_md,
                                       const dnnl::memory::desc& b_md, const dnnl::memory::desc& c_md,
                                       int threads = 1) {
    struct Restore {
        int threads = omp_get_max_threads();
        ~Restore() {
            if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
        }
    } restore;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const std::size_t budget = onednn_matmul_scratch_budget(a_md, b_md, c_md);
    int t = std::max(1, threads);
    for (;;) {
        if (omp_get_max_threads() != t) omp_set_num_threads(t);
#if DNNL_VERSION_MAJOR >= 3
        dnnl::matmul::primitive_desc pd(engine, a_md, b_md, c_md, attr);
#else
        dnnl::matmul::desc desc(a_md, b_md, c_md);
        dnnl::matmul::primitive_desc pd(desc, attr, engine);
#endif
        const auto sp_md = pd.scratchpad_desc();
        if (sp_md.get_size() > budget && t > 1) {
            t /= 2;
            continue;
        }
        OneDnnMatmul mm;
        mm.threads = t;
        mm.prim = dnnl::matmul(pd);
        mm.a = dnnl::memory(a_md, engine, DNNL_MEMORY_NONE);
        mm.b = dnnl::memory(b_md, engine, DNNL_MEMORY_NONE);
        mm.c = dnnl::memory(c_md, engine, DNNL_MEMORY_NONE);
        mm.scratch_bytes.resize(sp_md.get_size() + 1);
        mm.scratch = dnnl::memory(sp_md, engine, mm.scratch_bytes.data());
        return mm;
    }
}

// C = A·B on the OpenMP threads the primitive was made for (the process-wide count is changed
// only when it differs), waiting for the stream: c is written when this returns. a and b hold
// values of the types the descriptors named.
inline void run_onednn_matmul(OneDnnMatmul& mm, dnnl::stream& stream, const void* a, const void* b, float* c) {
    if (omp_get_max_threads() != mm.threads) omp_set_num_threads(mm.threads);
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
