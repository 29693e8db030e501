// CudaBackend: the Backend interface on one NVIDIA GPU. Tensors hold their declared formats for
// real in device memory (fp32 and tf32 in 4 bytes, fp16 and bf16 in 2, fp8 in 1), allocated
// through a caching allocator (BlockCache) that accounts bytes per MemoryCategory; matmuls go
// through cuBLASLt with FP32 compute (LtMatmul); everything else through the kernels in kernels/,
// each with the CPU backend's function of the same name as its reference (cpu/*.cpp).
//
// Same semantics as the CPU backend (backend.h, docs/numerics.md): conversions and elementwise
// ops bit-identical, matmuls within FP32 accumulation-order tolerance. Two differences in how,
// not what:
// - unscale_and_check leaves FP32 values in gradients. A 4-byte gradient gets them written back;
//   a narrower one keeps its bits and the tensor records the multiplier, applied in FP32 on every
//   later read (download, cast, the optimizers): the same values, no widening of the tensor.
// - A format the GPU cannot multiply in (format_support.h) is refused with the reason when a
//   layer first computes in it. FP8 layers whose sizes cuBLASLt's FP8 kernels do not take (not
//   multiples of 16) multiply their quantised operands as bf16: the same products.
// Everything runs on one stream in order; the calls that return host values (losses, the check,
// the optimizers' counts, statistics) wait for the stream, the others do not.
//
// Implementation split: cuda_backend.cpp (device, tensors, casts, FP8 state, accounting),
// cuda_linear.cpp (linear layers, what the backend supports), cuda_conv.cpp (convolutions),
// cuda_pool_norm.cpp (pools, batch norm, add), cuda_attention.cpp (batched matmul, softmax),
// cuda_layernorm.cpp, cuda_embedding.cpp, cuda_ops.cpp (activations, losses, the check,
// optimizers),
// cuda_device_step.cpp (the asynchronous step API that CUDA graphs capture); the casts from Tensor
// they share are in cuda_tensor_access.h.
// Training thread only (the device is made current at every entry).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/block_cache.h"
#include "backend/cuda/format_support.h"
#include "backend/cuda/kernels/launchers.h"
#include "backend/cuda/lt_matmul.h"
#include "backend/cuda/op_support.h"

namespace mantissa::cuda {

class CudaBackend;

// Checks how t asks its new values stored (cuda_ops.cpp): a Kahan-compensated update needs a
// compensation of the parameter's size and format (the CPU backend's sentence).
void check_weight_rounding(const OptimizerTensors& t);

// Kahan's compensation buffer of t on the device, or null where its new values round to nearest
// (an FP32 parameter has nothing to round, as on the CPU).
void* kahan_compensation(const OptimizerTensors& t);

class CudaTensor final : public Tensor {
public:
    CudaTensor(TensorDesc desc, BlockCache& cache);
    ~CudaTensor() override;
    void* data() const { return m_data; }
    // Values read from this tensor are (stored value) x multiplier in FP32; 1 except for narrow
    // gradients after unscale_and_check. Any write sets it back to 1.
    float multiplier() const { return m_multiplier; }

private:
    friend class CudaBackend;
    BlockCache* m_cache;
    void* m_data = nullptr;
    float m_multiplier = 1.0f;
};

class CudaFp8State final : public Fp8State {
public:
    CudaFp8State(CudaBackend& backend, const Fp8Recipe& recipe);
    ~CudaFp8State() override;
    Fp8TensorSnapshot snapshot(Fp8Role role) const override;  // waits for the stream
    void set_scaling(Fp8Scaling scaling) override;             // none: writes scales of 1, in stream order
    void restore(Fp8Role role, const Fp8TensorSnapshot& state) override;  // waits for the stream

