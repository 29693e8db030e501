// Backend's checked wrappers (backend_checks.cpp) and supports(): what the CPU backend runs, in
// which formats, and the one sentence it gives for the rest; every layer op refusing a wrong
// call with a sentence that names what was wrong before anything is written (linear's checks,
// once shared by the CPU and CUDA copies, now in one place: the FP8 declarations the CUDA copy
// checked apply to the CPU too); the transformer ops refused by a backend that lacks them, with
// its sentence or the default one.
#include <QtTest>

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backend_test_util.h"
#include "conv_test_util.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "error.h"

using namespace mantissa;
using backend_test::read;
using conv_test::make;

namespace {

constexpr BackendOp all_ops[] = {BackendOp::linear,    BackendOp::conv2d,         BackendOp::maxpool2d,
                                 BackendOp::avgpool2d, BackendOp::global_avgpool, BackendOp::batchnorm2d,
                                 BackendOp::add,       BackendOp::activation,     BackendOp::bmm,
                                 BackendOp::softmax,   BackendOp::layernorm,      BackendOp::embedding};
constexpr BackendOp transformer_ops[] = {BackendOp::bmm, BackendOp::softmax, BackendOp::layernorm,
                                         BackendOp::embedding};

// One sentence: a capital first letter, one full stop, at the end.
bool one_sentence(const std::string& s) {
    return !s.empty() && std::isupper(static_cast<unsigned char>(s.front())) && s.back() == '.' &&
           s.find(". ") == std::string::npos;
}

// The tensors of every op, valid: each case below breaks one thing.
struct World {
    CpuBackend be;
    std::unique_ptr<Tensor> w, b, gw, gb, wq, xs, x, y, dy, dx;
    std::unique_ptr<Tensor> cw, cgw, cb, cgb, cx, cy, cdy, cdx;
    std::unique_ptr<Tensor> px, py, pdy, pdx, gy;
    std::unique_ptr<Tensor> bw, bb, bgw, bgb, brm, brv, bsm, bsi;
    std::unique_ptr<Tensor> ta, tb, tc, sx, sy, sdx, lw, lb, lgw, lgb, lsm, lsi, lx, ly, ldx, ew, ey, egw;
    std::unique_ptr<Fp8State> fp8;
    LinearTensors lt;
    ConvTensors ct;
    Pool2dGeometry pg;
    BatchNormTensors bn;
    BatchedMatmul op;
    LayerNormTensors ln;
    std::vector<std::int32_t> ids = {0, 4, 2};
    static constexpr int batch = 2;

