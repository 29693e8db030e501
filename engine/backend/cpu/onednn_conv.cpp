// OneDnnConv on oneDNN (2.x and 3.x APIs): primitives, reorders and the chunked weight gradient,
// on FP32 or bf16 operands.
#include "backend/cpu/onednn_conv.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/cpu_matmul.h"
#include "backend/cpu/cpu_parallel.h"

namespace mantissa {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using Desc = dnnl::memory::desc;
using Dims = dnnl::memory::dims;

// The OpenMP threads oneDNN takes on this thread (changed only when it differs, as CpuMatmul).
void set_threads(int threads) {
    if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

// Workspace pieces start on 64-byte boundaries.
std::int64_t aligned(std::int64_t floats) { return (floats + 15) / 16 * 16; }
// The floats a buffer of `d` takes, rounded up (bf16 buffers are half as many, maybe odd).
std::int64_t floats_of(const Desc& d) {
    return static_cast<std::int64_t>((d.get_size() + sizeof(float) - 1) / sizeof(float));
}

dt type_of(ConvOperands operands) { return operands == ConvOperands::bf16 ? dt::bf16 : dt::f32; }

// The batch's samples per chunk of the weight gradient: at least 2048 output positions a chunk,
// so that adding a chunk's dW (Co·C·k·k values) costs little beside its Co·C·k·k·positions
// multiply-adds, the chunks then evened out. Depends on the shape and the batch alone: the sums,
// hence the bits, do not depend on the thread count.
std::int64_t wgrad_chunk_samples(const OneDnnConvDims& d) {
    const std::int64_t positions = std::max<std::int64_t>(1, d.out_h() * d.out_w());
    const std::int64_t least = std::clamp<std::int64_t>((2048 + positions - 1) / positions, 1, d.batch);
    const std::int64_t chunks = (d.batch + least - 1) / least;
    return (d.batch + chunks - 1) / chunks;
}

// The activation layouts the callers read or oneDNN's reorders write: NCHW, nChw8c, nChw16c, of
// elements of `type`.
std::optional<std::pair<tag, BlockedLayout>> activation_layout(const Desc& d, const Dims& dims, dt type) {
    const std::int64_t channels = dims[1];
    for (const auto& [t, block] : {std::pair{tag::nchw, 1}, std::pair{tag::nChw8c, 8}, std::pair{tag::nChw16c, 16}})
        if (d == Desc(dims, type, t)) return std::pair{t, BlockedLayout{block, (channels + block - 1) / block * block}};
    return std::nullopt;
}

// At most a third of the channels padding.
bool padding_acceptable(const BlockedLayout& l, std::int64_t channels) { return 3 * l.padded_channels <= 4 * channels; }

// oneDNN's direct kernels ("jit:avx512_core", "jit_1x1:avx2", ...), not its reference loops
// nor its own im2col and GEMM.
bool direct_kernel(const char* impl) { return std::string_view(impl).rfind("jit", 0) == 0; }

struct Geometry {
    Dims src, weights, dst, strides, padding;
    explicit Geometry(const OneDnnConvDims& d, std::int64_t batch)
        : src{batch, d.channels, d.height, d.width},
          weights{d.out_channels, d.channels, d.kernel, d.kernel},
          dst{batch, d.out_channels, d.out_h(), d.out_w()},
          strides{d.stride, d.stride},
          padding{d.padding, d.padding} {}
};

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

dnnl::convolution_forward::primitive_desc forward_pd(const dnnl::engine& engine, const Geometry& g, const Desc& src,
                                                     const Desc& weights, const Desc& dst) {
#if DNNL_VERSION_MAJOR >= 3
    return {engine, dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src, weights, dst,
            g.strides, g.padding, g.padding, user_scratchpad()};
#else
    const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                               src, weights, dst, g.strides, g.padding, g.padding);
    return {desc, user_scratchpad(), engine};
#endif
}

dnnl::convolution_backward_data::primitive_desc backward_data_pd(
    const dnnl::engine& engine, const Geometry& g, const Desc& diff_src, const Desc& weights, const Desc& diff_dst,
    const dnnl::convolution_forward::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR >= 3
    return {engine, dnnl::algorithm::convolution_direct, diff_src, weights, diff_dst, g.strides, g.padding, g.padding,
            hint, user_scratchpad()};
#else
    const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, diff_src, weights, diff_dst,
                                                     g.strides, g.padding, g.padding);
    return {desc, user_scratchpad(), engine, hint};
#endif
}

