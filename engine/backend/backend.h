// Backend: the plain C++ face of a compute device (the CPU reference, or the CUDA module loaded at
// run time). It owns tensors and runs the operations of mixed-precision training at the
// granularity a GPU wants: a whole linear or convolutional layer's forward or backward with its
// rounding points, an activation, a pool, a batch norm, the loss, the fused unscale + non-finite
// check, the fused optimizer updates.
//
// The layer ops are non-virtual members that check their arguments in one place
// (backend_checks.cpp) and call the backend's protected *_impl (tiny-cuda-nn's forward() ->
// forward_impl()); a backend says which ops it lacks before it is asked (supports(op, format),
// as ggml's supports_op), and the convolutional and transformer ops land on the CPU backend
// first.
//
// Rules every backend follows (docs/numerics.md has the formulas; docs/architecture.md, "Backends"):
// - A tensor has a declared Format and a MemoryCategory. Every operation rounds each value it
//   writes to the declared format of the tensor it writes (round to nearest even; overflow to
//   inf, or NaN for e4m3), so a tensor always holds values of its format. Exceptions are named
//   where they happen: unscale_and_check leaves FP32 values in gradient tensors (gradients are
//   unscaled in FP32), and the scaled FP8 casts saturate.
// - Matmul operands are cast to the layer's compute format (the fp8 ones scaled), products are
//   exact and accumulate in FP32.
// - Memory is accounted per category as the bytes the declared formats take on a device.
//
// No templates, no CUDA types: the GUI and the CUDA module see only this header. A backend is
// used by one thread at a time (the training thread); tensors belong to the backend that made
// them and must be destroyed before it.
#pragma once

#include <cstdint>
#include <span>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/conv_ops.h"
#include "backend/transformer_ops.h"
#include "numeric/block_format.h"
#include "numeric/compute_format.h"
#include "numeric/format.h"
#include "numeric/stats.h"
#include "config/experiment.h"
#include "config/telemetry.h"