    // Device pointers into the state (Fp8StateLayout).
    float* scale(Fp8Role r) const { return m_state + Fp8StateLayout::scale + static_cast<int>(r); }
    float* scale_inv(Fp8Role r) const { return m_state + Fp8StateLayout::scale_inv + static_cast<int>(r); }
    std::uint32_t* pending(Fp8Role r) const {
        return reinterpret_cast<std::uint32_t*>(m_state + Fp8StateLayout::pending + static_cast<int>(r));
    }
    float* device_state() const { return m_state; }
    const Fp8Recipe& recipe() const { return m_recipe; }

private:
    CudaBackend& m_backend;
    Fp8Recipe m_recipe;
    float* m_state = nullptr;
};

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(int device);  // throws mantissa::Error naming what failed
    ~CudaBackend() override;

    std::string name() const override { return "cuda"; }
    std::string device_name() const override;

    std::unique_ptr<Tensor> allocate(const TensorDesc& desc) override;
    void upload(Tensor& t, const float* data, std::int64_t n) override;
    void download(const Tensor& t, float* data, std::int64_t n) const override;
    void fill(Tensor& t, float value) override;
    void poke(Tensor& t, std::int64_t index, float value) override;
    void cast(const Tensor& src, Tensor& dst) override;
    void convert(Tensor& t, Format format) override;

    std::unique_ptr<Fp8State> create_fp8_state(const Fp8Recipe& recipe) override;
    void update_fp8_scales(Fp8State& state) override;

    // linear, conv2d: the formats this GPU multiplies in (format_support.h); activation: every
    // format; pools, batch norm, add: the CPU backend's formats (op_support.h).
    std::string unsupported(BackendOp op, Format format) const override;
    UnscaleResult unscale_and_check(const std::vector<Tensor*>& grads, float inv_scale,
                                    const std::vector<bool>& want_summary,
                                    std::vector<GradientSummary>* summaries) override;
    UpdateCounts sgd_step(const OptimizerTensors& t, const SgdParams& p) override;
    UpdateCounts adamw_step(const OptimizerTensors& t, const AdamWParams& p) override;
    // Stochastic rounding (cuda_ops.cpp): the keys are drawn on the device in the CPU's order (a
    // linear layer's gradients in its backward, one per narrow parameter per optimizer step), so a
    // captured step draws the next ones when it is replayed; the position is read back from the
    // device (it waits).
    void seed_stochastic_rounding(std::uint64_t seed) override;
    std::uint64_t stochastic_rounding_position() const override;
    void set_stochastic_rounding_position(std::uint64_t position) override;
    MemoryBreakdown memory() const override;
    // CudaStepPipeline (cuda_step_pipeline.h): the step with no host wait, captured as a graph.
    std::unique_ptr<StepPipeline> create_pipeline(const LossScalingSpec& spec) override;

    // ---- CUDA specifics (tests, benchmarks, the asynchronous step)
    int device() const { return m_device; }
    ComputeCapability capability() const { return m_cc; }
    int multiprocessors() const { return m_multiprocessors; }
    cudaStream_t stream() const { return m_stream; }
    BlockCache& cache() { return *m_cache; }
    const LtMatmul& matmul() const { return *m_matmul; }
    void synchronize() const;
    void activate() const;  // makes this backend's GPU current on the calling thread
    // Whether the last linear call could use cuBLASLt's fused output (bias epilogue, output type)
    // or needed the FP32 workspace and an epilogue kernel: counts since construction.
    std::int64_t fused_matmuls() const { return m_fused_matmuls; }
    std::int64_t unfused_matmuls() const { return m_unfused_matmuls; }

