// bench_engine: what a training step costs per precision on the CPU backend.
//
// The reference experiment (Fashion-MNIST 784-256-128-10, relu, AdamW lr 1e-3, batch 128, layer
// statistics every step), one Trainer per precision, all built first and warmed up; then
// `rounds` rounds, each timing a block of `block` steps of every precision in turn (interleaved,
// so a slow moment of the machine hits all of them alike). Printed: the median step time over the
// rounds, samples/s, the ratio to fp32 and the spread (min..max of the rounds); and the median
// process CPU time per step with its ratio (steadier than the wall clock on a busy machine).
// A second table times oneDNN's matmul on the reference shapes in fp32 and in bf16 with FP32
// accumulation: the bf16 path is taken only where it is faster (cpu_matmul.h).
//
// Usage: bench_engine [--rounds N] [--block N] [--threads N] [--batch N] [--only FORMAT]
// (--only times one precision alone, for profiling.)
// Without Fashion-MNIST at /usr/share/datasets/fashion-mnist, random data of the same shape.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "data/dataset.h"
#include "model/init.h"
#include "train/trainer.h"

using namespace mantissa;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the whole process (all threads): on a shared machine it shows the work done, where
// the wall clock also shows the waiting.
double process_cpu_s() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The first `rows` training rows of Fashion-MNIST (speed does not depend on the set's size), or
// random data of its shape.
Dataset reference_data(std::int64_t rows) {
    Dataset d;
    try {
        DatasetSpec spec;  // fashion-mnist at its default path
        d = load_dataset(spec, 1);
        if (d.name != "fashion-mnist") throw std::runtime_error("fallback");
        d.train.rows = std::min(d.train.rows, rows);
        d.train.x.resize(static_cast<std::size_t>(d.train.rows * d.features));
        d.train.y.resize(static_cast<std::size_t>(d.train.rows));
        return d;
    } catch (const std::exception&) {
        std::printf("(Fashion-MNIST not found: random data of its shape)\n");
    }
    d = Dataset{};
    d.name = "random-784";
    d.features = 784;
    d.classes = d.outputs = 10;
    Rng rng(7);
    for (Split* s : {&d.train, &d.test}) {
        s->rows = s == &d.train ? rows : 1000;
        s->x.resize(static_cast<std::size_t>(s->rows * 784));
        s->y.resize(static_cast<std::size_t>(s->rows));
        for (auto& v : s->x) v = 2 * rng.uniform() - 1;
        for (auto& v : s->y) v = static_cast<std::int32_t>(rng.next() % 10);
    }
    return d;
}

struct Config {
    const char* name;
    Autocast autocast;
    LayerPrecision layers;
    LossScalingMode scaling;
};

std::unique_ptr<Backend> cpu_backend(int threads) {
    auto b = std::make_unique<CpuBackend>();
    if (threads > 0) b->matmul().set_threads(threads);
    return b;
}

void matmul_table(int threads) {
    CpuMatmul mm;
    if (threads > 0) mm.set_threads(threads);
    struct Shape { const char* what; std::int64_t m, n, k; bool ta, tb; };
    const Shape shapes[] = {{"fc1 forward  128x784 . 784x256", 128, 256, 784, false, true},
                            {"fc1 dW       256x128 . 128x784", 256, 784, 128, true, false},
                            {"fc2 forward  128x256 . 256x128", 128, 128, 256, false, true}};
    std::printf("\noneDNN matmul, ms per call (median of 15 x 20 calls); bf16 path enabled here: %s\n"
                "(n/a: this oneDNN has no bf16 matmul for this CPU)\n",
                CpuMatmul::cpu_has_fast_bf16() ? "yes" : "no");
    std::printf("%-34s %10s %10s %8s\n", "shape", "fp32", "bf16", "bf16/fp32");
    for (const Shape& s : shapes) {
        std::vector<float> a(static_cast<std::size_t>(s.m * s.k), 0.5f), b(static_cast<std::size_t>(s.k * s.n), 0.25f),
            c(static_cast<std::size_t>(s.m * s.n));
        double t[2] = {0, 0};
        for (int bf = 0; bf < 2; ++bf) {
            mm.set_bf16_enabled(bf == 1);
            try {
                std::vector<double> times;
                for (int r = 0; r < 15; ++r) {
                    const auto t0 = Clock::now();
                    for (int i = 0; i < 20; ++i)
                        mm.multiply(a.data(), s.ta, b.data(), s.tb, c.data(), s.m, s.n, s.k, true);
                    times.push_back(seconds_since(t0) / 20 * 1e3);
                }
                // A CpuMatmul without a bf16 primitive here falls back to fp32 and says so.
                t[bf] = bf == 1 && !mm.bf16_enabled() ? -1 : median(times);
            } catch (const std::exception& e) {
                t[bf] = -1;
                if (!bf) std::printf("  (fp32: %s)\n", e.what());
            }
        }
        if (t[1] > 0)
            std::printf("%-34s %10.3f %10.3f %8.2f\n", s.what, t[0], t[1], t[1] / t[0]);
        else
            std::printf("%-34s %10.3f %10s %8s\n", s.what, t[0], "n/a", "-");
    }
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 9, block = 20, threads = 0, batch = 128;
    std::string only;
    for (int i = 1; i + 1 < argc; i += 2) {
        const int v = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
        if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, v);
        else if (!std::strcmp(argv[i], "--block")) block = std::max(1, v);
        else if (!std::strcmp(argv[i], "--threads")) threads = v;
        else if (!std::strcmp(argv[i], "--batch")) batch = std::max(1, v);
    }
    std::vector<Config> configs = {
        {"fp32", Autocast::off, LayerPrecision::automatic, LossScalingMode::off},
        {"tf32", Autocast::off, LayerPrecision::tf32, LossScalingMode::off},
        {"fp16", Autocast::fp16, LayerPrecision::automatic, LossScalingMode::dynamic},
        {"bf16", Autocast::bf16, LayerPrecision::automatic, LossScalingMode::off},
        {"fp8", Autocast::bf16, LayerPrecision::fp8_e4m3, LossScalingMode::off},
    };
    if (!only.empty()) {
        std::erase_if(configs, [&](const Config& c) { return only != c.name; });
        if (configs.empty()) {
            std::fprintf(stderr, "bench_engine: --only takes fp32, tf32, fp16, bf16 or fp8\n");
            return 2;
        }
    }
    const Dataset data = reference_data(10000);
    std::vector<std::unique_ptr<Trainer>> trainers;
    for (const Config& c : configs) {
        Experiment e;
        e.backend = "cpu";
        e.train.batch_size = batch;
        e.train.steps = 1'000'000'000;
        e.train.eval_every = 0;
        e.precision.autocast = c.autocast;
        e.precision.loss_scaling.mode = c.scaling;
        for (const char* l : {"fc1", "fc2", "fc3"})
            if (c.layers != LayerPrecision::automatic) e.precision.layers[l] = c.layers;
        trainers.push_back(std::make_unique<Trainer>(e, data, cpu_backend(threads)));
    }
    std::printf("bench_engine: %s, 784-256-128-10 relu AdamW, batch %d, layer stats every step\n",
                data.name.c_str(), batch);
    std::printf("device: %s\n", trainers[0]->backend().device_name().c_str());
    for (auto& t : trainers)
        for (int i = 0; i < 20; ++i) t->step();

    const std::size_t n = trainers.size();
    std::vector<std::vector<double>> ms(n), cpu_ms(n);
    for (int r = 0; r < rounds; ++r) {
        for (std::size_t c = 0; c < n; ++c) {
            const auto t0 = Clock::now();
            const double c0 = process_cpu_s();
            for (int i = 0; i < block; ++i) trainers[c]->step();
            ms[c].push_back(seconds_since(t0) / block * 1e3);
            cpu_ms[c].push_back((process_cpu_s() - c0) / block * 1e3);
        }
    }
    std::printf("\n%d rounds x %d steps, interleaved; medians over the rounds\n", rounds, block);
    std::printf("%-6s %10s %12s %9s %19s %12s %9s\n", "format", "ms/step", "samples/s", "vs fp32",
                "spread (ms)", "cpu ms/step", "vs fp32");
    const double base = median(ms[0]), cpu_base = median(cpu_ms[0]);
    for (std::size_t c = 0; c < n; ++c) {
        const double m = median(ms[c]), cm = median(cpu_ms[c]);
        const auto [lo, hi] = std::minmax_element(ms[c].begin(), ms[c].end());
        std::printf("%-6s %10.3f %12.0f %8.2fx %9.3f..%-8.3f %12.3f %8.2fx\n", configs[c].name, m,
                    batch / (m / 1e3), m / base, *lo, *hi, cm, cm / cpu_base);
    }
    if (only.empty()) matmul_table(threads);
    return 0;
}
