// The peak-rate loops (peak_rate.h): one function per unit, each compiled for its ISA only and
// called only where the CPU has it. Every loop keeps its accumulators in registers, each updated
// by its own chain (independent of the others), and returns their sum, which the caller stores
// into a volatile: the compiler can neither drop the loop nor fold it.
#include "bench/peak_rate.h"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>

#include "bench/bench.h"
#include "bench/stats.h"

namespace mantissa::bench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- the loops: each runs `iterations` rounds over its accumulators

// The sum of every lane of the accumulators: the result a loop returns, so that it is not optimised
// away (its value means nothing).
__attribute__((target("avx512f"))) float lanes_sum(const __m512* accumulators, int count) {
    __m512 s = _mm512_setzero_ps();
    for (int i = 0; i < count; ++i) s = _mm512_add_ps(s, accumulators[i]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, s);
    float sum = 0;
    for (float v : lanes) sum += v;
    return sum;
}

// 16 accumulators (of 32 zmm registers): FMA latency 4 cycles × 2 ports needs 8 at least.
// acc = acc·a + b converges (a < 1), so nothing overflows or goes subnormal however long it runs.
__attribute__((target("avx512f"))) float fma_avx512(std::int64_t iterations) {
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
    __m512 c0 = _mm512_set1_ps(0.0f), c1 = _mm512_set1_ps(0.01f), c2 = _mm512_set1_ps(0.02f),
           c3 = _mm512_set1_ps(0.03f), c4 = _mm512_set1_ps(0.04f), c5 = _mm512_set1_ps(0.05f),
           c6 = _mm512_set1_ps(0.06f), c7 = _mm512_set1_ps(0.07f), c8 = _mm512_set1_ps(0.08f),
           c9 = _mm512_set1_ps(0.09f), c10 = _mm512_set1_ps(0.10f), c11 = _mm512_set1_ps(0.11f),
           c12 = _mm512_set1_ps(0.12f), c13 = _mm512_set1_ps(0.13f), c14 = _mm512_set1_ps(0.14f),
           c15 = _mm512_set1_ps(0.15f);
    for (std::int64_t i = 0; i < iterations; ++i) {
        c0 = _mm512_fmadd_ps(c0, a, b), c1 = _mm512_fmadd_ps(c1, a, b), c2 = _mm512_fmadd_ps(c2, a, b);
        c3 = _mm512_fmadd_ps(c3, a, b), c4 = _mm512_fmadd_ps(c4, a, b), c5 = _mm512_fmadd_ps(c5, a, b);
        c6 = _mm512_fmadd_ps(c6, a, b), c7 = _mm512_fmadd_ps(c7, a, b), c8 = _mm512_fmadd_ps(c8, a, b);
        c9 = _mm512_fmadd_ps(c9, a, b), c10 = _mm512_fmadd_ps(c10, a, b), c11 = _mm512_fmadd_ps(c11, a, b);
        c12 = _mm512_fmadd_ps(c12, a, b), c13 = _mm512_fmadd_ps(c13, a, b), c14 = _mm512_fmadd_ps(c14, a, b);
        c15 = _mm512_fmadd_ps(c15, a, b);
    }
    const __m512 all[] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15};
    return lanes_sum(all, 16);
}

// 12 accumulators and the two constants in 14 of the 16 ymm registers.
__attribute__((target("avx2,fma"))) float fma_avx2(std::int64_t iterations) {
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
    __m256 c0 = _mm256_set1_ps(0.0f), c1 = _mm256_set1_ps(0.01f), c2 = _mm256_set1_ps(0.02f),
           c3 = _mm256_set1_ps(0.03f), c4 = _mm256_set1_ps(0.04f), c5 = _mm256_set1_ps(0.05f),
           c6 = _mm256_set1_ps(0.06f), c7 = _mm256_set1_ps(0.07f), c8 = _mm256_set1_ps(0.08f),
           c9 = _mm256_set1_ps(0.09f), c10 = _mm256_set1_ps(0.10f), c11 = _mm256_set1_ps(0.11f);
    for (std::int64_t i = 0; i < iterations; ++i) {
        c0 = _mm256_fmadd_ps(c0, a, b), c1 = _mm256_fmadd_ps(c1, a, b), c2 = _mm256_fmadd_ps(c2, a, b);
        c3 = _mm256_fmadd_ps(c3, a, b), c4 = _mm256_fmadd_ps(c4, a, b), c5 = _mm256_fmadd_ps(c5, a, b);
        c6 = _mm256_fmadd_ps(c6, a, b), c7 = _mm256_fmadd_ps(c7, a, b), c8 = _mm256_fmadd_ps(c8, a, b);
        c9 = _mm256_fmadd_ps(c9, a, b), c10 = _mm256_fmadd_ps(c10, a, b), c11 = _mm256_fmadd_ps(c11, a, b);
    }
    const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                                   _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)),
                                                 _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11))));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    float sum = 0;
    for (float v : lanes) sum += v;
    return sum;
}

