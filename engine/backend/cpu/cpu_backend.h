// CpuBackend: the reference backend. Every tensor is an FP32 array whose values are rounded to
// the tensor's declared format at exactly the points docs/numerics.md names (see backend.h), so training
// on the CPU shows the same underflow, lost updates and overflows a GPU does. Matmuls go through
// oneDNN (CpuMatmul); rounding through mantissa::round_array (vectorised). Memory figures are the
// bytes the declared formats would take on a device ("modelled").
//
// Speed: the step is bound by its matmuls; everything else is one pass over memory per operation
// at most (copies fused with their rounding, epilogues and statistics done block by block while
// the block is in the L1 cache), scratch buffers are kept between steps (no allocation on the
// steady-state step), and oneDNN's primitives are created once per shape (CpuMatmul). With
// master weights the optimizer also writes the weights' cast copies (write stamps below), for FP8
// layers the quantised weights with the scale the next forward will use (CpuFp8WeightCopy), and
// on statistics steps the underflow reference of dW is proven element by element where it can be
// instead of computed by a second matmul (cpu_flush_count.h). docs/numerics.md, "The CPU
// backend's speed".
//
// The implementation is split by operation: cpu_backend.cpp (tensors, accounting, casts, what it
// supports), cpu_linear.cpp (linear layers, FP8 scaling), cpu_conv.cpp (convolutions),
// cpu_pool.cpp (max, average and global average pools), cpu_batchnorm.cpp (batch norm),
// cpu_elementwise.cpp (activations, losses, add), cpu_attention.cpp (batched matmul and softmax,
// on CpuBatchedMatmul), cpu_layernorm.cpp (layer norm), cpu_embedding.cpp (embedding),
// cpu_gradients.cpp (unscale and check), cpu_optimizer.cpp (SGD, AdamW). Argument checks happen before any of them (backend_checks.cpp).
// Training thread only.
#pragma once

#include <array>
#include <initializer_list>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/amax_history.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_batched_matmul.h"
#include "backend/cpu/cpu_buffer.h"
#include "backend/cpu/cpu_flush_scratch.h"
#include "backend/cpu/cpu_matmul.h"
#include "numeric/stochastic_round.h"

namespace mantissa {

class CpuTensor;

// An FP8 layer's quantised weight copy (saturate_e4m3(w · scale)), which the optimizer writes
// with the scale the layer's weight history will have after this step's update (the delayed
// scaling is known then), so that linear_forward can skip the quantisation pass. Valid while
// `copy` is_copy_of the weight and the history's scale is bit for bit `scale`; amax is max |w|
// (as scale_round_array returns it) of the weight it was made from.
struct CpuFp8WeightCopy {
    CpuTensor* copy = nullptr;
    const AmaxHistory* history = nullptr;
    float scale = 0.0f, amax = 0.0f;
};

// A batched matmul operand's values as bf16 bits (cpu_attention.cpp): the matrices of one view,
// `lines` runs of `run` contiguous values each, as the view's key names them, copied while the
// tensor had write stamp `stamp`. Attention multiplies most operands twice (the forward's Q, K,
// V and probabilities again in the backward, dO and dS twice there), and a copy serves every
// product that reads the same values in the same order while the tensor is unwritten.
struct CpuBf16Copy {
    std::uint64_t stamp = 0;
    std::array<std::int64_t, 9> key{};
    std::vector<std::uint16_t, PlacedAllocator<std::uint16_t>> bits;
    bool exact = false;  // every value one the bf16 kernels multiply exactly (cpu_bf16_copy.h)
};

// Bytes per category, shared by the backend and its tensors (a tensor returns its bytes when
// destroyed), the weights whose cast copy the optimizer keeps up to date (master -> copy), the
// FP8 weights whose quantised copy it writes (weight -> copy) and the batched matmul's bf16
// copies of its operands. A tensor removes itself when destroyed, and an FP8 state the entries
// that name its history, so no entry dangles.
struct CpuLedger {
    std::array<std::int64_t, 6> bytes{};
    std::unordered_map<const CpuTensor*, CpuTensor*> cast_copies;
    std::unordered_map<const CpuTensor*, CpuFp8WeightCopy> fp8_copies;
    std::unordered_map<const CpuTensor*, std::vector<CpuBf16Copy>> bf16_copies;
};

// Write stamps: every access that can change a tensor's values or format (the non-const data(),
// set_format) gives it a new stamp, unique in the process. A cast copy records the stamps of its
// source and of itself when it was written; while both are unchanged, it still holds exactly
// what casting the source again would give, and linear_forward skips the cast.
class CpuTensor final : public Tensor {
public:
    CpuTensor(TensorDesc desc, std::shared_ptr<CpuLedger> ledger);
    ~CpuTensor() override;
    float* data() {
        m_stamp = next_stamp();
        return m_data.data();
    }
    const float* data() const { return m_data.data(); }
    void set_format(Format f);  // accounting only; the caller rounds
    // The write stamp: unchanged while the values are (unique in the process, so a destroyed
    // tensor's stamp never matches a later one's).
    std::uint64_t stamp() const { return m_stamp; }

