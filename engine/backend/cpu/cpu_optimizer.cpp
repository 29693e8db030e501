// CpuBackend: SGD and AdamW with torch's semantics and FP32 state.
//
// The update is computed in FP32 from the parameter's current value and written back rounded to
// the parameter's format, once (as a fused optimizer kernel does): the FP32 master (master
// weights on, exact) or the stored low-precision weights (master weights off).
// Lost updates are those lost to the stored precision: of the weights whose new FP32 value
// differs from the stored one (fp32(w + u) != w: the update survives in FP32), those whose stored
// value is unchanged after rounding to the parameter's format (rnd_F(fp32(w + u)) == w). An FP32
// parameter (master weights on, or FP32 weights) loses none by construction; an update too small
// to move even an FP32 value (AdamW's residue on a weight with a zero gradient) is in neither
// count, since no storage format would have kept it.
//
// SGD   (torch.optim.SGD, dampening 0, no nesterov):
//   d = g (+ wd·p where wd != 0);  buf = d (first step) or momentum·buf + d;  p ← p - lr·buf
//   (torch adds the decay only where it is set: g + 0·p would turn a -0 gradient into +0 and an
//   infinite weight's into NaN)
// AdamW (torch.optim.AdamW, decoupled):
//   p ← p·(1 - lr·wd);  m ← m + (1-β1)(g - m);  v ← β2·v + (1-β2)·g²
//   p ← p - (lr / (1-β1^t)) · m / (√v / √(1-β2^t) + eps)
// Both run block by block (update_block values): the new values go to a block-sized buffer that
// stays in the L1 cache, are compared with the old ones (the FP32 change mask), rounded there and
// stored with the lost-update count, so the parameter, gradient and state are each read once and
// written once per step. An FP32 parameter (master weights on, or FP32 training), which needs no
// rounding and loses no update, skips the buffer: its kernel writes the new values in place and
// counts the changed ones. Every element's arithmetic is unchanged by the blocking.
// A narrow parameter (master weights off) stores the new value as OptimizerTensors::rounding says:
// to nearest; stochastically (round_array_stochastic, one key per parameter per step, element i
// taking bits i); or Kahan-compensated: y = (new - w) + c, w' = rnd(w + y), c' = rnd(y - (w' - w)),
// the compensation c kept in the parameter's format, so what one step's rounding drops is added
// back at the next. A Kahan update is lost only when neither w nor c changes.
// The loops are plain arithmetic over restrict pointers so the compiler vectorises them (this
// folder builds with -fno-math-errno: sqrt needs no errno path), built for AVX2 and for baseline
// x86-64 (chosen at run time). A large parameter is cut into ranges of whole blocks, one per
// thread (cpu_parallel.h), each with its own block buffers: every element's value and the counts
// are the same however it is cut.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_parallel.h"
#include "error.h"
#include "numeric/convert.h"
#include "numeric/stats.h"
#include "numeric/stochastic_round.h"

