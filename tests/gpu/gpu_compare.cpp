// The GPU suites' helpers (see gpu_compare.h).
#include "gpu_compare.h"

#include <bit>
#include <cmath>

#include "backend/cuda/cuda_loader.h"
#include "error.h"

namespace gpu_test {

using namespace mantissa;

std::vector<PerGemmSetting> per_gemm_settings() {
    const ComputeFormat e4m3(Format::fp8_e4m3), bf16(Format::bf16);
    return {{"fp8-wgrad-bf16", Format::fp8_e4m3, {}, {}, bf16, false},
            {"bf16-wgrad-fp8", Format::bf16, {}, {}, e4m3, false},
            {"mxfp8-dgrad-bf16-wgrad-mxfp4", Format::fp32, BlockFormat::mxfp8_e4m3, bf16,
             ComputeFormat(BlockFormat::mxfp4), false},
            {"nvfp4-wgrad-fp8-stochastic", Format::fp32, BlockFormat::nvfp4, {}, e4m3, true},
            {"fp16-dgrad-fp32-wgrad-tf32", Format::fp16, {}, ComputeFormat(Format::fp32),
             ComputeFormat(Format::tf32), false}};
}

bool PerGemmSetting::any_fp8() const {
    const ComputeFormat e4m3(Format::fp8_e4m3);
    return compute == Format::fp8_e4m3 || dgrad == e4m3 || wgrad == e4m3;
}

double PerGemmSetting::eps() const {
    const Format act = output_format(compute);
    return (act == Format::fp32 ? 1e-5 : format_info(act).epsilon) * (stochastic ? 2 : 1);
}

QString stochastic_keys_differ(Backend& cpu, Backend& gpu) {
    if (gpu.stochastic_rounding_position() == cpu.stochastic_rounding_position()) return {};
    return QString("the GPU drew %1 stochastic keys, the CPU %2")
        .arg(gpu.stochastic_rounding_position())
        .arg(cpu.stochastic_rounding_position());
}

std::unique_ptr<Backend> cuda_backend(std::string& reason) {
    try {
        return make_cuda_backend(0);
    } catch (const Error& e) {
        reason = e.what();
        return nullptr;
    }
}

Twin twin(Backend& cpu, Backend& gpu, const TensorDesc& d, const std::vector<float>& values) {
    Twin t{cpu.allocate(d), gpu.allocate(d)};
    if (!values.empty()) {
        const auto n =
            static_cast<std::int64_t>(std::min<std::size_t>(values.size(), static_cast<std::size_t>(d.numel())));
        cpu.upload(*t.cpu, values.data(), n);
        gpu.upload(*t.gpu, values.data(), n);
    }
    return t;
}

std::vector<float> read(Backend& b, const Tensor& t) {
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    b.download(t, out.data(), t.numel());
    return out;
}

std::vector<float> random_values(std::int64_t n, float scale, std::uint32_t seed, double zero_share) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = u(rng) < zero_share ? 0.0f : normal(rng);
    return v;
}

std::vector<float> probe_values(std::uint32_t seed) {
    std::vector<float> v;
    for (std::uint32_t sign : {0u, 0x80000000u})
        for (std::uint32_t e = 0; e < 256; ++e)
            for (std::uint32_t m : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0xffffu, 0x10000u, 0x17fffu, 0x18000u, 0x7fffffu,
                                    0x400000u, 0x0fffffu, 0x100000u, 0x080000u, 0x180000u})
                v.push_back(std::bit_cast<float>(sign | (e << 23) | m));
    std::mt19937 rng(seed);
    for (int i = 0; i < 200000; ++i) v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
    return v;
}

namespace {

QString hex(float x) {
    return QString("0x%1").arg(std::bit_cast<std::uint32_t>(x), 8, 16, QChar('0'));
}

QString describe(std::size_t i, float ref, float got) {
    return QString("[%1] cpu %2 (%3), gpu %4 (%5)")
        .arg(i)
        .arg(ref, 0, 'g', 9)
        .arg(hex(ref))
        .arg(got, 0, 'g', 9)
        .arg(hex(got));
}

std::int64_t ordered(float x) {
    const auto u = static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(x));
    return (u & 0x80000000) ? -(u & 0x7fffffff) : u;
}

}  // namespace

QString compare_bits(const std::vector<float>& ref, const std::vector<float>& got) {
    if (ref.size() != got.size()) return QString("sizes differ: %1 vs %2").arg(ref.size()).arg(got.size());
    QString out;
    int shown = 0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        if (std::bit_cast<std::uint32_t>(ref[i]) == std::bit_cast<std::uint32_t>(got[i])) continue;
        if (std::isnan(ref[i]) && std::isnan(got[i])) continue;  // payloads: see the header
        ++bad;
        if (shown++ < 5) out += describe(i, ref[i], got[i]) + "; ";
    }
    return bad ? QString("%1 of %2 differ: %3").arg(bad).arg(ref.size()).arg(out) : QString();
}

QString compare_close(const std::vector<float>& ref, const std::vector<float>& got, double atol, double eps) {
    if (ref.size() != got.size()) return QString("sizes differ: %1 vs %2").arg(ref.size()).arg(got.size());
    QString out;
    int shown = 0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double r = ref[i], g = got[i];
        bool ok;
        if (std::isnan(r) || std::isnan(g))
            ok = std::isnan(r) && std::isnan(g);
        else if (std::isinf(r) || std::isinf(g))
            ok = r == g;
        else
            ok = std::abs(g - r) <= atol + std::abs(r) * eps;
        if (ok) continue;
        ++bad;
        if (shown++ < 5) out += describe(i, ref[i], got[i]) + "; ";
    }
    return bad ? QString("%1 of %2 outside %3 + |ref|*%4: %5").arg(bad).arg(ref.size()).arg(atol).arg(eps).arg(out)
               : QString();
}

QString compare_ulps(const std::vector<float>& ref, const std::vector<float>& got, std::int64_t ulps) {
    if (ref.size() != got.size()) return QString("sizes differ: %1 vs %2").arg(ref.size()).arg(got.size());
    QString out;
    int shown = 0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        bool ok;
        if (std::isnan(ref[i]) || std::isnan(got[i]))
            ok = std::isnan(ref[i]) && std::isnan(got[i]);
        else
            ok = std::llabs(ordered(ref[i]) - ordered(got[i])) <= ulps;
        if (ok) continue;
        ++bad;
        if (shown++ < 5) out += describe(i, ref[i], got[i]) + "; ";
    }
    return bad ? QString("%1 of %2 more than %3 ulps apart: %4").arg(bad).arg(ref.size()).arg(ulps).arg(out)
               : QString();
}

}  // namespace gpu_test
