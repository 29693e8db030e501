// The CPU backend's view of the engine's tensors, for the cpu_*.cpp sources: every Tensor a
// CpuBackend is handed was made by its allocate(), so they reach the FP32 values through a static
// cast (the non-const data() gives the tensor a new write stamp, cpu_backend.h), and round a
// result to its tensor's format in place with round_output (FP32 results are kept as they are).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#include "numeric/convert.h"

namespace mantissa {

inline CpuTensor& cpu(Tensor& t) { return static_cast<CpuTensor&>(t); }
inline const CpuTensor& cpu(const Tensor& t) { return static_cast<const CpuTensor&>(t); }

// n values at data, rounded to `format`.
inline void round_output(Format format, float* data, std::int64_t n) {
    if (format != Format::fp32) round_array(format, data, static_cast<std::size_t>(n));
}

// data *= factor, nothing when factor is 1 (a dequantisation; cpu_linear.cpp).
void scale_in_place(float* data, std::int64_t n, float factor);

}  // namespace mantissa