dnnl::convolution_backward_weights::primitive_desc backward_weights_pd(
    const dnnl::engine& engine, const Geometry& g, const Desc& src, const Desc& diff_weights, const Desc& diff_dst,
    const dnnl::convolution_forward::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR >= 3
    return {engine, dnnl::algorithm::convolution_direct, src, diff_weights, diff_dst, g.strides, g.padding, g.padding,
            hint, user_scratchpad()};
#else
    const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, src, diff_weights,
                                                        diff_dst, g.strides, g.padding, g.padding);
    return {desc, user_scratchpad(), engine, hint};
#endif
}

// A memory object without data (run() sets the handle).
dnnl::memory unbound(const Desc& d, const dnnl::engine& engine) { return dnnl::memory(d, engine, DNNL_MEMORY_NONE); }

// A plain array and its blocked copy, with the reorder between them when the layouts differ.
struct Operand {
    dnnl::memory plain, blocked;
    std::optional<dnnl::reorder> reorder;
    std::int64_t offset = -1;  // the blocked copy's place in the workspace; -1: the plain array is used

    Operand() = default;
    Operand(const dnnl::engine& engine, const Desc& plain_desc, const Desc& blocked_desc, bool into_blocked,
            std::int64_t& workspace)
        : plain(unbound(plain_desc, engine)), blocked(unbound(blocked_desc, engine)) {
        if (plain_desc == blocked_desc) return;
        offset = workspace;
        workspace += aligned(floats_of(blocked_desc));
        reorder = into_blocked ? dnnl::reorder(dnnl::reorder::primitive_desc(engine, plain_desc, engine, blocked_desc))
                               : dnnl::reorder(dnnl::reorder::primitive_desc(engine, blocked_desc, engine, plain_desc));
    }

    // The array the primitive reads or writes: the workspace's copy, or the plain one.
    void* bind(const void* user, float* workspace) {
        plain.set_data_handle(const_cast<void*>(user));
        blocked.set_data_handle(offset < 0 ? const_cast<void*>(user) : workspace + offset);
        return blocked.get_data_handle();
    }
    void to_blocked(dnnl::stream& stream) {
        if (reorder) reorder->execute(stream, {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, blocked}});
    }
    void to_plain(dnnl::stream& stream) {
        if (reorder) reorder->execute(stream, {{DNNL_ARG_FROM, blocked}, {DNNL_ARG_TO, plain}});
    }
};

// A primitive with its own scratchpad and the memory objects of one execution.
struct Run {
    dnnl::primitive prim;
    dnnl::memory a, b, c, scratch;  // a, b read, c written (the primitive's descriptors)
    std::vector<unsigned char> scratch_bytes;
    int arg_a = 0, arg_b = 0, arg_c = 0;

    template <class Pd>
    Run(const dnnl::engine& engine, const Pd& pd, const Desc& a_desc, const Desc& b_desc, const Desc& c_desc,
        std::array<int, 3> args)
        : prim(pd), a(unbound(a_desc, engine)), b(unbound(b_desc, engine)), c(unbound(c_desc, engine)),
          scratch_bytes(pd.scratchpad_desc().get_size() + 1), arg_a(args[0]), arg_b(args[1]), arg_c(args[2]) {
        scratch = dnnl::memory(pd.scratchpad_desc(), engine, scratch_bytes.data());
    }

    void execute(dnnl::stream& stream, void* pa, void* pb, void* pc) {
        a.set_data_handle(pa);
        b.set_data_handle(pb);
        c.set_data_handle(pc);
        prim.execute(stream, {{arg_a, a}, {arg_b, b}, {arg_c, c}, {DNNL_ARG_SCRATCHPAD, scratch}});
    }
};

const dnnl::engine& cpu_engine() {
    thread_local const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

}  // namespace

struct OneDnnConv::Impl {
    Direction direction;
    OneDnnConvDims dims;
    int threads = 1;  // forward, backward_data: oneDNN's; backward_weights: the chunks' in parallel
    dnnl::stream stream{cpu_engine()};
    Operand a, b, c;  // forward: x, w, y; backward_data: dy, w, dx; backward_weights: dy, x, dw
    std::int64_t workspace = 0;
    BlockedLayout dst;
    std::optional<Run> run;  // forward, backward_data