namespace mantissa {

class StepPipeline;  // backend/step_pipeline.h

enum class MemoryCategory : std::uint8_t {
    parameters,       // the weights the forward pass reads (the compute copy, or the stored weights)
    master_weights,   // FP32 master copies (master weights on)
    gradients,
    optimizer_state,
    activations,      // what the forward pass keeps for backward
    workspace,        // transient buffers: gradients of activations, the loss's probabilities
};
const char* memory_category_name(MemoryCategory c);

// The ops a backend may lack (Backend::unsupported). activation covers the activations; the
// losses, casts, the check and the optimizers are part of every backend.
enum class BackendOp : std::uint8_t {
    linear,
    conv2d,
    maxpool2d,
    avgpool2d,
    global_avgpool,
    batchnorm2d,
    add,
    activation,
    bmm,        // the transformer ops (transformer_ops.h)
    softmax,
    layernorm,
    embedding,
    block_scaled,       // a linear layer in a block-scaled format (LinearTensors::block)
    block_scaled_conv,  // a conv2d layer in a block-scaled format (ConvTensors::block)
    per_gemm,           // a linear layer whose backward matmuls differ from its forward's
    per_gemm_conv,      // a conv2d layer whose backward matmuls differ from its forward's
    fp8_recipe,    // FP8 current scaling or power-of-two scales (Fp8Recipe)
    fp16_accumulation,          // a linear layer's matmuls adding in FP16 (LinearTensors::fp16_accumulation)
    stochastic_gradients,       // a linear layer's gradients rounded stochastically (LinearTensors)
    stochastic_conv_gradients,  // a conv2d layer's gradients rounded stochastically (ConvTensors)
    stochastic_weights,         // weight updates rounded stochastically (OptimizerTensors::rounding)
    kahan_updates,              // Kahan-compensated weight updates (OptimizerTensors::compensation)
    what_if,                    // what-if statistics: operands read back mid-step (sample_rows)
};
const char* backend_op_name(BackendOp op);  // "conv2d", "global_avgpool", ...

// True when every value of `inner` is a value of `outer`: rounding to `outer` changes nothing.
bool format_contains(Format outer, Format inner);

struct TensorDesc {
    std::string name;             // "fc1.weight", for messages
    std::int64_t rows = 1;        // 2-D, row-major; a vector is (1, n)
    std::int64_t cols = 0;
    Format format = Format::fp32;
    MemoryCategory category = MemoryCategory::workspace;
    std::int64_t numel() const { return rows * cols; }
};

// A tensor owned by a backend. Move-only through unique_ptr; destroying it returns its bytes to
// the backend's accounting.
class Tensor {
public:
    virtual ~Tensor() = default;
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;
    const TensorDesc& desc() const { return m_desc; }
    Format format() const { return m_desc.format; }
    std::int64_t rows() const { return m_desc.rows; }
    std::int64_t cols() const { return m_desc.cols; }
    std::int64_t numel() const { return m_desc.numel(); }

protected:
    explicit Tensor(TensorDesc desc) : m_desc(std::move(desc)) {}
    TensorDesc m_desc;  // format changes only through Backend::convert
};

// FP8 delayed scaling (Transformer Engine's recipe): per tensor, a history of the last
// `history_len` amax values and a scale = (fp8_max / amax) / 2^margin, where amax is the history's
// maximum or its most recent entry. With scaling none every scale is 1 (the history is still kept);
// with current, amax is the tensor's own at the moment it is quantised (the history is still kept,
// for the telemetry). power_of_two rounds every scale down to a power of two.
struct Fp8Recipe {
    int history_len = 16;
    int margin = 0;
    AmaxAlgo algo = AmaxAlgo::max;
    Fp8Scaling scaling = Fp8Scaling::delayed;
    bool power_of_two = false;  // scales rounded down to powers of two
};

enum class Fp8Role : std::uint8_t { input, weight, grad_output };  // e4m3, e4m3, e5m2
const char* fp8_role_name(Fp8Role r);

struct Fp8TensorSnapshot {
    float scale = 1;                   // multiplies values before the saturating cast
    float scale_inv = 1;               // 1 / scale, applied to the FP32 accumulator
    std::vector<float> amax_history;   // newest first; at most history_len entries
};

// One FP8 layer's scaling state (input, weight, output gradient), kept by the backend (on a GPU
// it lives on the device). The amaxes recorded during a step take effect at update_fp8_scales.
class Fp8State {
public:
    virtual ~Fp8State() = default;
    virtual Fp8TensorSnapshot snapshot(Fp8Role role) const = 0;
    // Between steps. none: every scale is 1 from the next step on. delayed: the scales follow the
    // amax history again from the end of the next step (the history was kept meanwhile).
    virtual void set_scaling(Fp8Scaling scaling) = 0;
    // Between steps: the tensor's scaling state becomes `state` (a snapshot taken between steps of
    // a run with the same recipe: its history at most history_len long), as if the steps that
    // made it had run here. Checkpoints (engine/train/checkpoint.h) restore through it.
    virtual void restore(Fp8Role role, const Fp8TensorSnapshot& state) = 0;
};

// The tensors of one linear layer y = x·Wᵀ + b, W of shape (out, in). Owned by the caller (the
// Network); the backend reads their declared formats to know what to round to.
struct LinearTensors {
    Format compute = Format::fp32;  // fp32, tf32, fp16, bf16 or fp8_e4m3 (hybrid: e5m2 gradients)
    Tensor* weight = nullptr;       // (out, in) the stored weights the optimizer updates
    Tensor* weight_compute = nullptr;  // (out, in) the operand copy, or null: weight is used as is
                                       //   (rounded on the fly to tf32). Required for fp8.
    Tensor* bias = nullptr;         // (1, out) stored bias
    Tensor* bias_compute = nullptr; // (1, out) the bias in the output's format, or null
    Tensor* grad_weight = nullptr;  // (out, in)
    Tensor* grad_bias = nullptr;    // (1, out)
    Tensor* saved_input = nullptr;  // (batch, in) x cast to the operand format, kept for backward;
                                    //   null when x already is in it (fp8 always needs one)
    Fp8State* fp8 = nullptr;        // required when compute is fp8_e4m3
    // A block-scaled layer (compute fp32): each matmul's operands are quantised in blocks along
    // its reduction dimension and decoded with their block scales (round_block_operand), their
    // products summed in FP32, NVFP4's tensor scales applied to the sums; weight_compute and
    // saved_input are unused. docs/numerics.md, "Block-scaled formats in training".
    std::optional<BlockFormat> block;
    // A layer whose backward matmuls run in other formats than its forward (LayerSetting per
    // GEMM): dgrad's (dX = dy·W) and wgrad's (dW = dyᵀ·x) operands are rounded or quantised to
    // these; empty: as the forward (compute, block). docs/numerics.md, "Precision per matmul".
    std::optional<ComputeFormat> dgrad, wgrad;
    // FP16 accumulation (compute fp16, no dgrad/wgrad of their own): each matmul adds its products
    // in FP16, in order of the reduction index (docs/numerics.md, "FP16 accumulation").
    bool fp16_accumulation = false;
    // The gradients the backward narrows are rounded stochastically: dy quantised to an FP8 or
    // block-scaled operand, dX and dW rounded to their formats (docs/numerics.md, "Stochastic
    // rounding and Kahan summation"). dB and everything other ops write round to nearest.
    bool stochastic_gradients = false;
};

// What the rounding of a gradient to its stored format did (counts over the tensor).
struct LossResult {
    double loss = 0;              // mean over the batch (FP32 arithmetic, reported as double)
    std::int64_t correct = 0;     // classification: argmax == label
};

struct UnscaleResult {
    bool found_nonfinite = false;
    int first_nonfinite = -1;     // index into the list of gradients of the first holding inf/NaN
    double sum_squares = 0;       // of the unscaled values (inf/NaN when found_nonfinite)
};

// Per-tensor statistics of unscaled gradients, filled by unscale_and_check when asked.
struct GradientSummary {
    double amax = 0;
    std::int64_t nonfinite = 0;
    ExponentHistogram exponents;
};

// Hyper-parameters as the host holds them (double, like Python floats); backends apply them as
// torch does: scalars combined in double, then used in FP32.
struct SgdParams {
    double lr = 0, momentum = 0, weight_decay = 0;
    bool first_step = true;       // torch initialises the momentum buffer with the gradient
};

struct AdamWParams {
    double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
    std::int64_t step = 1;        // 1-based count of steps taken (bias correction)
};

// The parameter the optimizer updates: `param` in its declared format (FP32 master, or the
// stored low-precision weights, rounded after the update), its gradient (unscaled, FP32 values)
// and FP32 state tensors (null when unused).
struct OptimizerTensors {
    Tensor* param = nullptr;
    const Tensor* grad = nullptr;
    Tensor* state1 = nullptr;     // sgd: momentum buffer; adamw: exp_avg
    Tensor* state2 = nullptr;     // adamw: exp_avg_sq
    // How the new FP32 value is stored in a param narrower than FP32 (precision.rounding.weights):
    // to nearest, stochastically, or Kahan-compensated: the update plus the compensation is added,
    // and what the rounding lost is kept in `compensation` (param's size and format) for the next
    // step (docs/numerics.md, "Stochastic rounding and Kahan summation"). An FP32 param ignores it.
    WeightRounding rounding = WeightRounding::nearest;
    Tensor* compensation = nullptr;  // required for kahan on a narrow param
};

struct UpdateCounts {
    std::int64_t nonzero_updates = 0;  // elements whose update changes them in FP32 (fp32(w + u) != w)
    std::int64_t lost_updates = 0;     // of those, elements whose stored value (in the parameter's
                                       // format) is unchanged: lost to the stored precision (Kahan:
                                       // and whose compensation is unchanged too: lost to both)
};

class Backend {
public:
    virtual ~Backend() = default;

