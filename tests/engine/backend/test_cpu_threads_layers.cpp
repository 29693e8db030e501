// The CNN's and the language model's passes beside their matmuls give the same bits on any thread
// count (engine/backend/cpu/cpu_parallel.h; docs/numerics.md, "Threads"): the convolution's
// im2col, gather, col2im, epilogue, input rounding and bias gradient, batch norm, the pools, layer
// norm, softmax, the batched matmul's packing, scatter and epilogue, the embedding's gather and
// the residual add; and oneDNN's own convolutions (engine/backend/cpu/onednn_conv.h): the forward
// and dX on oneDNN's threads, dW in chunks of samples on the backend's, on its FP32 kernels and, for
// bf16 operands on the bf16 matmul path, its bf16 ones.
// Each case runs on a backend of 1 thread and on backends of 2 and 3, on shapes whose passes are
// really cut (more than 2^17 values, odd sizes so the ranges are uneven) while every matmul stays
// under 2^21 multiply-adds, so oneDNN runs it on one thread and only the passes differ; the
// convolutions oneDNN runs itself are large (up to 1.3·10^8 multiply-adds: 3 threads), on batches
// that no thread count divides. Then whole training steps (forward, loss, backward) of small CNNs
// and a small GPT in bf16, whose matmuls are kept as small, on 1 and 2 threads.
#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend_test_util.h"
#include "cpu_threads_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_conv.h"
#include "model/network.h"
#include "exact_compare.h"

using namespace mantissa;
using backend_test::random_values;
using backend_test::backend_with;
using backend_test::read;
using backend_test::same_bits;

namespace {

using Outcome = std::vector<std::vector<float>>;

// The indices of the outputs that differ ("" when none do).
QString differences(const Outcome& a, const Outcome& b) {
    if (a.size() != b.size()) return "the count of outputs";
    QStringList out;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!same_bits(a[i], b[i])) out << QString::number(i);
    return out.join(", ");
}

// A tensor holding `values` rounded to its format.
std::unique_ptr<Tensor> tensor(Backend& b, std::int64_t rows, std::int64_t cols, Format f,
                               const std::vector<float>& values) {
    auto t = b.allocate(TensorDesc{"t", rows, cols, f, MemoryCategory::workspace});
    std::vector<float> v = values;
    for (float& x : v) x = round_to(f, x);
    b.upload(*t, v.data(), rows * cols);
    return t;
}

std::unique_ptr<Tensor> zeros(Backend& b, std::int64_t rows, std::int64_t cols, Format f) {
    return tensor(b, rows, cols, f, std::vector<float>(static_cast<std::size_t>(rows * cols), 0.0f));
}

// The convolutions below. im2col (a few channels: oneDNN's blocks would be mostly padding): each
// product under 2^21 multiply-adds, the passes cut differently.
// oneDNN's direct convolution: the reference CNN's and ResNet's shapes on odd batches.
enum class ConvCase {
    wide_patch,   // 3 input channels: im2col and col2im cut over 2 and 3 threads, the rest not
    one_channel,  // 1 input channel, 8 output channels: the epilogue, the gather and dB cut too
    strided,      // stride 2 on 31×31 images: the strided im2col and col2im, and x's rounding cut
    blocked,      // the CNN's conv2, 32 -> 64 channels on 14×14, batch 37: every direction direct
    first_layer,  // the CNN's conv1, 1 -> 32 on 28×28, batch 29, no dX: y and dW direct
    blocked_strided,  // ResNet's stage entry, 16 -> 32 with stride 2 on 28×28, batch 23
    pointwise,    // a 1×1 kernel of stride 2, 16 -> 32 on 28×28, batch 31 (oneDNN's 1×1 kernels)
};

Conv2dGeometry conv_geometry(ConvCase which, std::int64_t& batch) {
    switch (which) {
        case ConvCase::wide_patch: batch = 37; return {3, 15, 15, 7, 3, 1, 1};
        case ConvCase::one_channel: batch = 29; return {1, 27, 27, 8, 3, 1, 1};
        case ConvCase::strided: batch = 47; return {3, 31, 31, 5, 3, 2, 1};
        case ConvCase::blocked: batch = 37; return {32, 14, 14, 64, 3, 1, 1};
        case ConvCase::first_layer: batch = 29; return {1, 28, 28, 32, 3, 1, 1};
        case ConvCase::blocked_strided: batch = 23; return {16, 28, 28, 32, 3, 2, 1};
        case ConvCase::pointwise: batch = 31; return {16, 28, 28, 32, 1, 2, 0};
    }
    return {};
}