// 16 accumulators of vdpbf16ps (latency about 5 cycles). Each adds 32 products of 2^-10 · 2^-10:
// exact, and far from overflow for any run this short.
__attribute__((target("avx512f,avx512bf16"))) float dot_bf16_avx512(std::int64_t iterations) {
    const __m512 small = _mm512_set1_ps(0.0009765625f);
    const __m512bh x = _mm512_cvtne2ps_pbh(small, small);
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0,
           c9 = c0, c10 = c0, c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0;
    for (std::int64_t i = 0; i < iterations; ++i) {
        c0 = _mm512_dpbf16_ps(c0, x, x), c1 = _mm512_dpbf16_ps(c1, x, x), c2 = _mm512_dpbf16_ps(c2, x, x);
        c3 = _mm512_dpbf16_ps(c3, x, x), c4 = _mm512_dpbf16_ps(c4, x, x), c5 = _mm512_dpbf16_ps(c5, x, x);
        c6 = _mm512_dpbf16_ps(c6, x, x), c7 = _mm512_dpbf16_ps(c7, x, x), c8 = _mm512_dpbf16_ps(c8, x, x);
        c9 = _mm512_dpbf16_ps(c9, x, x), c10 = _mm512_dpbf16_ps(c10, x, x), c11 = _mm512_dpbf16_ps(c11, x, x);
        c12 = _mm512_dpbf16_ps(c12, x, x), c13 = _mm512_dpbf16_ps(c13, x, x), c14 = _mm512_dpbf16_ps(c14, x, x);
        c15 = _mm512_dpbf16_ps(c15, x, x);
    }
    const __m512 all[] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15};
    return lanes_sum(all, 16);
}

// AMX: four 16×16 FP32 accumulator tiles (0-3), fed by two A tiles (4, 5) and two B tiles (6, 7)
// of 16 rows × 32 bf16, the blocking oneDNN uses. Compiled here but never run: the machine this
// was written on has no AMX, so only its arithmetic (16384 FLOPs a tdpbf16ps) is checked by hand.
struct TileConfig {
    std::uint8_t palette = 1;
    std::uint8_t start_row = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t colsb[16] = {};  // bytes per row
    std::uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-bf16"))) float amx_bf16(std::int64_t iterations) {
    TileConfig cfg;
    for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
    alignas(64) std::uint16_t operand[16 * 32];
    std::fill(std::begin(operand), std::end(operand), std::uint16_t{0x3a80});  // bf16 2^-10
    alignas(64) float out[16 * 16];
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, operand, 64);
    _tile_loadd(5, operand, 64);
    _tile_loadd(6, operand, 64);
    _tile_loadd(7, operand, 64);
    for (std::int64_t i = 0; i < iterations; ++i) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    float sum = 0;
    _tile_stored(0, out, 64);
    for (float v : out) sum += v;
    _tile_stored(3, out, 64);
    for (float v : out) sum += v;
    _tile_release();
    return sum;
}

// ---- what each unit is

// The CPU's features, read once (__builtin_cpu_supports takes only a literal).
struct Features {
    bool avx2, fma, avx512f, avx512bf16, avx512fp16, amx_tile, amx_bf16;
};
const Features& features() {
    static const Features f = [] {
        __builtin_cpu_init();
        return Features{__builtin_cpu_supports("avx2") != 0,       __builtin_cpu_supports("fma") != 0,
                        __builtin_cpu_supports("avx512f") != 0,    __builtin_cpu_supports("avx512bf16") != 0,
                        __builtin_cpu_supports("avx512fp16") != 0, __builtin_cpu_supports("amx-tile") != 0,
                        __builtin_cpu_supports("amx-bf16") != 0};
    }();
    return f;
}

bool has_avx512f() { return features().avx512f; }
bool has_avx2_fma() { return features().avx2 && features().fma; }

