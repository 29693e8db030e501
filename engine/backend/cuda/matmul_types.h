// What the layers that multiply through LtMatmul share (cuda_linear.cpp, cuda_conv.cpp): the
// cuBLASLt types of a compute format, when cuBLASLt's FP8 kernels take a shape, and which output
// types cuBLASLt may write directly. Host code of the module only (needs the CUDA headers).
#pragma once

#include <cublasLt.h>

#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "numeric/format.h"

namespace mantissa::cuda {

inline cublasComputeType_t compute_type(Format compute) {
    return compute == Format::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// The operand storage type for a compute format (fp8: e4m3 here; the gradient is e5m2).
inline cudaDataType_t operand_type(Format compute) {
    switch (compute) {
        case Format::fp16: return CUDA_R_16F;
        case Format::bf16: return CUDA_R_16BF;
        case Format::fp8_e4m3: return CUDA_R_8F_E4M3;
        case Format::fp8_e5m2: return CUDA_R_8F_E5M2;
        default: return CUDA_R_32F;
    }
}

// cuBLASLt's FP8 kernels need every dimension a multiple of 16 (16-byte rows).
inline bool fp8_native_shape(std::int64_t in, std::int64_t out, std::int64_t batch) {
    return in % 16 == 0 && out % 16 == 0 && batch % 16 == 0;
}

// Whether cuBLASLt can write an output of `out` storage directly from operands of `operands`.
inline bool fused_output_ok(cudaDataType_t operands, Format out) {
    if (out != Format::fp32 && out != Format::fp16 && out != Format::bf16) return false;
    const cudaDataType_t d = storage_type(out);
    switch (operands) {
        case CUDA_R_32F: return d == CUDA_R_32F;
        case CUDA_R_16F: return d == CUDA_R_16F || d == CUDA_R_32F;
        case CUDA_R_16BF: return d == CUDA_R_16BF || d == CUDA_R_32F;
        default: return d == CUDA_R_16F || d == CUDA_R_16BF;  // FP8 into a 16-bit output
    }
}

}  // namespace mantissa::cuda