    // This tensor now holds round_array(format(), source's values).
    void mark_copy_of(const CpuTensor& source);
    // Whether it still does (neither was written since mark_copy_of).
    bool is_copy_of(const CpuTensor& source) const {
        return m_source == &source && m_source_stamp == source.m_stamp && m_copy_stamp == m_stamp;
    }

private:
    static std::uint64_t next_stamp();
    std::int64_t bytes() const;
    ZeroedCpuBuffer m_data;  // placed for oneDNN, zeros nobody wrote until a step writes (cpu_buffer.h)
    std::shared_ptr<CpuLedger> m_ledger;
    std::uint64_t m_stamp;
    const CpuTensor* m_source = nullptr;  // compared, never dereferenced
    std::uint64_t m_source_stamp = 0, m_copy_stamp = 0;
};

class CpuFp8State final : public Fp8State {
public:
    CpuFp8State(const Fp8Recipe& r, std::shared_ptr<CpuLedger> ledger);
    ~CpuFp8State() override;
    Fp8TensorSnapshot snapshot(Fp8Role role) const override;
    void set_scaling(Fp8Scaling scaling) override;
    void restore(Fp8Role role, const Fp8TensorSnapshot& state) override;
    AmaxHistory& history(Fp8Role role) { return m_history[static_cast<int>(role)]; }

private:
    std::array<AmaxHistory, 3> m_history;
    std::shared_ptr<CpuLedger> m_ledger;
};

class CpuBackend final : public Backend {
public:
    CpuBackend();
    ~CpuBackend() override;

    std::string name() const override { return "cpu"; }
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

    std::string unsupported(BackendOp op, Format format) const override;
    UnscaleResult unscale_and_check(const std::vector<Tensor*>& grads, float inv_scale,
                                    const std::vector<bool>& want_summary,
                                    std::vector<GradientSummary>* summaries) override;
    UpdateCounts sgd_step(const OptimizerTensors& t, const SgdParams& p) override;
    UpdateCounts adamw_step(const OptimizerTensors& t, const AdamWParams& p) override;
    void set_gradient_tracing(bool on) override;
    void seed_stochastic_rounding(std::uint64_t seed) override;
    std::uint64_t stochastic_rounding_position() const override { return m_stochastic_pass; }
    void set_stochastic_rounding_position(std::uint64_t position) override { m_stochastic_pass = position; }
    // A ReLU and the max pool after it run as one op each way (on by default; off runs the two
    // ops, which tests compare it with bit for bit).
    bool fuses_maxpool_relu() const override { return m_fuse_maxpool_relu; }
    void set_fuses_maxpool_relu(bool on) { m_fuse_maxpool_relu = on; }
    // Passes that compute values round them in the registers before they store them where the
    // CPU runs the rounding lanes (cpu_rounded_store.h; on by default). Off: they store and then
    // round in a second pass, which tests compare it with bit for bit.
    bool rounds_in_lanes() const { return m_round_in_lanes; }
    void set_rounds_in_lanes(bool on) { m_round_in_lanes = on; }
    std::string bf16_matmul_path() const override;
    void set_bf16_matmul_path(const std::string& path) override;
    MemoryBreakdown memory() const override;
    RowSample sample_rows(const Tensor& t, std::int64_t n, std::int64_t row_len, std::span<const std::int64_t> rows,
                          float* out) const override;
    const float* host_values(const Tensor& t) const override;
    void keep_block_exponents(bool on) override;
    KeptBlockExponents kept_block_exponents(const Tensor& t, BlockFormat format, std::int64_t K) const override;
    void keep_operand_magnitudes(bool on) override { m_keep_magnitudes = on; }
    // While keep_operand_magnitudes is on: t's first n values have amax `amax` (max |v| as
    // RowSample has it), measured by a pass that read them anyway.
    void keep_magnitude(const CpuTensor& t, std::int64_t n, float amax);
    // The amax kept for t's first n values while t is unchanged since (sample_rows takes it).
    std::optional<float> kept_magnitude(const Tensor& t, std::int64_t n) const;

