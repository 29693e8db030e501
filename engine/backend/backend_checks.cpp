// The checked wrappers of Backend's layer ops (backend.h): every argument check of linear, the
// activations, the losses, the convolutional and the transformer ops happens here, once, before the backend's
// *_impl runs, so the CPU and CUDA backends accept exactly the same calls and say the same
// sentence when a call is wrong. An *_impl may rely on what is checked here: the tensors it needs
// are present, their shapes fit the layer, and rows [0, batch) exist in every tensor it touches.
//
// The checks are O(1) per call except the labels' and ids' range (O(batch)), cheap next to the op.
#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <string>

#include "backend/backend.h"
#include "error.h"

namespace mantissa {

namespace {

// The checks are written `if (!(ok)) fail(message)`, so a message is put together only when a
// check fails: most ops are checked at every step, and building their sentences eagerly cost a few
// string allocations each.
[[noreturn]] void fail(const std::string& message) {
    throw Error(message);
}

std::string count(std::int64_t n) {
    return std::to_string(n);
}

// `t` holds rows [0, batch) of `cols` values: the shape a batch of samples needs.
// A check's opening ("op of layer name: "): a literal, or a function that puts it together when a
// check fails.
std::string opening(const char* where) {
    return where;
}
template <std::invocable Where>
std::string opening(const Where& where) {
    return where();
}

template <class Where>
void require_rows(const Tensor& t, std::int64_t cols, std::int64_t batch, const Where& where, const char* role) {
    if (!(t.cols() == cols))
        fail(opening(where) + "the " + role + " " + t.desc().name + " has " + count(t.cols()) + " values per sample, " +
             count(cols) + " expected.");
    if (!(t.rows() >= batch))
        fail(opening(where) + "the " + role + " " + t.desc().name + " has " + count(t.rows()) +
             " rows, too few for a batch of " + count(batch) + ".");
}

// A parameter-shaped tensor: `n` values.
template <class Where>
void require_size(const Tensor& t, std::int64_t n, const Where& where, const char* role) {
    if (!(t.numel() == n))
        fail(opening(where) + "the " + role + " " + t.desc().name + " has " + count(t.numel()) + " values, " +
             count(n) + " expected.");
}

// ---- linear

void check_layer(const LinearTensors& l, const Tensor& x, std::int64_t batch, const char* op) {
    const auto where = [&] {
        return std::string(op) + " of layer " + (l.weight ? l.weight->desc().name : std::string("?")) + ": ";
    };
    if (!(l.weight && l.bias && l.grad_weight && l.grad_bias)) fail(where() + "a tensor is missing.");
    const std::int64_t in = l.weight->cols(), out = l.weight->rows();
    if (!(x.cols() == in))
        fail(where() + "the input has " + count(x.cols()) + " features, the weight expects " + count(in) + ".");
    if (!(batch >= 0 && batch <= x.rows())) fail(where() + "the batch does not fit the input tensor.");
    require_size(*l.grad_weight, in * out, where, "weight gradient");
    require_size(*l.bias, out, where, "bias");
    require_size(*l.grad_bias, out, where, "bias gradient");
    if (l.weight_compute) require_size(*l.weight_compute, in * out, where, "weight copy");
    if (l.bias_compute) require_size(*l.bias_compute, out, where, "bias copy");
    if (l.compute == Format::fp8_e4m3) {
        if (!(l.fp8 && l.weight_compute && l.saved_input))
            fail(where() + "an FP8 layer needs its scaling state, weight copy and saved input.");
        if (!(l.weight_compute->format() == Format::fp8_e4m3 && l.saved_input->format() == Format::fp8_e4m3))
            fail(where() + "an FP8 layer's weight copy and saved input must be declared fp8-e4m3.");
    }
    if (l.saved_input) {
        if (!(l.saved_input->rows() >= batch)) fail(where() + "saved input too small.");
        if (!(l.saved_input->cols() == in))
            fail(where() + "the saved input has " + count(l.saved_input->cols()) + " features, the weight expects " +
                 count(in) + ".");
    }
}

// ---- activations and losses

void check_same(const Tensor& a, const Tensor& b, std::int64_t batch, const char* op) {
    if (batch < 0 || a.cols() != b.cols() || a.rows() < batch || b.rows() < batch)
        throw Error(std::string(op) + ": tensors " + a.desc().name + " and " + b.desc().name +
                    " do not match for a batch of " + std::to_string(batch) + ".");
}

// ---- convolutional ops

std::string conv_where(const ConvTensors& c, const char* op) {
    return std::string(op) + " of layer " + (c.weight ? c.weight->desc().name : std::string("?")) + ": ";
}

std::string image_text(std::int64_t c, std::int64_t h, std::int64_t w) {
    return count(c) + "\u00d7" + count(h) + "\u00d7" + count(w);
}

void check_conv(const ConvTensors& c, const Tensor& x, std::int64_t batch, const char* op) {
    const auto where = [&] { return conv_where(c, op); };
    const Conv2dGeometry& g = c.geometry;
    if (!(g.in_channels > 0 && g.in_h > 0 && g.in_w > 0 && g.out_channels > 0))
        fail(where() + "the geometry needs positive channels and sizes (it has " +
             image_text(g.in_channels, g.in_h, g.in_w) + " -> " + count(g.out_channels) + " channels).");
    if (!(g.kernel >= 1 && g.stride >= 1 && g.padding >= 0))
        fail(where() + "the kernel and stride must be at least 1 and the padding at least 0 (kernel " +
             count(g.kernel) + ", stride " + count(g.stride) + ", padding " + count(g.padding) + ").");
    if (!(g.in_h + 2 * g.padding >= g.kernel && g.in_w + 2 * g.padding >= g.kernel))
        fail(where() + "the kernel (" + count(g.kernel) + ") is larger than the padded input (" +
             count(g.in_h + 2 * g.padding) + "\u00d7" + count(g.in_w + 2 * g.padding) + ").");
    if (!(c.weight && c.grad_weight)) fail(where() + "the weight or its gradient is missing.");
    if (!(!c.bias || c.grad_bias)) fail(where() + "a convolution with a bias needs its bias gradient.");
    if (!(c.weight->rows() == g.out_channels && c.weight->cols() == g.patch()))
        fail(where() + "the weight is " + count(c.weight->rows()) + "\u00d7" + count(c.weight->cols()) +
             ", the geometry expects " + count(g.out_channels) + "\u00d7" + count(g.patch()) + ".");
    require_size(*c.grad_weight, g.out_channels * g.patch(), where, "weight gradient");
    if (c.weight_compute) require_size(*c.weight_compute, g.out_channels * g.patch(), where, "weight copy");
    if (c.bias) require_size(*c.bias, g.out_channels, where, "bias");
    if (c.bias && c.bias_compute) require_size(*c.bias_compute, g.out_channels, where, "bias copy");
    if (c.grad_bias) require_size(*c.grad_bias, g.out_channels, where, "bias gradient");
    if (!(batch >= 0)) fail(where() + "the batch must not be negative.");
    if (!(x.cols() == g.in_size()))
        fail(where() + "the input " + x.desc().name + " has " + count(x.cols()) +
             " values per sample, the geometry expects " + count(g.in_size()) + " (" +
             image_text(g.in_channels, g.in_h, g.in_w) + ").");
    if (!(x.rows() >= batch)) fail(where() + "the batch does not fit the input tensor.");
    if (c.compute == Format::fp8_e4m3) {
        if (!(c.fp8 && c.weight_compute && c.saved_input))
            fail(where() + "an FP8 layer needs its scaling state, weight copy and saved input.");
        if (!(c.weight_compute->format() == Format::fp8_e4m3 && c.saved_input->format() == Format::fp8_e4m3))
            fail(where() + "an FP8 layer's weight copy and saved input must be declared fp8-e4m3.");
    }
    if (c.saved_input) require_rows(*c.saved_input, g.in_size(), batch, where, "saved input");
}

void check_pool(const Pool2dGeometry& p, const char* op) {
    const auto where = [&] { return std::string(op) + ": "; };
    if (!(p.channels > 0 && p.in_h > 0 && p.in_w > 0))
        fail(where() + "the geometry needs positive channels and sizes (it has " +
             image_text(p.channels, p.in_h, p.in_w) + ").");
    if (!(p.kernel >= 1 && p.stride >= 1))
        fail(where() + "the kernel and stride must be at least 1 (kernel " + count(p.kernel) + ", stride " +
             count(p.stride) + ").");
    if (!(p.padding >= 0 && 2 * p.padding <= p.kernel))
        fail(where() + "the padding (" + count(p.padding) + ") must be between 0 and half the kernel (" +
             count(p.kernel) + "), as PyTorch's pools require.");
    if (!(p.in_h + 2 * p.padding >= p.kernel && p.in_w + 2 * p.padding >= p.kernel))
        fail(where() + "the kernel (" + count(p.kernel) + ") is larger than the padded input (" +
             count(p.in_h + 2 * p.padding) + "\u00d7" + count(p.in_w + 2 * p.padding) + ").");
}

void check_batch(std::int64_t batch, const char* op) {
    if (!(batch >= 0)) fail(std::string(op) + ": the batch must not be negative.");
}

void check_global(std::int64_t channels, std::int64_t spatial, const char* op) {
    if (!(channels > 0 && spatial > 0))
        fail(std::string(op) + ": the channels (" + count(channels) + ") and the positions per channel (" +
             count(spatial) + ") must be positive.");
}

void check_batchnorm(const BatchNormTensors& bn, const Tensor& x, std::int64_t batch, const char* op) {
    const auto where = [&] {
        return std::string(op) + " of layer " + (bn.weight ? bn.weight->desc().name : std::string("?")) + ": ";
    };
    if (!(bn.channels > 0 && bn.spatial > 0))
        fail(where() + "the channels (" + count(bn.channels) + ") and the positions per channel (" + count(bn.spatial) +
             ") must be positive.");
    if (!(bn.weight && bn.bias && bn.grad_weight && bn.grad_bias && bn.running_mean && bn.running_var &&
          bn.saved_mean && bn.saved_invstd))
        fail(where() + "a tensor is missing.");
    for (const Tensor* t : {bn.weight, bn.bias, bn.grad_weight, bn.grad_bias, bn.running_mean, bn.running_var,
                            bn.saved_mean, bn.saved_invstd})
        require_size(*t, bn.channels, where, "per-channel tensor");
    if (!(bn.momentum >= 0 && bn.momentum <= 1)) fail(where() + "the momentum must be in [0, 1].");
    if (!(bn.eps >= 0 && std::isfinite(bn.eps))) fail(where() + "eps must be a finite value of at least 0.");
    if (!(batch >= 0)) fail(where() + "the batch must not be negative.");
    require_rows(x, bn.channels * bn.spatial, batch, where, "input");
}

// ---- transformer ops

// The largest element index a view reaches for `batch` matrices (outer_count·inner_count) of
// (rows, cols), all counts positive; views are checked non-negative first.
std::int64_t last_index(const BatchedMatmul& op, const StridedMatrix& v, std::int64_t rows, std::int64_t cols) {
    return v.offset + (op.outer_count - 1) * v.outer_stride + (op.inner_count - 1) * v.inner_stride +
           (rows - 1) * v.row_stride + (cols - 1) * v.col_stride;
}

void check_view(const BatchedMatmul& op, const Tensor& t, const StridedMatrix& v, std::int64_t rows, std::int64_t cols,
                const char* role) {
    const auto where = [&] { return std::string("batched_matmul: the view of ") + role + " " + t.desc().name; };
    if (!(v.offset >= 0 && v.outer_stride >= 0 && v.inner_stride >= 0 && v.row_stride >= 0 && v.col_stride >= 0))
        fail(where() + " has a negative offset or stride.");
    const std::int64_t last = last_index(op, v, rows, cols);
    if (!(last < t.numel()))
        fail(where() + " reaches element " + count(last) + ", beyond its " + count(t.numel()) + " values.");
}

// True when no two (matrix, row, col) of the view land on one element: sorted by stride, each
// dimension's stride exceeds the span of the smaller ones (the dimensions of extent 1 aside).
bool view_is_one_to_one(const BatchedMatmul& op, const StridedMatrix& v, std::int64_t rows, std::int64_t cols) {
    std::array<std::pair<std::int64_t, std::int64_t>, 4> dims = {{{v.outer_stride, op.outer_count},
                                                                  {v.inner_stride, op.inner_count},
                                                                  {v.row_stride, rows},
                                                                  {v.col_stride, cols}}};
    std::sort(dims.begin(), dims.end());
    std::int64_t span = 0;  // the largest offset the smaller dimensions reach
    for (const auto& [stride, extent] : dims) {
        if (extent <= 1) continue;
        if (stride <= span) return false;
        span += (extent - 1) * stride;
    }
    return true;
}

void check_ids(const std::int32_t* ids, std::int64_t rows, std::int64_t vocab, const char* op) {
    if (!(ids || rows == 0)) fail(std::string(op) + ": the ids are missing.");
    for (std::int64_t r = 0; r < rows; ++r)
        if (ids[r] < 0 || ids[r] >= vocab)
            throw Error(std::string(op) + ": id " + std::to_string(ids[r]) + " of row " + std::to_string(r) +
                        " is outside the embedding's [0, " + std::to_string(vocab) + ").");
}

void check_layernorm(const LayerNormTensors& ln, const Tensor& x, std::int64_t rows, const char* op) {
    const auto where = [&] {
        return std::string(op) + " of layer " + (ln.weight ? ln.weight->desc().name : std::string("?")) + ": ";
    };
    if (!(ln.dim > 0)) fail(where() + "the dimension (" + count(ln.dim) + ") must be positive.");
    if (!(ln.weight && ln.bias && ln.grad_weight && ln.grad_bias && ln.saved_mean && ln.saved_invstd))
        fail(where() + "a tensor is missing.");
    for (const Tensor* t : {ln.weight, ln.bias, ln.grad_weight, ln.grad_bias})
        require_size(*t, ln.dim, where, "parameter-shaped tensor");
    if (!(ln.eps >= 0 && std::isfinite(ln.eps))) fail(where() + "eps must be a finite value of at least 0.");
    if (!(rows >= 0)) fail(where() + "the rows must not be negative.");
    require_rows(x, ln.dim, rows, where, "input");
    require_rows(*ln.saved_mean, 1, rows, where, "saved mean");
    require_rows(*ln.saved_invstd, 1, rows, where, "saved invstd");
}

void check_softmax_rows(const Tensor& x, std::int64_t rows, bool causal, const char* op) {
    if (!causal) return;
    if (!(x.cols() > 0 && rows % x.cols() == 0))
        fail(std::string(op) + ": a causal softmax takes whole T\u00d7T blocks, and " + count(rows) +
             " rows are not a multiple of T = " + count(x.cols()) + ".");
}

}  // namespace

void Backend::require_supported(BackendOp op, Format format) const {
    std::string why = unsupported(op, format);
    if (!why.empty()) throw Error(why);
}

// ---- linear

// FP16 accumulation: the op supported, and the operands fp16 in all three matmuls (as cuBLAS's
// CUBLAS_COMPUTE_16F requires).
void Backend::require_fp16_accumulation(const LinearTensors& layer, const char* op) const {
    if (!layer.fp16_accumulation) return;
    require_supported(BackendOp::fp16_accumulation, Format::fp16);
    if (!(layer.compute == Format::fp16 && !layer.block && !layer.dgrad && !layer.wgrad))
        fail(std::string(op) + " of " + layer.weight->desc().name +
             ": FP16 accumulation needs the layer's three matmuls in fp16.");
}

void Backend::linear_forward(LinearTensors& layer, const Tensor& x, Tensor& y, std::int64_t batch, bool record_amax) {
    if (layer.block) require_supported(BackendOp::block_scaled, Format::fp32);
    if (layer.weight) require_fp16_accumulation(layer, "linear_forward");
    check_layer(layer, x, batch, "linear_forward");
    if (!(y.cols() == layer.weight->rows() && y.rows() >= batch))
        fail("linear_forward of " + layer.weight->desc().name + ": the output tensor has the wrong shape.");
    linear_forward_impl(layer, x, y, batch, record_amax);
}

void Backend::linear_backward(LinearTensors& layer, const Tensor& x, const Tensor& dy, Tensor* dx, std::int64_t batch,
                              RoundingStats* weight_stats) {
    if (layer.block) require_supported(BackendOp::block_scaled, Format::fp32);
    if (layer.dgrad || layer.wgrad) require_supported(BackendOp::per_gemm, Format::fp32);
    if (layer.stochastic_gradients) require_supported(BackendOp::stochastic_gradients, Format::fp32);
    if (layer.weight) require_fp16_accumulation(layer, "linear_backward");
    check_layer(layer, x, batch, "linear_backward");
    const std::string& name = layer.weight->desc().name;
    if (!(dy.cols() == layer.weight->rows() && dy.rows() >= batch))
        fail("linear_backward of " + name + ": the output gradient has the wrong shape.");
    if (dx)
        if (!(dx->cols() == layer.weight->cols() && dx->rows() >= batch))
            fail("linear_backward of " + name + ": the input gradient has the wrong shape.");
    linear_backward_impl(layer, x, dy, dx, batch, weight_stats);
}

// ---- activations

void Backend::activation_forward(Activation act, const Tensor& z, Tensor& a, std::int64_t batch) {
    check_same(z, a, batch, "activation_forward");
    activation_forward_impl(act, z, a, batch);
}

void Backend::activation_backward(Activation act, const Tensor& z, const Tensor& a, const Tensor& da, Tensor& dz,
                                  std::int64_t batch) {
    check_same(z, dz, batch, "activation_backward");
    check_same(da, dz, batch, "activation_backward");
    check_same(a, dz, batch, "activation_backward");
    activation_backward_impl(act, z, a, da, dz, batch);
}

// ---- losses

LossResult Backend::softmax_cross_entropy(const Tensor& logits, const std::int32_t* labels, std::int64_t batch,
                                          float loss_scale, Tensor* dlogits) {
    if (!(batch >= 0)) fail("softmax_cross_entropy: the batch must not be negative.");
    if (logits.rows() < batch) throw Error("softmax_cross_entropy: the batch exceeds the logits.");
    if (dlogits) check_same(logits, *dlogits, batch, "softmax_cross_entropy");
    if (!(labels || batch == 0)) fail("softmax_cross_entropy: the labels are missing.");
    const std::int64_t classes = logits.cols();
    for (std::int64_t r = 0; r < batch; ++r)
        if (labels[r] < 0 || labels[r] >= classes)
            throw Error("softmax_cross_entropy: label " + std::to_string(labels[r]) + " of row " + std::to_string(r) +
                        " is outside [0, " + std::to_string(classes) + ").");
    return softmax_cross_entropy_impl(logits, labels, batch, loss_scale, dlogits);
}

LossResult Backend::mse(const Tensor& y, const float* targets, std::int64_t batch, float loss_scale, Tensor* dy) {
    if (!(batch >= 0)) fail("mse: the batch must not be negative.");
    if (y.rows() < batch) throw Error("mse: the batch exceeds the predictions.");
    if (dy) check_same(y, *dy, batch, "mse");
    if (!(targets || batch * y.cols() == 0)) fail("mse: the targets are missing.");
    return mse_impl(y, targets, batch, loss_scale, dy);
}

// ---- convolutional ops

void Backend::conv2d_forward(ConvTensors& conv, const Tensor& x, Tensor& y, std::int64_t batch, bool record_amax) {
    require_supported(BackendOp::conv2d, conv.compute);
    if (conv.block) require_supported(BackendOp::block_scaled_conv, Format::fp32);
    if (!(!conv.fp16_accumulation)) fail("conv2d_forward: FP16 accumulation is offered for linear layers only.");
    check_conv(conv, x, batch, "conv2d_forward");
    require_rows(
        y, conv.geometry.out_size(), batch, [&] { return conv_where(conv, "conv2d_forward"); }, "output");
    conv2d_forward_impl(conv, x, y, batch, record_amax);
}

void Backend::conv2d_backward(ConvTensors& conv, const Tensor& x, const Tensor& dy, Tensor* dx, std::int64_t batch,
                              RoundingStats* weight_stats) {
    require_supported(BackendOp::conv2d, conv.compute);
    if (conv.block) require_supported(BackendOp::block_scaled_conv, Format::fp32);
    if (conv.dgrad || conv.wgrad) require_supported(BackendOp::per_gemm_conv, Format::fp32);
    if (conv.stochastic_gradients) require_supported(BackendOp::stochastic_conv_gradients, Format::fp32);
    if (!(!conv.fp16_accumulation)) fail("conv2d_backward: FP16 accumulation is offered for linear layers only.");
    check_conv(conv, x, batch, "conv2d_backward");
    const auto where = [&] { return conv_where(conv, "conv2d_backward"); };
    require_rows(dy, conv.geometry.out_size(), batch, where, "output gradient");
    if (dx) require_rows(*dx, conv.geometry.in_size(), batch, where, "input gradient");
    conv2d_backward_impl(conv, x, dy, dx, batch, weight_stats);
}

void Backend::maxpool2d_forward(const Pool2dGeometry& pool, const Tensor& x, Tensor& y, std::int64_t batch) {
    require_supported(BackendOp::maxpool2d, y.format());
    check_pool(pool, "maxpool2d_forward");
    check_batch(batch, "maxpool2d_forward");
    require_rows(x, pool.in_size(), batch, "maxpool2d_forward: ", "input");
    require_rows(y, pool.out_size(), batch, "maxpool2d_forward: ", "output");
    maxpool2d_forward_impl(pool, x, y, batch);
}

void Backend::maxpool2d_backward(const Pool2dGeometry& pool, const Tensor& x, const Tensor& y, const Tensor& dy,
                                 Tensor& dx, std::int64_t batch) {
    require_supported(BackendOp::maxpool2d, dx.format());
    check_pool(pool, "maxpool2d_backward");
    check_batch(batch, "maxpool2d_backward");
    require_rows(x, pool.in_size(), batch, "maxpool2d_backward: ", "input");
    require_rows(y, pool.out_size(), batch, "maxpool2d_backward: ", "output");
    require_rows(dy, pool.out_size(), batch, "maxpool2d_backward: ", "output gradient");
    require_rows(dx, pool.in_size(), batch, "maxpool2d_backward: ", "input gradient");
    maxpool2d_backward_impl(pool, x, y, dy, dx, batch);
}

void Backend::maxpool2d_relu_forward(const Pool2dGeometry& pool, const Tensor& z, Tensor& y, std::int64_t batch) {
    require_supported(BackendOp::maxpool2d, y.format());
    require_supported(BackendOp::activation, y.format());
    check_pool(pool, "maxpool2d_relu_forward");
    check_batch(batch, "maxpool2d_relu_forward");
    require_rows(z, pool.in_size(), batch, "maxpool2d_relu_forward: ", "input");
    require_rows(y, pool.out_size(), batch, "maxpool2d_relu_forward: ", "output");
    maxpool2d_relu_forward_impl(pool, z, y, batch);
}

void Backend::maxpool2d_relu_backward(const Pool2dGeometry& pool, const Tensor& z, const Tensor& y, const Tensor& dy,
                                      Tensor& dx, std::int64_t batch) {
    require_supported(BackendOp::maxpool2d, dx.format());
    require_supported(BackendOp::activation, dx.format());
    check_pool(pool, "maxpool2d_relu_backward");
    check_batch(batch, "maxpool2d_relu_backward");
    require_rows(z, pool.in_size(), batch, "maxpool2d_relu_backward: ", "input");
    require_rows(y, pool.out_size(), batch, "maxpool2d_relu_backward: ", "output");
    require_rows(dy, pool.out_size(), batch, "maxpool2d_relu_backward: ", "output gradient");
    require_rows(dx, pool.in_size(), batch, "maxpool2d_relu_backward: ", "input gradient");
    maxpool2d_relu_backward_impl(pool, z, y, dy, dx, batch);
}

void Backend::avgpool2d_forward(const Pool2dGeometry& pool, const Tensor& x, Tensor& y, std::int64_t batch) {
    require_supported(BackendOp::avgpool2d, y.format());
    check_pool(pool, "avgpool2d_forward");
    check_batch(batch, "avgpool2d_forward");
    require_rows(x, pool.in_size(), batch, "avgpool2d_forward: ", "input");
    require_rows(y, pool.out_size(), batch, "avgpool2d_forward: ", "output");
    avgpool2d_forward_impl(pool, x, y, batch);
}

void Backend::avgpool2d_backward(const Pool2dGeometry& pool, const Tensor& dy, Tensor& dx, std::int64_t batch) {
    require_supported(BackendOp::avgpool2d, dx.format());
    check_pool(pool, "avgpool2d_backward");
    check_batch(batch, "avgpool2d_backward");
    require_rows(dy, pool.out_size(), batch, "avgpool2d_backward: ", "output gradient");
    require_rows(dx, pool.in_size(), batch, "avgpool2d_backward: ", "input gradient");
    avgpool2d_backward_impl(pool, dy, dx, batch);
}

void Backend::global_avgpool_forward(std::int64_t channels, std::int64_t spatial, const Tensor& x, Tensor& y,
                                     std::int64_t batch) {
    require_supported(BackendOp::global_avgpool, y.format());
    check_global(channels, spatial, "global_avgpool_forward");
    check_batch(batch, "global_avgpool_forward");
    require_rows(x, channels * spatial, batch, "global_avgpool_forward: ", "input");
    require_rows(y, channels, batch, "global_avgpool_forward: ", "output");
    global_avgpool_forward_impl(channels, spatial, x, y, batch);
}

void Backend::global_avgpool_backward(std::int64_t channels, std::int64_t spatial, const Tensor& dy, Tensor& dx,
                                      std::int64_t batch) {
    require_supported(BackendOp::global_avgpool, dx.format());
    check_global(channels, spatial, "global_avgpool_backward");
    check_batch(batch, "global_avgpool_backward");
    require_rows(dy, channels, batch, "global_avgpool_backward: ", "output gradient");
    require_rows(dx, channels * spatial, batch, "global_avgpool_backward: ", "input gradient");
    global_avgpool_backward_impl(channels, spatial, dy, dx, batch);
}

void Backend::batchnorm2d_forward(BatchNormTensors& bn, const Tensor& x, Tensor& y, std::int64_t batch, bool training) {
    require_supported(BackendOp::batchnorm2d, y.format());
    check_batchnorm(bn, x, batch, "batchnorm2d_forward");
    const auto where = [&] { return "batchnorm2d_forward of layer " + bn.weight->desc().name + ": "; };
    require_rows(y, bn.channels * bn.spatial, batch, where, "output");
    if (!(!training || batch * bn.spatial > 1))
        fail(where() + "training needs more than one value per channel (a batch of " + count(batch) + " with " +
             count(bn.spatial) + " positions); use a larger batch.");
    batchnorm2d_forward_impl(bn, x, y, batch, training);
}

void Backend::batchnorm2d_backward(BatchNormTensors& bn, const Tensor& x, const Tensor& dy, Tensor& dx,
                                   std::int64_t batch) {
    require_supported(BackendOp::batchnorm2d, dx.format());
    check_batchnorm(bn, x, batch, "batchnorm2d_backward");
    const auto where = [&] { return "batchnorm2d_backward of layer " + bn.weight->desc().name + ": "; };
    require_rows(dy, bn.channels * bn.spatial, batch, where, "output gradient");
    require_rows(dx, bn.channels * bn.spatial, batch, where, "input gradient");
    batchnorm2d_backward_impl(bn, x, dy, dx, batch);
}

void Backend::add(const Tensor& a, const Tensor& b, Tensor& y, std::int64_t batch) {
    require_supported(BackendOp::add, y.format());
    check_same(a, y, batch, "add");
    check_same(b, y, batch, "add");
    add_impl(a, b, y, batch);
}

// ---- transformer ops

void Backend::batched_matmul(const BatchedMatmul& op, const Tensor& a, const StridedMatrix& a_view, const Tensor& b,
                             const StridedMatrix& b_view, Tensor& c, const StridedMatrix& c_view) {
    require_supported(BackendOp::bmm, op.compute);
    if (!(op.outer_count >= 0 && op.inner_count >= 1))
        fail("batched_matmul: the outer count (" + count(op.outer_count) +
             ") must be at least 0 and the inner count (" + count(op.inner_count) + ") at least 1.");
    if (!(op.m >= 0 && op.n >= 0 && op.k >= 0))
        fail("batched_matmul: the sizes m, n and k (" + count(op.m) + ", " + count(op.n) + ", " + count(op.k) +
             ") must not be negative.");
    if (!(&c != &a && &c != &b))
        fail("batched_matmul: the output " + c.desc().name +
             " is also an operand; write the product to another tensor.");
    if (op.batch_count() == 0 || op.m == 0 || op.n == 0)
        return batched_matmul_impl(op, a, a_view, b, b_view, c, c_view);
    if (op.k > 0) {
        check_view(op, a, a_view, op.m, op.k, "A");
        check_view(op, b, b_view, op.k, op.n, "B");
    }
    check_view(op, c, c_view, op.m, op.n, "C");
    if (!(view_is_one_to_one(op, c_view, op.m, op.n)))
        fail("batched_matmul: the view of C " + c.desc().name +
             " reaches some element twice; give it strides that "
             "separate every matrix, row and column.");
    batched_matmul_impl(op, a, a_view, b, b_view, c, c_view);
}

void Backend::softmax_forward(const Tensor& x, Tensor& y, std::int64_t rows, bool causal, SoftmaxStats* stats) {
    require_supported(BackendOp::softmax, y.format());
    check_same(x, y, rows, "softmax_forward");
    check_softmax_rows(x, rows, causal, "softmax_forward");
    softmax_forward_impl(x, y, rows, causal, stats);
}

void Backend::softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, std::int64_t rows, bool causal,
                               float scale) {
    require_supported(BackendOp::softmax, dx.format());
    check_same(y, dx, rows, "softmax_backward");
    check_same(dy, dx, rows, "softmax_backward");
    check_softmax_rows(y, rows, causal, "softmax_backward");
    if (!(std::isfinite(scale))) fail("softmax_backward: the scale must be finite.");
    softmax_backward_impl(y, dy, dx, rows, causal, scale);
}