    virtual std::string name() const = 0;         // "cpu", "cuda"
    virtual std::string device_name() const = 0;  // "AMD EPYC (2 threads, AVX2, bf16 matmul: ...)"

    // ---- tensors
    virtual std::unique_ptr<Tensor> allocate(const TensorDesc& desc) = 0;  // zero-filled
    // Host <-> tensor copies of the first n values (n <= numel). upload rounds to the format.
    virtual void upload(Tensor& t, const float* data, std::int64_t n) = 0;
    virtual void download(const Tensor& t, float* data, std::int64_t n) const = 0;
    virtual void fill(Tensor& t, float value) = 0;  // rounded to the format
    // Writes one value (demonstrations: inject inf/NaN into a gradient): unrounded in a 4-byte
    // format, the nearest value in a narrower one (inf and NaN exactly; e4m3 has no inf: NaN).
    virtual void poke(Tensor& t, std::int64_t index, float value) = 0;
    // dst = src rounded to dst's format (same numel).
    virtual void cast(const Tensor& src, Tensor& dst) = 0;
    // Re-declares t's format and rounds its values to it (live precision changes); the memory
    // accounting follows.
    virtual void convert(Tensor& t, Format format) = 0;

    // ---- statistics
    // A tensor's magnitudes and a sample of its rows, for the what-if statistics (train/what_if.h).
    struct RowSample {
        float amax = 0;         // max |v| over t's first n values: NaN when one is NaN, else inf when one is inf
        float finite_amax = 0;  // max |v| over the finite ones (0 when none)
    };
    // Copies the rows `rows` of t, viewed as rows of `row_len` values (row r: values
    // [r·row_len, (r+1)·row_len), inside the first n), side by side into out, and measures t's
    // first n values. Between ops, on the training thread; the default downloads the n values.
    virtual RowSample sample_rows(const Tensor& t, std::int64_t n, std::int64_t row_len,
                                  std::span<const std::int64_t> rows, float* out) const;
    // t's values where the backend keeps them in host memory (the CPU backend), so that the
    // statistics read a whole tensor in place, between ops; null where they must be copied.
    virtual const float* host_values(const Tensor& t) const {
        (void)t;
        return nullptr;
    }
    // While on (a statistics step with block-scale views: the Trainer sets it before each step's
    // forward), a block-scaled linear forward keeps the block exponents its quantiser found for x
    // and W (block_decode_exponents's values), so that the views read them instead of a second
    // pass over the operands. Off by default; a backend may ignore it (the views then decode).
    virtual void keep_block_exponents(bool on) { (void)on; }
    // The exponents kept for t, viewed as rows of K values in blocks of `format`, while t is
    // unchanged since it was quantised: values[row · ceil(K / block) + b] for its first `rows`
    // rows. Empty (null) when none were kept.
    struct KeptBlockExponents {
        const std::int16_t* values = nullptr;
        std::int64_t rows = 0;
    };
    virtual KeptBlockExponents kept_block_exponents(const Tensor& t, BlockFormat format, std::int64_t K) const {
        (void)t, (void)format, (void)K;
        return {};
    }
    // While on (the forward of a statistics step with what-if statistics, and the optimizer step
    // before one: the Trainer sets it), the passes that read a whole operand anyway (its cast or
    // block quantisation to a matmul's format, the optimizer's write of the weights) measure its
    // amax on the way, and sample_rows returns that for the tensor while it is unchanged instead
    // of reading it again. Off by default; a backend may ignore it (sample_rows then measures).
    virtual void keep_operand_magnitudes(bool on) { (void)on; }