    CpuMatmul& matmul() { return m_matmul; }  // measurements (bench_engine)
    // How many bf16 operand copies were kept in the ledger (made, not found): tests of their reuse.
    std::int64_t bf16_copies_made() const { return m_bf16_copies_made; }
    // How many of those copies needed a larger buffer than the one they took.
    std::int64_t bf16_copy_allocations() const { return m_bf16_copy_allocations; }

    // The operands a linear layer's matmuls last read, as they read them: x and W of the forward,
    // dy of the input-gradient matmul, each with the factor its products were multiplied by on the
    // accumulator (an FP8 operand's inverse scale, NVFP4's inverse tensor scale; else 1): value ×
    // factor is what a value stands for. Filled while set (tests check the what-if statistics and
    // the block-scale views against them); null: not kept.
    struct TappedOperands {
        std::vector<float> x, w, dy;
        float x_factor = 1, w_factor = 1, dy_factor = 1;
    };
    struct OperandTap {
        std::map<const Tensor*, TappedOperands> by_weight;  // by the layer's stored weight tensor
    };
    void set_operand_tap(OperandTap* tap) { m_tap = tap; }

protected:
    void linear_forward_impl(LinearTensors& layer, const Tensor& x, Tensor& y, std::int64_t batch,
                             bool record_amax) override;
    void linear_backward_impl(LinearTensors& layer, const Tensor& x, const Tensor& dy, Tensor* dx,
                              std::int64_t batch, RoundingStats* weight_stats) override;
    void activation_forward_impl(Activation act, const Tensor& z, Tensor& a,
                                 std::int64_t batch) override;
    void activation_backward_impl(Activation act, const Tensor& z, const Tensor& a,
                                  const Tensor& da, Tensor& dz, std::int64_t batch) override;
    LossResult softmax_cross_entropy_impl(const Tensor& logits, const std::int32_t* labels,
                                          std::int64_t batch, float loss_scale,
                                          Tensor* dlogits) override;
    LossResult mse_impl(const Tensor& y, const float* targets, std::int64_t batch,
                        float loss_scale, Tensor* dy) override;
    void conv2d_forward_impl(ConvTensors& conv, const Tensor& x, Tensor& y, std::int64_t batch,
                             bool record_amax) override;
    void conv2d_backward_impl(ConvTensors& conv, const Tensor& x, const Tensor& dy, Tensor* dx,
                              std::int64_t batch, RoundingStats* weight_stats) override;
    void maxpool2d_forward_impl(const Pool2dGeometry& pool, const Tensor& x, Tensor& y,
                                std::int64_t batch) override;
    void maxpool2d_backward_impl(const Pool2dGeometry& pool, const Tensor& x, const Tensor& y,
                                 const Tensor& dy, Tensor& dx, std::int64_t batch) override;
    void maxpool2d_relu_forward_impl(const Pool2dGeometry& pool, const Tensor& z, Tensor& y,
                                     std::int64_t batch) override;
    void maxpool2d_relu_backward_impl(const Pool2dGeometry& pool, const Tensor& z, const Tensor& y,
                                      const Tensor& dy, Tensor& dx, std::int64_t batch) override;
    void avgpool2d_forward_impl(const Pool2dGeometry& pool, const Tensor& x, Tensor& y,
                                std::int64_t batch) override;
    void avgpool2d_backward_impl(const Pool2dGeometry& pool, const Tensor& dy, Tensor& dx,
                                 std::int64_t batch) override;
    void global_avgpool_forward_impl(std::int64_t channels, std::int64_t spatial, const Tensor& x,
                                     Tensor& y, std::int64_t batch) override;
    void global_avgpool_backward_impl(std::int64_t channels, std::int64_t spatial,
                                      const Tensor& dy, Tensor& dx, std::int64_t batch) override;
    void batchnorm2d_forward_impl(BatchNormTensors& bn, const Tensor& x, Tensor& y,
                                  std::int64_t batch, bool training) override;
    void batchnorm2d_backward_impl(BatchNormTensors& bn, const Tensor& x, const Tensor& dy,
                                   Tensor& dx, std::int64_t batch) override;
    void add_impl(const Tensor& a, const Tensor& b, Tensor& y, std::int64_t batch) override;
    void batched_matmul_impl(const BatchedMatmul& op, const Tensor& a, const StridedMatrix& a_view,
                             const Tensor& b, const StridedMatrix& b_view, Tensor& c,
                             const StridedMatrix& c_view) override;
    void softmax_forward_impl(const Tensor& x, Tensor& y, std::int64_t rows, bool causal,
                              SoftmaxStats* stats) override;
    void softmax_backward_impl(const Tensor& y, const Tensor& dy, Tensor& dx, std::int64_t rows,
                               bool causal, float scale) override;
    void layernorm_forward_impl(LayerNormTensors& ln, const Tensor& x, Tensor& y, std::int64_t rows,
                                LayerNormStats* stats) override;
    void layernorm_backward_impl(LayerNormTensors& ln, const Tensor& x, const Tensor& dy, Tensor& dx,
                                 std::int64_t rows) override;
    void embedding_forward_impl(const Tensor& weight, const std::int32_t* ids, Tensor& y,
                                std::int64_t rows) override;
    void embedding_backward_impl(const std::int32_t* ids, const Tensor& dy, Tensor& grad_weight,
                                 std::int64_t rows, bool accumulate) override;

private:
    // maxpool2d_forward_impl, and with the ReLU before it applied to the pooled values
    // (maxpool2d_relu_forward_impl: x is the ReLU's input).
    void maxpool_forward(const Pool2dGeometry& pool, const Tensor& x, Tensor& y, std::int64_t batch,
                         bool then_relu);
    // maxpool2d_backward_impl, and through the ReLU before it (maxpool2d_relu_backward_impl: x
    // is the ReLU's input or output, either gives the same dx).
    void maxpool_backward(const Pool2dGeometry& pool, const Tensor& x, const Tensor& dy, Tensor& dx,
                          std::int64_t batch, bool through_relu);
    // The cast copy of `param` that the optimizer should update with it (rounding each new value
    // to the copy's format while its block is in the L1 cache), or null.
    CpuTensor* fresh_cast_copy(const Tensor& param) const;
    // The quantised FP8 copy of `param` the optimizer should write with it, or null; its entry's
    // scale is set to the one the next forward will use.
    CpuFp8WeightCopy* fp8_copy_to_write(const Tensor& param);
    // Scratch buffers, grown on demand and kept: no allocation on the steady-state step.
    float* scratch(int slot, std::int64_t n);
    // Operand t through view v (matrices of rows x cols) as bf16 bits for the batched matmul's
    // bf16 path, found in the ledger or copied there (cpu_attention.cpp), with the copy's strides;
    // nullptr when the path cannot take it (no unit stride, a value the bf16 kernels would not
    // multiply exactly).
    const std::uint16_t* bf16_operand(const BatchedMatmul& op, const Tensor& t, const StridedMatrix& v,
                                      std::int64_t rows, std::int64_t cols, CpuStrided& strides);
    // The bf16 bits of `values`, the first n values of whichever of `owners` holds them (null
    // entries skipped), found in the ledger or copied there (cpu_bf16_kept.cpp): a linear layer's
    // x and W as its forward copied them serve its backward. nullptr where the bf16 matmul path is
    // off, no owner holds `values` (a scratch buffer), or a value is one the bf16 kernels would
    // not multiply exactly (the matmul then takes its own path, cpu_matmul.h).
    const std::uint16_t* kept_bf16_bits(std::initializer_list<const Tensor*> owners, const float* values,
                                        std::int64_t n);
    // The ledger's copy of `tensor` under `key`: current (made since its last write) or to be
    // filled (current false; counted in bf16_copies_made; its bits sized to n), in the buffer of a
    // stale copy where there is one (of this key first), so a tensor's copies keep their buffers
    // from step to step.
    CpuBf16Copy& bf16_copy_slot(const CpuTensor& tensor, const std::array<std::int64_t, 9>& key, std::int64_t n,
                                bool& current);
    // The threads a pass over n values takes: one per min_per_thread values, at most the
    // backend's count (cpu_parallel.h).
    int pass_threads(std::int64_t n, std::int64_t min_per_thread) const;
    // max |data[i]| (numeric/stats.h's max_abs) over the backend's threads.
    float amax_of(const float* data, std::int64_t n) const;
    // Operand of a matmul: `t` rounded to `format` (into scratch slot when that changes values).
    const float* operand(const CpuTensor& t, std::int64_t n, Format format, int slot);
    // t's first n values rounded to `format` into dst over the threads, with t's amax kept when
    // magnitudes are (keep_magnitude); returns dst.
    const float* rounded_into(const CpuTensor& t, std::int64_t n, Format format, float* dst);
    // The weight operand of a layer (linear, conv2d) computing in a format other than FP8: its
    // cast copy weight_compute, cast again only when it is not current (the optimizer keeps it
    // so when it can: cast_copies), or w rounded into scratch slot `slot` when there is none.
    const float* weight_operand(CpuTensor& w, Tensor* weight_compute, Format compute, int slot);
    // What a matmul layer's backward (linear, conv2d) multiplies: dy in the gradient operand
    // format (FP8: scaled, saturating e5m2, its amax recorded; into scratch slot_dy), x as the
    // forward kept it (the saved input, or x rounded into slot_x), the weight operand (null when
    // there is no dx to compute: no rounding pass for it; else into slot_w), the FP8
    // dequantisation factors, and, with gradient tracing, dy before any rounding since the loss
    // and whether the rounding of dy flushed elements (the shadows then need their own products).
    struct MatmulBackwardOperands {
        const float* dy = nullptr;       // dgrad's dy
        const float* dy_wgrad = nullptr; // wgrad's dy: dy, except for block formats (another axis)
        const float* x = nullptr;
        const float* w = nullptr;
        float dq_g = 1.0f, dq_x = 1.0f, dq_w = 1.0f;
        float dq_g_wgrad = 1.0f;              // dy's dequantisation in wgrad (dq_g unless per GEMM)
        bool bf16_ok = false;                 // operands bf16 holds exactly: the bf16 matmul may run
        bool bf16_ok_wgrad = false;           //   ... for wgrad's (bf16_ok unless per GEMM)
        const float* dy_shadow = nullptr;     // dy's shadow, or null
        const float* dy_reference = nullptr;  // dy's shadow, or dy itself
        bool flushed = false;
    };
    MatmulBackwardOperands matmul_backward_operands(Format compute, Fp8State* fp8, const CpuTensor& dy,
                                                    std::int64_t n_dy, const CpuTensor& x, std::int64_t n_x,
                                                    CpuTensor& w, Tensor* weight_compute, Tensor* saved_input,
                                                    bool need_w, int x_slot, int w_slot, int dy_slot);
    // Block-scaled layers (LinearTensors::block): the (outer, K, inner) view round_block_operand
    // quantises an operand along, K being the matmul's reduction dimension; one per operand of
    // dgrad (dy, W) and wgrad (dy, x). K = 0: the operand passes unquantised (a
    // convolution quantises its wgrad operands chunk by chunk, after im2col).
    struct BlockAxes {
        std::int64_t outer = 1, K = 0, inner = 1;
        std::int64_t size() const { return outer * K * inner; }
    };
    struct BlockOperandAxes {  // the backward's (the forward quantises its two in place)
        BlockAxes dy_dgrad, w_dgrad, dy_wgrad, x_wgrad;
    };
    // dy's shadow and reference (gradient tracing), and whether a dy operand (dgrad's, or wgrad's
    // when it differs) flushed values of dy's first n.
    void trace_dy(MatmulBackwardOperands& o, const CpuTensor& dy, std::int64_t n);
    // src quantised along `axes` into scratch slot `slot`, each value decoded with its block's scale
    // (round_block_operand); *factor = what the matmul's accumulator is multiplied by (NVFP4's
    // tensor scale's inverse, else 1). A gradient operand (dy) is rounded stochastically while the
    // layer asks for it (m_stochastic_gradients). K = 0: src itself, factor 1.
    // `kept`: the buffer of keep_exponents_of, for the quantiser's block exponents (rows only).
    const float* block_operand(BlockFormat format, const CpuTensor& t, BlockAxes axes, int slot, float& factor,
                               bool gradient = false, std::int16_t* kept = nullptr);
    // block_tensor_scale of t's first n values, remembered while t is unchanged: NVFP4's operands
    // are quantised twice, along two axes (x in forward and wgrad, W in forward and dgrad, dy in
    // dgrad and wgrad), and each quantisation measured the whole tensor's amax again.
    float block_tensor_scale_of(BlockFormat format, const CpuTensor& t, std::int64_t n);
    // While keep_block_exponents is on: the buffer for the block exponents of t quantised as
    // `rows` rows of K values in `format`, recorded with t's stamp; else null.
    std::int16_t* keep_exponents_of(const CpuTensor& t, BlockFormat format, std::int64_t rows, std::int64_t K);
    // dy scaled into e5m2 (saturating) into q, stochastically while the layer asks; amax |dy|.
    float quantize_gradient_fp8(const float* dy, float* q, std::int64_t n, float scale);
    // A gradient output (dX, dW) rounded to its format: stochastically while the layer asks.
    void round_gradient(Format format, float* data, std::int64_t n);
    // data = round_gradient(data · factor), piece by piece (the FP8 dequantisation and the store).
    void scale_round_gradient(Format format, float* data, std::int64_t n, float factor);
    // The key of a gradient tensor's stochastic rounding: drawn once per tensor when the layer asks
    // and the format is narrower than FP32 (else 0, and nothing is drawn), so that a tensor rounded
    // piece by piece draws what it draws whole.
    std::uint64_t gradient_key(Format format) {
        return m_stochastic_gradients && format != Format::fp32 ? next_stochastic_key() : 0;
    }
    // round_gradient of one piece of a tensor (its values from index `first` on, the tensor's
    // gradient_key), with the rounding's counts (the weight gradient's statistics).
    void round_gradient_with_stats(Format format, float* data, std::int64_t n, RoundingStats& stats,
                                   std::uint64_t key, std::int64_t first);
    // The key of the next stochastic rounding pass.
    std::uint64_t next_stochastic_key() { return stochastic_key(m_stochastic_seed, m_stochastic_pass++); }
    // Sets m_stochastic_gradients for the duration of one layer's backward.
    struct StochasticGradients {
        StochasticGradients(CpuBackend& b, bool on) : backend(b) { backend.m_stochastic_gradients = on; }
        ~StochasticGradients() { backend.m_stochastic_gradients = false; }
        StochasticGradients(const StochasticGradients&) = delete;
        StochasticGradients& operator=(const StochasticGradients&) = delete;
        CpuBackend& backend;
    };
    // matmul_backward_operands for a block-scaled layer: dy along dgrad's and wgrad's reduction
    // dimensions (slots 2 and 13), W along dgrad's (slot 1, when need_w), x along wgrad's (slot 0).
    MatmulBackwardOperands block_backward_operands(BlockFormat format, const CpuTensor& dy, const CpuTensor& x,
                                                   const CpuTensor& w, const BlockOperandAxes& axes, bool need_w);
    // A layer whose matmuls differ (LinearTensors::dgrad, wgrad): each backward matmul's operands
    // in its own format: rounded to a tensor format, quantised in blocks along its reduction
    // (axes), or scaled into FP8 with the layer's state (e5m2 dy, e4m3 W and x; the forward's
    // quantised weight copy and saved input reused when the forward is FP8 too, else quantised
    // here with the state's scales, their amaxes recorded). Slots as the other two.
    struct PerGemmBackward {
        ComputeFormat forward, dgrad, wgrad;
        Fp8State* fp8 = nullptr;
        Tensor* weight_compute = nullptr;
        Tensor* saved_input = nullptr;
        BlockOperandAxes axes;
        std::int64_t n_dy = 0, n_x = 0;  // values of dy and x (rows × cols)
    };
    // FP8 rowwise scaling (Fp8Scaling::rowwise): each operand quantised with a scale per row along
    // its matmul's reduction (round_axiswise_fp8, the axes as a block format's), decoded in FP32.
    MatmulBackwardOperands rowwise_backward_operands(CpuFp8State& state, const CpuTensor& dy, const CpuTensor& x,
                                                     const CpuTensor& w, const BlockOperandAxes& axes, bool need_w);
    MatmulBackwardOperands per_gemm_backward_operands(const PerGemmBackward& g, const CpuTensor& dy,
                                                      const CpuTensor& x, CpuTensor& w, bool need_w);
    // FP8: wc = saturate_e4m3(w · hw's scale), skipped when the optimizer already wrote exactly
    // that (CpuFp8WeightCopy); returns amax |w|.
    float quantized_weight(CpuTensor& w, CpuTensor& wc, AmaxHistory& hw);
    // dx's FP32 shadow for a backward that is linear in dy (pools, batch norm): null when
    // gradient tracing has nothing to keep (dy has no shadow, and dx is FP32 or, `rounds` false,
    // not rounded). Else *sdy is dy's shadow or null (then the shadow of dx is dx before its
    // rounding).
    float* trace_backward(const Tensor& dy, const Tensor& dx, std::int64_t n, bool rounds, const float** sdy);
    // The end of a matmul backward's dX (linear, conv2d): dx, the product, scaled by dq and
    // rounded to dx_out's format. With gradient tracing, dx's shadow is kept before the rounding
    // where it may differ from dx in its zeros: behind a shadowed dy (`dy_shadowed`), behind
    // operands that flushed values (`flushed`: the shadow is then `reference_product`, the
    // product of dy's FP32 reference, times dq_w), or where dx's own rounding may flush.
    void finish_matmul_dgrad(Tensor& dx_out, float* dx, std::int64_t n, float dq, float dq_w, bool dy_shadowed,
                             bool flushed, const std::function<void(float*)>& reference_product);

