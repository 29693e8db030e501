// The bf16 copies of the bf16 matmul path (cpu_bf16_copy.h).
#include "backend/cpu/cpu_bf16_copy.h"

#include <algorithm>
#include <array>

#include "backend/cpu/cpu_hot.h"
#include "backend/cpu/cpu_parallel.h"
#include "numeric/convert.h"

namespace mantissa {

// An AVX2 clone (cpu_hot.h): the baseline's SSE2 has no 32-to-16-bit pack, and this copy runs over
// every bf16 operand of every matmul. The check rides along in three operations a value: a
// subnormal magnitude m (0 < m < 2^23) is the one for which m + 0x7F800000, as a signed integer, is
// above 0x7F800000; zero gives exactly that, and a normal, infinite or NaN m wraps to a negative.
// (Written as a comparison of the two conditions it took 1.7-2.7x the plain copy's time in the
// cache; this way 1.1-1.7x.)
MANTISSA_HOT bool to_bf16_exact(const float* __restrict src, std::uint16_t* __restrict dst, std::int64_t n) {
    const auto* bits = reinterpret_cast<const std::uint32_t*>(src);
    constexpr std::int32_t zero_probe = 0x7F800000;
    std::uint32_t all_bits = 0;
    std::int32_t probe = zero_probe;
    for (std::int64_t i = 0; i < n; ++i) {
        const std::uint32_t b = bits[i];
        dst[i] = static_cast<std::uint16_t>(b >> 16);
        all_bits |= b;
        const auto p = static_cast<std::int32_t>((b & 0x7FFFFFFFu) + static_cast<std::uint32_t>(zero_probe));
        probe = p > probe ? p : probe;
    }
    return (all_bits & 0xFFFFu) == 0 && probe == zero_probe;
}

bool to_bf16_exact_shared(const float* src, std::uint16_t* dst, std::int64_t n, int max_threads) {
    const int threads = std::min(cpu_detail::kMaxPassThreads,
                                 cpu_detail::pass_threads(n, cpu_detail::elementwise_min_per_thread, max_threads));
    std::array<bool, cpu_detail::kMaxPassThreads> exact;
    exact.fill(true);
    cpu_detail::for_ranges(n, threads, 64, [&](std::int64_t begin, std::int64_t end, int range) {
        exact[static_cast<std::size_t>(range)] = to_bf16_exact(src + begin, dst + begin, end - begin);
    });
    return std::all_of(exact.begin(), exact.begin() + threads, [](bool e) { return e; });
}

// Pieces of 1024 rounded into a buffer in the L1 cache, then copied: round_array's kernel and the
// copy above, each already held to its reference, rather than a third kernel that does both.
bool round_to_bf16_exact(const float* src, std::uint16_t* dst, std::int64_t n) {
    constexpr std::int64_t piece = 1024;
    float rounded[piece];
    bool exact = true;
    for (std::int64_t i = 0; i < n; i += piece) {
        const std::int64_t count = std::min(piece, n - i);
        round_array(Format::bf16, src + i, rounded, static_cast<std::size_t>(count));
        exact = to_bf16_exact(rounded, dst + i, count) && exact;
    }
    return exact;
}

}  // namespace mantissa