// A convolution forward and backward: y, dx (none for a first layer), dW, dB, the saved input,
// dW's rounding counts.
// bf16_path: the backend's path for bf16 operands, "bf16" (oneDNN's bf16 kernels where it has them)
// or "fp32".
Outcome conv(int threads, ConvCase which, Format compute, const std::string& bf16_path) {
    auto be = backend_with(threads);
    be->set_bf16_matmul_path(bf16_path);
    std::int64_t batch = 0;
    const Conv2dGeometry g = conv_geometry(which, batch);
    auto w = tensor(*be, g.out_channels, g.patch(), Format::fp32, random_values(g.out_channels * g.patch(), 0.3f, 1));
    auto b = tensor(*be, 1, g.out_channels, Format::fp32, random_values(g.out_channels, 0.3f, 2));
    auto wc = zeros(*be, g.out_channels, g.patch(), compute);
    auto bc = zeros(*be, 1, g.out_channels, compute);
    auto gw = zeros(*be, g.out_channels, g.patch(), Format::fp32);
    auto gb = zeros(*be, 1, g.out_channels, Format::fp32);
    auto x = tensor(*be, batch, g.in_size(), Format::fp32, random_values(batch * g.in_size(), 1.0f, 3));
    auto saved = zeros(*be, batch, g.in_size(), compute);
    auto y = zeros(*be, batch, g.out_size(), compute);
    auto dy = tensor(*be, batch, g.out_size(), compute, random_values(batch * g.out_size(), 1e-2f, 4));
    auto dx = zeros(*be, batch, g.in_size(), compute);
    ConvTensors c;
    c.geometry = g;
    c.compute = compute;
    c.weight = w.get();
    c.bias = b.get();
    c.grad_weight = gw.get();
    c.grad_bias = gb.get();
    if (compute != Format::fp32) {
        c.weight_compute = wc.get();
        c.bias_compute = bc.get();
        c.saved_input = saved.get();
    }
    be->conv2d_forward(c, *x, *y, batch, true);
    RoundingStats stats;
    const bool first = which == ConvCase::first_layer;
    be->conv2d_backward(c, *x, *dy, first ? nullptr : dx.get(), batch, &stats);
    return {read(*be, *y), read(*be, *dx), read(*be, *gw), read(*be, *gb), read(*be, *saved),
            {static_cast<float>(stats.zeros), static_cast<float>(stats.subnormals)}};
}

// Batch norm training forward (fp16 y), backward (fp16 dx), then an evaluation forward.
Outcome batchnorm(int threads) {
    auto be = backend_with(threads);
    constexpr std::int64_t channels = 13, spatial = 15 * 15, batch = 47, n = channels * spatial;
    auto gamma = tensor(*be, 1, channels, Format::fp32, random_values(channels, 1.0f, 10));
    auto beta = tensor(*be, 1, channels, Format::fp32, random_values(channels, 1.0f, 11));
    auto rm = zeros(*be, 1, channels, Format::fp32);
    auto rv = tensor(*be, 1, channels, Format::fp32, std::vector<float>(channels, 1.0f));
    auto sm = zeros(*be, 1, channels, Format::fp32), si = zeros(*be, 1, channels, Format::fp32);
    auto gg = zeros(*be, 1, channels, Format::fp32), gbeta = zeros(*be, 1, channels, Format::fp32);
    auto x = tensor(*be, batch, n, Format::fp32, random_values(batch * n, 2.0f, 12));
    auto y = zeros(*be, batch, n, Format::fp16);
    auto dy = tensor(*be, batch, n, Format::fp16, random_values(batch * n, 1e-2f, 13));
    auto dx = zeros(*be, batch, n, Format::fp16);
    auto ye = zeros(*be, batch, n, Format::bf16);
    BatchNormTensors bn;
    bn.channels = channels;
    bn.spatial = spatial;
    bn.weight = gamma.get();
    bn.bias = beta.get();
    bn.grad_weight = gg.get();
    bn.grad_bias = gbeta.get();
    bn.running_mean = rm.get();
    bn.running_var = rv.get();
    bn.saved_mean = sm.get();
    bn.saved_invstd = si.get();
    be->batchnorm2d_forward(bn, *x, *y, batch, true);
    be->batchnorm2d_backward(bn, *x, *dy, *dx, batch);
    be->batchnorm2d_forward(bn, *x, *ye, batch, false);
    return {read(*be, *y), read(*be, *dx), read(*be, *gg), read(*be, *gbeta), read(*be, *rm),
            read(*be, *rv), read(*be, *sm), read(*be, *si), read(*be, *ye)};
}

