// Timing and summaries shared by the suites. Every figure a suite prints is the median of
// repeated timed blocks taken after a warm-up; its spread is (max - min) / median over those
// blocks, in percent. Comparisons are the median of per-round ratios, each round timing the
// compared things back to back (interleaved), so a slow moment of a shared machine hits both.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

namespace mantissa::bench {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0);
double process_cpu_s();  // CPU time of every thread of this process
double thread_cpu_s();   // CPU time of the calling thread

struct Summary {
    double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;
    int count = 0;
    double spread_pct() const;  // 100 * (max - min) / median
};
Summary summarize(std::vector<double> values);  // empty: all zero
double median(std::vector<double> values);

// Runs `warmup` untimed rounds, then `rounds` rounds; each round calls every block once, in
// order (rotated by one each round so no block always follows the same one). Returns, per block,
// the seconds of each timed call.
std::vector<std::vector<double>> time_interleaved(const std::vector<std::function<void()>>& blocks, int warmup,
                                                  int rounds);

// Per-round ratios a[i] / b[i].
std::vector<double> ratios(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace mantissa::bench