namespace mantissa {

namespace {

void check_tensors(const OptimizerTensors& t, bool need1, bool need2, const char* op) {
    if (!t.param || !t.grad || t.param->numel() != t.grad->numel())
        throw Error(std::string(op) + ": the parameter and its gradient must be given, of one size.");
    if ((need1 && (!t.state1 || t.state1->numel() != t.param->numel())) ||
        (need2 && (!t.state2 || t.state2->numel() != t.param->numel())))
        throw Error(std::string(op) + ": the optimizer state of " + t.param->desc().name +
                    " is missing or of the wrong size.");
}

constexpr std::size_t update_block = 1024;
// A thread per 2^15 parameters (about 30 us of AdamW), at most kMaxOptimizerThreads.
constexpr std::int64_t optimizer_min_per_thread = std::int64_t{1} << 15;
constexpr int kMaxOptimizerThreads = 64;

struct SgdScalars {
    float lr, wd, mu;
    bool first, momentum;
};

// Writes the new FP32 values into out and marks the elements whose FP32 value changes
// (out != p; a NaN result counts as a change).
MANTISSA_HOT void sgd_kernel(const float* __restrict p, const float* __restrict g,
                             float* __restrict buf, float* __restrict out, std::int64_t n,
                             SgdScalars s, unsigned char* __restrict changed_mask) {
    const bool decays = s.wd != 0.0f;
    for (std::int64_t i = 0; i < n; ++i) {
        float d = decays ? g[i] + s.wd * p[i] : g[i];
        if (s.momentum) {
            d = s.first ? d : s.mu * buf[i] + d;
            buf[i] = d;
        }
        const float fresh = p[i] + -s.lr * d;
        changed_mask[i] = fresh != p[i];
        out[i] = fresh;
    }
}

struct AdamScalars {
    float decay, step_size, bc2_sqrt, w1, w2, beta2, eps;
    bool decays;
};

// One element's AdamW update: m and v updated in place, the new FP32 value returned. Both kernels
// below inline it, so the buffered and the in-place update share their arithmetic.
inline float adamw_element(float p, float g, float& m, float& v, const AdamScalars& s) {
    const float decayed = s.decays ? p * s.decay : p;
    const float mi = m + s.w1 * (g - m);
    const float vi = v * s.beta2 + s.w2 * (g * g);
    m = mi;
    v = vi;
    const float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
    return decayed + -s.step_size * (mi / denom);
}

MANTISSA_HOT void adamw_kernel(const float* __restrict p, const float* __restrict g,
                               float* __restrict m, float* __restrict v, float* __restrict out,
                               std::int64_t n, AdamScalars s, unsigned char* __restrict changed_mask) {
    for (std::int64_t i = 0; i < n; ++i) {
        const float fresh = adamw_element(p[i], g[i], m[i], v[i], s);
        changed_mask[i] = fresh != p[i];
        out[i] = fresh;
    }
}

// The kernels above for an FP32 parameter, whose new value needs no rounding: written in place,
// returning how many changed (the mask's count; such a parameter loses no update). The same
// arithmetic as theirs, element for element, without the block buffer and the store pass.
// buf: the momentum buffer, null without momentum (two loops, so that none stores through it).
MANTISSA_HOT std::uint32_t sgd_in_place(float* __restrict p, const float* __restrict g, float* __restrict buf,
                                        std::int64_t n, SgdScalars s) {
    const bool decays = s.wd != 0.0f;
    std::uint32_t changed = 0;
    if (!s.momentum) {
        for (std::int64_t i = 0; i < n; ++i) {
            const float old = p[i];
            const float d = decays ? g[i] + s.wd * old : g[i];
            const float fresh = old + -s.lr * d;
            changed += fresh != old;
            p[i] = fresh;
        }
        return changed;
    }
    for (std::int64_t i = 0; i < n; ++i) {
        const float old = p[i];
        float d = decays ? g[i] + s.wd * old : g[i];
        d = s.first ? d : s.mu * buf[i] + d;
        buf[i] = d;
        const float fresh = old + -s.lr * d;
        changed += fresh != old;
        p[i] = fresh;
    }
    return changed;
}

MANTISSA_HOT std::uint32_t adamw_in_place(float* __restrict p, const float* __restrict g, float* __restrict m,
                                          float* __restrict v, std::int64_t n, AdamScalars s) {
    std::uint32_t changed = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const float old = p[i];
        const float fresh = adamw_element(old, g[i], m[i], v[i], s);
        changed += fresh != old;
        p[i] = fresh;
    }
    return changed;
}

// Stores the new values (rounded to the parameter's format); counts the updates that change the
// FP32 value (UpdateCounts::nonzero_updates) and, of those, the ones whose stored value is
// unchanged (lost_updates).
MANTISSA_HOT void store_counting_lost(float* __restrict p, const float* __restrict fresh,
                                      const unsigned char* __restrict changed_mask, std::int64_t n,
                                      UpdateCounts* counts) {
    std::uint32_t changed = 0, lost = 0;  // per block of 2^20, so 32 bits never overflow
    constexpr std::int64_t block = std::int64_t{1} << 20;
    for (std::int64_t start = 0; start < n; start += block) {
        const std::int64_t end = std::min(n, start + block);
        changed = lost = 0;
        for (std::int64_t i = start; i < end; ++i) {
            const std::uint32_t ch = changed_mask[i];
            changed += ch;
            lost += ch & static_cast<std::uint32_t>(fresh[i] == p[i]);
            p[i] = fresh[i];
        }
        counts->nonzero_updates += changed;
        counts->lost_updates += lost;
    }
}

// Kahan's first half: y = (fresh - p) + c, the update plus the compensation; fresh = p + y (to be
// rounded).
MANTISSA_HOT void kahan_add(const float* __restrict p, float* __restrict fresh, const float* __restrict c,
                            float* __restrict y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        const float yi = (fresh[i] - p[i]) + c[i];
        y[i] = yi;
        fresh[i] = p[i] + yi;
    }
}