// The max pool (the 2×2 fast path and a general 3×3 window of stride 2 with padding), the
// average pool and the global average pool, forward and backward, on 15×15 images (odd: an edge
// row and column outside every 2×2 window), fp32 x, outputs in bf16 so every rounding runs.
Outcome pools(int threads) {
    auto be = backend_with(threads);
    constexpr std::int64_t channels = 11, h = 15, w = 15, batch = 83;
    const std::int64_t in = channels * h * w;
    std::vector<float> xv = random_values(batch * in, 1.0f, 20);
    xv[1000] = NAN;              // the first NaN of its window wins
    xv[5000] = xv[5001] = 3.5f;  // a tie: the first position wins
    auto x = tensor(*be, batch, in, Format::fp32, xv);
    Outcome out;
    for (const Pool2dGeometry& p : {Pool2dGeometry{channels, h, w, 2, 2, 0}, Pool2dGeometry{channels, h, w, 3, 2, 1}}) {
        auto y = zeros(*be, batch, p.out_size(), Format::bf16);
        auto dy = tensor(*be, batch, p.out_size(), Format::fp32, random_values(batch * p.out_size(), 1.0f, 21));
        auto dx = zeros(*be, batch, in, Format::bf16);
        be->maxpool2d_forward(p, *x, *y, batch);
        be->maxpool2d_backward(p, *x, *y, *dy, *dx, batch);
        out.push_back(read(*be, *y));
        out.push_back(read(*be, *dx));
        be->avgpool2d_forward(p, *x, *y, batch);
        be->avgpool2d_backward(p, *dy, *dx, batch);
        out.push_back(read(*be, *y));
        out.push_back(read(*be, *dx));
    }
    auto y = zeros(*be, batch, channels, Format::bf16);
    auto dy = tensor(*be, batch, channels, Format::fp32, random_values(batch * channels, 1.0f, 22));
    auto dx = zeros(*be, batch, in, Format::bf16);
    be->global_avgpool_forward(channels, h * w, *x, *y, batch);
    be->global_avgpool_backward(channels, h * w, *dy, *dx, batch);
    out.push_back(read(*be, *y));
    out.push_back(read(*be, *dx));
    return out;
}

// Layer norm over rows of 100 values (columns cut in blocks of 16: uneven), bf16 y and dx, with
// the smallest variance (a constant row: 0).
Outcome layernorm(int threads) {
    auto be = backend_with(threads);
    constexpr std::int64_t rows = 4099, dim = 100;
    std::vector<float> xv = random_values(rows * dim, 1.5f, 30);
    for (std::int64_t j = 0; j < dim; ++j) xv[static_cast<std::size_t>(3000 * dim + j)] = 0.25f;
    auto x = tensor(*be, rows, dim, Format::fp32, xv);
    auto gamma = tensor(*be, 1, dim, Format::fp32, random_values(dim, 1.0f, 31));
    auto beta = tensor(*be, 1, dim, Format::fp32, random_values(dim, 1.0f, 32));
    auto gg = zeros(*be, 1, dim, Format::fp32), gbeta = zeros(*be, 1, dim, Format::fp32);
    auto sm = zeros(*be, rows, 1, Format::fp32), si = zeros(*be, rows, 1, Format::fp32);
    auto y = zeros(*be, rows, dim, Format::bf16);
    auto dy = tensor(*be, rows, dim, Format::bf16, random_values(rows * dim, 1e-2f, 33));
    auto dx = zeros(*be, rows, dim, Format::bf16);
    LayerNormTensors ln;
    ln.dim = dim;
    ln.weight = gamma.get();
    ln.bias = beta.get();
    ln.grad_weight = gg.get();
    ln.grad_bias = gbeta.get();
    ln.saved_mean = sm.get();
    ln.saved_invstd = si.get();
    LayerNormStats stats;
    be->layernorm_forward(ln, *x, *y, rows, &stats);
    be->layernorm_backward(ln, *x, *dy, *dx, rows);
    return {read(*be, *y), read(*be, *dx), read(*be, *gg), read(*be, *gbeta), read(*be, *sm), read(*be, *si),
            {stats.min_variance}};
}

