// Shared by the GPU suites: getting a CUDA backend (or the reason there is none, for QSKIP),
// twin tensors on the CPU and the CUDA backend holding the same values (one at a time, or a
// matmul layer's), and the comparisons: bit for bit, or within atol + |ref|·eps.
#pragma once

#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace gpu_test {

// A CUDA backend on GPU 0 through the run-time module (as the application gets one), or null
// with the reason in `reason`.
std::unique_ptr<mantissa::Backend> cuda_backend(std::string& reason);

// The line a suite skips with when there is no GPU, from its initTestCase (so every test of it is
// skipped): ctest reports the suite as skipped, not passed, by matching it (tests/gpu/CMakeLists.txt,
// SKIP_REGULAR_EXPRESSION), so keep the two in step.
inline QString suite_skipped(const std::string& reason) {
    return QStringLiteral("GPU suite skipped, no usable GPU: ") + QString::fromStdString(reason);
}

// Each test's first line in a GPU suite: skips it, with the reason, when the suite has no GPU.
#define GPU_TEST_REQUIRE(available, reason) \
    if (!(available)) QSKIP(qPrintable("no usable GPU: " + QString::fromStdString(reason)))

inline mantissa::TensorDesc desc(const char* name, std::int64_t rows, std::int64_t cols, mantissa::Format f,
                                 mantissa::MemoryCategory c = mantissa::MemoryCategory::workspace) {
    return mantissa::TensorDesc{name, rows, cols, f, c};
}

// The activation format a layer computing in `compute` writes (fp8: bf16, the autocast type).
inline mantissa::Format output_format(mantissa::Format compute) {
    switch (compute) {
        case mantissa::Format::fp16: return mantissa::Format::fp16;
        case mantissa::Format::bf16:
        case mantissa::Format::fp8_e4m3: return mantissa::Format::bf16;
        default: return mantissa::Format::fp32;
    }
}

// The same tensor on two backends.
struct Twin {
    std::unique_ptr<mantissa::Tensor> cpu, gpu;
    mantissa::Tensor& c() { return *cpu; }
    mantissa::Tensor& g() { return *gpu; }
    mantissa::Tensor* on(bool on_gpu) const { return on_gpu ? gpu.get() : cpu.get(); }  // null when not made
};
Twin twin(mantissa::Backend& cpu, mantissa::Backend& gpu, const mantissa::TensorDesc& d,
          const std::vector<float>& values = {});

// A matmul layer's tensors (linear, conv2d) on both backends, and the activations around it; the
// suites' LinearTwin and ConvTwin make them as the layer declares them. A twin not made stays
// null (e.g. weight_compute in fp32).
struct MatmulLayerTwin {
    mantissa::Format compute = mantissa::Format::fp32;
    Twin weight, weight_compute, bias, bias_compute, grad_weight, grad_bias, saved_input, x, y, dy, dx;
    std::unique_ptr<mantissa::Fp8State> fp8_cpu, fp8_gpu;

    // The fields LinearTensors and ConvTensors share, on one backend.
    template <class LayerTensors>
    LayerTensors layer_tensors(bool on_gpu) const {
        LayerTensors t;
        t.compute = compute;
        t.weight = weight.on(on_gpu);
        t.weight_compute = weight_compute.on(on_gpu);
        t.bias = bias.on(on_gpu);
        t.bias_compute = bias_compute.on(on_gpu);
        t.grad_weight = grad_weight.on(on_gpu);
        t.grad_bias = grad_bias.on(on_gpu);
        t.saved_input = saved_input.on(on_gpu);
        t.fp8 = on_gpu ? fp8_gpu.get() : fp8_cpu.get();
        return t;
    }
};

// A layer's precision per matmul, for the per-GEMM tests of linear layers and convolutions: the
// forward's tensor format (fp32 under a block format), its block format, the backward matmuls'
// own formats (none: the forward's), stochastic gradients; `name` names the test row.
struct PerGemmSetting {
    const char* name;
    mantissa::Format compute;
    std::optional<mantissa::BlockFormat> block;
    std::optional<mantissa::ComputeFormat> dgrad, wgrad;
    bool stochastic;

    // The setting on one backend's layer tensors (LinearTensors or ConvTensors).
    template <class LayerTensors>
    void set_on(LayerTensors& t) const {
        t.block = block;
        t.dgrad = dgrad;
        t.wgrad = wgrad;
        t.stochastic_gradients = stochastic;
    }
    // Whether any of the three matmuls is FP8; the bound's relative part: the output format's
    // epsilon, one step more for a stochastic rounding.
    bool any_fp8() const;
    double eps() const;
};
// The mixes both layer kinds are held to: FP8 with its weight gradient in bf16 (Transformer
// Engine's DisableFP8GEMM), bf16 with an FP8 weight gradient, MX block formats mixed with bf16,
// NVFP4 with an FP8 weight gradient rounded stochastically, a tensor format per matmul.
std::vector<PerGemmSetting> per_gemm_settings();

std::vector<float> read(mantissa::Backend& b, const mantissa::Tensor& t);
// Empty when both backends have drawn as many stochastic rounding keys, else how many each drew.
QString stochastic_keys_differ(mantissa::Backend& cpu, mantissa::Backend& gpu);

// Random values: normal(0, scale), with a share of exact zeros.
std::vector<float> random_values(std::int64_t n, float scale, std::uint32_t seed, double zero_share = 0.0);
// Interesting FP32 bit patterns: every exponent, halfway points, subnormals, inf, NaN.
std::vector<float> probe_values(std::uint32_t seed);

// Empty when equal bit for bit, NaN matching any NaN; else where and how they differ (the first
// few places). A NaN's sign and payload are the hardware's, not Mantissa's: x86 passes an
// operand's payload on (0x7fc00000), CUDA's arithmetic returns 0x7fffffff, and nothing in the
// engine reads a payload, so they are not compared.
QString compare_bits(const std::vector<float>& ref, const std::vector<float>& got);
// Empty when |got - ref| <= atol + |ref|·eps everywhere (NaN where NaN, the same infinities).
QString compare_close(const std::vector<float>& ref, const std::vector<float>& got, double atol, double eps);
// Empty when the values are at most `ulps` apart in FP32 ordering (NaN where NaN).
QString compare_ulps(const std::vector<float>& ref, const std::vector<float>& got, std::int64_t ulps);

}  // namespace gpu_test