    World() {
        w = make(be, 3, 4, Format::fp32, "fc.weight"), b = make(be, 1, 3, Format::fp32, "fc.bias");
        gw = make(be, 3, 4, Format::fp32, "fc.gw"), gb = make(be, 1, 3, Format::fp32, "fc.gb");
        x = make(be, batch, 4, Format::fp32, "x"), y = make(be, batch, 3, Format::fp32, "y");
        dy = make(be, batch, 3, Format::fp32, "dy"), dx = make(be, batch, 4, Format::fp32, "dx");
        lt.weight = w.get(), lt.bias = b.get(), lt.grad_weight = gw.get(), lt.grad_bias = gb.get();

        ct.geometry.in_channels = 2, ct.geometry.in_h = 5, ct.geometry.in_w = 4, ct.geometry.out_channels = 3;
        ct.geometry.kernel = 3, ct.geometry.stride = 1, ct.geometry.padding = 1;
        cw = make(be, 3, 18, Format::fp32, "conv.weight"), cgw = make(be, 3, 18, Format::fp32, "conv.gw");
        cb = make(be, 1, 3, Format::fp32, "conv.bias"), cgb = make(be, 1, 3, Format::fp32, "conv.gb");
        cx = make(be, batch, 40, Format::fp32, "cx"), cy = make(be, batch, 60, Format::fp32, "cy");
        cdy = make(be, batch, 60, Format::fp32, "cdy"), cdx = make(be, batch, 40, Format::fp32, "cdx");
        ct.weight = cw.get(), ct.grad_weight = cgw.get(), ct.bias = cb.get(), ct.grad_bias = cgb.get();

        pg.channels = 2, pg.in_h = 5, pg.in_w = 4, pg.kernel = 2, pg.stride = 2, pg.padding = 0;
        px = make(be, batch, 40, Format::fp32, "px"), py = make(be, batch, 8, Format::fp32, "py");
        pdy = make(be, batch, 8, Format::fp32, "pdy"), pdx = make(be, batch, 40, Format::fp32, "pdx");
        gy = make(be, batch, 2, Format::fp32, "gy");

        bn.channels = 2, bn.spatial = 20;
        bw = make(be, 1, 2, Format::fp32, "bn.weight"), bb = make(be, 1, 2, Format::fp32, "bn.bias");
        bgw = make(be, 1, 2, Format::fp32, "bn.gw"), bgb = make(be, 1, 2, Format::fp32, "bn.gb");
        brm = make(be, 1, 2, Format::fp32, "bn.rm"), brv = make(be, 1, 2, Format::fp32, "bn.rv");
        bsm = make(be, 1, 2, Format::fp32, "bn.sm"), bsi = make(be, 1, 2, Format::fp32, "bn.si");
        bn.weight = bw.get(), bn.bias = bb.get(), bn.grad_weight = bgw.get(), bn.grad_bias = bgb.get();
        bn.running_mean = brm.get(), bn.running_var = brv.get(), bn.saved_mean = bsm.get(), bn.saved_invstd = bsi.get();

        // Transformer ops: 2 products (3×4)·(4×5); a softmax over two 4×4 blocks; a layer norm
        // of 3 rows of 4; an embedding of 5 rows of 4 looked up by 3 ids.
        op.outer_count = 1, op.inner_count = 2, op.m = 3, op.n = 5, op.k = 4;
        ta = make(be, 6, 4, Format::fp32, "ta"), tb = make(be, 8, 5, Format::fp32, "tb");
        tc = make(be, 6, 5, Format::fp32, "tc");
        sx = make(be, 8, 4, Format::fp32, "sx"), sy = make(be, 8, 4, Format::fp32, "sy");
        sdx = make(be, 8, 4, Format::fp32, "sdx");
        lw = make(be, 1, 4, Format::fp32, "ln.weight"), lb = make(be, 1, 4, Format::fp32, "ln.bias");
        lgw = make(be, 1, 4, Format::fp32, "ln.gw"), lgb = make(be, 1, 4, Format::fp32, "ln.gb");
        lsm = make(be, 3, 1, Format::fp32, "ln.sm"), lsi = make(be, 3, 1, Format::fp32, "ln.si");
        lx = make(be, 3, 4, Format::fp32, "lx"), ly = make(be, 3, 4, Format::fp32, "ly");
        ldx = make(be, 3, 4, Format::fp32, "ldx");
        ln.dim = 4, ln.weight = lw.get(), ln.bias = lb.get(), ln.grad_weight = lgw.get(), ln.grad_bias = lgb.get();
        ln.saved_mean = lsm.get(), ln.saved_invstd = lsi.get();
        ew = make(be, 5, 4, Format::fp32, "wte"), ey = make(be, 3, 4, Format::fp32, "ey");
        egw = make(be, 5, 4, Format::fp32, "wte.grad");
    }
    StridedMatrix av() const { return packed_view(3, 4, 2); }
    StridedMatrix bv() const { return packed_view(4, 5, 2); }
    StridedMatrix cv() const { return packed_view(3, 5, 2); }
};

// A backend that has none of the transformer ops (and runs nothing else): its unsupported() says
// so, or, with `claims`, claims them all and keeps Backend's default *_impl.
class FakeTensor final : public Tensor {
public:
    explicit FakeTensor(TensorDesc d) : Tensor(std::move(d)) {}
};

class FakeBackend final : public Backend {
public:
    explicit FakeBackend(bool claims) : m_claims(claims) {}
    std::string name() const override { return "fake"; }
    std::string device_name() const override { return "none"; }
    std::unique_ptr<Tensor> allocate(const TensorDesc& d) override { return std::make_unique<FakeTensor>(d); }
    void upload(Tensor&, const float*, std::int64_t) override {}
    void download(const Tensor&, float*, std::int64_t) const override {}
    void fill(Tensor&, float) override {}
    void poke(Tensor&, std::int64_t, float) override {}
    void cast(const Tensor&, Tensor&) override {}
    void convert(Tensor&, Format) override {}
    std::unique_ptr<Fp8State> create_fp8_state(const Fp8Recipe&) override { return nullptr; }
    void update_fp8_scales(Fp8State&) override {}
    std::string unsupported(BackendOp op, Format) const override {
        if (m_claims) return "";
        return std::string("The fake backend lacks ") + backend_op_name(op) + "; use another backend.";
    }
    UnscaleResult unscale_and_check(const std::vector<Tensor*>&, float, const std::vector<bool>&,
                                    std::vector<GradientSummary>*) override {
        return {};
    }
    UpdateCounts sgd_step(const OptimizerTensors&, const SgdParams&) override { return {}; }
    UpdateCounts adamw_step(const OptimizerTensors&, const AdamWParams&) override { return {}; }
    MemoryBreakdown memory() const override { return {}; }

protected:
    void linear_forward_impl(LinearTensors&, const Tensor&, Tensor&, std::int64_t, bool) override {}
    void linear_backward_impl(LinearTensors&, const Tensor&, const Tensor&, Tensor*, std::int64_t,
                              RoundingStats*) override {}
    void activation_forward_impl(Activation, const Tensor&, Tensor&, std::int64_t) override {}
    void activation_backward_impl(Activation, const Tensor&, const Tensor&, const Tensor&, Tensor&,
                                  std::int64_t) override {}
    LossResult softmax_cross_entropy_impl(const Tensor&, const std::int32_t*, std::int64_t, float, Tensor*) override {
        return {};
    }
    LossResult mse_impl(const Tensor&, const float*, std::int64_t, float, Tensor*) override { return {}; }

private:
    bool m_claims;
};

// Each transformer op called once, validly, on `be` with its own tensors; the op's name.
std::vector<std::pair<BackendOp, std::function<void()>>> transformer_calls(Backend& be,
                                                                           std::vector<std::unique_ptr<Tensor>>& keep) {
    auto t = [&](std::int64_t r, std::int64_t c, const char* name) {
        keep.push_back(make(be, r, c, Format::fp32, name));
        return keep.back().get();
    };
    Tensor *a = t(6, 4, "a"), *b = t(8, 5, "b"), *c = t(6, 5, "c"), *x = t(8, 4, "x"), *y = t(8, 4, "y");
    Tensor *lw = t(1, 4, "w"), *lb = t(1, 4, "b"), *lgw = t(1, 4, "gw"), *lgb = t(1, 4, "gb");
    Tensor *lsm = t(8, 1, "sm"), *lsi = t(8, 1, "si"), *ew = t(5, 4, "wte");
    static const std::int32_t ids[] = {0, 1, 2};
    static LayerNormTensors ln;
    ln.dim = 4, ln.weight = lw, ln.bias = lb, ln.grad_weight = lgw, ln.grad_bias = lgb, ln.saved_mean = lsm,
    ln.saved_invstd = lsi;
    BatchedMatmul op;
    op.inner_count = 2, op.m = 3, op.n = 5, op.k = 4;
    return {
        {BackendOp::bmm, [&be, op, a, b, c] {
             be.batched_matmul(op, *a, packed_view(3, 4, 2), *b, packed_view(4, 5, 2), *c, packed_view(3, 5, 2));
         }},
        {BackendOp::softmax, [&be, x, y] { be.softmax_forward(*x, *y, 8, true, nullptr); }},
        {BackendOp::softmax, [&be, x, y] { be.softmax_backward(*y, *x, *x, 8, true, 1.0f); }},
        {BackendOp::layernorm, [&be, x, y] { be.layernorm_forward(ln, *x, *y, 8, nullptr); }},
        {BackendOp::layernorm, [&be, x, y] { be.layernorm_backward(ln, *x, *y, *x, 8); }},
        {BackendOp::embedding, [&be, ew, y] { be.embedding_forward(*ew, ids, *y, 3); }},
        {BackendOp::embedding, [&be, ew, y] { be.embedding_backward(ids, *y, *ew, 3, false); }},
    };
}

using Case = std::function<void(World&)>;

}  // namespace

