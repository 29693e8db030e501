// The `numeric` suite: how fast round_array rounds fp32 arrays to each format, in elements per
// second on one thread, for an array that stays in cache (64 Ki floats) and one that streams from
// memory (16 Mi floats; 4 Mi with --quick), against the scalar round_to loop in the same rounds.
// Values spread over many binades, some beyond each format's range, as gradients are. Every
// format's blocks are interleaved; the speed-up is the median of per-round ratios. A second table
// times the block-scaled formats' fake quantisation (round_blocks_along) of an in-cache matrix of
// 256 × 256 values, along its rows (contiguous blocks: the forward's operands) and along its
// columns (strided blocks: the backward's), in elements per second on one thread. A third table
// is a measurement of error, not of time: dot products of K fp16 values accumulated in FP16 (the
// CPU backend's exact emulation) and in FP32 (oneDNN), against FP64, as K grows.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "backend/cpu/cpu_fp16_accumulate.h"
#include "backend/cpu/cpu_matmul.h"
#include "bench/stats.h"
#include "numeric/block_format.h"
#include "numeric/convert.h"
#include "numeric/stochastic_round.h"

namespace mantissa::bench {

namespace {

std::vector<float> make_input(std::size_t n) {
    std::mt19937 rng(7);
    std::normal_distribution<float> mant(0.0f, 1.0f);
    std::uniform_int_distribution<int> exp(-30, 20);
    std::vector<float> v(n);
    for (auto& x : v) x = std::ldexp(mant(rng), exp(rng));
    return v;
}

// Rounds `reps` fresh copies of `input`; returns the seconds spent rounding (copies not timed).
double round_block(Format f, std::vector<float>& work, const std::vector<float>& input, int reps, bool scalar) {
    double seconds = 0;
    for (int r = 0; r < reps; ++r) {
        std::copy(input.begin(), input.end(), work.begin());
        const auto t0 = Clock::now();
        if (scalar) {
            for (auto& x : work) x = round_to(f, x);
        } else {
            round_array(f, work.data(), work.size());
        }
        seconds += seconds_since(t0);
    }
    return seconds;
}

// round_blocks_along over a (side, side) matrix, `reps` times on fresh copies: along rows (inner
// = 1) or along columns (inner = side). Returns elements per second.
// stochastic: round_blocks_along_stochastic along rows (the tensor scale 1; only NVFP4 uses one).
double block_rate(BlockFormat f, std::vector<float>& work, const std::vector<float>& input, std::size_t side,
                  bool columns, int reps, bool stochastic = false) {
    double seconds = 0;
    for (int r = 0; r < reps; ++r) {
        std::copy(input.begin(), input.end(), work.begin());
        const auto t0 = Clock::now();
        if (stochastic)
            round_blocks_along_stochastic(f, work.data(), work.data(), side, side, 1, 1.0f,
                                          stochastic_key(1, static_cast<std::uint64_t>(r)));
        else if (columns)
            round_blocks_along(f, work.data(), work.data(), 1, side, side);
        else
            round_blocks_along(f, work.data(), work.data(), side, side, 1);
        seconds += seconds_since(t0);
    }
    return static_cast<double>(input.size()) * reps / seconds;
}

Table block_table(const BenchOptions& o) {
    const std::size_t side = 256;
    const auto input = make_input(side * side);
    std::vector<float> work(input.size());
    const int reps = o.quick ? 3 : 20, rounds = o.blocks_or(7, 3);
    const std::size_t n = all_block_formats.size();
    std::vector<std::vector<double>> rows(n), cols(n), stochastic(n);
    std::vector<std::function<void()>> blocks;
    for (std::size_t k = 0; k < n; ++k)
        blocks.push_back([&, k] {
            rows[k].push_back(block_rate(all_block_formats[k], work, input, side, false, reps));
            cols[k].push_back(block_rate(all_block_formats[k], work, input, side, true, reps));
            stochastic[k].push_back(block_rate(all_block_formats[k], work, input, side, false, reps, true));
        });
    time_interleaved(blocks, 1, rounds);
    Table t;
    t.name = "block_quantisation";
    t.title = "round_blocks_along (quantise and decode) of 256 x 256 floats in cache, along rows and along columns, "
              "and rounding its elements stochastically along rows "
              "(median of " + std::to_string(rounds) + " interleaved blocks)";
    t.columns = {{"format", "format"},
                 {"rows_mel_s", "along rows M el/s", "1e6 elements/s", 1},
                 {"rows_spread_pct", "spread", "%", 0, "%"},
                 {"cols_mel_s", "along columns M el/s", "1e6 elements/s", 1},
                 {"cols_spread_pct", "spread", "%", 0, "%"},
                 {"stochastic_mel_s", "stochastic, rows M el/s", "1e6 elements/s", 1},
                 {"stochastic_spread_pct", "spread", "%", 0, "%"}};
    for (std::size_t k = 0; k < n; ++k) {
        for (auto* v : {&rows[k], &cols[k], &stochastic[k]}) v->erase(v->begin());  // the warm-up round
        const Summary a = summarize(rows[k]), b = summarize(cols[k]), c = summarize(stochastic[k]);
        t.rows.push_back({{"format", std::string(block_format_name(all_block_formats[k]))},
                          {"rows_mel_s", a.median / 1e6},
                          {"rows_spread_pct", a.spread_pct()},
                          {"cols_mel_s", b.median / 1e6},
                          {"cols_spread_pct", b.spread_pct()},
                          {"stochastic_mel_s", c.median / 1e6},
                          {"stochastic_spread_pct", c.spread_pct()}});
    }
    return t;
}

// The median relative error, over `trials` dot products of k fp16 values, of FP16 and of FP32
// accumulation against FP64: positive values (uniform in [0, 1): the sum only grows, and swamping
// shows) or zero-mean ones (normal: the sum wanders).
struct AccumulationError {
    double fp16 = 0, fp32 = 0;
};
AccumulationError accumulation_error(std::int64_t k, bool positive, int trials) {
    std::mt19937 rng(static_cast<unsigned>(k) * 2 + positive);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    CpuMatmul fp32;
    fp32.set_threads(1);
    std::vector<float> a(static_cast<std::size_t>(k)), b(static_cast<std::size_t>(k)), pack;
    std::vector<double> e16, e32;
    for (int t = 0; t < trials; ++t) {
        for (auto* v : {&a, &b})
            for (float& x : *v) x = round_to(Format::fp16, positive ? uniform(rng) : normal(rng));
        double exact = 0, magnitude = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
            exact += double(a[i]) * b[i];
            magnitude += std::fabs(double(a[i]) * b[i]);
        }
        float c16 = 0, c32 = 0;
        fp16_accumulate_multiply(a.data(), false, b.data(), false, &c16, 1, 1, k, pack);
        fp32.multiply(a.data(), false, b.data(), false, &c32, 1, 1, k);
        // Relative to Σ|a·b|: a zero-mean sum's own size can be near zero.
        e16.push_back(std::fabs(c16 - exact) / magnitude);
        e32.push_back(std::fabs(c32 - exact) / magnitude);
    }
    return {median(e16), median(e32)};
}

Table accumulation_table(const BenchOptions& o) {
    const int trials = o.quick ? 8 : 64;
    Table t;
    t.name = "fp16_accumulation";
    t.title = "dot products of K fp16 values: error against FP64 of FP16 and FP32 accumulation, relative to "
              "the sum of |products| (median of " + std::to_string(trials) + " draws)";
    t.columns = {{"k", "K"},
                 {"positive_fp16", "uniform [0,1): FP16 acc", "relative error", 6},
                 {"positive_fp32", "FP32 acc", "relative error", 9},
                 {"normal_fp16", "normal: FP16 acc", "relative error", 6},
                 {"normal_fp32", "FP32 acc", "relative error", 9}};
    for (std::int64_t k : {16, 64, 256, 1024, 4096, 16384}) {
        const AccumulationError p = accumulation_error(k, true, trials), z = accumulation_error(k, false, trials);
        t.rows.push_back({{"k", k},
                          {"positive_fp16", p.fp16},
                          {"positive_fp32", p.fp32},
                          {"normal_fp16", z.fp16},
                          {"normal_fp32", z.fp32}});
    }
    t.notes.push_back("FP16 accumulation is the in-order binary16 sum (engine/backend/cpu/cpu_fp16_accumulate.h); "
                      "a running sum 2^11 times a product no longer takes it, so positive sums stop growing");
    return t;
}

}  // namespace