    // ---- FP8 scaling state
    virtual std::unique_ptr<Fp8State> create_fp8_state(const Fp8Recipe& recipe) = 0;
    // End of a training step: the amaxes recorded during the step enter the histories and the
    // scales for the next step are computed.
    virtual void update_fp8_scales(Fp8State& state) = 0;

    // ---- what this backend can run
    // "" when this backend runs `op` with tensors (or, for linear, conv2d and bmm, a compute
    // format) in `format`; else one sentence saying what it lacks and what to do instead ("The
    // CUDA backend has no conv2d yet; use the CPU backend (backend: cpu)."). The wrappers of the
    // convolutional and transformer ops below throw that sentence when called anyway; linear and
    // the activations keep their own refusals (a GPU that cannot multiply in a format says so
    // at the first call).
    virtual std::string unsupported(BackendOp op, Format format) const = 0;
    bool supports(BackendOp op, Format format) const { return unsupported(op, format).empty(); }

    // The ops below are non-virtual: each checks its arguments once (backend_checks.cpp), so two
    // backends cannot drift in what they accept, then calls the backend's *_impl.

    // ---- layers
    // y(batch, out) = x(batch, in)·Wᵀ + b, rounded to y's format. Casts the weight (from
    // `weight`, the FP32 master when master weights are on) into weight_compute, and x into
    // saved_input. record_amax: training steps record FP8 amaxes, evaluation does not.
    void linear_forward(LinearTensors& layer, const Tensor& x, Tensor& y, std::int64_t batch,
                        bool record_amax);
    // From dy(batch, out): dx(batch, in) (null for the first layer), grad_weight and grad_bias,
    // each accumulated in FP32 and rounded to its format. `x` is the forward's input (used when
    // saved_input is null). When weight_stats is not null, it receives what the rounding of
    // grad_weight did (zeros before and after, subnormals, non-finite; see
    // set_gradient_tracing for what "before" means).
    void linear_backward(LinearTensors& layer, const Tensor& x, const Tensor& dy, Tensor* dx,
                         std::int64_t batch, RoundingStats* weight_stats);

    void activation_forward(Activation act, const Tensor& z, Tensor& a, std::int64_t batch);
    // dz = da ⊙ act'(z), rounded to dz's format. As torch does, relu and tanh take the
    // derivative from the stored output a, gelu from the input z.
    void activation_backward(Activation act, const Tensor& z, const Tensor& a, const Tensor& da,
                             Tensor& dz, std::int64_t batch);