Q_DECLARE_METATYPE(Case)

class TestBackendChecks : public QObject {
    Q_OBJECT
private slots:
    // The CPU runs every op on fp32, tf32, fp16 and bf16 tensors, linear and conv2d computing in
    // fp8-e4m3 too; the rest it refuses with one sentence naming the op and the format.
    void cpuSupports() {
        CpuBackend be;
        for (BackendOp op : all_ops) {
            for (Format f : all_formats) {
                const bool matmul = op == BackendOp::linear || op == BackendOp::conv2d;
                const bool want = f == Format::fp32 || f == Format::tf32 || f == Format::fp16 || f == Format::bf16 ||
                                  (matmul && f == Format::fp8_e4m3);
                const std::string why = be.unsupported(op, f);
                const QString where = QString("%1 in %2: \"%3\"")
                                          .arg(backend_op_name(op))
                                          .arg(QString::fromUtf8(format_name(f).data(), int(format_name(f).size())))
                                          .arg(QString::fromStdString(why));
                QVERIFY2(be.supports(op, f) == want, qPrintable(where));
                QVERIFY2(why.empty() == want, qPrintable(where));
                if (!want) {
                    QVERIFY2(one_sentence(why), qPrintable(where));
                    QVERIFY2(why.find(std::string(format_name(f))) != std::string::npos, qPrintable(where));
                }
            }
        }
        QCOMPARE(std::string(backend_op_name(BackendOp::global_avgpool)), std::string("global_avgpool"));
    }

