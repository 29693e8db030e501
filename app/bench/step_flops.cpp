// StepFlops from a trainer's network and the CPU backend it runs on.
#include "bench/step_flops.h"

#include <cmath>
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "model/matmul_flops.h"

namespace mantissa::bench {

namespace {

CpuBackend* cpu_of(Backend& backend) { return dynamic_cast<CpuBackend*>(&backend); }

}  // namespace

bool on_bf16_primitive(const MatmulFlops& m) {
    if (m.batched) return m.operands.format == Format::bf16 && !m.operands.block;  // cpu_attention.cpp
    if (m.operands.block) return true;  // bf16 values: an element times its block's scale (block_format.h)
    return m.operands.format == Format::bf16 || m.operands.format == Format::fp8_e4m3;
}

std::string StepFlops::basis() const {
    if (bf16 <= 0) return "fma";
    if (fp32() <= 0) return "bf16";
    return "mixed";
}

StepFlops step_flops(Trainer& trainer) {
    CpuBackend* cpu = cpu_of(trainer.backend());
    const bool bf16_path = cpu && cpu->matmul().bf16_enabled();
    StepFlops f;
    for (const MatmulFlops& m : step_matmul_flops(trainer.network(), trainer.settings().train.batch_size)) {
        f.total += m.flops;
        if (bf16_path && on_bf16_primitive(m)) f.bf16 += m.flops;
    }
    return f;
}

int cpu_threads(Trainer& trainer) {
    CpuBackend* cpu = cpu_of(trainer.backend());
    return cpu ? cpu->matmul().threads() : 0;
}

double achieved_gflops(const StepFlops& flops, double seconds_per_step) {
    return seconds_per_step > 0 ? flops.total / seconds_per_step / 1e9 : std::numeric_limits<double>::quiet_NaN();
}

double limit_pct(const StepFlops& flops, double seconds_per_step, const PeakRates& peaks, int threads) {
    const double limit = limit_gflops(peaks, flops.total, flops.bf16, threads);
    return 100 * achieved_gflops(flops, seconds_per_step) / limit;  // NaN propagates
}

}  // namespace mantissa::bench