    // backward_weights: chunks of `chunk` samples, the last `tail` (0: as the others); the chunk
    // primitive once per thread (one execution each at a time), the tail's once. A sample's part
    // of the blocked dy and x, in bytes.
    std::int64_t chunk = 0, chunks = 0, tail = 0;
    std::int64_t a_bytes_per_sample = 0, b_bytes_per_sample = 0, dw_floats = 0, partials = 0;
    std::vector<Run> runs;
    std::optional<Run> tail_run;
    std::vector<dnnl::stream> streams;
};

OneDnnConv::OneDnnConv(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
OneDnnConv::~OneDnnConv() = default;

std::int64_t OneDnnConv::workspace_floats() const { return m_impl->workspace; }
BlockedLayout OneDnnConv::dst_layout() const { return m_impl->dst; }

namespace {

// The descriptors oneDNN chose, checked: null when they are not for us. The operands (x, w, dy)
// are of the operands' type, the results (y, dx, dw) FP32.
std::unique_ptr<OneDnnConv::Impl> make_impl(OneDnnConv::Direction direction, const OneDnnConvDims& d, int threads,
                                            ConvOperands operands) {
    using Direction = OneDnnConv::Direction;
    const dnnl::engine& engine = cpu_engine();
    auto impl = std::make_unique<OneDnnConv::Impl>();
    impl->direction = direction;
    impl->dims = d;
    impl->threads = threads;
    // Made with the OpenMP threads they will run on: oneDNN cuts the work when it makes a primitive.
    set_threads(direction == Direction::backward_weights ? 1 : threads);
    const std::int64_t batch = direction == Direction::backward_weights ? wgrad_chunk_samples(d) : d.batch;
    const Geometry g(d, batch), whole(d, d.batch);
    const dt op = type_of(operands);
    const Desc any_src(g.src, op, tag::any), any_w(g.weights, op, tag::any), any_dst(g.dst, op, tag::any);
    const Desc any_src_f32(g.src, dt::f32, tag::any), any_w_f32(g.weights, dt::f32, tag::any),
        any_dst_f32(g.dst, dt::f32, tag::any);
    // The forward (for the backward directions, the hint, its dst of the operands' type as dy).
    const auto fwd = forward_pd(engine, g, any_src, any_w, direction == Direction::forward ? any_dst_f32 : any_dst);
    const Desc x_plain(whole.src, dt::f32, tag::nchw), w_plain(whole.weights, dt::f32, tag::oihw),
        y_plain(whole.dst, dt::f32, tag::nchw);
    std::int64_t& ws = impl->workspace;

    // An activation's layout, or nothing when oneDNN chose one we do not read or that pads too much.
    const auto layout = [](const Desc& desc, const Dims& dims, dt type) -> std::optional<std::pair<tag, BlockedLayout>> {
        auto l = activation_layout(desc, dims, type);
        if (!l || !padding_acceptable(l->second, dims[1])) return std::nullopt;
        return l;
    };

    if (direction == Direction::forward) {
        if (!direct_kernel(fwd.impl_info_str())) return nullptr;
        const auto src = layout(fwd.src_desc(), g.src, op), dst = layout(fwd.dst_desc(), g.dst, dt::f32);
        if (!src || !dst) return nullptr;
        impl->a = Operand(engine, x_plain, fwd.src_desc(), true, ws);
        impl->b = Operand(engine, w_plain, fwd.weights_desc(), true, ws);
        impl->c.offset = ws;
        ws += aligned(floats_of(fwd.dst_desc()));
        impl->dst = dst->second;
        impl->run.emplace(engine, fwd, fwd.src_desc(), fwd.weights_desc(), fwd.dst_desc(),
                          std::array{DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST});
        return impl;
    }
    if (direction == Direction::backward_data) {
        const auto bwd = backward_data_pd(engine, g, any_src_f32, any_w, any_dst, fwd);
        if (!direct_kernel(bwd.impl_info_str())) return nullptr;
        if (!layout(bwd.diff_src_desc(), g.src, dt::f32) || !layout(bwd.diff_dst_desc(), g.dst, op)) return nullptr;
        impl->a = Operand(engine, y_plain, bwd.diff_dst_desc(), true, ws);
        impl->b = Operand(engine, w_plain, bwd.weights_desc(), true, ws);
        impl->c = Operand(engine, x_plain, bwd.diff_src_desc(), false, ws);
        impl->run.emplace(engine, bwd, bwd.diff_dst_desc(), bwd.weights_desc(), bwd.diff_src_desc(),
                          std::array{DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC});
        return impl;
    }

    // backward_weights: the chunk's primitive picks the layouts; the whole batch is reordered into
    // them once, each chunk reading its samples' part (the batch is the outermost dimension).
    const auto bwd = backward_weights_pd(engine, g, any_src, any_w_f32, any_dst, fwd);
    if (!direct_kernel(bwd.impl_info_str())) return nullptr;
    const auto src = layout(bwd.src_desc(), g.src, op), diff_dst = layout(bwd.diff_dst_desc(), g.dst, op);
    if (!src || !diff_dst) return nullptr;
    const Desc dy_blocked(whole.dst, op, diff_dst->first), x_blocked(whole.src, op, src->first);
    impl->chunk = batch;
    impl->chunks = (d.batch + batch - 1) / batch;
    impl->tail = d.batch % batch;
    impl->a = Operand(engine, y_plain, dy_blocked, true, ws);
    impl->b = Operand(engine, x_plain, x_blocked, true, ws);
    impl->a_bytes_per_sample = static_cast<std::int64_t>(dy_blocked.get_size()) / d.batch;
    impl->b_bytes_per_sample = static_cast<std::int64_t>(x_blocked.get_size()) / d.batch;
    const Desc dw_desc = bwd.diff_weights_desc();
    impl->dw_floats = floats_of(dw_desc);
    impl->partials = ws;
    ws += threads * aligned(impl->dw_floats);
    impl->c = Operand(engine, w_plain, dw_desc, false, ws);  // the chunks' sum (the caller's dw when plain)
    const std::array args{DNNL_ARG_DIFF_DST, DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS};
    for (int t = 0; t < threads; ++t) {
        impl->runs.emplace_back(engine, bwd, bwd.diff_dst_desc(), bwd.src_desc(), dw_desc, args);
        impl->streams.emplace_back(engine);
    }
    if (impl->tail > 0) {
        const Geometry t(d, impl->tail);
        const Desc tail_src(t.src, op, src->first), tail_dst(t.dst, op, diff_dst->first);
        const auto tail_fwd = forward_pd(engine, t, tail_src, any_w, tail_dst);
        const auto tail_bwd = backward_weights_pd(engine, t, tail_src, dw_desc, tail_dst, tail_fwd);
        if (!direct_kernel(tail_bwd.impl_info_str()) || tail_bwd.diff_weights_desc() != dw_desc) return nullptr;
        impl->tail_run.emplace(engine, tail_bwd, tail_dst, tail_src, dw_desc, args);
    }
    return impl;
}

struct CacheKey {
    OneDnnConv::Direction direction;
    OneDnnConvDims dims;
    int threads;
    ConvOperands operands;
    auto operator<=>(const CacheKey&) const = default;
};

}  // namespace

OneDnnConv* OneDnnConv::find(Direction direction, const OneDnnConvDims& dims, int threads, ConvOperands operands) {
    // A few models' shapes: past that the cache starts again rather than grow with every model a
    // long-lived thread (the GUI's trainer) has seen.
    constexpr std::size_t most_entries = 96;
    thread_local std::map<CacheKey, std::unique_ptr<OneDnnConv>> cache;
    if (dims.batch <= 0 || dims.channels <= 0 || dims.out_channels <= 0 || dims.out_h() <= 0 || dims.out_w() <= 0)
        return nullptr;
    const std::int64_t multiply_adds =
        dims.batch * dims.out_channels * dims.out_h() * dims.out_w() * dims.channels * dims.kernel * dims.kernel;
    if (direction != Direction::backward_weights) threads = CpuMatmul::threads_for(multiply_adds, threads);
    // The weight gradient's chunks go one per thread, each into a copy of dw of its own
    // (make_impl): threads past the chunks would only hold copies never written (at 1024 threads,
    // a gigabyte for a 512-channel 3x3 layer). With as many threads as chunks they run as one group
    // either way, so the sums, and the bits, are the same.
    if (direction == Direction::backward_weights) {
        const std::int64_t chunk = wgrad_chunk_samples(dims);
        threads = static_cast<int>(std::min<std::int64_t>(threads, (dims.batch + chunk - 1) / chunk));
    }
    threads = std::max(1, threads);
    const CacheKey key{direction, dims, threads, operands};
    if (auto it = cache.find(key); it != cache.end()) return it->second.get();
    if (cache.size() >= most_entries) cache.clear();
    std::unique_ptr<OneDnnConv> conv;
    try {
        if (auto impl = make_impl(direction, dims, threads, operands)) conv.reset(new OneDnnConv(std::move(impl)));
    } catch (const dnnl::error&) {
        // No convolution primitive for these descriptors: im2col it is (conv stays null).
    }
    return cache.emplace(key, std::move(conv)).first->second.get();
}

const float* OneDnnConv::forward(const float* x, const float* w, float* workspace) {
    Impl& m = *m_impl;
    set_threads(m.threads);
    void* xb = m.a.bind(x, workspace);
    void* wb = m.b.bind(w, workspace);
    float* y = workspace + m.c.offset;
    m.a.to_blocked(m.stream);
    m.b.to_blocked(m.stream);
    m.run->execute(m.stream, xb, wb, y);
    m.stream.wait();
    return y;
}

void OneDnnConv::backward_data(const float* dy, const float* w, float* dx, float* workspace) {
    Impl& m = *m_impl;
    set_threads(m.threads);
    void* dyb = m.a.bind(dy, workspace);
    void* wb = m.b.bind(w, workspace);
    void* dxb = m.c.bind(dx, workspace);
    m.a.to_blocked(m.stream);
    m.b.to_blocked(m.stream);
    m.run->execute(m.stream, dyb, wb, dxb);
    m.c.to_plain(m.stream);
    m.stream.wait();
}

void OneDnnConv::backward_weights(const float* dy, const float* x, float* dw, float* workspace) {
    Impl& m = *m_impl;
    // The reorders of the whole batch on oneDNN's threads (copies: any cut gives the same values).
    set_threads(cpu_detail::pass_threads(m.dims.batch * m.dims.out_channels * m.dims.out_h() * m.dims.out_w(),
                                         cpu_detail::elementwise_min_per_thread, m.threads));
    auto* dyb = static_cast<unsigned char*>(m.a.bind(dy, workspace));
    auto* xb = static_cast<unsigned char*>(m.b.bind(x, workspace));
    auto* acc = static_cast<float*>(m.c.bind(dw, workspace));
    m.a.to_blocked(m.stream);
    m.b.to_blocked(m.stream);
    m.stream.wait();

    // Chunks in groups of one per thread: chunk 0 into acc, the others into partials, then added
    // to acc in chunk order, element by element.
    float* partials = workspace + m.partials;
    const std::int64_t n = m.dw_floats, stride = aligned(n);
    for (std::int64_t g0 = 0; g0 < m.chunks; g0 += m.threads) {
        const std::int64_t g1 = std::min(m.chunks, g0 + m.threads);
        const int team = static_cast<int>(g1 - g0);
        cpu_detail::for_ranges(g1 - g0, team, 1, [&](std::int64_t i0, std::int64_t i1, int slot) {
            set_threads(1);  // whatever this thread runs nested
            for (std::int64_t i = i0; i < i1; ++i) {
                const std::int64_t j = g0 + i, first = j * m.chunk;
                float* out = j == 0 ? acc : partials + i * stride;
                const bool tail = m.tail > 0 && j == m.chunks - 1;
                Run& run = tail ? *m.tail_run : m.runs[static_cast<std::size_t>(slot)];
                dnnl::stream& stream = m.streams[static_cast<std::size_t>(slot)];
                run.execute(stream, dyb + first * m.a_bytes_per_sample, xb + first * m.b_bytes_per_sample, out);
                stream.wait();
            }
        });
        const std::int64_t from = std::max<std::int64_t>(g0, 1);
        if (from >= g1) continue;
        const int threads = cpu_detail::pass_threads(n * (g1 - from), cpu_detail::elementwise_min_per_thread, m.threads);
        cpu_detail::for_ranges(n, threads, 16, [&](std::int64_t e0, std::int64_t e1, int) {
            for (std::int64_t j = from; j < g1; ++j) {
                const float* p = partials + (j - g0) * stride;
                for (std::int64_t e = e0; e < e1; ++e) acc[e] += p[e];
            }
        });
    }
    set_threads(m.threads);
    m.c.to_plain(m.stream);
    m.stream.wait();
}

}  // namespace mantissa
