// Shared by the GPU suites: getting a CUDA backend (or the reason there is none, for QSKIP),
// twin tensors on the CPU and the CUDA backend holding the same values, and the comparisons the
// issue asks for: bit for bit, or within atol + |ref|·eps.
#pragma once

#include <QString>

#include <cstdint>
#include <memory>
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

// The same tensor on two backends.
struct Twin {
    std::unique_ptr<mantissa::Tensor> cpu, gpu;
    mantissa::Tensor& c() { return *cpu; }
    mantissa::Tensor& g() { return *gpu; }
};
Twin twin(mantissa::Backend& cpu, mantissa::Backend& gpu, const mantissa::TensorDesc& d,
          const std::vector<float>& values = {});

std::vector<float> read(mantissa::Backend& b, const mantissa::Tensor& t);

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