    // The asynchronous step (cuda_device_step.cpp): nothing waits for the GPU. The scaler state
    // lives on the device; the check sets its found_inf, the optimizers skip on it, the update
    // consumes it. Results go to device buffers the caller reads later.
    ScalerState* create_scaler_state(const LossScalingSpec& spec);  // owned by the backend
    void softmax_cross_entropy_async(const Tensor& logits, const std::int32_t* labels_device, std::int64_t batch,
                                     const ScalerState* scaler, Tensor* dlogits, float* row_loss,
                                     std::int32_t* row_correct);
    // The fused check's chunk table for a list of gradients, uploaded once (it waits): a
    // captured step only launches. Free with release_buffer(plan.chunks).
    struct CheckPlan {
        CheckChunk* chunks = nullptr;
        int chunk_count = 0;
        int tensors = 0;
    };
    CheckPlan prepare_check(const std::vector<Tensor*>& grads, const std::vector<bool>& want_summary);
    // results: one CheckResult per gradient; first_bad: one int. Capturable.
    void unscale_and_check_async(const CheckPlan& plan, ScalerState* scaler, CheckResult* results, int* first_bad);
    // Narrow gradients are read with the scaler's inv_scale (the async check leaves their bits);
    // the optimizer does nothing when the check found inf/NaN.
    // scalars_dev (when set) replaces p's learning rate and first_step (launch_sgd_prepare).
    void sgd_step_async(const OptimizerTensors& t, const SgdParams& p, const ScalerState* scaler,
                        unsigned long long* counts, const SgdScalars* scalars_dev = nullptr);
    void adamw_step_async(const OptimizerTensors& t, const AdamWScalars* scalars, const ScalerState* scaler,
                          unsigned long long* counts);
    void mse_async(const Tensor& y, const float* targets_device, std::int64_t batch, const ScalerState* scaler,
                   Tensor* dy, double* sum);  // *sum += the squares (zero it first)
    void update_loss_scale_async(ScalerState* scaler, const LossScalingSpec& spec);
    // Statistics steps of a pipeline: while set, linear_backward's weight_stats that point into
    // host[0, count) do not wait for the device: element i's four counters (zeros before, zeros,
    // subnormals, non-finite) go to device + 4 i, and only `elements` is added on the host.
    void defer_rounding_stats(const RoundingStats* host, int count, unsigned long long* device) {
        m_deferred_host = host;
        m_deferred_count = count;
        m_deferred_device = device;
    }
    // Bumped whenever a scratch buffer moves: a captured graph that used the old one is stale.
    std::uint64_t scratch_generation() const { return m_scratch_generation; }
    // A device buffer from the cache for the caller's async results (category workspace).
    void* device_buffer(std::size_t bytes, const std::string& what);
    void release_buffer(void* ptr) { m_cache->release(ptr); }

protected:
    // The layer ops behind Backend's checked wrappers (backend_checks.cpp).
    void linear_forward_impl(LinearTensors& layer, const Tensor& x, Tensor& y, std::int64_t batch,
                             bool record_amax) override;
    void linear_backward_impl(LinearTensors& layer, const Tensor& x, const Tensor& dy, Tensor* dx, std::int64_t batch,
                              RoundingStats* weight_stats) override;
    void activation_forward_impl(Activation act, const Tensor& z, Tensor& a, std::int64_t batch) override;
    void activation_backward_impl(Activation act, const Tensor& z, const Tensor& a, const Tensor& da, Tensor& dz,
                                  std::int64_t batch) override;
    LossResult softmax_cross_entropy_impl(const Tensor& logits, const std::int32_t* labels, std::int64_t batch,
                                          float loss_scale, Tensor* dlogits) override;
    LossResult mse_impl(const Tensor& y, const float* targets, std::int64_t batch, float loss_scale,
                        Tensor* dy) override;
    // The convolutional ops (cuda_conv.cpp, cuda_pool_norm.cpp).
    void conv2d_forward_impl(ConvTensors& conv, const Tensor& x, Tensor& y, std::int64_t batch,
                             bool record_amax) override;
    void conv2d_backward_impl(ConvTensors& conv, const Tensor& x, const Tensor& dy, Tensor* dx, std::int64_t batch,
                              RoundingStats* weight_stats) override;
    void maxpool2d_forward_impl(const Pool2dGeometry& pool, const Tensor& x, Tensor& y, std::int64_t batch) override;
    void maxpool2d_backward_impl(const Pool2dGeometry& pool, const Tensor& x, const Tensor& y, const Tensor& dy,
                                 Tensor& dx, std::int64_t batch) override;
    void avgpool2d_forward_impl(const Pool2dGeometry& pool, const Tensor& x, Tensor& y, std::int64_t batch) override;
    void avgpool2d_backward_impl(const Pool2dGeometry& pool, const Tensor& dy, Tensor& dx,
                                 std::int64_t batch) override;
    void global_avgpool_forward_impl(std::int64_t channels, std::int64_t spatial, const Tensor& x, Tensor& y,
                                     std::int64_t batch) override;
    void global_avgpool_backward_impl(std::int64_t channels, std::int64_t spatial, const Tensor& dy, Tensor& dx,
                                      std::int64_t batch) override;
    void batchnorm2d_forward_impl(BatchNormTensors& bn, const Tensor& x, Tensor& y, std::int64_t batch,
                                  bool training) override;
    void batchnorm2d_backward_impl(BatchNormTensors& bn, const Tensor& x, const Tensor& dy, Tensor& dx,
                                   std::int64_t batch) override;
    void add_impl(const Tensor& a, const Tensor& b, Tensor& y, std::int64_t batch) override;
    // The transformer ops (cuda_attention.cpp, cuda_layernorm.cpp, cuda_embedding.cpp).
    void batched_matmul_impl(const BatchedMatmul& op, const Tensor& a, const StridedMatrix& a_view, const Tensor& b,
                             const StridedMatrix& b_view, Tensor& c, const StridedMatrix& c_view) override;
    void softmax_forward_impl(const Tensor& x, Tensor& y, std::int64_t rows, bool causal,
                              SoftmaxStats* stats) override;
    void softmax_backward_impl(const Tensor& y, const Tensor& dy, Tensor& dx, std::int64_t rows, bool causal,
                               float scale) override;
    void layernorm_forward_impl(LayerNormTensors& ln, const Tensor& x, Tensor& y, std::int64_t rows,
                                LayerNormStats* stats) override;
    void layernorm_backward_impl(LayerNormTensors& ln, const Tensor& x, const Tensor& dy, Tensor& dx,
                                 std::int64_t rows) override;
    void embedding_forward_impl(const Tensor& weight, const std::int32_t* ids, Tensor& y,
                                std::int64_t rows) override;
    void embedding_backward_impl(const std::int32_t* ids, const Tensor& dy, Tensor& grad_weight, std::int64_t rows,
                                 bool accumulate) override;

private:
    friend class CudaFp8State;
    enum Slot : int {
        slot_staging,
        slot_acc,
        slot_x,
        slot_w,
        slot_dy,
        slot_tx,
        slot_tw,
        slot_tdy,
        slot_labels,
        slot_rows,
        slot_results,
        slot_chunks,
        slot_bias_blocks,
        slot_conv_col,      // a chunk's columns (rows, C·k·k) in the operand format
        slot_conv_dy,       // a chunk's dy as rows (rows, Co) in the gradient operand format
        slot_conv_dw,       // dW summed over the chunks, FP32
        slot_conv_dw_part,  // one chunk's dW, FP32
        slot_bmm_a,         // a batched matmul's gathered operands, in the compute format
        slot_bmm_b,
        slot_bmm_c,         // its FP32 products when C is not written directly
        slot_op_stats,      // softmax / layer norm statistics read back by the call
        slot_ln_partial,    // the layer norm backward's partial column sums (double)
        slot_ids,           // embedding_forward's ids
        slot_embedding_rows,  // embedding_backward's rows per id (a CSR built on the host)
        slot_block_state,     // block-scaled operands' NVFP4 tensor amaxes and factors (BlockState)
        slot_acc16,           // a product accumulated in FP16 (FP16 accumulation), before its FP32 copy
        slot_gemm_dy_dgrad,   // a linear layer's backward operands where each matmul has its own
        slot_gemm_dy_wgrad,   //   format (per_gemm_backward_operands): dy for dgrad and for wgrad,
        slot_gemm_w,          //   W for dgrad, x for wgrad
        slot_gemm_x,
        slot_conv_col_q,      // a block-scaled convolution's chunk columns, rounded in blocks (bf16)
        slot_conv_dy_q,       // its whole dy rounded in blocks along the output channels (bf16, NCHW)
        slot_conv_dy_rows,    // a chunk's dy rows for its weight gradient (FP32), then rounded (bf16)
        slot_conv_dy_rows_q,
        slot_kept_key,        // a stochastic key kept past the next draw (a block-scaled conv's wgrad)
        slot_count
    };
    void* scratch(Slot slot, std::size_t bytes);
    void* host_scratch(std::size_t bytes);  // pinned
    // A matmul operand for `compute`: the tensor itself when its storage and values already are
    // the compute format's, else a rounded copy in scratch slot `slot`.
    const void* operand(const CudaTensor& t, std::int64_t n, Format compute, Slot slot);
    // FP8 values (e4m3 or e5m2 patterns) as bf16 in scratch slot `slot`: exact.
    const void* as_bf16(const void* fp8_values, int fmt, std::int64_t n, Slot slot);
    // A (rows, cols) matrix of FP8 bytes transposed into slot_tw: an operand cuBLASLt's FP8
    // kernels take only as "TN".
    const void* transposed_fp8(const void* values, std::int64_t rows, std::int64_t cols);
    void require_plain(const Tensor& t, const char* op) const;  // no pending multiplier
    unsigned long long* deferred_rounding(const RoundingStats* weight_stats) const {
        if (!weight_stats || !m_deferred_device || weight_stats < m_deferred_host ||
            weight_stats >= m_deferred_host + m_deferred_count)
            return nullptr;
        return m_deferred_device + 4 * (weight_stats - m_deferred_host);
    }
    void written(Tensor& t) { static_cast<CudaTensor&>(t).m_multiplier = 1.0f; }
    void run_matmul(const MatmulCall& call, const char* what);
    // call's product of n values into FP32 (slot_acc), returned: directly, or with FP16
    // accumulation (CUBLAS_COMPUTE_16F into fp16, then copied exactly into FP32) when asked.
    float* product_in_fp32(MatmulCall call, std::int64_t n, bool fp16_accumulation, const char* what);
    // The batched matmul's cuBLASLt calls (cuda_attention.cpp); false when cuBLASLt refuses them.
    bool run_batched_matmul(const BatchedMatmul& op, const BmmPlan& plan, const CudaTensor& a,
                            const StridedMatrix& a_view, const CudaTensor& b, const StridedMatrix& b_view,
                            CudaTensor& c, const StridedMatrix& c_view);
    // What linear and conv2d share (cuda_linear.cpp). FP8 forward operands: w quantised into wq
    // with the weight scale, n_x values of x into xq with the input scale, their amaxes recorded
    // when asked. The output gradient (n values) quantised e5m2 into slot_dy, its amax recorded.
    void quantize_forward_fp8(CudaFp8State& state, const CudaTensor& w, Tensor& wq, const CudaTensor& x, Tensor& xq,
                              std::int64_t n_x, bool record_amax);
    // key: the device word of a stochastic rounding pass (draw_stochastic_key), or null: to nearest.
    // Under current scaling both first take the tensor's scale from its amax (current_fp8_scale).
    std::uint8_t* quantize_grad_fp8(CudaFp8State& state, const CudaTensor& dy, std::int64_t n,
                                    const std::uint64_t* key = nullptr);
    // t's first n values quantised to e4m3 into `slot` with role's scale (current scaling: from
    // their amax), the amax recorded: a backward matmul's FP8 operand where the forward did not
    // quantise t (a precision per matmul).
    std::uint8_t* quantize_role_fp8(CudaFp8State& state, Fp8Role role, const CudaTensor& t, std::int64_t n, Slot slot);
    // The weight gradient's four rounding counters (zeroed), or null without weight_stats; then
    // their values added to weight_stats (waiting for the stream), unless a pipeline defers them.
    // empty: an empty batch (every element an exact zero).
    unsigned long long* weight_stats_counters(RoundingStats* weight_stats, std::int64_t elements);
    void collect_weight_stats(RoundingStats* weight_stats, const unsigned long long* stats, std::int64_t elements,
                              bool empty);
    // A block-scaled matmul operand (cuda_linear.cpp): t viewed as (outer, K, inner), rounded in
    // blocks along K into bf16 values in `slot` (kernels/block_operand.cuh), with the key of a
    // stochastic rounding pass or to nearest. NVFP4 reads its tensor scale from the tensor amax in
    // block state `state` (block_tensor_amax takes it first; an operand of the same tensor reuses
    // it) and writes fp32(1 / S) there, which `factor` points to for the matmul's epilogue; MX has
    // no factor (null).
    struct BlockOperand {
        const void* values = nullptr;
        const float* factor = nullptr;
    };
    enum BlockState : int { block_x, block_w, block_dy, block_states };
    void block_tensor_amax(BlockFormat format, const CudaTensor& t, std::int64_t n, BlockState state);
    BlockOperand block_operand(BlockFormat format, const CudaTensor& t, std::int64_t outer, std::int64_t K,
                               std::int64_t inner, Slot slot, BlockState state, const std::uint64_t* key);
    // The same for a buffer (a convolution's chunk): src in src_fmt rounded into dst (bf16), its
    // key stochastic_key(*key, key_pass) where key_pass >= 0 and its random bits indexed as the
    // CPU's channel-major chunk (k_major_index: BlockOperandArgs).
    BlockOperand round_block_buffer(BlockFormat format, const void* src, int src_fmt, void* dst, std::int64_t outer,
                                    std::int64_t K, std::int64_t inner, BlockState state, const std::uint64_t* key,
                                    std::int64_t key_pass = -1, bool k_major_index = false);
    // A copy of the key word `key` (draw_stochastic_key's) that the next draw does not overwrite.
    const std::uint64_t* kept_key(const std::uint64_t* key);
    // One backward matmul's operands (cuda_linear.cpp): dy and the other (W for dgrad, x for wgrad)
    // as cuBLASLt reads them, their dequantisation factors (null: none); `native`: FP8 values for
    // cuBLASLt's FP8 kernels (their transposed copies are made at the matmul).
    struct BackwardGemm {
        const void* dy = nullptr;
        const void* other = nullptr;
        cudaDataType_t dy_type = CUDA_R_32F, other_type = CUDA_R_32F;
        const float* dq_dy = nullptr;
        const float* dq_other = nullptr;
        bool native = false;
        cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    };
    // A layer's backward matmul formats where they have their own (LinearTensors and ConvTensors:
    // dgrad, wgrad; a missing one is the forward's: `block`, else `compute`), each checked against
    // this GPU for `layer`, and whether the forward quantised x and W to FP8 (its copies serve).
    struct BackwardFormats {
        ComputeFormat dgrad, wgrad;
        bool forward_fp8 = false;
    };
    BackwardFormats backward_formats(Format compute, const std::optional<BlockFormat>& block,
                                     const std::optional<ComputeFormat>& dgrad,
                                     const std::optional<ComputeFormat>& wgrad, const std::string& layer) const;
    // A layer whose backward matmuls have their own formats (LinearTensors::dgrad, wgrad): each
    // matmul's operands in its format, in the CPU's order (per_gemm_backward_operands in
    // cpu_linear.cpp): dy quantised to e5m2 once where either matmul is FP8, dgrad's dy, wgrad's
    // dy (a block format's with its stochastic key), W for dgrad (when need_w), x for wgrad.
    void per_gemm_backward_operands(const LinearTensors& l, const CudaTensor& x, const CudaTensor& dy,
                                    const CudaTensor& w, std::int64_t batch, bool need_w, BackwardGemm& dgrad,
                                    BackwardGemm& wgrad);
    // One backward matmul of a convolution (cuda_conv.cpp) as its chunks make it: dy's rows from
    // `dy` (the NCHW tensor or a quantised copy, stored as dy_src_fmt) in dy_fmt; `other` is
    // dgrad's W operand ((Co, K), or for native FP8 its transposed copy (K, Co)) or wgrad's
    // source of the columns (stored as other_fmt, made in col_fmt); their cuBLASLt types and
    // dequantisation factors (null: none); `block`: wgrad's chunk rows and columns are rounded in
    // blocks of this format along the chunk's rows (their factors set by each chunk).
    struct ConvGemm {
        const void* dy = nullptr;
        int dy_src_fmt = 0, dy_fmt = 0;
        const void* other = nullptr;
        int other_fmt = 0, col_fmt = 0;
        cudaDataType_t dy_type = CUDA_R_32F, other_type = CUDA_R_32F;
        const float* dq_dy = nullptr;
        const float* dq_other = nullptr;
        bool native = false;
        cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
        std::optional<BlockFormat> block;
    };
    // A convolution whose backward matmuls have their own formats (ConvTensors::dgrad, wgrad), in
    // the CPU's order (per_gemm_backward_operands in cpu_linear.cpp, conv2d_backward_impl in
    // cpu_conv.cpp): dy in e5m2 once where either matmul is FP8, dgrad's dy (a block format's
    // whole dy along the channels, with its key), wgrad's (a block format's key kept in
    // `wgrad_key` for its chunks), W for dgrad (when need_w), x for wgrad. native_shape: cuBLASLt's
    // FP8 kernels take the chunks' shapes.
    void per_gemm_conv_operands(const ConvTensors& conv, const CudaTensor& x, const CudaTensor& dy, const CudaTensor& w,
                                std::int64_t batch, bool native_shape, bool need_w, ConvGemm& dgrad, ConvGemm& wgrad,
                                const std::uint64_t*& wgrad_key);
    // Current scaling (precision.fp8.scaling current): role's scale from the amax of t's first n
    // values, in the state, before t is quantised; nothing under the other recipes.
    void current_fp8_scale(CudaFp8State& state, Fp8Role role, const CudaTensor& t, std::int64_t n);
    // Rowwise scaling: t viewed as (outer, K, inner) quantised to the element format with a scale
    // per run along K, decoded in FP32 into `slot` (kernels/fp8_current.cuh); its amax raised into
    // `amax` when not null.
    const float* rowwise_operand(const CudaFp8State& state, Format element, const CudaTensor& t, std::int64_t outer,
                                 std::int64_t K, std::int64_t inner, Slot slot, std::uint32_t* amax,
                                 const std::uint64_t* key);
    void check_matmul_format(Format compute, const std::string& layer) const;
    void fold_multiplier(CudaTensor& t);
    // Draws the key of the next stochastic rounding pass onto the stream (launch_draw_stochastic_key,
    // not on a step `skip` marks) and returns the device word that holds it, for the kernel
    // launched next. The Trainer seeds the backend when it starts, so the words exist before any
    // step is captured (making them waits for the GPU, which a capture does not allow).
    const std::uint64_t* draw_stochastic_key(const int* skip);
    // draw_stochastic_key for t's update where its new values are rounded stochastically; null where
    // they are not (to nearest, Kahan, or an FP32 parameter: nothing to round).
    const std::uint64_t* stochastic_key_for(const OptimizerTensors& t, const int* skip);
    // The fused check's table: every gradient cut into chunks, one block each.
    std::vector<CheckChunk> check_chunks(const std::vector<Tensor*>& grads, const std::vector<bool>& want_summary) const;