// Softmax over (13·131, 131) blocks, causal or not, with an inf and a NaN in the input, bf16 y
// and dx, the backward scaled; the statistics compared too.
Outcome softmax(int threads, bool causal) {
    auto be = backend_with(threads);
    constexpr std::int64_t cols = 131, rows = 13 * cols;
    std::vector<float> xv = random_values(rows * cols, 3.0f, 40);
    xv[static_cast<std::size_t>(200 * cols + 0)] = INFINITY;
    xv[static_cast<std::size_t>(1500 * cols + 2)] = NAN;
    xv[static_cast<std::size_t>(1700 * cols + 1)] = -41.5f;  // the largest finite magnitude
    auto x = tensor(*be, rows, cols, Format::fp32, xv);
    auto y = zeros(*be, rows, cols, Format::bf16);
    auto dy = tensor(*be, rows, cols, Format::bf16, random_values(rows * cols, 1.0f, 41));
    auto dx = zeros(*be, rows, cols, Format::bf16);
    SoftmaxStats stats;
    be->softmax_forward(*x, *y, rows, causal, &stats);
    be->softmax_backward(*y, *dy, *dx, rows, causal, 0.7f);
    return {read(*be, *y), read(*be, *dx), {stats.amax, static_cast<float>(stats.nonfinite)}};
}

// Batched matmuls of 5×3 matrices (131, 3)·(3, 101) in bf16 from fp32 operands (packed and
// rounded), alpha at the output, into bf16 C written through a plain view and through a view of
// column stride 2 (scattered from a plain scratch).
Outcome batched(int threads) {
    auto be = backend_with(threads);
    BatchedMatmul op;
    op.outer_count = 5;
    op.inner_count = 3;
    op.m = 131;
    op.n = 101;
    op.k = 3;
    op.compute = Format::bf16;
    op.alpha = 0.37f;
    op.alpha_point = AlphaPoint::output;
    const std::int64_t batch = op.batch_count();
    auto a = tensor(*be, batch * op.m, op.k, Format::fp32, random_values(batch * op.m * op.k, 1.0f, 50));
    auto b = tensor(*be, batch * op.k, op.n, Format::fp32, random_values(batch * op.k * op.n, 1.0f, 51));
    auto c = zeros(*be, batch * op.m, op.n, Format::bf16);
    auto c2 = zeros(*be, batch * op.m, 2 * op.n, Format::bf16);
    StridedMatrix wide;
    wide.inner_stride = op.m * 2 * op.n;
    wide.outer_stride = op.inner_count * wide.inner_stride;
    wide.row_stride = 2 * op.n;
    wide.col_stride = 2;
    wide.offset = 1;
    be->batched_matmul(op, *a, packed_view(op.m, op.k, op.inner_count), *b, packed_view(op.k, op.n, op.inner_count),
                       *c, packed_view(op.m, op.n, op.inner_count));
    be->batched_matmul(op, *a, packed_view(op.m, op.k, op.inner_count), *b, packed_view(op.k, op.n, op.inner_count),
                       *c2, wide);
    return {read(*be, *c), read(*be, *c2)};
}

// The embedding's gather of 301 rows of 1000 values into bf16, and its backward (one thread).
Outcome embedding(int threads) {
    auto be = backend_with(threads);
    constexpr std::int64_t vocab = 97, dim = 1000, rows = 301;
    auto w = tensor(*be, vocab, dim, Format::fp32, random_values(vocab * dim, 1.0f, 60));
    std::vector<std::int32_t> ids(rows);
    for (std::int64_t r = 0; r < rows; ++r)
        ids[static_cast<std::size_t>(r)] = static_cast<std::int32_t>((r * 37) % vocab);
    auto y = zeros(*be, rows, dim, Format::bf16);
    auto dy = tensor(*be, rows, dim, Format::fp32, random_values(rows * dim, 1.0f, 61));
    auto gw = zeros(*be, vocab, dim, Format::bf16);
    be->embedding_forward(*w, ids.data(), *y, rows);
    be->embedding_backward(ids.data(), *dy, *gw, rows, false);
    return {read(*be, *y), read(*be, *gw)};
}