    // ---- losses (FP32). dlogits / dy (when not null) receive loss_scale × ∂loss/∂input, rounded
    // to their format. Labels and targets are host arrays of `batch` rows.
    LossResult softmax_cross_entropy(const Tensor& logits, const std::int32_t* labels,
                                     std::int64_t batch, float loss_scale, Tensor* dlogits);
    LossResult mse(const Tensor& y, const float* targets, std::int64_t batch, float loss_scale,
                   Tensor* dy);

    // ---- convolutional ops (conv_ops.h; docs/numerics.md, "Convolutional ops")
    // Images are one sample per row, NCHW flattened. Each op writes its output rounded to the
    // output tensor's format, and whole rows [0, batch): gradients are written, not accumulated.

    // y(batch, Co·oh·ow) = W ⋆ x(batch, C·H·W) + b, with linear_forward's rounding points:
    // operands cast to the compute format (FP8: scaled, into weight_compute and saved_input),
    // exact products summed in FP32, the bias added in the output's format, rounded to y's.
    void conv2d_forward(ConvTensors& conv, const Tensor& x, Tensor& y, std::int64_t batch,
                        bool record_amax);
    // From dy(batch, Co·oh·ow): dx (null for the first layer), grad_weight and grad_bias (when
    // the convolution has a bias), as linear_backward: dy cast to the gradient operand format, dX
    // and dW in FP32 rounded to their formats, dB = Σ over the batch and positions of dy in FP32.
    // weight_stats counts the rounding of dW as linear_backward's does.
    void conv2d_backward(ConvTensors& conv, const Tensor& x, const Tensor& dy, Tensor* dx,
                         std::int64_t batch, RoundingStats* weight_stats);

    // Max over each window (padding never wins); ties go to the first position of the window in
    // row-major order, as PyTorch's; a NaN in a window is its maximum.
    void maxpool2d_forward(const Pool2dGeometry& pool, const Tensor& x, Tensor& y,
                           std::int64_t batch);
    // dx = dy routed to each window's maximum (found again from x by the forward's rule; y is
    // for backends that read it), summed in FP32 where windows overlap, rounded to dx's format.
    void maxpool2d_backward(const Pool2dGeometry& pool, const Tensor& x, const Tensor& y,
                            const Tensor& dy, Tensor& dx, std::int64_t batch);
    // A ReLU and the max pool after it as one op, on the ReLU's input z (its output is never
    // written): forward y = maxpool(relu(z)), computed as relu(maxpool(z)) (the same bits: relu
    // keeps a positive maximum and a NaN, and turns a window of values <= 0 into +0 either way);
    // backward dx = the ReLU's input gradient, activation_backward(relu) of maxpool2d_backward's
    // dx: a window passes dy on to its maximum in z only where the ReLU passes it, m > 0 or a
    // NaN, +0 elsewhere (that maximum is the one the pool finds in relu(z) wherever it matters).
    // The two ops' bits where the ReLU adds no rounding of its own (its output and gradient have
    // z's format: an activation runs in its input's). Only on a backend whose
    // fuses_maxpool_relu() is true (Network asks; the others run the two ops).
    void maxpool2d_relu_forward(const Pool2dGeometry& pool, const Tensor& z, Tensor& y, std::int64_t batch);
    void maxpool2d_relu_backward(const Pool2dGeometry& pool, const Tensor& z, const Tensor& y,
                                 const Tensor& dy, Tensor& dx, std::int64_t batch);
    virtual bool fuses_maxpool_relu() const { return false; }
    // y = (Σ window) / k² in FP32 (padding counts as zeros, PyTorch's count_include_pad).
    void avgpool2d_forward(const Pool2dGeometry& pool, const Tensor& x, Tensor& y,
                           std::int64_t batch);
    void avgpool2d_backward(const Pool2dGeometry& pool, const Tensor& dy, Tensor& dx,
                            std::int64_t batch);
    // Global average pool = avgpool with kernel = (in_h, in_w): x(batch, channels·spatial) ->
    // y(batch, channels); the mean in FP32.
    void global_avgpool_forward(std::int64_t channels, std::int64_t spatial, const Tensor& x,
                                Tensor& y, std::int64_t batch);
    void global_avgpool_backward(std::int64_t channels, std::int64_t spatial, const Tensor& dy,
                                 Tensor& dx, std::int64_t batch);