void Backend::layernorm_forward(LayerNormTensors& ln, const Tensor& x, Tensor& y, std::int64_t rows,
                                LayerNormStats* stats) {
    require_supported(BackendOp::layernorm, y.format());
    check_layernorm(ln, x, rows, "layernorm_forward");
    require_rows(
        y, ln.dim, rows, [&] { return "layernorm_forward of layer " + ln.weight->desc().name + ": "; }, "output");
    layernorm_forward_impl(ln, x, y, rows, stats);
}

void Backend::layernorm_backward(LayerNormTensors& ln, const Tensor& x, const Tensor& dy, Tensor& dx,
                                 std::int64_t rows) {
    require_supported(BackendOp::layernorm, dx.format());
    check_layernorm(ln, x, rows, "layernorm_backward");
    const auto where = [&] { return "layernorm_backward of layer " + ln.weight->desc().name + ": "; };
    require_rows(dy, ln.dim, rows, where, "output gradient");
    require_rows(dx, ln.dim, rows, where, "input gradient");
    layernorm_backward_impl(ln, x, dy, dx, rows);
}

void Backend::embedding_forward(const Tensor& weight, const std::int32_t* ids, Tensor& y, std::int64_t rows) {
    require_supported(BackendOp::embedding, y.format());
    const auto where = [&] { return "embedding_forward of " + weight.desc().name + ": "; };
    if (!(rows >= 0)) fail(where() + "the rows must not be negative.");
    require_rows(y, weight.cols(), rows, where, "output");
    check_ids(ids, rows, weight.rows(), "embedding_forward");
    embedding_forward_impl(weight, ids, y, rows);
}

void Backend::embedding_backward(const std::int32_t* ids, const Tensor& dy, Tensor& grad_weight, std::int64_t rows,
                                 bool accumulate) {
    require_supported(BackendOp::embedding, grad_weight.format());
    const auto where = [&] { return "embedding_backward of " + grad_weight.desc().name + ": "; };
    if (!(rows >= 0)) fail(where() + "the rows must not be negative.");
    require_rows(dy, grad_weight.cols(), rows, where, "output gradient");
    check_ids(ids, rows, grad_weight.rows(), "embedding_backward");
    embedding_backward_impl(ids, dy, grad_weight, rows, accumulate);
}

}  // namespace mantissa