// Kahan's second half, fresh now rounded: y = y - (fresh - p), what the rounding lost (to be
// rounded into the compensation).
MANTISSA_HOT void kahan_remainder(const float* __restrict p, const float* __restrict fresh, float* __restrict y,
                                  std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = y[i] - (fresh[i] - p[i]);
}

// store_counting_lost for Kahan: an update is lost when neither the weight nor its compensation
// changes; both are stored.
MANTISSA_HOT void store_counting_lost_kahan(float* __restrict p, const float* __restrict fresh, float* __restrict c,
                                            const float* __restrict remainder,
                                            const unsigned char* __restrict changed_mask, std::int64_t n,
                                            UpdateCounts* counts) {
    std::uint32_t changed = 0, lost = 0;  // n <= update_block: 32 bits never overflow
    for (std::int64_t i = 0; i < n; ++i) {
        const std::uint32_t ch = changed_mask[i];
        changed += ch;
        lost += ch & static_cast<std::uint32_t>(fresh[i] == p[i]) & static_cast<std::uint32_t>(remainder[i] == c[i]);
        p[i] = fresh[i];
        c[i] = remainder[i];
    }
    counts->nonzero_updates += changed;
    counts->lost_updates += lost;
}

// How a parameter's new values are stored (OptimizerTensors::rounding, resolved for its format).
struct WeightStore {
    Format format = Format::fp32;
    WeightRounding rounding = WeightRounding::nearest;  // nearest for an FP32 parameter
    std::uint64_t key = 0;          // stochastic
    float* compensation = nullptr;  // kahan: the whole tensor's
    float* remainder = nullptr;     // kahan: a block of scratch
};

// The copies an optimizer step writes with its parameter, block by block while the new values are
// in the L1 cache: the cast copy (CpuTensor::is_copy_of; master weights), or else the quantised
// FP8 copy (CpuFp8WeightCopy), written as linear_forward would (scale_round_array: elementwise, so
// the blocking changes no value), with the largest |p| bit pattern for its amax. `measure`: the
// parameter's amax is kept too (CpuBackend::keep_magnitude), taken by the cast copy's pass or,
// without one, by a pass over the block still in the L1 cache. Set up before the parameter is
// written (freshness is judged by write stamps), finished after.
struct CopyWrites {
    CpuTensor* cast = nullptr;
    float* cast_data = nullptr;
    bool measure = false;
    std::uint32_t amax_bits = 0;  // measure's
    CpuFp8WeightCopy* fp8 = nullptr;
    float* fp8_data = nullptr;
    std::uint32_t fp8_amax_bits = 0;

