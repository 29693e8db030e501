// LtMatmul: the module's one way to multiply, cuBLASLt with FP32 compute, in cuBLAS's
// column-major terms: D(m, n) = op(A)(m, k) · op(B)(k, n) [+ bias], optionally with FP8 scale
// pointers (dequantisation factors read from the device). A plan (descriptors, layouts and the
// heuristic's algorithm) is built once per shape and kept: no allocation and no heuristic query
// on the steady-state step. The workspace is the backend's (MemoryCategory::workspace).
//
// Compute types: fp32 -> CUBLAS_COMPUTE_32F; tf32 -> CUBLAS_COMPUTE_32F_FAST_TF32 (operands
// already rounded to tf32 by the caller, so the tensor cores' conversion changes nothing);
// fp16, bf16, fp8 -> CUBLAS_COMPUTE_32F with 16- or 8-bit operands (products exact, FP32 sums);
// CUBLAS_COMPUTE_16F (a linear layer's FP16 accumulation: fp16 operands and D, FP16 sums) takes
// its alpha in FP16.
// run() returns false when cuBLASLt has no algorithm for a combination (e.g. a fused epilogue on
// an older GPU): the caller then takes its general path. Training thread only.
// Batched matmuls (cuda_attention.cpp) set `batch` matrices a stride apart, alpha (the FP32
// scale of the accumulator before D's rounding) and the pointers' actual alignment (strided views
// into a tensor need not start on cuBLASLt's default 256 bytes); the linear layers leave them.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace mantissa::cuda {

struct MatmulCall {
    std::int64_t m = 0, n = 0, k = 0;
    const void* a = nullptr;
    cudaDataType_t a_type = CUDA_R_32F;
    bool trans_a = false;
    std::int64_t lda = 0;
    const void* b = nullptr;
    cudaDataType_t b_type = CUDA_R_32F;
    bool trans_b = false;
    std::int64_t ldb = 0;
    void* d = nullptr;
    cudaDataType_t d_type = CUDA_R_32F;
    std::int64_t ldd = 0;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    const void* bias = nullptr;      // (m) of d_type: the BIAS epilogue
    const float* a_scale = nullptr;  // FP8: device factors multiplying the product
    const float* b_scale = nullptr;
    std::int64_t batch = 1;  // strided batch: matrix i at a + i·stride_a elements (b, d likewise)
    std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
    float alpha = 1.0f;
    int align_a = 0, align_b = 0, align_d = 0;  // bytes every matrix's pointer is a multiple of; 0: 256
};

class LtMatmul {
public:
    LtMatmul(void* workspace, std::size_t workspace_bytes);
    ~LtMatmul();
    LtMatmul(const LtMatmul&) = delete;
    LtMatmul& operator=(const LtMatmul&) = delete;

    bool run(const MatmulCall& call, cudaStream_t stream);
    std::size_t plans() const { return m_plans.size(); }

private:
    struct Plan;
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, int, int, int, int, int, std::int64_t,
                           std::int64_t, std::int64_t, int, int, int, std::int64_t, std::int64_t, std::int64_t,
                           std::int64_t, int, int, int>;
    Plan* plan(const MatmulCall& call);

    cublasLtHandle_t m_handle = nullptr;
    void* m_workspace;
    std::size_t m_workspace_bytes;
    std::map<Key, std::unique_ptr<Plan>> m_plans;
};

}  // namespace mantissa::cuda
