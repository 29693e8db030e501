// See cpu_fp16_accumulate.h. A is taken row by row (packed to (M, K) when transposed) and B as
// (K, N) rows (packed when transposed), so the inner loop runs along a row of C: each lane holds
// one output's running FP16 sum. The AVX2 kernel rounds with F16C's conversions (round to nearest
// even, subnormals kept); other CPUs take the scalar loop with convert.h's round_to, bit for bit
// the same.
#include "backend/cpu/cpu_fp16_accumulate.h"

#include <algorithm>
#include <cstddef>

#include "numeric/convert.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MANTISSA_F16C 1
#endif

namespace mantissa {

namespace {

inline float fp16(float x) { return round_to(Format::fp16, x); }

// One row of C: c[j] = Σ_k a[k] · b[k][j] with FP16 products and sums.
void row_scalar(const float* a, const float* b, float* c, std::int64_t n, std::int64_t k) {
    std::fill(c, c + n, 0.0f);
    for (std::int64_t kk = 0; kk < k; ++kk) {
        const float ak = a[kk];
        const float* bk = b + kk * n;
        for (std::int64_t j = 0; j < n; ++j) c[j] = fp16(c[j] + fp16(ak * bk[j]));
    }
}

#ifdef MANTISSA_F16C
__attribute__((target("avx2,f16c"))) inline __m256 round_fp16(__m256 x) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

__attribute__((target("avx2,f16c"))) void row_f16c(const float* a, const float* b, float* c, std::int64_t n,
                                                   std::int64_t k) {
    const std::int64_t vec = n - n % 8;
    std::fill(c, c + n, 0.0f);
    for (std::int64_t kk = 0; kk < k; ++kk) {
        const __m256 ak = _mm256_set1_ps(a[kk]);
        const float* bk = b + kk * n;
        for (std::int64_t j = 0; j < vec; j += 8) {
            const __m256 product = round_fp16(_mm256_mul_ps(ak, _mm256_loadu_ps(bk + j)));
            _mm256_storeu_ps(c + j, round_fp16(_mm256_add_ps(_mm256_loadu_ps(c + j), product)));
        }
        for (std::int64_t j = vec; j < n; ++j) c[j] = fp16(c[j] + fp16(a[kk] * bk[j]));
    }
}

bool has_f16c() {
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    return yes;
}
#endif

}  // namespace

void fp16_accumulate_multiply(const float* a, bool trans_a, const float* b, bool trans_b, float* c, std::int64_t m,
                              std::int64_t n, std::int64_t k, std::vector<float>& pack) {
    const auto mk = static_cast<std::size_t>(m * k), kn = static_cast<std::size_t>(k * n);
    pack.resize((trans_a ? mk : 0) + (trans_b ? kn : 0));
    float* spare = pack.data();
    if (trans_a) {  // (K, M) -> (M, K)
        for (std::int64_t kk = 0; kk < k; ++kk)
            for (std::int64_t i = 0; i < m; ++i) spare[i * k + kk] = a[kk * m + i];
        a = spare;
        spare += mk;
    }
    if (trans_b) {  // (N, K) -> (K, N)
        for (std::int64_t j = 0; j < n; ++j)
            for (std::int64_t kk = 0; kk < k; ++kk) spare[kk * n + j] = b[j * k + kk];
        b = spare;
    }
    for (std::int64_t i = 0; i < m; ++i) {
#ifdef MANTISSA_F16C
        if (has_f16c()) {
            row_f16c(a + i * k, b, c + i * n, n, k);
            continue;
        }
#endif
        row_scalar(a + i * k, b, c + i * n, n, k);
    }
}

}  // namespace mantissa