    // Training: batch statistics (the biased variance normalises, the unbiased one updates
    // running_var, as PyTorch), running statistics updated with momentum, saved_mean and
    // saved_invstd written for the backward; evaluation: the running statistics. y rounded to
    // y's format.
    void batchnorm2d_forward(BatchNormTensors& bn, const Tensor& x, Tensor& y,
                             std::int64_t batch, bool training);
    // The backward of a training forward (its saved statistics): dx rounded to dx's format,
    // grad_weight and grad_bias in FP32 (rounded to their formats).
    void batchnorm2d_backward(BatchNormTensors& bn, const Tensor& x, const Tensor& dy,
                              Tensor& dx, std::int64_t batch);

    // y = a + b elementwise in FP32, rounded to y's format (a residual: y declared in the wider
    // format). Its backward is the identity on both inputs.
    void add(const Tensor& a, const Tensor& b, Tensor& y, std::int64_t batch);

    // ---- transformer ops (transformer_ops.h; docs/numerics.md, "Transformer ops")
    // Like the convolutional ops: each writes its output rounded to the output tensor's format,
    // gradients are written (embedding_backward may accumulate), and a backend without the op
    // refuses the call with its unsupported() sentence (the format passed is the compute format
    // for bmm, the output's for the others).

    // C[b] = alpha · A[b] · B[b] over op.batch_count() matrices read and written through strided
    // views (StridedMatrix): operands cast to op.compute, exact products summed in FP32, alpha at
    // op.alpha_point, rounded to c's format. Every viewed element must lie in its tensor; c must
    // be neither a nor b, and its view must not reach an element twice.
    void batched_matmul(const BatchedMatmul& op, const Tensor& a, const StridedMatrix& a_view,
                        const Tensor& b, const StridedMatrix& b_view, Tensor& c,
                        const StridedMatrix& c_view);

    // Row-wise softmax of rows [0, rows) in FP32 from x's values, rounded to y's format. causal:
    // x holds (T, T) blocks (T = cols, rows a multiple of T), row i of a block sees columns 0..i
    // and y is exactly +0 elsewhere (those entries of x are not read). stats (when not null)
    // receive what the unmasked inputs held.
    void softmax_forward(const Tensor& x, Tensor& y, std::int64_t rows, bool causal,
                         SoftmaxStats* stats);
    // dx = y ⊙ (dy − Σ_row dy⊙y) in FP32, rounded to dx's format; then, when scale is not 1,
    // dx = rnd(dx · scale) in FP32 (the backward of the scores' scaling by a Python scalar,
    // rounded again as PyTorch eager does). causal: masked entries of dx are exactly +0.
    void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, std::int64_t rows,
                          bool causal, float scale);

    // y = ((x − μ)·invstd)·γ + β per row of `ln.dim` values, μ and the biased variance in FP32,
    // rounded to y's format; saved_mean and saved_invstd written for the backward. stats (when
    // not null) receive the smallest variance.
    void layernorm_forward(LayerNormTensors& ln, const Tensor& x, Tensor& y, std::int64_t rows,
                           LayerNormStats* stats);
    // From the forward's saved statistics: dx rounded to dx's format, grad_weight and grad_bias
    // summed over the rows in FP32 (rounded to their formats).
    void layernorm_backward(LayerNormTensors& ln, const Tensor& x, const Tensor& dy, Tensor& dx,
                            std::int64_t rows);

    // y[r] = weight[ids[r]] for r in [0, rows), rounded to y's format. ids is a host array of
    // `rows` indices in [0, weight's rows), checked.
    void embedding_forward(const Tensor& weight, const std::int32_t* ids, Tensor& y,
                           std::int64_t rows);
    // S[v] = Σ_{r: ids[r] = v} dy[r] in FP32, rows in ascending order from +0; grad_weight =
    // rnd(S), or with accumulate rnd(grad_weight + S) on the rows that ids name (the autograd
    // sum of a tied weight's two gradients). Rows no id names are zeroed (kept with accumulate).
    void embedding_backward(const std::int32_t* ids, const Tensor& dy, Tensor& grad_weight,
                            std::int64_t rows, bool accumulate);

    // ---- gradients
    // Multiplies every gradient by inv_scale in FP32 (skipped when inv_scale is 1) and checks
    // them all for inf/NaN in the same pass. summaries (when not null) gets one GradientSummary
    // per tensor for the tensors whose want_summary flag is set.
    virtual UnscaleResult unscale_and_check(const std::vector<Tensor*>& grads, float inv_scale,
                                            const std::vector<bool>& want_summary,
                                            std::vector<GradientSummary>* summaries) = 0;

