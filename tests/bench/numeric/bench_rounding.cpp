// bench_numeric: how fast round_array rounds fp32 arrays to each format, in elements per second on
// one thread, for an array that stays in cache (64 Ki floats) and one that streams from memory
// (16 Mi floats), against the scalar round_to loop measured in the same run. Each figure is the
// median of repeated timed blocks after a warm-up; blocks of the formats are interleaved, so a noisy
// neighbour slows all of them alike. The aim: at least 1 G elements/s per core for fp16 and bf16.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "numeric/convert.h"

using namespace mantissa;
using Clock = std::chrono::steady_clock;

namespace {

struct Stats {
    std::vector<double> rates;  // elements/s per block
    double median() {
        std::sort(rates.begin(), rates.end());
        return rates[rates.size() / 2];
    }
    double spread() {  // (max - min) / median, as a fraction
        std::sort(rates.begin(), rates.end());
        return (rates.back() - rates.front()) / median();
    }
};

// Values spread over many binades, some beyond each format's range, as gradients are.
std::vector<float> make_input(std::size_t n) {
    std::mt19937 rng(7);
    std::normal_distribution<float> mant(0.0f, 1.0f);
    std::uniform_int_distribution<int> exp(-30, 20);
    std::vector<float> v(n);
    for (auto& x : v) x = std::ldexp(mant(rng), exp(rng));
    return v;
}

double time_block(Format f, std::vector<float>& work, const std::vector<float>& input, int reps, bool scalar) {
    double seconds = 0;
    for (int r = 0; r < reps; ++r) {
        std::copy(input.begin(), input.end(), work.begin());  // fresh values each time, not timed
        const auto t0 = Clock::now();
        if (scalar) {
            for (auto& x : work) x = round_to(f, x);
        } else {
            round_array(f, work.data(), work.size());
        }
        seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    return static_cast<double>(work.size()) * reps / seconds;
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
    const int blocks = quick ? 3 : 11;
    const Format formats[] = {Format::tf32, Format::fp16, Format::bf16, Format::fp8_e4m3, Format::fp8_e5m2};
    std::printf("Rounding fp32 arrays in place, one thread; median of %d blocks (spread = (max-min)/median)\n\n", blocks);
    std::printf("%-10s %14s %8s %14s %8s %14s %9s\n", "format", "cache G el/s", "spread", "memory G el/s", "spread",
                "scalar G el/s", "speedup");
    const std::size_t small_n = std::size_t{1} << 16, large_n = std::size_t{1} << 24;
    const auto small_in = make_input(small_n), large_in = make_input(large_n);
    std::vector<float> small_work(small_n), large_work(large_n);
    const int small_reps = quick ? 20 : 200, large_reps = quick ? 1 : 3;

    Stats cache[5], memory[5], scalar[5];
    for (int b = -1; b < blocks; ++b) {  // block -1 is the warm-up
        for (int k = 0; k < 5; ++k) {
            const double c = time_block(formats[k], small_work, small_in, small_reps, false);
            const double m = time_block(formats[k], large_work, large_in, large_reps, false);
            const double s = time_block(formats[k], small_work, small_in, quick ? 2 : 10, true);
            if (b >= 0) {
                cache[k].rates.push_back(c);
                memory[k].rates.push_back(m);
                scalar[k].rates.push_back(s);
            }
        }
    }
    for (int k = 0; k < 5; ++k) {
        const double c = cache[k].median(), m = memory[k].median(), s = scalar[k].median();
        std::printf("%-10s %14.2f %7.0f%% %14.2f %7.0f%% %14.3f %8.1fx\n", std::string(format_name(formats[k])).c_str(),
                    c / 1e9, cache[k].spread() * 100, m / 1e9, memory[k].spread() * 100, s / 1e9, c / s);
    }
    return 0;
}
