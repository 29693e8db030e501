// FP8 scales on the device, host and device alike (MANTISSA_HD, as convert.cuh): the rule every
// FP8 recipe takes its scale by (AmaxHistory::scale_for in backend/amax_history.cpp) and rowwise
// scaling's rounding of one run (round_axiswise_fp8 in numeric/block_round.cpp), in the CPU's
// FP32 operations, so the scales and values are the CPU's bit for bit.
// tests/engine/cuda_host runs these functions on the CPU against those, bit for bit.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/block_round.cuh"
#include "backend/cuda/kernels/convert.cuh"
#include "backend/cuda/kernels/stochastic.cuh"

namespace mantissa::cuda {

MANTISSA_HD bool is_finite_value(float x) {
    return (bits_of(x) & 0x7F800000u) != 0x7F800000u;
}

// The largest power of two at most x, for a positive finite x, subnormals included
// (std::ldexp(1, std::ilogb(x))): x's exponent bits with the mantissa cleared, or a subnormal's
// highest set bit.
MANTISSA_HD float power_of_two_below(float x) {
    const std::uint32_t bits = bits_of(x);
    if (bits & 0x7F800000u) return float_of(bits & 0xFF800000u);
    std::uint32_t top = 0x00400000u;
    while (top && !(bits & top)) top >>= 1;
    return float_of((bits & 0x80000000u) | top);
}

// The scale for an amax: (fp8_max / amax) / 2^margin, rounded down to a power of two when asked
// (so amax · scale <= fp8_max still); 0 when amax is 0 or not finite, or the scale is not a
// finite positive number.
MANTISSA_HD float fp8_scale_for(float amax, float fp8_max, int margin, bool power_of_two) {
    if (!(amax > 0.0f) || !is_finite_value(amax)) return 0.0f;
    const float scale = (fp8_max / amax) / ldexpf(1.0f, margin);
    if (!is_finite_value(scale) || !(scale > 0.0f)) return 0.0f;
    return power_of_two ? power_of_two_below(scale) : scale;
}

// One operand of a linear layer under rowwise scaling (torchao's rowwise): src viewed as
// (outer, K, inner), row-major, each run of K values along K with its own scale, decoded in FP32
// into dst (the same shape).
struct RowwiseArgs {
    const void* src = nullptr;
    int src_fmt = 0;
    float* dst = nullptr;
    std::int64_t outer = 0, K = 0, inner = 1;
    ElementGrid grid;  // fp8-e4m3's (x, W) or fp8-e5m2's (dy), saturating
    int margin = 0;
    bool power_of_two = false;
    // The tensor's amax as FP32 bits, raised (atomicMax) by the kernel; null: not recorded.
    std::uint32_t* amax = nullptr;
    // Stochastic rounding: the pass's key (draw_stochastic_key's device word); null: to nearest.
    const std::uint64_t* key = nullptr;

    MANTISSA_HD std::int64_t runs() const { return outer * inner; }
};

// Run r (inner fastest, then outer) rounded into dst: its finite amax, its scale
// s = fp8_scale_for(amax) (1 where that is 0), each value rnd(x · s) · fp32(1 / s) on the grid
// (value j of the tensor in storage order taking stochastic_bits(key, j) when stochastic).
// Returns the run's share of the tensor amax as bits: its finite amax, or a NaN's bits when it
// holds a NaN or an infinity (round_axiswise_fp8's tensor amax is then NaN).
MANTISSA_HD std::uint32_t round_rowwise_run(const RowwiseArgs& a, std::int64_t r, std::uint64_t key) {
    const std::int64_t i = r % a.inner, o = r / a.inner;
    const std::int64_t first = o * a.K * a.inner + i;
    std::uint32_t amax = 0;
    bool special = false;
    for (std::int64_t k = 0; k < a.K; ++k) {
        const float v = load_value(a.src, a.src_fmt, first + k * a.inner);
        const std::uint32_t finite = finite_magnitude_bits(v);
        special = special || !is_finite_value(v);
        amax = finite > amax ? finite : amax;
    }
    float s = fp8_scale_for(float_of(amax), a.grid.max_finite, a.margin, a.power_of_two);
    s = s > 0.0f ? s : 1.0f;
    const float inverse = 1.0f / s;
    const ElementGrid& g = a.grid;
    for (std::int64_t k = 0; k < a.K; ++k) {
        const std::int64_t j = first + k * a.inner;
        const float q = load_value(a.src, a.src_fmt, j) * s;
        const float rounded = a.key ? stochastic_on_grid(q, stochastic_bits(key, static_cast<std::uint64_t>(j)),
                                                         g.mantissa_bits, g.emin, g.emax, g.max_finite, g.max_finite)
                                    : round_to_element_grid(q, g);
        a.dst[j] = rounded * inverse;
    }
    return special ? 0x7FC00000u : amax;
}

}  // namespace mantissa::cuda
