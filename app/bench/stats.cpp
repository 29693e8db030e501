// Timing helpers and summaries: see stats.h.
#include "bench/stats.h"

#include <algorithm>
#include <ctime>

namespace mantissa::bench {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

static double cpu_clock(clockid_t id) {
    timespec t{};
    clock_gettime(id, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double process_cpu_s() { return cpu_clock(CLOCK_PROCESS_CPUTIME_ID); }
double thread_cpu_s() { return cpu_clock(CLOCK_THREAD_CPUTIME_ID); }

double Summary::spread_pct() const { return median > 0 ? 100.0 * (max - min) / median : 0.0; }

static double quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0;
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

Summary summarize(std::vector<double> v) {
    Summary s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.count = static_cast<int>(v.size());
    s.min = v.front();
    s.max = v.back();
    s.median = quantile(v, 0.5);
    s.q1 = quantile(v, 0.25);
    s.q3 = quantile(v, 0.75);
    return s;
}

double median(std::vector<double> v) { return summarize(std::move(v)).median; }

std::vector<std::vector<double>> time_interleaved(const std::vector<std::function<void()>>& blocks, int warmup,
                                                  int rounds) {
    const std::size_t n = blocks.size();
    std::vector<std::vector<double>> seconds(n);
    for (int r = -warmup; r < rounds; ++r) {
        const std::size_t shift = static_cast<std::size_t>(r + warmup) % std::max<std::size_t>(n, 1);
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t b = (i + shift) % n;
            const auto t0 = Clock::now();
            blocks[b]();
            const double s = seconds_since(t0);
            if (r >= 0) seconds[b].push_back(s);
        }
    }
    return seconds;
}

std::vector<double> ratios(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> out;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        if (b[i] > 0) out.push_back(a[i] / b[i]);
    return out;
}

}  // namespace mantissa::bench