    // Each wrong call throws mantissa::Error whose message (a sentence after the op's name)
    // holds `needle`, and the output it would have written keeps its values.
    void wrappersRefuseWrongCalls_data() {
        QTest::addColumn<Case>("call");
        QTest::addColumn<QString>("needle");
        auto row = [](const char* name, Case c, const char* needle) { QTest::newRow(name) << c << QString(needle); };
        const int B = World::batch;
        row("linear: input features", [](World& s) {
            auto x5 = make(s.be, B, 5, Format::fp32, "x5");
            s.be.linear_forward(s.lt, *x5, *s.y, B, true);
        }, "the weight expects 4");
        row("linear: batch beyond the input", [](World& s) { s.be.linear_forward(s.lt, *s.x, *s.y, B + 1, true); },
            "batch does not fit");
        row("linear: output shape", [](World& s) { s.be.linear_forward(s.lt, *s.x, *s.dx, B, true); }, "output tensor");
        row("linear: fp8 copy not e4m3", [](World& s) {
            s.wq = make(s.be, 3, 4, Format::fp16, "fc.wq");
            s.xs = make(s.be, B, 4, Format::fp8_e4m3, "fc.xs");
            s.fp8 = s.be.create_fp8_state(Fp8Recipe{});
            s.lt.compute = Format::fp8_e4m3, s.lt.weight_compute = s.wq.get(), s.lt.saved_input = s.xs.get();
            s.lt.fp8 = s.fp8.get();
            s.be.linear_forward(s.lt, *s.x, *s.y, B, true);
        }, "declared fp8-e4m3");
        row("linear: bias gradient size", [](World& s) {
            s.gb = make(s.be, 1, 4, Format::fp32, "fc.gb4");
            s.lt.grad_bias = s.gb.get();
            s.be.linear_backward(s.lt, *s.x, *s.dy, s.dx.get(), B, nullptr);
        }, "bias gradient fc.gb4");
        row("linear_backward: input gradient shape",
            [](World& s) { s.be.linear_backward(s.lt, *s.x, *s.dy, s.y.get(), B, nullptr); }, "input gradient");
        row("activation: shapes", [](World& s) { s.be.activation_forward(Activation::relu, *s.x, *s.y, B); },
            "do not match");
        row("activation: negative batch", [](World& s) { s.be.activation_forward(Activation::relu, *s.y, *s.dy, -1); },
            "do not match");
        row("softmax: label", [](World& s) {
            const std::int32_t labels[] = {0, 3};
            s.be.softmax_cross_entropy(*s.y, labels, B, 1.0f, s.dy.get());
        }, "label 3 of row 1");
        row("mse: targets missing", [](World& s) { s.be.mse(*s.y, nullptr, B, 1.0f, s.dy.get()); }, "targets");
        row("conv2d: input size", [](World& s) { s.be.conv2d_forward(s.ct, *s.py, *s.cy, B, true); }, "2\u00d75\u00d74");
        row("conv2d: output size", [](World& s) { s.be.conv2d_forward(s.ct, *s.cx, *s.cx, B, true); }, "60 expected");
        row("conv2d: kernel beyond the padded input", [](World& s) {
            s.ct.geometry.kernel = 8;
            s.be.conv2d_forward(s.ct, *s.cx, *s.cy, B, true);
        }, "larger than the padded input");
        row("conv2d: stride 0", [](World& s) {
            s.ct.geometry.stride = 0;
            s.be.conv2d_forward(s.ct, *s.cx, *s.cy, B, true);
        }, "stride");
        row("conv2d: weight shape", [](World& s) {
            s.ct.geometry.in_channels = 3;
            auto x = make(s.be, B, 60, Format::fp32, "cx3");
            s.be.conv2d_forward(s.ct, *x, *s.cy, B, true);
        }, "the geometry expects 3\u00d727");
        row("conv2d: bias without its gradient", [](World& s) {
            s.ct.grad_bias = nullptr;
            s.be.conv2d_backward(s.ct, *s.cx, *s.cdy, s.cdx.get(), B, nullptr);
        }, "bias gradient");
        row("conv2d: output gradient shape",
            [](World& s) { s.be.conv2d_backward(s.ct, *s.cx, *s.cx, s.cdx.get(), B, nullptr); }, "output gradient");
        row("conv2d: fp8 without its state", [](World& s) {
            s.ct.compute = Format::fp8_e4m3;
            s.be.conv2d_forward(s.ct, *s.cx, *s.cy, B, true);
        }, "scaling state");
        row("conv2d: unsupported compute", [](World& s) {
            s.ct.compute = Format::fp8_e5m2;
            s.be.conv2d_forward(s.ct, *s.cx, *s.cy, B, true);
        }, "not fp8-e5m2");
        row("maxpool: padding over half the kernel", [](World& s) {
            s.pg.padding = 2;
            s.be.maxpool2d_forward(s.pg, *s.px, *s.py, B);
        }, "half the kernel");
        row("maxpool: output size", [](World& s) { s.be.maxpool2d_forward(s.pg, *s.px, *s.px, B); }, "8 expected");
        row("maxpool: fp8 output", [](World& s) {
            auto y8 = make(s.be, B, 8, Format::fp8_e4m3, "py8");
            s.be.maxpool2d_forward(s.pg, *s.px, *y8, B);
        }, "not fp8-e4m3");
        row("avgpool: batch beyond dy", [](World& s) { s.be.avgpool2d_backward(s.pg, *s.pdy, *s.pdx, B + 1); },
            "too few for a batch of 3");
        row("global_avgpool: output size",
            [](World& s) { s.be.global_avgpool_forward(2, 20, *s.px, *s.py, B); }, "2 expected");
        row("global_avgpool: zero positions", [](World& s) { s.be.global_avgpool_forward(2, 0, *s.px, *s.gy, B); },
            "must be positive");
        row("batchnorm: statistics missing", [](World& s) {
            s.bn.saved_invstd = nullptr;
            s.be.batchnorm2d_forward(s.bn, *s.px, *s.pdx, B, true);
        }, "a tensor is missing");
        row("batchnorm: one value per channel", [](World& s) {
            s.bn.spatial = 1, s.bn.channels = 2;
            auto x = make(s.be, 1, 2, Format::fp32, "bx"), y = make(s.be, 1, 2, Format::fp32, "by");
            s.be.batchnorm2d_forward(s.bn, *x, *y, 1, true);
        }, "more than one value per channel");
        row("batchnorm: momentum", [](World& s) {
            s.bn.momentum = 1.5;
            s.be.batchnorm2d_forward(s.bn, *s.px, *s.pdx, B, true);
        }, "momentum");
        row("add: shapes", [](World& s) { s.be.add(*s.px, *s.py, *s.pdx, B); }, "do not match");
        row("bmm: A beyond its tensor", [](World& s) {
            s.op.k = 5;
            s.be.batched_matmul(s.op, *s.ta, s.av(), *s.tb, s.bv(), *s.tc, s.cv());
        }, "view of A ta reaches element");
        row("bmm: B beyond its tensor", [](World& s) {
            StridedMatrix b = s.bv();
            b.offset = 1;
            s.be.batched_matmul(s.op, *s.ta, s.av(), *s.tb, b, *s.tc, s.cv());
        }, "beyond its 40 values");
        row("bmm: negative stride", [](World& s) {
            StridedMatrix a = s.av();
            a.col_stride = -1;
            s.be.batched_matmul(s.op, *s.ta, a, *s.tb, s.bv(), *s.tc, s.cv());
        }, "negative offset or stride");
        row("bmm: C is an operand", [](World& s) {
            s.op.n = 4;
            s.be.batched_matmul(s.op, *s.ta, s.av(), *s.tb, s.bv(), *s.ta, s.av());
        }, "is also an operand");
        row("bmm: C reaches an element twice", [](World& s) {
            StridedMatrix c = s.cv();
            c.inner_stride = 5;  // the second matrix overlaps the first one's rows
            s.be.batched_matmul(s.op, *s.ta, s.av(), *s.tb, s.bv(), *s.tc, c);
        }, "reaches some element twice");
        row("bmm: fp8 compute", [](World& s) {
            s.op.compute = Format::fp8_e4m3;
            s.be.batched_matmul(s.op, *s.ta, s.av(), *s.tb, s.bv(), *s.tc, s.cv());
        }, "batched matmuls in fp32, tf32, fp16 or bf16, not fp8-e4m3");
        row("bmm: negative size", [](World& s) {
            s.op.m = -1;
            s.be.batched_matmul(s.op, *s.ta, s.av(), *s.tb, s.bv(), *s.tc, s.cv());
        }, "must not be negative");
        row("softmax: shapes", [](World& s) { s.be.softmax_forward(*s.sx, *s.tc, 6, false, nullptr); }, "do not match");
        row("softmax: causal rows not whole blocks",
            [](World& s) { s.be.softmax_forward(*s.sx, *s.sy, 6, true, nullptr); }, "not a multiple of T = 4");
        row("softmax: fp8 output", [](World& s) {
            auto y8 = make(s.be, 8, 4, Format::fp8_e5m2, "sy8");
            s.be.softmax_forward(*s.sx, *y8, 8, false, nullptr);
        }, "runs softmax on fp32, tf32, fp16 or bf16 tensors, not fp8-e5m2");
        row("softmax_backward: dy shape",
            [](World& s) { s.be.softmax_backward(*s.sy, *s.tc, *s.sdx, 4, false, 1.0f); }, "do not match");
        row("softmax_backward: scale", [](World& s) {
            s.be.softmax_backward(*s.sy, *s.sx, *s.sdx, 8, false, std::numeric_limits<float>::infinity());
        }, "scale must be finite");
        row("layernorm: input width", [](World& s) {
            auto x5 = make(s.be, 3, 5, Format::fp32, "lx5");
            s.be.layernorm_forward(s.ln, *x5, *s.ly, 3, nullptr);
        }, "the input lx5 has 5 values per sample, 4 expected");
        row("layernorm: a tensor missing", [](World& s) {
            s.ln.grad_bias = nullptr;
            s.be.layernorm_forward(s.ln, *s.lx, *s.ly, 3, nullptr);
        }, "a tensor is missing");
        row("layernorm: gamma size", [](World& s) {
            auto w = make(s.be, 1, 5, Format::fp32, "ln.w5");
            s.ln.weight = w.get();
            s.be.layernorm_forward(s.ln, *s.lx, *s.ly, 3, nullptr);
        }, "has 5 values, 4 expected");
        row("layernorm: saved statistics too short", [](World& s) {
            auto x = make(s.be, 4, 4, Format::fp32, "lx4"), y = make(s.be, 4, 4, Format::fp32, "ly4");
            s.be.layernorm_forward(s.ln, *x, *y, 4, nullptr);
        }, "saved mean ln.sm has 3 rows, too few for a batch of 4");
        row("layernorm_backward: dx shape", [](World& s) { s.be.layernorm_backward(s.ln, *s.lx, *s.ly, *s.tc, 3); },
            "input gradient");
        row("embedding: id out of range", [](World& s) {
            const std::int32_t ids[] = {0, 5, 1};
            s.be.embedding_forward(*s.ew, ids, *s.ey, 3);
        }, "id 5 of row 1 is outside the embedding's [0, 5)");
        row("embedding: ids missing", [](World& s) { s.be.embedding_forward(*s.ew, nullptr, *s.ey, 3); },
            "ids are missing");
        row("embedding: output width", [](World& s) { s.be.embedding_forward(*s.ew, s.ids.data(), *s.tc, 3); },
            "5 values per sample, 4 expected");
        row("embedding_backward: negative id", [](World& s) {
            const std::int32_t ids[] = {0, 1, -1};
            s.be.embedding_backward(ids, *s.ey, *s.egw, 3, false);
        }, "id -1 of row 2");
        row("embedding_backward: fp8 gradient", [](World& s) {
            auto g8 = make(s.be, 5, 4, Format::fp8_e4m3, "wte.grad8");
            s.be.embedding_backward(s.ids.data(), *s.ey, *g8, 3, false);
        }, "runs embedding on");
    }
    void wrappersRefuseWrongCalls() {
        QFETCH(Case, call);
        QFETCH(QString, needle);
        World s;
        // Every output of every op starts at 3: a refused call must leave it so.
        const std::vector<Tensor*> outputs = {s.y.get(),   s.dx.get(),  s.gw.get(),  s.cy.get(),  s.cdx.get(),
                                              s.cgw.get(), s.py.get(),  s.pdx.get(), s.gy.get(),  s.dy.get(),
                                              s.ta.get(),  s.tc.get(),  s.sy.get(),  s.sdx.get(), s.ly.get(),
                                              s.ldx.get(), s.lgw.get(), s.lsm.get(), s.ey.get(),  s.egw.get()};
        for (Tensor* t : outputs) s.be.fill(*t, 3.0f);
        try {
            call(s);
            QFAIL("the call was not refused");
        } catch (const Error& e) {
            const std::string what = e.what();
            QVERIFY2(QString::fromStdString(what).contains(needle), e.what());
            QVERIFY2(!what.empty() && what.back() == '.', e.what());
        }
        for (Tensor* t : outputs) {
            const auto v = read(s.be, *t);
            QVERIFY2(std::all_of(v.begin(), v.end(), [](float e) { return e == 3.0f; }),
                     qPrintable(QString::fromStdString(t->desc().name) + " was written"));
        }
    }