    CopyWrites(CpuTensor* cast_copy, bool measure_param) : cast(cast_copy), measure(measure_param) {
        if (cast) cast_data = cast->data();
    }
    void set_fp8(CpuFp8WeightCopy* entry) {
        fp8 = entry;
        if (fp8) fp8_data = fp8->copy->data();
    }
    // p[0, n) holds the parameter's new values from element `start` on.
    void block(const float* p, std::int64_t start, std::int64_t n) {
        const auto count = static_cast<std::size_t>(n);
        if (cast && measure)  // as cast(), a multiply by 1 being exact
            amax_bits = std::max(amax_bits, std::bit_cast<std::uint32_t>(
                                                scale_round_array(cast->format(), p, cast_data + start, count, 1.0f)));
        else if (cast)
            round_array(cast->format(), p, cast_data + start, count);  // as cast()
        else if (measure)
            amax_bits = std::max(amax_bits, std::bit_cast<std::uint32_t>(max_abs(p, count)));
        if (fp8) {
            const float amax = scale_round_array(Format::fp8_e4m3, p, fp8_data + start, static_cast<std::size_t>(n),
                                                 fp8->scale, Overflow::saturate);
            fp8_amax_bits = std::max(fp8_amax_bits, std::bit_cast<std::uint32_t>(amax));
        }
    }
    // The copy as one worker's: the same destinations, its own amaxes.
    CopyWrites worker() const {
        CopyWrites w(*this);
        w.fp8_amax_bits = w.amax_bits = 0;
        return w;
    }
    void finish(CpuBackend& backend, const CpuTensor& param) {
        if (cast) cast->mark_copy_of(param);
        if (measure) backend.keep_magnitude(param, param.numel(), std::bit_cast<float>(amax_bits));
        if (fp8) {
            fp8->amax = std::bit_cast<float>(fp8_amax_bits);
            fp8->copy->mark_copy_of(param);
        }
    }
};

// The shared tail of both optimizers, for one block starting at element `start`: the new FP32
// values are in `fresh` and `mask` marks those that differ from the old ones; round them to the
// parameter's format, store them in the parameter (p: the block), count lost updates against the
// old values, and write the copies.
void finish_update(float* p, float* fresh, std::int64_t start, std::int64_t n, const WeightStore& store,
                   const unsigned char* mask, UpdateCounts& c, CopyWrites& copies) {
    const auto count = static_cast<std::size_t>(n);
    switch (store.rounding) {
    case WeightRounding::nearest:
        if (store.format != Format::fp32) round_array(store.format, fresh, count);
        store_counting_lost(p, fresh, mask, n, &c);
        break;
    case WeightRounding::stochastic:
        round_array_stochastic(store.format, fresh, fresh, count, store.key, static_cast<std::uint64_t>(start));
        store_counting_lost(p, fresh, mask, n, &c);
        break;
    case WeightRounding::kahan: {
        float* comp = store.compensation + start;
        kahan_add(p, fresh, comp, store.remainder, n);
        round_array(store.format, fresh, count);
        kahan_remainder(p, fresh, store.remainder, n);
        round_array(store.format, store.remainder, count);
        store_counting_lost_kahan(p, fresh, comp, store.remainder, mask, n, &c);
        break;
    }
    }
    copies.block(p, start, n);
}

// Each worker's counts and amaxes, merged into the totals and `copies` when all are done.
struct WorkerResults {
    std::array<UpdateCounts, kMaxOptimizerThreads> counts{};
    std::array<std::uint32_t, kMaxOptimizerThreads> amax_bits{}, param_amax_bits{};

    void keep(int w, const UpdateCounts& c, const CopyWrites& own_copies) {
        counts[static_cast<std::size_t>(w)] = c;
        amax_bits[static_cast<std::size_t>(w)] = own_copies.fp8_amax_bits;
        param_amax_bits[static_cast<std::size_t>(w)] = own_copies.amax_bits;
    }
    UpdateCounts merge(int threads, CopyWrites& copies) const {
        UpdateCounts total;
        for (int w = 0; w < threads; ++w) {
            total.nonzero_updates += counts[static_cast<std::size_t>(w)].nonzero_updates;
            total.lost_updates += counts[static_cast<std::size_t>(w)].lost_updates;
            copies.fp8_amax_bits = std::max(copies.fp8_amax_bits, amax_bits[static_cast<std::size_t>(w)]);
            copies.amax_bits = std::max(copies.amax_bits, param_amax_bits[static_cast<std::size_t>(w)]);
        }
        return total;
    }
};