// The residual add of 1001 × 257 values into bf16, into a third tensor and in place.
Outcome residual_add(int threads) {
    auto be = backend_with(threads);
    constexpr std::int64_t rows = 1001, cols = 257;
    auto a = tensor(*be, rows, cols, Format::fp32, random_values(rows * cols, 1.0f, 65));
    auto b = tensor(*be, rows, cols, Format::fp32, random_values(rows * cols, 1.0f, 66));
    auto y = zeros(*be, rows, cols, Format::bf16);
    be->add(*a, *b, *y, rows);
    be->add(*a, *b, *b, rows);
    return {read(*be, *y), read(*be, *b)};
}

// One training step (forward, loss, backward) of a network in bf16 autocast with master
// weights: the loss and every parameter's gradient.
Outcome step(int threads, const ModelSpec& spec, SampleShape shape, std::int64_t outputs, std::int64_t sequence,
             std::int64_t batch) {
    auto be = backend_with(threads);
    const ModelDesc desc = describe_model(spec, shape, outputs, false, sequence);
    Network net(*be, desc, batch, 5, Fp8Recipe{},
                std::vector<LayerFormats>(desc.layers.size(),
                                          resolve_layer_formats(LayerPrecision::automatic, Autocast::bf16, true)));
    const std::int64_t positions = sequence > 0 ? sequence : 1;
    std::vector<float> x;
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch * positions));
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>((i * 7 + 3) % outputs);
    if (sequence > 0) {
        for (std::int64_t i = 0; i < batch * sequence; ++i) x.push_back(static_cast<float>((i * 13 + 5) % outputs));
    } else {
        x = random_values(static_cast<std::size_t>(batch * shape.numel()), 1.0f, 70);
    }
    net.forward(x.data(), batch, true);
    const LossResult loss = net.loss(labels.data(), nullptr, batch, 1024.0f, true);
    net.backward(batch, nullptr);
    Outcome out{{static_cast<float>(loss.loss)}};
    for (const NetworkParameter& p : net.parameters()) out.push_back(net.read(*p.tensors.grad));
    return out;
}

// A CNN on 20×20 images: conv 8 (im2col 9 × 400 × 64 values; the epilogue, batch norm and the
// pool 8 × 400 × 64) and conv 4, every product under 2^21 multiply-adds.
Outcome cnn_step(int threads) {
    ModelSpec spec;
    spec.kind = "cnn";
    spec.channels = {8, 4};
    spec.hidden = {16};
    return step(threads, spec, SampleShape{1, 20, 20}, 10, 0, 64);
}

// The same on 16 and 32 channels: conv 16 on 20×20 (forward and dW by oneDNN's convolution: 7.4·10^5
// multiply-adds, one thread) and conv 32 on 10×10 (every direction: 7.4·10^6 multiply-adds, both
// threads), the fully connected products still under 2^21.
Outcome blocked_cnn_step(int threads) {
    ModelSpec spec;
    spec.kind = "cnn";
    spec.channels = {16, 32};
    spec.hidden = {16};
    return step(threads, spec, SampleShape{1, 20, 20}, 10, 0, 64);
}

// A GPT of width 16, 2 heads, T 64, batch 16: the scores are 32 × 64 × 64 values (the softmax
// and the batched matmul's epilogue cut), every product under 2^21 multiply-adds.
Outcome gpt_step(int threads) {
    ModelSpec spec;
    spec.kind = "gpt";
    spec.depth = 2;
    spec.heads = 2;
    spec.dim = 16;
    spec.context = 64;
    spec.mlp_ratio = 2;
    return step(threads, spec, SampleShape{64, 1, 1}, 37, 64, 16);
}

}  // namespace

class TestCpuThreadsLayers : public QObject {
    Q_OBJECT