    // The same world's valid calls run: the checks refuse nothing that is right.
    void wrappersAcceptValidCalls() {
        World s;
        const int B = World::batch;
        s.be.linear_forward(s.lt, *s.x, *s.y, B, true);
        s.be.linear_backward(s.lt, *s.x, *s.dy, s.dx.get(), B, nullptr);
        s.be.conv2d_forward(s.ct, *s.cx, *s.cy, B, true);
        s.be.conv2d_backward(s.ct, *s.cx, *s.cdy, s.cdx.get(), B, nullptr);
        s.ct.bias = nullptr;  // a convolution without bias needs no bias gradient
        s.ct.grad_bias = nullptr;
        s.be.conv2d_forward(s.ct, *s.cx, *s.cy, B, true);
        s.be.conv2d_backward(s.ct, *s.cx, *s.cdy, nullptr, B, nullptr);
        s.be.maxpool2d_forward(s.pg, *s.px, *s.py, B);
        s.be.maxpool2d_backward(s.pg, *s.px, *s.py, *s.pdy, *s.pdx, B);
        s.be.avgpool2d_forward(s.pg, *s.px, *s.py, B);
        s.be.avgpool2d_backward(s.pg, *s.pdy, *s.pdx, B);
        s.be.global_avgpool_forward(2, 20, *s.px, *s.gy, B);
        s.be.global_avgpool_backward(2, 20, *s.gy, *s.pdx, B);
        s.be.batchnorm2d_forward(s.bn, *s.px, *s.pdx, B, true);
        s.be.batchnorm2d_backward(s.bn, *s.px, *s.pdx, *s.pdx, B);
        s.be.add(*s.px, *s.pdx, *s.pdx, B);
        s.be.add(*s.px, *s.pdx, *s.pdx, 0);  // an empty batch is no error
        s.be.batched_matmul(s.op, *s.ta, s.av(), *s.tb, s.bv(), *s.tc, s.cv());
        s.op.k = 0;  // an empty sum: the operands' views are not read
        s.be.batched_matmul(s.op, *s.ta, StridedMatrix{}, *s.tb, StridedMatrix{}, *s.tc, s.cv());
        s.op.outer_count = 0;  // no matrices: nothing is checked against the tensors
        s.be.batched_matmul(s.op, *s.ta, StridedMatrix{}, *s.tb, StridedMatrix{}, *s.tc, StridedMatrix{});
        s.be.softmax_forward(*s.sx, *s.sy, 8, true, nullptr);
        s.be.softmax_forward(*s.sx, *s.sy, 5, false, nullptr);
        s.be.softmax_backward(*s.sy, *s.sx, *s.sdx, 8, true, 0.5f);
        s.be.layernorm_forward(s.ln, *s.lx, *s.ly, 3, nullptr);
        s.be.layernorm_backward(s.ln, *s.lx, *s.ly, *s.ldx, 3);
        s.be.embedding_forward(*s.ew, s.ids.data(), *s.ey, 3);
        s.be.embedding_backward(s.ids.data(), *s.ey, *s.egw, 3, true);
        s.be.embedding_forward(*s.ew, nullptr, *s.ey, 0);
        QVERIFY(true);
    }

