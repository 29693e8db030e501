// round_block_operand (numeric/block_format.h) shared out among the CPU backend's threads in
// whole blocks: rows of K values (inner 1), or the outer slices of a (outer, K, inner) view, go to
// the threads by rows; a single tile of columns (outer 1) by its rows of blocks (B rows of `inner`
// values each). Every block is rounded by one thread from its own values with the tensor's scale,
// a stochastic rounding draws each value's bits by its index in the whole tensor (first_index),
// the block exponents land where one call puts them, and the largest magnitude is the largest of
// the parts' bit patterns: the same bits on any thread count (cpu_parallel.h). Training thread only.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <optional>

#include "backend/cpu/cpu_parallel.h"
#include "numeric/block_format.h"

namespace mantissa::cpu_detail {

// A thread per 2^14 values: the quantiser spends a few nanoseconds a value (the block's amax, its
// scale, the element's rounding), several times a memory-speed pass.
constexpr std::int64_t block_round_min_per_thread = std::int64_t{1} << 14;

inline float round_block_operand_on(int max_threads, BlockFormat format, const float* src, float* dst,
                                    std::size_t outer, std::size_t K, std::size_t inner, float tensor_scale,
                                    std::optional<std::uint64_t> stochastic_key = {},
                                    std::int16_t* exponents = nullptr, float* largest = nullptr) {
    const auto n = static_cast<std::int64_t>(outer * K * inner);
    const int threads = std::min(kMaxPassThreads, pass_threads(n, block_round_min_per_thread, max_threads));
    // One call where it refuses the arguments: its exception must not leave a parallel region.
    if (threads <= 1 || (exponents != nullptr && inner != 1))
        return round_block_operand(format, src, dst, outer, K, inner, tensor_scale, stochastic_key, exponents,
                                   largest);
    const auto B = static_cast<std::size_t>(block_format_info(format).block_size);
    const std::size_t row_blocks = (K + B - 1) / B;  // the blocks along a row of K (the exponents' stride)
    std::array<std::uint32_t, kMaxPassThreads> largest_bits{};
    const auto round_part = [&](std::size_t first, std::size_t part_outer, std::size_t part_K,
                                std::int16_t* part_exponents, int w) {
        float part_largest = 0.0f;
        round_block_operand(format, src + first, dst + first, part_outer, part_K, inner, tensor_scale, stochastic_key,
                            part_exponents, largest != nullptr ? &part_largest : nullptr, first);
        largest_bits[static_cast<std::size_t>(w)] = std::bit_cast<std::uint32_t>(part_largest);
    };
    if (outer > 1 || inner == 1) {
        for_ranges(static_cast<std::int64_t>(outer), threads, 1, [&](std::int64_t o0, std::int64_t o1, int w) {
            const auto o = static_cast<std::size_t>(o0);
            round_part(o * K * inner, static_cast<std::size_t>(o1 - o0), K,
                       exponents != nullptr ? exponents + o * row_blocks : nullptr, w);
        });
    } else {
        for_ranges(static_cast<std::int64_t>(row_blocks), threads, 1, [&](std::int64_t b0, std::int64_t b1, int w) {
            const std::size_t k0 = static_cast<std::size_t>(b0) * B;
            const std::size_t k1 = std::min(K, static_cast<std::size_t>(b1) * B);
            round_part(k0 * inner, 1, k1 - k0, nullptr, w);  // exponents: rows only (above)
        });
    }
    if (largest != nullptr)
        *largest = std::bit_cast<float>(*std::max_element(largest_bits.begin(), largest_bits.begin() + threads));
    return block_operand_factor(format, tensor_scale);
}

}  // namespace mantissa::cpu_detail
