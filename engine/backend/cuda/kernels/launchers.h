// The kernel launchers: plain C++ functions, one group per kernel file, that the backend's host
// code calls. Pointers are device pointers; `fmt` arguments are FormatCode values (convert.cuh,
// equal to mantissa::Format); every launch goes to `stream` and is checked (mantissa::Error).
// Nothing here synchronises: results land in device memory and are copied out by the caller.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mantissa {
struct SampledRows;  // backend/sampled_rows.h
}  // namespace mantissa

namespace mantissa::cuda {

// ---- cast.cuh: dst = round(src x multiplier) to dst's format (saturating when asked)
void launch_cast(const void* src, int src_fmt, float src_multiplier, void* dst, int dst_fmt, std::int64_t n,
                 bool saturate, cudaStream_t stream);
// Writes the same stored pattern (1, 2 or 4 bytes wide) into n values.
void launch_fill_bits(void* dst, int bytes_per_value, std::uint32_t bits, std::int64_t n, cudaStream_t stream);

// ---- activation.cuh (act: mantissa::Activation's value: 0 relu, 1 gelu, 2 tanh)
void launch_activation_forward(int act, const void* z, int z_fmt, void* a, int a_fmt, std::int64_t n,
                               cudaStream_t stream);
void launch_activation_backward(int act, const void* z, int z_fmt, const void* a, int a_fmt, const void* da, int da_fmt,
                                void* dz, int dz_fmt, std::int64_t n, cudaStream_t stream);

// ---- softmax_xent.cuh: per row loss and argmax == label; dlogits = (p - onehot) x grad_factor
// grad_factor = *loss_scale_dev / batch when loss_scale_dev is set, else `grad_factor`.
void launch_softmax_cross_entropy(const void* logits, int fmt, std::int64_t batch, std::int64_t classes,
                                  const std::int32_t* labels, float grad_factor, const float* loss_scale_dev,
                                  void* dlogits, int d_fmt, float* row_loss, std::int32_t* row_correct,
                                  cudaStream_t stream);

// ---- mse.cuh: dy = (y - t) x grad_factor; *sum += Σ double((y - t)²)
// loss_scale_dev (when set) makes the gradient factor 2 x *loss_scale_dev / n (as the host forms it).
void launch_mse(const void* y, int fmt, const float* targets, std::int64_t n, float grad_factor, void* dy, int dy_fmt,
                double* sum, cudaStream_t stream, const float* loss_scale_dev = nullptr);

// ---- block_operand.cuh: a block-scaled matmul operand (MX, NVFP4) rounded into bf16 values
struct BlockOperandArgs;  // block_round.cuh
// *amax_bits = the largest finite |src| as magnitude bits (cleared first): NVFP4's tensor amax.
void launch_block_tensor_amax(const void* src, int src_fmt, std::int64_t n, std::uint32_t* amax_bits,
                              cudaStream_t stream);
// One thread per block: its amax, its scale, its values rounded and decoded (round_operand_block).
void launch_round_block_operand(const BlockOperandArgs& args, cudaStream_t stream);

// ---- linear_epilogue.cuh
// y(rows, cols) = round(acc x (dq_a x dq_b) + bias) (dq pointers may be null: 1).
void launch_bias_round(const float* acc, std::int64_t rows, std::int64_t cols, const float* dq_a, const float* dq_b,
                       const void* bias, int bias_fmt, void* y, int y_fmt, cudaStream_t stream);
// dst = round(acc x (dq_a x dq_b)); stats (4 counters: zeros before, zeros, subnormals,
// non-finite after) when not null; rounded stochastically with the pass's key in *key (element i
// taking stochastic_bits(key, i)) when key is not null.
void launch_scale_round(const float* acc, std::int64_t n, const float* dq_a, const float* dq_b, void* dst, int dst_fmt,
                        unsigned long long* stats, cudaStream_t stream, const std::uint64_t* key = nullptr);
// db(cols) = Σ over rows of dy in FP32, in bias_grad_order.h's order, rounded. `partial` holds
// bias_grad_blocks(rows) x cols floats (unused, may be null, for a batch of one block or less).
void launch_bias_grad(const void* dy, int dy_fmt, std::int64_t rows, std::int64_t cols, float* partial, void* db,
                      int db_fmt, cudaStream_t stream);

// ---- conv.cuh: a convolution's data movement and epilogues, on chunks of whole samples
// [first, first + samples) (cuda_conv.cpp has the layouts).
struct ConvLaunch {  // one sample's geometry
    std::int64_t channels, height, width, kernel, stride, padding, out_h, out_w;
};
// col(samples·P, C·k·k) from x(batch, C·H·W) rows first.., stored in col_fmt.
void launch_im2col(const ConvLaunch& g, const void* x, int x_fmt, std::int64_t first, std::int64_t samples, void* col,
                   int col_fmt, cudaStream_t stream);
// dst(samples·positions, channels) = src(batch, channels·positions) rows first.., in dst_fmt.
void launch_nchw_rows(const void* src, int src_fmt, std::int64_t first, std::int64_t samples, std::int64_t channels,
                      std::int64_t positions, void* dst, int dst_fmt, cudaStream_t stream);
// y rows first.. = round(acc(samples·positions, channels) x dequant + bias), bias null: none.
void launch_conv_output(const float* acc, std::int64_t first, std::int64_t samples, std::int64_t channels,
                        std::int64_t positions, const float* dq_a, const float* dq_b, const void* bias, int bias_fmt,
                        void* y, int y_fmt, cudaStream_t stream);
// dx rows first.. = round(dequant x Σ of dcol(samples·P, C·k·k) over the offsets reading each element),
// rounded stochastically with the pass's key in *key (value j of dx taking stochastic_bits(key, j))
// when key is not null.
void launch_col2im(const ConvLaunch& g, const float* dcol, std::int64_t first, std::int64_t samples, const float* dq_a,
                   const float* dq_b, void* dx, int dx_fmt, cudaStream_t stream, const std::uint64_t* key = nullptr);
void launch_accumulate(float* a, const float* b, std::int64_t n, cudaStream_t stream);  // a += b
// db(channels) = Σ_n Σ_p round(round_fmt, dy[n, c, p]) in the CPU's order; partial: batch x channels floats.
void launch_conv_bias_grad(const void* dy, int dy_fmt, int round_fmt, std::int64_t batch, std::int64_t channels,
                           std::int64_t positions, float* partial, void* db, int db_fmt, cudaStream_t stream);

// ---- pool.cuh: rows of `batch` samples, NCHW
struct PoolLaunch {
    std::int64_t channels, height, width, kernel, stride, padding, out_h, out_w;
};
void launch_maxpool_forward(const PoolLaunch& p, const void* x, int x_fmt, void* y, int y_fmt, std::int64_t batch,
                            cudaStream_t stream);
void launch_maxpool_backward(const PoolLaunch& p, const void* x, int x_fmt, const void* dy, int dy_fmt, void* dx,
                             int dx_fmt, std::int64_t batch, cudaStream_t stream);
void launch_avgpool_forward(const PoolLaunch& p, const void* x, int x_fmt, void* y, int y_fmt, std::int64_t batch,
                            cudaStream_t stream);
void launch_avgpool_backward(const PoolLaunch& p, const void* dy, int dy_fmt, void* dx, int dx_fmt, std::int64_t batch,
                             cudaStream_t stream);
// rows = batch x channels planes of `spatial` values.
void launch_global_avgpool_forward(const void* x, int x_fmt, std::int64_t rows, std::int64_t spatial, void* y,
                                   int y_fmt, cudaStream_t stream);
void launch_global_avgpool_backward(const void* dy, int dy_fmt, std::int64_t rows, std::int64_t spatial, void* dx,
                                    int dx_fmt, cudaStream_t stream);

// ---- batchnorm.cuh: one block per channel; the per-channel tensors with their formats
struct BatchNormLaunch {
    std::int64_t batch, channels, spatial;
    double momentum, eps;
    const void* weight;
    int weight_fmt;
    const void* bias;
    int bias_fmt;
    void* running_mean;
    int running_mean_fmt;
    void* running_var;
    int running_var_fmt;
    void* saved_mean;
    int saved_mean_fmt;
    void* saved_invstd;
    int saved_invstd_fmt;
    void* grad_weight;
    int grad_weight_fmt;
    void* grad_bias;
    int grad_bias_fmt;
};
void launch_batchnorm_forward(const BatchNormLaunch& b, const void* x, int x_fmt, void* y, int y_fmt, bool training,
                              cudaStream_t stream);
void launch_batchnorm_backward(const BatchNormLaunch& b, const void* x, int x_fmt, const void* dy, int dy_fmt, void* dx,
                               int dx_fmt, cudaStream_t stream);
// y = a + b (FP32), rounded to y's format; y may be a or b.
void launch_add(const void* a, int a_fmt, const void* b, int b_fmt, void* y, int y_fmt, std::int64_t n,
                cudaStream_t stream);

// ---- batched_matmul.cuh: what a batched matmul needs beyond cuBLASLt (cuda_attention.cpp)
struct ViewLaunch {  // a StridedMatrix over matrices of (rows, cols), b = outer·inner_count + inner
    std::int64_t offset, outer_stride, inner_stride, row_stride, col_stride;
    std::int64_t inner_count, rows, cols;
};
// dst(batch, rows, cols), plain, in dst_fmt = round(src's values through v): a gathered operand
// rounded to the compute format (the CPU's pack).
void launch_batched_matmul_pack(const void* src, int src_fmt, const ViewLaunch& v, std::int64_t batch, void* dst,
                                int dst_fmt, cudaStream_t stream);
// C through c (batch matrices) = round(alpha·v), v = acc[p] (acc plain FP32; null: +0, an empty
// sum), first rounded to C's format when round_first (AlphaPoint::output); in_place: v is C's own
// value (a product cuBLASLt already rounded into C).
void launch_batched_matmul_epilogue(const float* acc, bool in_place, float alpha, bool round_first,
                                    const ViewLaunch& c, std::int64_t batch, void* c_data, int c_fmt,
                                    cudaStream_t stream);
// The fallback for what cuBLASLt refuses: one thread per element of C, Σ_l rnd_F(A)·rnd_F(B) in
// FP32 in l order, through the views, then the epilogue.
void launch_batched_matmul_reference(const void* a, int a_fmt, const ViewLaunch& av, const void* b, int b_fmt,
                                     const ViewLaunch& bv, std::int64_t k, int compute_fmt, float alpha,
                                     bool round_first, void* c, int c_fmt, const ViewLaunch& cv, std::int64_t batch,
                                     cudaStream_t stream);

// ---- softmax.cuh: row-wise softmax of (rows, cols), causal: (cols × cols) blocks
struct SoftmaxStatsDevice {  // zeroed before the forward
    unsigned int amax_bits;  // max |x| over finite unmasked entries, FP32 bits
    unsigned int unused;
    unsigned long long nonfinite;
};
void launch_softmax_forward(const void* x, int x_fmt, void* y, int y_fmt, std::int64_t rows, std::int64_t cols,
                            bool causal, SoftmaxStatsDevice* stats, cudaStream_t stream);
void launch_softmax_backward(const void* y, int y_fmt, const void* dy, int dy_fmt, void* dx, int dx_fmt,
                             std::int64_t rows, std::int64_t cols, bool causal, float scale, cudaStream_t stream);

// ---- layernorm.cuh: rows of `dim` values; the per-row and per-column tensors with their formats
struct LayerNormLaunch {
    std::int64_t rows, dim;
    double eps;
    const void* weight;
    int weight_fmt;
    const void* bias;
    int bias_fmt;
    void* grad_weight;
    int grad_weight_fmt;
    void* grad_bias;
    int grad_bias_fmt;
    void* saved_mean;
    int saved_mean_fmt;
    void* saved_invstd;
    int saved_invstd_fmt;
};
// min_variance_bits (when not null, initialised to +inf's bits): the smallest row variance.
void launch_layernorm_forward(const LayerNormLaunch& l, const void* x, int x_fmt, void* y, int y_fmt,
                              unsigned int* min_variance_bits, cudaStream_t stream);
// The doubles of the column sums' partial buffer the backward needs.
std::int64_t layernorm_partial_doubles(std::int64_t rows, std::int64_t dim);
void launch_layernorm_backward(const LayerNormLaunch& l, const void* x, int x_fmt, const void* dy, int dy_fmt, void* dx,
                               int dx_fmt, double* partial, cudaStream_t stream);

// ---- embedding.cuh
// y(rows, dim) = round(weight[ids[r]]); ids on the device.
void launch_embedding_forward(const void* weight, int w_fmt, std::int64_t dim, const std::int32_t* ids,
                              std::int64_t rows, void* y, int y_fmt, cudaStream_t stream);
// rows_of (device): segment s (of `segments`) names vocabulary row rows_of[segments + 1 + s] and
// sums dy's rows rows_of[2·segments + 1 + i] for i in [rows_of[s], rows_of[s + 1]), in order.
// grad_weight's other rows are not touched (zero them first unless accumulating).
void launch_embedding_backward(const std::int64_t* rows_of, std::int64_t segments, const void* dy, int dy_fmt,
                               std::int64_t dim, void* grad_weight, int gw_fmt, bool accumulate, cudaStream_t stream);

// ---- fp8_quantize.cuh
// dst = saturate_cast<fp8>(src x *scale); *amax_bits = max(|src| bit patterns) when not null;
// rounded stochastically (saturating) with the pass's key in *key when key is not null.
void launch_quantize_fp8(const void* src, int src_fmt, std::int64_t n, const float* scale, std::uint8_t* dst, bool e4m3,
                         std::uint32_t* amax_bits, cudaStream_t stream, const std::uint64_t* key = nullptr);
// dst(cols, rows) = src(rows, cols)ᵀ, bytes.
void launch_transpose_u8(const std::uint8_t* src, std::int64_t rows, std::int64_t cols, std::uint8_t* dst,
                         cudaStream_t stream);

// ---- fp8_scaling.cuh: one FP8 layer's state (see Fp8StateLayout) at the end of a step
struct Fp8StateLayout {
    static constexpr int scale = 0;      // [3] floats, by Fp8Role
    static constexpr int scale_inv = 3;  // [3]
    static constexpr int pending = 6;    // [3] this step's amax, as FP32 bit patterns
    static constexpr int newest = 9;     // int, -1 before the first update
    static constexpr int count = 10;     // int
    static constexpr int current_amax = 11;  // [3] current scaling's amaxes (fp8_current.cuh), as bits
    static constexpr int window = 16;    // [3][history_len] floats, role-major
    static constexpr int words(int history_len) { return window + 3 * history_len; }
};
// scaled false (precision.fp8.scaling none, current, rowwise): the window advances, the scales stay
// as they are. power_of_two: the scales rounded down to powers of two.
void launch_fp8_update(float* state, int history_len, int margin, int algo, bool scaled, bool power_of_two,
                       cudaStream_t stream);

// ---- fp8_current.cuh: FP8 scales from the tensor being quantised
// Current scaling: role's amax of src[0, n) into the state, then its scale and scale_inv from it
// (AmaxHistory::use_amax: 1 when the amax is 0 or not finite).
void launch_fp8_current_scale(const void* src, int src_fmt, std::int64_t n, float* state, int role, float fp8_max,
                              int margin, bool power_of_two, cudaStream_t stream);
struct RowwiseArgs;  // fp8_scale_rule.cuh
// Rowwise scaling: one thread per run of K values, its own scale, decoded in FP32.
void launch_round_rowwise(const RowwiseArgs& args, cudaStream_t stream);

// ---- unscale_check.cuh: the fused unscale + non-finite check + statistics over many tensors
constexpr int histogram_bins = 278;  // ExponentHistogram::bins (exponents -150 .. 127)
constexpr int histogram_min_exponent = -150;
struct CheckChunk {  // a slice [begin, end) of one gradient
    void* data;
    std::int64_t begin, end;
    int tensor;  // index into the list of gradients
    int fmt;
    float multiplier;  // the tensor's pending multiplier (1 normally)
    int write_back;    // 1: 4-byte storage, the unscaled values are written
    int want_summary;
};
struct CheckResult {  // per tensor, zeroed before the launch
    unsigned int nonfinite_flag;
    unsigned int amax_bits;  // of finite magnitudes
    unsigned long long nonfinite;
    double sum_squares;
    unsigned int histogram[histogram_bins];
};
// inv_scale_dev (when set) replaces inv_scale; first_bad gets the lowest tensor index holding
// inf/NaN (atomicMin; initialise to INT_MAX); found_inf (when set) becomes 1.
void launch_unscale_check(const CheckChunk* chunks, int chunk_count, float inv_scale, const float* inv_scale_dev,
                          CheckResult* results, int* first_bad, int* found_inf, cudaStream_t stream);

// ---- optimizer.cuh: SGD and AdamW over one parameter; counts[0] += updates that change the FP32
// value, counts[1] += of those, the ones lost to the stored format; nothing happens when skip is set and *skip != 0.
struct SgdScalars {
    float lr, weight_decay, momentum;
    int first_step;
};
struct AdamWScalars {
    float decay, step_size, bc2_sqrt, w1, w2, beta2, eps;
    int decays;
};
// scalars_dev (when set) replaces `s` (a captured graph reads them from the device). compensation:
// Kahan's buffer, in p_fmt; key: the device word holding the key of a stochastic rounding pass
// (launch_draw_stochastic_key); both null: rounded to nearest (optimizer_update.cuh).
void launch_sgd(void* p, void* compensation, const std::uint64_t* key, int p_fmt, const void* g, int g_fmt,
                float g_mul, const float* g_mul_dev, float* momentum_buf, std::int64_t n, SgdScalars s,
                const SgdScalars* scalars_dev, unsigned long long* counts, const int* skip, cudaStream_t stream);
// words[1] = stochastic_key(seed, words[0]), then ++words[0] (stochastic.cuh): the key of the next
// rounding pass, for the optimizer launched after it; nothing unless *skip is 0 (skip null: never).
void launch_draw_stochastic_key(std::uint64_t* words, std::uint64_t seed, const int* skip, cudaStream_t stream);
// The SGD scalars of the next step: the learning rate from the device, first_step from the device
// step counter (== 0), which is then incremented; nothing unless *skip is 0.
void launch_sgd_prepare(SgdScalars* out, long long* step, const double* lr_dev, double momentum, double weight_decay,
                        const int* skip, cudaStream_t stream);
// scalars_dev (when set) replaces `s` (a captured graph reads them from the device); compensation
// and key as launch_sgd's.
void launch_adamw(void* p, void* compensation, const std::uint64_t* key, int p_fmt, const void* g, int g_fmt,
                  float g_mul, const float* g_mul_dev, float* m, float* v, std::int64_t n, AdamWScalars s,
                  const AdamWScalars* scalars_dev, unsigned long long* counts, const int* skip, cudaStream_t stream);
// The AdamW scalars of the next step from a device step counter (incremented unless *skip);
// lr_dev (when set) replaces lr.
void launch_adamw_prepare(AdamWScalars* out, long long* step, double lr, double beta1, double beta2, double eps,
                          double weight_decay, const int* skip, cudaStream_t stream, const double* lr_dev = nullptr);

// ---- loss_scale.cuh: GradScaler's update on the device
struct ScalerState {
    float scale;
    float inv_scale;  // float(1.0 / double(scale))
    long long growth_tracker;
    int found_inf;  // set by unscale_check, consumed (cleared) by the update
    int skipped;    // the last update's decision
};
// mode: 0 off, 1 fixed, 2 dynamic (mantissa::LossScalingMode); min/max: 0 / inf when unused.
void launch_loss_scale_update(ScalerState* state, int mode, double growth, double backoff, long long interval,
                              float min_scale, float max_scale, cudaStream_t stream);

// ---- operand_sample.cuh: an operand read for the statistics within a pipelined step, as download
// reads it (stored value x multiplier)
// header[0], header[1] (cleared first) = the largest |src| over its first n values, and over the
// finite ones, as FP32 magnitude bits (Backend::RowSample's amax and finite_amax).
void launch_operand_magnitudes(const void* src, int src_fmt, float multiplier, std::int64_t n,
                               std::uint32_t* header, cudaStream_t stream);
// out(rows.count, rows.K) = src's values at rows.source(i, q), 0 where that is -1.
void launch_gather_sampled_rows(const void* src, int src_fmt, float multiplier, const SampledRows& rows, float* out,
                                cudaStream_t stream);

}  // namespace mantissa::cuda
