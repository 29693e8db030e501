// Backend's checked wrappers (backend_checks.cpp) and supports(): what the CPU backend runs, in
// which formats, and the one sentence it gives for the rest; every layer op refusing a wrong
// call with a sentence that names what was wrong before anything is written (linear's checks,
// once shared by the CPU and CUDA copies, now in one place: the FP8 declarations the CUDA copy
// checked apply to the CPU too).
#include <QtTest>

#include <algorithm>
#include <cctype>
#include <functional>
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

constexpr BackendOp all_ops[] = {BackendOp::linear,         BackendOp::conv2d,      BackendOp::maxpool2d,
                                 BackendOp::avgpool2d,      BackendOp::global_avgpool, BackendOp::batchnorm2d,
                                 BackendOp::add,            BackendOp::activation};

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
    std::unique_ptr<Fp8State> fp8;
    LinearTensors lt;
    ConvTensors ct;
    Pool2dGeometry pg;
    BatchNormTensors bn;
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
    }
};

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
    }
    void wrappersRefuseWrongCalls() {
        QFETCH(Case, call);
        QFETCH(QString, needle);
        World s;
        // Every output of every op starts at 3: a refused call must leave it so.
        const std::vector<Tensor*> outputs = {s.y.get(), s.dx.get(), s.gw.get(), s.cy.get(), s.cdx.get(), s.cgw.get(),
                                              s.py.get(), s.pdx.get(), s.gy.get(), s.dy.get()};
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
        QVERIFY(true);
    }
};

QTEST_APPLESS_MAIN(TestBackendChecks)
#include "test_backend_checks.moc"