    // run(threads) on each count the same bits as run(1).
    template <class F>
    void same_as_one_thread(F run, std::initializer_list<int> counts = {2, 3}) {
        const Outcome one = run(1);
        for (int threads : counts) {
            const QString diff = differences(run(threads), one);
            QVERIFY2(diff.isEmpty(), qPrintable(QString("%1 threads: outputs %2 differ").arg(threads).arg(diff)));
        }
    }

private slots:
    void convolutionIsTheSameOnAnyThreadCount_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<int>("compute");
        QTest::addColumn<QString>("bf16_path");
        QTest::newRow("3 channels fp32") << int(ConvCase::wide_patch) << int(Format::fp32) << "fp32";
        QTest::newRow("3 channels bf16") << int(ConvCase::wide_patch) << int(Format::bf16) << "fp32";
        QTest::newRow("3 channels bf16, bf16 matmul") << int(ConvCase::wide_patch) << int(Format::bf16) << "bf16";
        QTest::newRow("1 channel fp32") << int(ConvCase::one_channel) << int(Format::fp32) << "fp32";
        QTest::newRow("1 channel fp16") << int(ConvCase::one_channel) << int(Format::fp16) << "fp32";
        QTest::newRow("stride 2 bf16") << int(ConvCase::strided) << int(Format::bf16) << "fp32";
        QTest::newRow("direct fp32") << int(ConvCase::blocked) << int(Format::fp32) << "fp32";
        QTest::newRow("direct bf16, FP32 kernels") << int(ConvCase::blocked) << int(Format::bf16) << "fp32";
        QTest::newRow("direct bf16, bf16 kernels") << int(ConvCase::blocked) << int(Format::bf16) << "bf16";
        QTest::newRow("direct first layer fp16") << int(ConvCase::first_layer) << int(Format::fp16) << "fp32";
        QTest::newRow("direct stride 2 bf16, FP32 kernels") << int(ConvCase::blocked_strided) << int(Format::bf16)
                                                              << "fp32";
        QTest::newRow("direct stride 2 bf16, bf16 kernels") << int(ConvCase::blocked_strided) << int(Format::bf16)
                                                              << "bf16";
        QTest::newRow("direct 1x1 stride 2 fp32") << int(ConvCase::pointwise) << int(Format::fp32) << "fp32";
    }
    void convolutionIsTheSameOnAnyThreadCount() {
        QFETCH(int, which);
        QFETCH(int, compute);
        QFETCH(QString, bf16_path);
        const auto w = static_cast<ConvCase>(which);
        if (w >= ConvCase::blocked) {  // these take oneDNN's convolution, or the case tests nothing new
            using Direction = OneDnnConv::Direction;
            std::int64_t batch = 0;
            const Conv2dGeometry g = conv_geometry(w, batch);
            const OneDnnConvDims d{batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel, g.stride, g.padding};
            // bf16 kernels wherever oneDNN has a bf16 matmul (the CPU has bf16 instructions).
            const ConvOperands operands =
                bf16_path == "bf16" && CpuMatmul::bf16_available() ? ConvOperands::bf16 : ConvOperands::fp32;
            QVERIFY(OneDnnConv::find(Direction::forward, d, 3, operands));
            QVERIFY(OneDnnConv::find(Direction::backward_weights, d, 3, operands));
            QVERIFY(w == ConvCase::first_layer || OneDnnConv::find(Direction::backward_data, d, 3, operands));
        }
        same_as_one_thread([&](int t) {
            return conv(t, static_cast<ConvCase>(which), static_cast<Format>(compute), bf16_path.toStdString());
        });
    }

    void batchNormIsTheSameOnAnyThreadCount() { same_as_one_thread(batchnorm); }

    void poolsAreTheSameOnAnyThreadCount() { same_as_one_thread(pools); }

    void layerNormIsTheSameOnAnyThreadCount() {
        QCOMPARE_EXACT(layernorm(1).back().front(), 0.0f);  // the constant row's variance
        same_as_one_thread(layernorm);
    }

    void softmaxIsTheSameOnAnyThreadCount() {
        for (bool causal : {false, true}) {
            const Outcome one = softmax(1, causal);
            QCOMPARE(one.back()[0], 41.5f);
            QCOMPARE(one.back()[1], 2.0f);
            same_as_one_thread([&](int t) { return softmax(t, causal); });
        }
    }

    void batchedMatmulIsTheSameOnAnyThreadCount() { same_as_one_thread(batched); }

    void embeddingIsTheSameOnAnyThreadCount() { same_as_one_thread(embedding); }

    void residualAddIsTheSameOnAnyThreadCount() { same_as_one_thread(residual_add); }

    void cnnStepIsTheSameOnTwoThreads() { same_as_one_thread(cnn_step, {2}); }

    void blockedCnnStepIsTheSameOnTwoThreads() { same_as_one_thread(blocked_cnn_step, {2}); }

    void gptStepIsTheSameOnTwoThreads() { same_as_one_thread(gpt_step, {2}); }
};

QTEST_APPLESS_MAIN(TestCpuThreadsLayers)
#include "test_cpu_threads_layers.moc"