// Linux hands out the AMX tile state only on request, once per process (arch_prctl).
bool amx_permitted() {
    static std::once_flag once;
    static bool granted = false;
    std::call_once(once, [] {
        constexpr long kReqXcompPerm = 0x1023, kXfeatureTileData = 18;
        granted = syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0;
    });
    return granted;
}

// FLOPs per loop iteration on one thread.
double flops_per_iteration(PeakUnit unit) {
    switch (unit) {
    case PeakUnit::fp32_fma: return has_avx512f() ? 16.0 * 16 * 2 : 12.0 * 8 * 2;
    case PeakUnit::bf16_dot: return 16.0 * 64;
    case PeakUnit::amx_bf16: return 4.0 * 16 * 16 * 32 * 2;
    }
    return 0;
}

float run_loop(PeakUnit unit, std::int64_t iterations) {
    switch (unit) {
    case PeakUnit::fp32_fma: return has_avx512f() ? fma_avx512(iterations) : fma_avx2(iterations);
    case PeakUnit::bf16_dot: return dot_bf16_avx512(iterations);
    case PeakUnit::amx_bf16: return amx_bf16(iterations);
    }
    return 0;
}

volatile float g_sink;  // the loops' results land here, so they are computed

// Seconds for `threads` copies of the loop started together, until the last one ends.
double timed_run(PeakUnit unit, int threads, std::int64_t iterations) {
    if (threads <= 1) {
        const auto t0 = Clock::now();
        g_sink = run_loop(unit, iterations);
        return seconds_since(t0);
    }
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    std::vector<float> results(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            results[static_cast<std::size_t>(t)] = run_loop(unit, iterations);
        });
    while (ready.load() < threads) std::this_thread::yield();
    const auto t0 = Clock::now();
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    const double s = seconds_since(t0);
    float sum = 0;
    for (float r : results) sum += r;
    g_sink = sum;
    return s;
}

}  // namespace

std::string unit_name(PeakUnit unit) {
    switch (unit) {
    case PeakUnit::fp32_fma: return has_avx512f() ? "FP32 FMA AVX-512" : "FP32 FMA AVX2";
    case PeakUnit::bf16_dot: return "BF16 dot AVX-512";
    case PeakUnit::amx_bf16: return "AMX BF16";
    }
    return "?";
}

std::string unit_missing(PeakUnit unit) {
    switch (unit) {
    case PeakUnit::fp32_fma: return has_avx512f() || has_avx2_fma() ? "" : "not on this CPU (no AVX2 with FMA)";
    case PeakUnit::bf16_dot: return has_avx512f() && features().avx512bf16 ? "" : "not on this CPU";
    case PeakUnit::amx_bf16:
        if (!features().amx_tile || !features().amx_bf16) return "not on this CPU";
        return amx_permitted() ? "" : "the kernel refused the AMX tile state (arch_prctl)";
    }
    return "?";
}

std::string vector_extensions() {
    const Features& f = features();
    std::string s;
    const auto add = [&](bool present, const char* name) {
        if (present) s += (s.empty() ? "" : ", ") + std::string(name);
    };
    add(f.avx2, "AVX2");
    add(f.fma, "FMA");
    add(f.avx512f, "AVX-512F");
    add(f.avx512bf16, "AVX-512 BF16");
    add(f.avx512fp16, "AVX-512 FP16");
    add(f.amx_bf16, "AMX BF16");
    add(!f.amx_bf16, "no AMX");
    return s;
}

PeakMeasurement measure_peak(PeakUnit unit, int threads, int repetitions, double seconds) {
    PeakMeasurement m;
    m.repetitions = std::max(1, repetitions);
    if (!unit_missing(unit).empty()) {
        m.gflops = kNaN;
        return m;
    }
    threads = std::max(1, threads);
    // Iterations for `seconds` on one thread, from a short run after a warm-up (which also brings
    // the core to the clock it keeps under this load).
    std::int64_t iterations = 1 << 14;
    timed_run(unit, 1, iterations);
    for (;;) {
        const double s = timed_run(unit, 1, iterations);
        if (s >= 0.002 || iterations > (std::int64_t{1} << 40)) {
            iterations = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(iterations) * seconds /
                                                                              std::max(s, 1e-9)));
            break;
        }
        iterations *= 8;
    }
    std::vector<double> rates;
    for (int r = 0; r < m.repetitions; ++r) {
        const double s = timed_run(unit, threads, iterations);
        rates.push_back(flops_per_iteration(unit) * static_cast<double>(iterations) * threads / s / 1e9);
    }
    const Summary sm = summarize(rates);
    m.gflops = sm.median;
    m.spread_pct = sm.spread_pct();
    return m;
}