    // Gradient tracing: the FP32 "shadow" of a gradient tensor holds the values it would have
    // without any rounding since the loss (zero patterns are what matter). shadow_for marks t's
    // shadow valid for this step and returns its n values to fill; keep_unrounded: the shadow of
    // an output about to be rounded. unrounded(t) is null when t has no shadow this step, and
    // also when the shadow holds its zeros where t does: it would then tell the statistics
    // nothing that t does not, so the backward passes after it run once, on t, as they do when
    // no rounding flushed anything (decided on the first lookup, once t is written).
    float* shadow_for(const Tensor& t, std::int64_t n);
    void drop_shadow(const Tensor& t);  // t's shadow tells nothing t does not (cpu_unrounded_pieces.h)
    const float* unrounded(const Tensor& t);
    void keep_unrounded(const Tensor& t, const float* data, std::int64_t n);

    struct Shadow {
        CpuBuffer values;
        std::int64_t n = 0;    // the values written this step
        bool valid = false;
        bool compared = false; // its zeros compared with the tensor's since shadow_for
    };
    std::shared_ptr<CpuLedger> m_ledger;
    bool m_tracing = false;
    OperandTap* m_tap = nullptr;
    // Into the tap (when set): n values of `op` and the factor its products were multiplied by.
    void tap_operand(const Tensor& weight, std::vector<float> TappedOperands::*values,
                     float TappedOperands::*factor_of, const float* op, std::int64_t n, float factor) const;
    // Stochastic rounding: the seed, the passes drawn so far, and whether the backward running now
    // rounds its gradients stochastically (StochasticGradients).
    std::uint64_t m_stochastic_seed = 0, m_stochastic_pass = 0;
    bool m_stochastic_gradients = false;
    std::unordered_map<const Tensor*, Shadow> m_shadows;
    bool m_fuse_maxpool_relu = true;
    bool m_round_in_lanes = true;
    std::int64_t m_bf16_copies_made = 0;
    std::int64_t m_bf16_copy_allocations = 0;
    CpuMatmul m_matmul;
    CpuBatchedMatmul m_batched_matmul;
    std::array<CpuBuffer, 15> m_scratch;  // slots: see cpu_linear.cpp, 4 and 6: optimizer,
                                          //   7 to 9: cpu_conv.cpp, 10 to 12: cpu_attention.cpp,
                                          //   13: a block-scaled layer's wgrad dy, 14: Kahan's
                                          //   remainder (cpu_optimizer.cpp)
                                          //   (the embedding's: below)
    std::vector<std::int64_t> m_order;            // embedding_backward's rows sorted by id
    std::vector<float> m_loss_terms;              // softmax_cross_entropy's per-row terms, summed in order
    std::vector<unsigned char> m_mask;            // the optimizer's flags: the update changes the FP32 value
    std::vector<ExponentTally> m_tallies;         // unscale_and_check's histograms, one per thread, reused
    struct UnscalePass {
        double sum_squares = 0;
        bool nonfinite = false;
    };
    std::vector<UnscalePass> m_unscale_passes;    // unscale_and_check's per-tensor results, reused
    AmaxHistory m_next_scale{1, 0, AmaxAlgo::max, 1.0f};  // fp8_copy_to_write's working copy
    cpu_detail::FlushCountScratch m_flush_scratch;  // linear_backward's underflow count
    // keep_block_exponents: this step's kept exponents, one entry per operand quantised (the
    // first m_kept_count entries; their buffers are reused from step to step).
    struct KeptExponents {
        const CpuTensor* tensor = nullptr;  // compared, never dereferenced
        std::uint64_t stamp = 0;
        BlockFormat format{};
        std::int64_t rows = 0, K = 0;
        std::vector<std::int16_t> values;
    };
    bool m_keep_exponents = false;
    std::vector<KeptExponents> m_kept;
    std::size_t m_kept_count = 0;
    struct TensorScale {  // block_tensor_scale_of's, the last 64 (a step's operands, several layers)
        const CpuTensor* tensor = nullptr;  // compared, never dereferenced
        std::uint64_t stamp = 0;
        std::int64_t n = 0;
        float scale = 1.0f;
    };
    std::array<TensorScale, 64> m_tensor_scales{};
    std::size_t m_next_tensor_scale = 0;
    struct KeptMagnitude {  // keep_magnitude's, one per tensor, the last 64 tensors
        const CpuTensor* tensor = nullptr;  // compared, never dereferenced
        std::uint64_t stamp = 0;
        std::int64_t n = 0;
        float amax = 0;
    };
    bool m_keep_magnitudes = false;
    std::array<KeptMagnitude, 64> m_kept_magnitudes{};
    std::size_t m_next_kept_magnitude = 0;
    std::vector<float> m_fp16_pack;               // FP16 accumulation's packed operands
};

}  // namespace mantissa