    // ---- optimizers (FP32 arithmetic and state; the result rounded to param's format)
    virtual UpdateCounts sgd_step(const OptimizerTensors& t, const SgdParams& p) = 0;
    virtual UpdateCounts adamw_step(const OptimizerTensors& t, const AdamWParams& p) = 0;

    // ---- stochastic rounding
    // Seeds every stochastic rounding this backend does (precision.rounding): each rounding pass
    // takes the next key of the seed's sequence, so a run with the same seed, settings and changes
    // rounds every value the same way. A backend without stochastic rounding ignores it.
    virtual void seed_stochastic_rounding(std::uint64_t seed) { (void)seed; }
    // Where in that sequence the next rounding pass is: what a checkpoint keeps, so a resumed run
    // draws the same keys as the run that never stopped. 0 on a backend without stochastic rounding.
    virtual std::uint64_t stochastic_rounding_position() const { return 0; }
    virtual void set_stochastic_rounding_position(std::uint64_t position) { (void)position; }

    // ---- the matmul path of bf16 operands
    // Which of two paths that give different bits (summation order) a backend takes for bf16 and
    // fp8 operands: "bf16" or "fp32" on the CPU (CpuMatmul, chosen by measurement), "" on a backend
    // with one. A checkpoint keeps it so a resumed run multiplies as the run that never stopped;
    // setting a path the machine lacks ("bf16" without a bf16 matmul) takes the other.
    virtual std::string bf16_matmul_path() const { return ""; }
    virtual void set_bf16_matmul_path(const std::string& path) { (void)path; }

    // ---- underflow telemetry
    // While on (the trainer turns it on for the steps that report layer statistics, and each
    // call starts a new step), the ops that write a gradient in a narrow format (the losses,
    // activation_backward) keep the FP32 values they computed before rounding, and
    // linear_backward's weight_stats count an element of the weight gradient as underflowed when
    // it is zero after rounding but non-zero computed in FP32 from those values: the gradient
    // flushed either at the layer's output gradient or at its own store. A backend that does not
    // keep them counts the weight gradient's own rounding only (the default).
    virtual void set_gradient_tracing(bool on) { (void)on; }

    // ---- accounting
    virtual MemoryBreakdown memory() const = 0;

    // ---- the pipelined step (step_pipeline.h)
    // A pipeline whose steps leave their results on the device until collected (the loss scaler
    // living there too), or null: the Trainer then runs SyncStepPipeline over the calls above.
    virtual std::unique_ptr<StepPipeline> create_pipeline(const LossScalingSpec& spec);

protected:
    // What the wrappers above call once their arguments are checked: shapes fit, batch in
    // [0, rows] of every tensor involved, the required tensors present, FP8 ones declared e4m3,
    // labels and ids in range, views inside their tensors, and (convolutional and transformer
    // ops) the op supported in its format.
    virtual void linear_forward_impl(LinearTensors& layer, const Tensor& x, Tensor& y,
                                     std::int64_t batch, bool record_amax) = 0;
    virtual void linear_backward_impl(LinearTensors& layer, const Tensor& x, const Tensor& dy,
                                      Tensor* dx, std::int64_t batch,
                                      RoundingStats* weight_stats) = 0;
    virtual void activation_forward_impl(Activation act, const Tensor& z, Tensor& a,
                                         std::int64_t batch) = 0;
    virtual void activation_backward_impl(Activation act, const Tensor& z, const Tensor& a,
                                          const Tensor& da, Tensor& dz, std::int64_t batch) = 0;
    virtual LossResult softmax_cross_entropy_impl(const Tensor& logits, const std::int32_t* labels,
                                                  std::int64_t batch, float loss_scale,
                                                  Tensor* dlogits) = 0;
    virtual LossResult mse_impl(const Tensor& y, const float* targets, std::int64_t batch,
                                float loss_scale, Tensor* dy) = 0;