double PeakRates::bf16() const {
    if (std::isfinite(amx_bf16) && amx_bf16 > 0) return amx_bf16;
    if (std::isfinite(bf16_dot) && bf16_dot > 0) return bf16_dot;
    return fp32_fma;
}

double limit_gflops(const PeakRates& peaks, double flops, double bf16_flops, int threads) {
    if (!(flops > 0) || threads < 1) return kNaN;
    const double fp32_flops = flops - bf16_flops;
    double seconds = 0;  // at the peaks, for the whole step, in units of 1e-9 s
    if (fp32_flops > 0) seconds += fp32_flops / (peaks.fp32_fma * threads);
    if (bf16_flops > 0) seconds += bf16_flops / (peaks.bf16() * threads);
    const double limit = flops / seconds;
    return std::isfinite(limit) && limit > 0 ? limit : kNaN;
}

Table limits_table(const std::vector<int>& thread_counts, bool quick, PeakRates& peaks) {
    std::vector<int> counts = {1};  // the one-thread peaks are what limits are made of
    for (int n : thread_counts)
        if (n > 1 && std::find(counts.begin(), counts.end(), n) == counts.end()) counts.push_back(n);
    Table t;
    t.name = "limits";
    const nlohmann::json machine = machine_info();
    t.title = "Peak rates measured in this run (hand-written loops of independent multiply-adds): " +
              machine.value("cpu", std::string("?")) + "; " + vector_extensions();
    t.columns = {{"unit", "unit"},
                 {"threads", "threads"},
                 {"gflops", "GFLOP/s", "GFLOP/s", 1},
                 {"per_thread_gflops", "per thread", "GFLOP/s", 1},
                 {"spread_pct", "spread", "%", 0, "%"},
                 {"note", "note"}};
    const int repetitions = quick ? 3 : 7;
    const double seconds = quick ? 0.02 : 0.04;
    peaks = {kNaN, kNaN, kNaN};
    for (PeakUnit unit : {PeakUnit::fp32_fma, PeakUnit::bf16_dot, PeakUnit::amx_bf16}) {
        const std::string missing = unit_missing(unit);
        if (!missing.empty()) {
            t.rows.push_back({{"unit", unit_name(unit)},
                              {"threads", nullptr},
                              {"gflops", nullptr},
                              {"per_thread_gflops", nullptr},
                              {"spread_pct", nullptr},
                              {"note", missing}});
            continue;
        }
        for (int threads : counts) {
            const PeakMeasurement m = measure_peak(unit, threads, repetitions, seconds);
            if (threads == 1) {
                if (unit == PeakUnit::fp32_fma) peaks.fp32_fma = m.gflops;
                if (unit == PeakUnit::bf16_dot) peaks.bf16_dot = m.gflops;
                if (unit == PeakUnit::amx_bf16) peaks.amx_bf16 = m.gflops;
            }
            t.rows.push_back({{"unit", unit_name(unit)},
                              {"threads", threads},
                              {"gflops", number_or_null(m.gflops)},
                              {"per_thread_gflops", number_or_null(m.gflops / threads)},
                              {"spread_pct", number_or_null(m.spread_pct)},
                              {"note", ""}});
        }
    }
    t.notes.push_back("FLOPs: 2 per lane of each FMA (16 FP32 lanes in AVX-512, 8 in AVX2); vdpbf16ps 64 (32 bf16 "
                      "pairs into 16 FP32 lanes); AMX tdpbf16ps 16384 (16x16 FP32 outputs, 32 pairs each)");
    t.notes.push_back("median of " + std::to_string(repetitions) + " runs of about " +
                      std::to_string(static_cast<int>(seconds * 1000)) +
                      " ms; N threads run N copies of the loop at once, their FLOPs over the time to the last one's end");
    t.notes.push_back("the limit a step is held against: the one-thread figure x its threads (FP32 FMA for matmuls "
                      "oneDNN runs in FP32, BF16 (AMX where present, else the dot product) for those on bf16 operands)");
    return t;
}

}  // namespace mantissa::bench