SuiteResult run_numeric_suite(const BenchOptions& o) {
    const auto t0 = Clock::now();
    SuiteResult r;
    r.name = "numeric";
    r.title = "rounding fp32 arrays in place to each format, elements/s on one thread";
    const Format formats[] = {Format::tf32, Format::fp16, Format::bf16, Format::fp8_e4m3, Format::fp8_e5m2};
    const std::size_t small_n = std::size_t{1} << 16, large_n = std::size_t{1} << (o.quick ? 22 : 24);
    const int small_reps = o.quick ? 20 : 200, large_reps = o.quick ? 1 : 3, scalar_reps = o.quick ? 2 : 10;
    const auto small_in = make_input(small_n), large_in = make_input(large_n);
    std::vector<float> small_work(small_n), large_work(large_n);
    const int rounds = o.blocks_or(11, 3);

    std::vector<std::function<void()>> blocks;
    std::vector<std::vector<double>> cache(5), memory(5), scalar(5);
    for (int k = 0; k < 5; ++k)
        blocks.push_back([&, k] {
            const Format f = formats[k];
            cache[k].push_back(static_cast<double>(small_n) * small_reps / round_block(f, small_work, small_in, small_reps, false));
            memory[k].push_back(static_cast<double>(large_n) * large_reps / round_block(f, large_work, large_in, large_reps, false));
            scalar[k].push_back(static_cast<double>(small_n) * scalar_reps / round_block(f, small_work, small_in, scalar_reps, true));
        });
    o.say("numeric: " + std::to_string(rounds) + " rounds");
    time_interleaved(blocks, 1, rounds);

    Table t;
    t.name = "rounding";
    t.title = "round_array vs the scalar round_to loop (median of " + std::to_string(rounds) +
              " interleaved blocks; G el/s = 10^9 elements/s)";
    t.columns = {{"format", "format"},
                 {"cache_gel_s", "in cache G el/s", "1e9 elements/s", 2},
                 {"cache_spread_pct", "spread", "%", 0, "%"},
                 {"memory_gel_s", "from memory G el/s", "1e9 elements/s", 2},
                 {"memory_spread_pct", "spread", "%", 0, "%"},
                 {"scalar_gel_s", "scalar G el/s", "1e9 elements/s", 3},
                 {"speedup", "vs scalar", "ratio", 1, "x"}};
    for (int k = 0; k < 5; ++k) {
        // Drop the warm-up round's values.
        for (auto* v : {&cache[k], &memory[k], &scalar[k]}) v->erase(v->begin());
        const Summary c = summarize(cache[k]), m = summarize(memory[k]), s = summarize(scalar[k]);
        t.rows.push_back({{"format", std::string(format_name(formats[k]))},
                          {"cache_gel_s", c.median / 1e9},
                          {"cache_spread_pct", c.spread_pct()},
                          {"memory_gel_s", m.median / 1e9},
                          {"memory_spread_pct", m.spread_pct()},
                          {"scalar_gel_s", s.median / 1e9},
                          {"speedup", median(ratios(cache[k], scalar[k]))},
                          {"cache_elements", small_n},
                          {"memory_elements", large_n}});
    }
    t.notes.push_back("in cache: " + std::to_string(small_n) + " floats; from memory: " + std::to_string(large_n) +
                      " floats; aim: >= 1 G el/s per core for fp16 and bf16");
    r.tables.push_back(std::move(t));
    r.tables.push_back(block_table(o));
    r.tables.push_back(accumulation_table(o));
    r.seconds = seconds_since(t0);
    return r;
}

}  // namespace mantissa::bench