    // A backend without the transformer ops refuses every call with its unsupported() sentence
    // (the wrapper asks before anything runs); one that claims them but keeps Backend's default
    // *_impl refuses with the default sentence naming the op. The CUDA backend is the first kind
    // (its unsupported() names every op it lacks).
    void transformerOpsRefusedWithoutThem() {
        for (bool claims : {false, true}) {
            FakeBackend be(claims);
            std::vector<std::unique_ptr<Tensor>> keep;
            for (const auto& [op, call] : transformer_calls(be, keep)) {
                const std::string want =
                    claims ? "The fake backend has no " + std::string(backend_op_name(op)) +
                                 " yet; use the CPU backend (backend: cpu)."
                           : "The fake backend lacks " + std::string(backend_op_name(op)) + "; use another backend.";
                try {
                    call();
                    QFAIL(qPrintable(QString("%1 ran on the fake backend").arg(backend_op_name(op))));
                } catch (const Error& e) {
                    QCOMPARE(std::string(e.what()), want);
                }
            }
            for (BackendOp op : transformer_ops) QCOMPARE(be.supports(op, Format::fp32), claims);
        }
        // The same calls run on the CPU backend.
        CpuBackend cpu;
        std::vector<std::unique_ptr<Tensor>> keep;
        for (const auto& [op, call] : transformer_calls(cpu, keep)) call();
    }
};

QTEST_APPLESS_MAIN(TestBackendChecks)
#include "test_backend_checks.moc"