    int m_device = 0;
    ComputeCapability m_cc;
    std::string m_name;
    std::int64_t m_total_memory = 0;
    int m_multiprocessors = 0;
    cudaStream_t m_stream = nullptr;
    std::unique_ptr<BlockCache> m_cache;
    void* m_workspace = nullptr;
    std::unique_ptr<LtMatmul> m_matmul;
    std::array<void*, slot_count> m_scratch{};
    std::array<std::size_t, slot_count> m_scratch_bytes{};
    void* m_host = nullptr;
    std::size_t m_host_bytes = 0;
    std::vector<void*> m_owned;  // scaler states and the like
    std::int64_t m_fused_matmuls = 0, m_unfused_matmuls = 0;
    std::uint64_t m_scratch_generation = 0;
    std::uint64_t m_stochastic_seed = 0;
    std::uint64_t* m_stochastic_words = nullptr;  // device: the passes drawn, the last key (made on first use)
    const RoundingStats* m_deferred_host = nullptr;
    int m_deferred_count = 0;
    unsigned long long* m_deferred_device = nullptr;
    std::vector<std::int64_t> m_embedding_order, m_embedding_rows;  // embedding_backward's host CSR
};

// The CUDA type of a format's storage for cuBLASLt.
cudaDataType_t storage_type(Format f);

}  // namespace mantissa::cuda