    // The convolutional ops: a backend without them keeps these defaults, which throw its
    // unsupported() sentence (never reached through the wrappers, which refuse first).
    virtual void conv2d_forward_impl(ConvTensors& conv, const Tensor& x, Tensor& y,
                                     std::int64_t batch, bool record_amax);
    virtual void conv2d_backward_impl(ConvTensors& conv, const Tensor& x, const Tensor& dy,
                                      Tensor* dx, std::int64_t batch, RoundingStats* weight_stats);
    virtual void maxpool2d_forward_impl(const Pool2dGeometry& pool, const Tensor& x, Tensor& y,
                                        std::int64_t batch);
    virtual void maxpool2d_backward_impl(const Pool2dGeometry& pool, const Tensor& x,
                                         const Tensor& y, const Tensor& dy, Tensor& dx,
                                         std::int64_t batch);
    virtual void maxpool2d_relu_forward_impl(const Pool2dGeometry& pool, const Tensor& z, Tensor& y,
                                             std::int64_t batch);
    virtual void maxpool2d_relu_backward_impl(const Pool2dGeometry& pool, const Tensor& z,
                                              const Tensor& y, const Tensor& dy, Tensor& dx,
                                              std::int64_t batch);
    virtual void avgpool2d_forward_impl(const Pool2dGeometry& pool, const Tensor& x, Tensor& y,
                                        std::int64_t batch);
    virtual void avgpool2d_backward_impl(const Pool2dGeometry& pool, const Tensor& dy, Tensor& dx,
                                         std::int64_t batch);
    virtual void global_avgpool_forward_impl(std::int64_t channels, std::int64_t spatial,
                                             const Tensor& x, Tensor& y, std::int64_t batch);
    virtual void global_avgpool_backward_impl(std::int64_t channels, std::int64_t spatial,
                                              const Tensor& dy, Tensor& dx, std::int64_t batch);
    virtual void batchnorm2d_forward_impl(BatchNormTensors& bn, const Tensor& x, Tensor& y,
                                          std::int64_t batch, bool training);
    virtual void batchnorm2d_backward_impl(BatchNormTensors& bn, const Tensor& x,
                                           const Tensor& dy, Tensor& dx, std::int64_t batch);
    virtual void add_impl(const Tensor& a, const Tensor& b, Tensor& y, std::int64_t batch);

    // The transformer ops: defaults as the convolutional ops'.
    virtual void batched_matmul_impl(const BatchedMatmul& op, const Tensor& a,
                                     const StridedMatrix& a_view, const Tensor& b,
                                     const StridedMatrix& b_view, Tensor& c,
                                     const StridedMatrix& c_view);
    virtual void softmax_forward_impl(const Tensor& x, Tensor& y, std::int64_t rows, bool causal,
                                      SoftmaxStats* stats);
    virtual void softmax_backward_impl(const Tensor& y, const Tensor& dy, Tensor& dx,
                                       std::int64_t rows, bool causal, float scale);
    virtual void layernorm_forward_impl(LayerNormTensors& ln, const Tensor& x, Tensor& y,
                                        std::int64_t rows, LayerNormStats* stats);
    virtual void layernorm_backward_impl(LayerNormTensors& ln, const Tensor& x, const Tensor& dy,
                                         Tensor& dx, std::int64_t rows);
    virtual void embedding_forward_impl(const Tensor& weight, const std::int32_t* ids, Tensor& y,
                                        std::int64_t rows);
    virtual void embedding_backward_impl(const std::int32_t* ids, const Tensor& dy,
                                         Tensor& grad_weight, std::int64_t rows, bool accumulate);

private:
    // Throws unsupported(op, format) when it is not empty.
    void require_supported(BackendOp op, Format format) const;
    void require_fp16_accumulation(const LinearTensors& layer, const char* op) const;
};

// What `mantissa-cli devices` and the GUI show: each backend, whether it can run here and why not.
struct BackendAvailability {
    std::string name;          // "cpu", "cuda"
    bool available = false;
    std::string device;        // when available
    std::string reason;        // when not: one sentence
};
std::vector<BackendAvailability> backend_availability();

// "cpu"; "cuda" (the run-time module; device = GPU index); "auto": cuda when available, else
// cpu. cpu_threads: the CPU backend's threads (an experiment's backend.threads), 0 for
// auto_cpu_threads(); the CUDA backend ignores it. Throws mantissa::Error saying why a backend
// cannot be made.
std::unique_ptr<Backend> make_backend(const std::string& name, int device = 0, int cpu_threads = 0);

// What backend.threads 0 ("auto") means in this process: MANTISSA_CPU_THREADS, else
// OMP_NUM_THREADS, else the hardware threads less the spare ones (at least one;
// engine/backend/cpu/cpu_matmul.h). A process keeps none spare unless it says so: the GUI keeps one
// for drawing and recording (app/gui/main.cpp), mantissa-cli none. Set it once, before the first
// backend is made; backend_availability's CPU device says the same count.
void set_spare_cpu_threads(int spare);  // >= 0
int auto_cpu_threads();

}  // namespace mantissa
