// LtMatmul: plans (descriptor, layouts, algorithm) per shape, and the call. See the header.
#include "backend/cuda/lt_matmul.h"

#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernels/convert.cuh"

namespace mantissa::cuda {

struct LtMatmul::Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool found = false;
    ~Plan() {
        if (desc) cublasLtMatmulDescDestroy(desc);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (d) cublasLtMatrixLayoutDestroy(d);
    }
};

LtMatmul::LtMatmul(void* workspace, std::size_t workspace_bytes)
    : m_workspace(workspace), m_workspace_bytes(workspace_bytes) {
    MANTISSA_CUBLAS_CHECK(cublasLtCreate(&m_handle));
}

LtMatmul::~LtMatmul() {
    m_plans.clear();
    if (m_handle) cublasLtDestroy(m_handle);
}

LtMatmul::Plan* LtMatmul::plan(const MatmulCall& c) {
    const Key key{c.m,
                  c.n,
                  c.k,
                  static_cast<int>(c.a_type),
                  static_cast<int>(c.b_type),
                  static_cast<int>(c.d_type),
                  static_cast<int>(c.trans_a) | (static_cast<int>(c.trans_b) << 1),
                  static_cast<int>(c.compute),
                  c.lda,
                  c.ldb,
                  c.ldd,
                  c.bias != nullptr,
                  c.a_scale != nullptr,
                  c.b_scale != nullptr,
                  c.batch,
                  c.stride_a,
                  c.stride_b,
                  c.stride_d,
                  c.align_a,
                  c.align_b,
                  c.align_d};
    auto it = m_plans.find(key);
    if (it != m_plans.end()) return it->second.get();

    auto p = std::make_unique<Plan>();
    // FP16 accumulation (CUBLAS_COMPUTE_16F) takes its alpha and beta in FP16.
    const cudaDataType_t scale_type = c.compute == CUBLAS_COMPUTE_16F ? CUDA_R_16F : CUDA_R_32F;
    MANTISSA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, c.compute, scale_type));
    const cublasOperation_t ta = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    MANTISSA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    MANTISSA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (c.bias) {
        const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        MANTISSA_CUBLAS_CHECK(
            cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
        MANTISSA_CUBLAS_CHECK(
            cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias, sizeof c.bias));
    }
    if (c.a_scale)
        MANTISSA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &c.a_scale,
                                                             sizeof c.a_scale));
    if (c.b_scale)
        MANTISSA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &c.b_scale,
                                                             sizeof c.b_scale));
    // Column-major layouts of the stored matrices (rows x cols before op()).
    const auto a_rows = static_cast<std::uint64_t>(c.trans_a ? c.k : c.m);
    const auto a_cols = static_cast<std::uint64_t>(c.trans_a ? c.m : c.k);
    const auto b_rows = static_cast<std::uint64_t>(c.trans_b ? c.n : c.k);
    const auto b_cols = static_cast<std::uint64_t>(c.trans_b ? c.k : c.n);
    MANTISSA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, c.a_type, a_rows, a_cols, c.lda));
    MANTISSA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, c.b_type, b_rows, b_cols, c.ldb));
    MANTISSA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->d, c.d_type, static_cast<std::uint64_t>(c.m),
                                                     static_cast<std::uint64_t>(c.n), c.ldd));
    if (c.batch > 1) {
        const auto count = static_cast<std::int32_t>(c.batch);
        const std::pair<cublasLtMatrixLayout_t, std::int64_t> layouts[] = {
            {p->a, c.stride_a}, {p->b, c.stride_b}, {p->d, c.stride_d}};
        for (const auto& [layout, stride] : layouts) {
            MANTISSA_CUBLAS_CHECK(
                cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
            MANTISSA_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                                   &stride, sizeof stride));
        }
    }

    cublasLtMatmulPreference_t pref = nullptr;
    MANTISSA_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const std::uint64_t ws = m_workspace_bytes;
    cublasStatus_t s =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    const std::pair<cublasLtMatmulPreferenceAttributes_t, int> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, c.align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, c.align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c.align_d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, c.align_d}};
    for (const auto& [attribute, bytes] : alignments) {
        if (bytes <= 0 || s != CUBLAS_STATUS_SUCCESS) continue;
        const auto value = static_cast<std::uint32_t>(bytes);
        s = cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value, sizeof value);
    }
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(m_handle, p->desc, p->a, p->b, p->d, p->d, pref, 1, &result, &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    // NOT_SUPPORTED: no algorithm for this combination; anything else is an error.
    if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED)
        cublas_check(s, "cublasLtMatmulAlgoGetHeuristic");
    p->found = s == CUBLAS_STATUS_SUCCESS && returned > 0;
    if (p->found) p->algo = result.algo;
    Plan* raw = p.get();
    m_plans.emplace(key, std::move(p));
    return raw;
}

bool LtMatmul::run(const MatmulCall& c, cudaStream_t stream) {
    Plan* p = plan(c);
    if (!p->found) return false;
    // Pointers change from call to call (same shape, another layer): set them every time.
    if (c.bias)
        MANTISSA_CUBLAS_CHECK(
            cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias, sizeof c.bias));
    if (c.a_scale)
        MANTISSA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &c.a_scale,
                                                             sizeof c.a_scale));
    if (c.b_scale)
        MANTISSA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &c.b_scale,
                                                             sizeof c.b_scale));
    const float alpha = c.alpha, beta = 0.0f;
    const std::uint16_t alpha16 = static_cast<std::uint16_t>(encode_fp16(c.alpha, false)), beta16 = 0;
    const bool half_scale = c.compute == CUBLAS_COMPUTE_16F;
    const void* alpha_ptr = half_scale ? static_cast<const void*>(&alpha16) : &alpha;
    const void* beta_ptr = half_scale ? static_cast<const void*>(&beta16) : &beta;
    const cublasStatus_t s = cublasLtMatmul(m_handle, p->desc, alpha_ptr, c.a, p->a, c.b, p->b, beta_ptr, c.d, p->d,
                                            c.d, p->d, &p->algo, m_workspace, m_workspace_bytes, stream);
    if (s == CUBLAS_STATUS_NOT_SUPPORTED) {  // the heuristic's algorithm refused these pointers
        p->found = false;
        return false;
    }
    cublas_check(s, "cublasLtMatmul");
    return true;
}

}  // namespace mantissa::cuda