// Runs kernel(start, len, fresh, mask) (the new FP32 values of elements [start, start + len) into
// fresh, their change flags into mask) and finish_update block by block over [0, n), on `threads`
// workers, each with its own block buffers (fresh, mask and Kahan's remainder: update_block values
// per worker, from the *_all arrays) and its own counts and FP8 amax, merged at the end.
template <class Kernel>
UpdateCounts update_in_blocks(float* p, std::int64_t n, int threads, const WeightStore& store, float* fresh_all,
                              unsigned char* mask_all, float* remainder_all, CopyWrites& copies, Kernel kernel) {
    WorkerResults results;
    constexpr auto block = static_cast<std::int64_t>(update_block);
    cpu_detail::for_ranges(n, threads, block, [&](std::int64_t begin, std::int64_t end, int w) {
        float* fresh = fresh_all + w * block;
        unsigned char* mask = mask_all + w * block;
        WeightStore own = store;
        if (remainder_all) own.remainder = remainder_all + w * block;
        CopyWrites own_copies = copies.worker();
        UpdateCounts c;
        for (std::int64_t start = begin; start < end; start += block) {
            const std::int64_t len = std::min(block, end - start);
            kernel(start, len, fresh, mask);
            finish_update(p + start, fresh, start, len, own, mask, c, own_copies);
        }
        results.keep(w, c, own_copies);
    });
    return results.merge(threads, copies);
}

// update_in_blocks for an FP32 parameter: kernel(start, len) updates [start, start + len) in place
// and returns how many values changed; the copies are written from each block while it is in the
// L1 cache. The same blocks, values and counts as update_in_blocks gives it (an FP32 parameter
// loses no update), one pass fewer.
template <class Kernel>
UpdateCounts update_fp32_in_place(float* p, std::int64_t n, int threads, CopyWrites& copies, Kernel kernel) {
    WorkerResults results;
    constexpr auto block = static_cast<std::int64_t>(update_block);
    cpu_detail::for_ranges(n, threads, block, [&](std::int64_t begin, std::int64_t end, int w) {
        CopyWrites own_copies = copies.worker();
        UpdateCounts c;
        for (std::int64_t start = begin; start < end; start += block) {
            const std::int64_t len = std::min(block, end - start);
            c.nonzero_updates += kernel(start, len);
            own_copies.block(p + start, start, len);
        }
        results.keep(w, c, own_copies);
    });
    return results.merge(threads, copies);
}

// How t's new values are stored; `next_key` draws a stochastic key, `remainder` is a block of
// scratch for Kahan.
template <class NextKey>
WeightStore weight_store(const OptimizerTensors& t, NextKey next_key, float* remainder) {
    WeightStore s;
    s.format = t.param->format();
    if (s.format == Format::fp32) return s;  // nothing to round: every rounding is the same
    s.rounding = t.rounding;
    if (s.rounding == WeightRounding::stochastic) s.key = next_key();
    if (s.rounding == WeightRounding::kahan) {
        if (!t.compensation || t.compensation->numel() != t.param->numel() ||
            t.compensation->format() != s.format)
            throw Error("Kahan-compensated update of " + t.param->desc().name +
                        ": its compensation must be given, of its size and format.");
        s.compensation = static_cast<CpuTensor*>(t.compensation)->data();
        s.remainder = remainder;
    }
    return s;
}

}  // namespace

