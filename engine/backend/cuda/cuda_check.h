// Checked CUDA and cuBLAS calls: a failing return code becomes a mantissa::Error naming the call
// and the library's own error name and text. Every CUDA/cuBLAS call in the module goes through
// these (STYLE.md: return codes are always checked; library code never exits).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

#include "error.h"

namespace mantissa::cuda {

inline void cuda_check(cudaError_t e, const char* call) {
    if (e == cudaSuccess) return;
    throw Error(std::string("The CUDA call ") + call + " failed: " + cudaGetErrorName(e) + " (" +
                cudaGetErrorString(e) + ").");
}

inline void cublas_check(cublasStatus_t s, const char* call) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    throw Error(std::string("The cuBLASLt call ") + call + " failed: " + cublasLtGetStatusName(s) + " (" +
                cublasLtGetStatusString(s) + ").");
}

}  // namespace mantissa::cuda

#define MANTISSA_CUDA_CHECK(call) ::mantissa::cuda::cuda_check((call), #call)
#define MANTISSA_CUBLAS_CHECK(call) ::mantissa::cuda::cublas_check((call), #call)
