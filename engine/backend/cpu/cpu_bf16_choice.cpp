// The measured choice of CpuMatmul's path for bf16 operands (cpu_bf16_choice.h).
#include "backend/cpu/cpu_bf16_choice.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace mantissa {

namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
}

}  // namespace

Bf16MatmulChoice decide_bf16_matmul(std::vector<double> fp32_s, std::vector<double> bf16_s) {
    Bf16MatmulChoice c;
    c.available = true;
    c.fp32_ms = 1e3 * median(std::move(fp32_s));
    c.bf16_ms = 1e3 * median(std::move(bf16_s));
    c.bf16 = c.fp32_ms > 0 && c.bf16_ms > 0 && c.bf16_ms <= bf16_margin * c.fp32_ms;
    char why[96];
    std::snprintf(why, sizeof why, "measured: bf16 %.2fx the FP32 time", c.fp32_ms > 0 ? c.bf16_ms / c.fp32_ms : 0.0);
    c.why = why;
    return c;
}

Bf16MatmulChoice measure_bf16_matmul(const std::function<bool(bool bf16)>& run, int rounds) {
    using clock = std::chrono::steady_clock;
    for (int warm = 0; warm < 2; ++warm) {
        run(false);
        if (!run(true)) {
            Bf16MatmulChoice c;
            c.why = "oneDNN has no bf16 matmul on this CPU";
            return c;
        }
    }
    std::vector<double> fp32_s, bf16_s;
    const auto time = [&](bool bf16) {
        const auto t0 = clock::now();
        run(bf16);
        (bf16 ? bf16_s : fp32_s).push_back(std::chrono::duration<double>(clock::now() - t0).count());
    };
    for (int r = 0; r < rounds; ++r) {  // alternating which goes first, so neither always follows the other
        time(r % 2 != 0);
        time(r % 2 == 0);
    }
    return decide_bf16_matmul(std::move(fp32_s), std::move(bf16_s));
}

}  // namespace mantissa