UpdateCounts CpuBackend::sgd_step(const OptimizerTensors& t, const SgdParams& s) {
    const bool momentum = s.momentum != 0.0;
    check_tensors(t, momentum, false, "sgd_step");
    const std::int64_t n = t.param->numel();
    CopyWrites copies(fresh_cast_copy(*t.param), m_keep_magnitudes);  // before p is written
    if (!copies.cast) copies.set_fp8(fp8_copy_to_write(*t.param));
    const int threads = std::min(kMaxOptimizerThreads, pass_threads(n, optimizer_min_per_thread));
    const std::int64_t per_worker = threads * static_cast<std::int64_t>(update_block);
    const WeightStore store = weight_store(t, [this] { return next_stochastic_key(); }, scratch(14, per_worker));
    CpuTensor& param = *static_cast<CpuTensor*>(t.param);
    float* p = param.data();
    const float* g = static_cast<const CpuTensor*>(t.grad)->data();
    float* buf = momentum ? static_cast<CpuTensor*>(t.state1)->data() : nullptr;
    float* no_buf = momentum ? nullptr : scratch(6, per_worker);  // sgd_kernel's unused buffer, per worker
    if (m_mask.size() < static_cast<std::size_t>(per_worker)) m_mask.resize(static_cast<std::size_t>(per_worker));
    const SgdScalars sc{static_cast<float>(s.lr), static_cast<float>(s.weight_decay),
                        static_cast<float>(s.momentum), s.first_step, momentum};
    float* fresh_all = scratch(4, per_worker);
    const UpdateCounts c =
        store.format == Format::fp32
            ? update_fp32_in_place(p, n, threads, copies,
                                   [&](std::int64_t start, std::int64_t len) {
                                       return sgd_in_place(p + start, g + start, momentum ? buf + start : nullptr,
                                                           len, sc);
                                   })
            : update_in_blocks(p, n, threads, store, fresh_all, m_mask.data(), store.remainder, copies,
                               [&](std::int64_t start, std::int64_t len, float* fresh, unsigned char* mask) {
                                   float* unused = no_buf ? no_buf + (fresh - fresh_all) : nullptr;
                                   sgd_kernel(p + start, g + start, momentum ? buf + start : unused, fresh, len,
                                              sc, mask);
                               });
    copies.finish(*this, param);
    return c;
}

UpdateCounts CpuBackend::adamw_step(const OptimizerTensors& t, const AdamWParams& a) {
    check_tensors(t, true, true, "adamw_step");
    if (a.step < 1) throw Error("adamw_step: the step count must start at 1.");
    const std::int64_t n = t.param->numel();
    CopyWrites copies(fresh_cast_copy(*t.param), m_keep_magnitudes);  // before p is written
    if (!copies.cast) copies.set_fp8(fp8_copy_to_write(*t.param));
    const int threads = std::min(kMaxOptimizerThreads, pass_threads(n, optimizer_min_per_thread));
    const std::int64_t per_worker = threads * static_cast<std::int64_t>(update_block);
    const WeightStore store = weight_store(t, [this] { return next_stochastic_key(); }, scratch(14, per_worker));
    CpuTensor& param = *static_cast<CpuTensor*>(t.param);
    float* p = param.data();
    const float* g = static_cast<const CpuTensor*>(t.grad)->data();
    float* m = static_cast<CpuTensor*>(t.state1)->data();
    float* v = static_cast<CpuTensor*>(t.state2)->data();
    // Scalars as torch computes them: in double on the host, applied as FP32.
    const double step = static_cast<double>(a.step);
    const double bc1 = 1.0 - std::pow(a.beta1, step);
    const double bc2 = 1.0 - std::pow(a.beta2, step);
    AdamScalars sc;
    sc.decay = static_cast<float>(1.0 - a.lr * a.weight_decay);
    sc.step_size = static_cast<float>(a.lr / bc1);
    sc.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
    sc.w1 = static_cast<float>(1.0 - a.beta1);
    sc.w2 = static_cast<float>(1.0 - a.beta2);
    sc.beta2 = static_cast<float>(a.beta2);
    sc.eps = static_cast<float>(a.eps);
    sc.decays = a.weight_decay != 0.0 && a.lr != 0.0;
    if (m_mask.size() < static_cast<std::size_t>(per_worker)) m_mask.resize(static_cast<std::size_t>(per_worker));
    const UpdateCounts c =
        store.format == Format::fp32
            ? update_fp32_in_place(p, n, threads, copies,
                                   [&](std::int64_t start, std::int64_t len) {
                                       return adamw_in_place(p + start, g + start, m + start, v + start, len, sc);
                                   })
            : update_in_blocks(p, n, threads, store, scratch(4, per_worker), m_mask.data(), store.remainder, copies,
                               [&](std::int64_t start, std::int64_t len, float* fresh, unsigned char* mask) {
                                   adamw_kernel(p + start, g + start, m + start, v + start, fresh, len, sc, mask);
                               });
    copies.finish(*this, param);
    return c;
}

}  // namespace mantissa
