// The CPU backend's shortcuts that must not change a result (the emulation's speed, docs/benchmarks.md):
// - an FP8 layer's quantised weights written by the optimizer with the scale the next forward
//   uses (CpuFp8WeightCopy): training with the shortcut gives, step by step, the same outputs,
//   gradients and amax histories bit for bit as training where every forward quantises afresh,
//   and after an optimizer step the copy already holds saturate_e4m3(w · next scale);
// - the underflow count's bit-mask test over many rows (more than one 64-row word, ragged
//   sizes) agrees with the reference product, and the vectorised reference count with a plain
//   loop;
// - the bf16 copy of A kept for a next product that promises the same A (a linear layer's dy, in
//   its dgrad and then its wgrad): the reused copy gives the products a fresh copy gives, and
//   without the promise, or after a product whose A was not copied, A is copied again;
// - every CPU array placed 16 bytes past a 64-byte boundary (cpu_buffer.h: oneDNN's fast case for
//   4-KiB rows), whatever its size and however it grows, the large ones asking for huge pages;
// - a tensor starts as zeros nobody wrote: a large one's pages are not even in memory until a
//   step writes them, and storage freed and taken again starts as zeros too.
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "backend_test_util.h"
#include "huge_page_advice.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_flush_count.h"
#include "backend/cpu/cpu_matmul.h"
#include "numeric/convert.h"

using namespace mantissa;
using backend_test::read;
using backend_test::random_values;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One FP8 linear layer with its tensors, on its own backend.
struct Fp8Layer {
    static constexpr int batch = 5, in = 70, out = 33;  // 2310 weights: three optimizer blocks
    CpuBackend be;
    backend_test::Fp8Linear layer{be, batch, in, out, 3};
    std::unique_ptr<Tensor> x, y, dy, dx, m1, m2;

    Fp8Layer() {
        auto mk = [&](std::int64_t r, std::int64_t c, Format f) {
            return be.allocate(TensorDesc{"t", r, c, f, MemoryCategory::workspace});
        };
        x = mk(batch, in, Format::fp32), y = mk(batch, out, Format::bf16), dy = mk(batch, out, Format::bf16);
        dx = mk(batch, in, Format::bf16);
        m1 = mk(out, in, Format::fp32), m2 = mk(out, in, Format::fp32);
        const auto wv = random_values(static_cast<std::size_t>(out * in), 0.2f, 1);
        be.upload(*layer.w, wv.data(), out * in);
    }

    // One training step; `fresh`: the weight is rewritten first (same values), so the forward
    // cannot use the optimizer's copy and quantises.
    void step(int n, bool fresh, bool sgd) {
        if (fresh) {
            const auto wv = read(be, *layer.w);
            be.upload(*layer.w, wv.data(), out * in);
        }
        const auto xv = random_values(static_cast<std::size_t>(batch * in), 1.0f, 100 + n);
        be.upload(*x, xv.data(), batch * in);
        be.linear_forward(layer.t, *x, *y, batch, true);
        const auto dyv = random_values(static_cast<std::size_t>(batch * out), 1e-2f, 200 + n);
        be.upload(*dy, dyv.data(), batch * out);
        be.linear_backward(layer.t, *x, *dy, dx.get(), batch, nullptr);
        if (sgd) {
            SgdParams p;
            p.lr = 0.05;
            p.momentum = 0.9;
            p.first_step = n == 0;
            be.sgd_step(OptimizerTensors{layer.w.get(), layer.gw.get(), m1.get(), nullptr}, p);
        } else {
            AdamWParams p;
            p.lr = 1e-2;
            p.weight_decay = 0.01;
            p.step = n + 1;
            be.adamw_step(OptimizerTensors{layer.w.get(), layer.gw.get(), m1.get(), m2.get()}, p);
        }
        be.update_fp8_scales(*layer.state);
    }
};

}  // namespace

class TestCpuSpeedPaths : public QObject {
    Q_OBJECT
private slots:
    void optimizerQuantisedWeightsChangeNothing_data() {
        QTest::addColumn<bool>("sgd");
        QTest::newRow("adamw") << false;
        QTest::newRow("sgd") << true;
    }
    void optimizerQuantisedWeightsChangeNothing() {
        QFETCH(bool, sgd);
        Fp8Layer shortcut, fresh;
        for (int n = 0; n < 6; ++n) {
            shortcut.step(n, false, sgd);
            fresh.step(n, true, sgd);
            QVERIFY2(same_bits(read(shortcut.be, *shortcut.y), read(fresh.be, *fresh.y)), qPrintable(QString("y, step %1").arg(n)));
            QVERIFY(same_bits(read(shortcut.be, *shortcut.dx), read(fresh.be, *fresh.dx)));
            QVERIFY(same_bits(read(shortcut.be, *shortcut.layer.gw), read(fresh.be, *fresh.layer.gw)));
            QVERIFY(same_bits(read(shortcut.be, *shortcut.layer.w), read(fresh.be, *fresh.layer.w)));
            for (Fp8Role r : {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output})
                QCOMPARE(shortcut.layer.state->snapshot(r).amax_history, fresh.layer.state->snapshot(r).amax_history);
            // The copy the optimizer wrote is already the next forward's quantised weight.
            const float scale = shortcut.layer.state->snapshot(Fp8Role::weight).scale;
            const auto wv = read(shortcut.be, *shortcut.layer.w);
            const auto qv = read(shortcut.be, *shortcut.layer.wq);
            for (std::size_t i = 0; i < wv.size(); ++i)
                QCOMPARE(std::bit_cast<std::uint32_t>(qv[i]),
                         std::bit_cast<std::uint32_t>(round_to(Format::fp8_e4m3, wv[i] * scale, Overflow::saturate)));
        }
    }

    // Batches over 64 rows take several mask words; ragged widths take the scalar tails.
    void maskTestMatchesTheReferenceOverManyRows_data() {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("out");
        QTest::addColumn<int>("in");
        QTest::newRow("130 rows") << 130 << 21 << 75;
        QTest::newRow("256 rows") << 256 << 16 << 64;
        QTest::newRow("65 rows") << 65 << 9 << 13;
    }
    void bf16CopyOfAServesOnlyWhenPromised() {
        if (!CpuMatmul::bf16_available()) QSKIP("oneDNN has no bf16 matmul on this CPU: no bf16 copies to keep");
        CpuMatmul mm;
        mm.set_threads(1);
        mm.set_bf16_enabled(true);
        constexpr std::int64_t m = 24, n = 40, k = 56;
        std::vector<float> a = random_values(static_cast<std::size_t>(m * k), 1.0f, 3);
        std::vector<float> b = random_values(static_cast<std::size_t>(k * n), 1.0f, 4);
        std::vector<float> b2 = random_values(static_cast<std::size_t>(m * n), 1.0f, 5);
        round_array(Format::bf16, a.data(), a.size());
        round_array(Format::bf16, b.data(), b.size());
        round_array(Format::bf16, b2.data(), b2.size());
        // The references: each product from fresh copies, on a matmul of its own.
        auto fresh = [&](const std::vector<float>& x, bool tx, const std::vector<float>& y, std::int64_t rows,
                         std::int64_t cols, std::int64_t inner) {
            CpuMatmul other;
            other.set_threads(1);
            other.set_bf16_enabled(mm.bf16_enabled());
            std::vector<float> c(static_cast<std::size_t>(rows * cols));
            other.multiply(x.data(), tx, y.data(), false, c.data(), rows, cols, inner, true);
            return c;
        };
        std::vector<float> c(static_cast<std::size_t>(m * n)), w(static_cast<std::size_t>(k * n));
        // dgrad-like, then wgrad-like on the same A transposed, promised unchanged.
        mm.multiply(a.data(), false, b.data(), false, c.data(), m, n, k, true);
        QVERIFY(same_bits(c, fresh(a, false, b, m, n, k)));
        mm.multiply(a.data(), true, b2.data(), false, w.data(), k, n, m, true, true);
        QVERIFY(same_bits(w, fresh(a, true, b2, k, n, m)));
        // A changed in place: without the promise it is copied again.
        for (float& v : a) v = -v;
        mm.multiply(a.data(), true, b2.data(), false, w.data(), k, n, m, true, false);
        QVERIFY(same_bits(w, fresh(a, true, b2, k, n, m)));
        // After an FP32 product (nothing copied), a promise alone does not bring back an old copy.
        mm.multiply(a.data(), false, b.data(), false, c.data(), m, n, k, false);
        for (float& v : a) v = -v;
        mm.multiply(a.data(), true, b2.data(), false, w.data(), k, n, m, true, true);
        QVERIFY(same_bits(w, fresh(a, true, b2, k, n, m)));
    }

    void buffersArePlacedForOneDnn() {
        auto offset = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64; };
        CpuBackend be;
        for (std::int64_t cols : {1, 3, 1024, 4096, 300000}) {
            auto t = be.allocate(TensorDesc{"t", 1, cols, Format::fp32, MemoryCategory::parameters});
            QCOMPARE(offset(static_cast<CpuTensor&>(*t).data()), std::uintptr_t{16});
        }
        CpuBuffer grown;
        for (std::size_t n : {1u, 17u, 1000u, 70000u}) {
            grown.resize(n);
            QCOMPARE(offset(grown.data()), std::uintptr_t{16});
        }
    }

    // A buffer of 2 MB or more asks for huge pages before it is written (cpu_buffer.h): the first
    // write faults it in 2 MB at a time. Its placement stays oneDNN's.
    // The pages of [p, p + bytes) the kernel holds in memory (mincore).
    static std::size_t residentPages(const void* p, std::size_t bytes) {
        const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
        const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(p) & ~(page - 1);
        const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(p) + bytes;
        std::vector<unsigned char> in((end - first + page - 1) / page);
        if (mincore(reinterpret_cast<void*>(first), end - first, in.data()) != 0) return SIZE_MAX;
        return static_cast<std::size_t>(std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
    }

    void largeBuffersAskForHugePages() {
        if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage"))
            QSKIP("This kernel has no transparent huge pages.");
        CpuBackend be;
        auto t = be.allocate(TensorDesc{"scores", 1024, 2048, Format::fp32, MemoryCategory::activations});  // 8 MB
        const float* data = static_cast<CpuTensor&>(*t).data();
        QCOMPARE(reinterpret_cast<std::uintptr_t>(data) % 64, std::uintptr_t{16});
        QString flags;
        QVERIFY2(test::huge_page_advice_at(test::first_huge_page_in(data), &flags), qPrintable("VmFlags: " + flags));
        CpuBuffer grown(std::size_t{3} << 20);  // 12 MB, grown once
        QVERIFY2(test::huge_page_advice_at(test::first_huge_page_in(grown.data()), &flags), qPrintable("VmFlags: " + flags));
    }

    // Tensors start as zeros, small ones (calloc) and large ones (mapped): a large one has no page
    // in memory before it is written, so building a model writes nothing (cpu_buffer.h). Storage
    // written, freed and taken again is zeros again; a buffer built with a value holds it.
    void tensorsStartAsZerosNobodyWrote() {
        CpuBackend be;
        for (int round = 0; round < 2; ++round) {
            for (std::int64_t cols : {7, 1000, 300000, 2100000}) {  // 28 B to 8.4 MB
                auto t = be.allocate(TensorDesc{"t", 1, cols, Format::fp32, MemoryCategory::activations});
                float* data = static_cast<CpuTensor&>(*t).data();
                QCOMPARE(reinterpret_cast<std::uintptr_t>(data) % 64, std::uintptr_t{16});
                const auto bytes = static_cast<std::size_t>(cols) * sizeof(float);
                if (bytes >= (std::size_t{1} << 20)) QCOMPARE(residentPages(data, bytes), std::size_t{0});
                for (std::int64_t i = 0; i < cols; ++i)
                    if (std::bit_cast<std::uint32_t>(data[i]) != 0) QFAIL(qPrintable(QString("value %1 of %2").arg(i).arg(cols)));
                std::fill(data, data + cols, 3.0f);  // the next round's storage may be this one's
                if (bytes >= (std::size_t{1} << 20)) QVERIFY(residentPages(data, bytes) > 0);
            }
        }
        const ZeroedCpuBuffer filled(std::size_t{300000}, 1.5f);
        QVERIFY(std::all_of(filled.begin(), filled.end(), [](float v) { return v == 1.5f; }));
    }

    void maskTestMatchesTheReferenceOverManyRows() {
        QFETCH(int, batch);
        QFETCH(int, out);
        QFETCH(int, in);
        CpuMatmul mm;
        mm.set_threads(1);
        cpu_detail::FlushCountScratch scratch;
        int decided = 0;
        for (unsigned seed = 1; seed <= 4; ++seed) {
            std::mt19937 rng(seed);
            std::uniform_real_distribution<float> u(0.0f, 1.0f);
            std::vector<float> dy(static_cast<std::size_t>(batch * out)), x(static_cast<std::size_t>(batch * in));
            // Sparse rows: most products are zero, a few gradients flush in fp16.
            for (float& v : dy) v = u(rng) < 0.7f ? 0.0f : (u(rng) - 0.5f) * (u(rng) < 0.5f ? 1e-9f : 1e-2f);
            for (float& v : x) v = u(rng) < 0.8f ? 0.0f : u(rng);
            std::vector<float> dy_op(dy.size()), gw(static_cast<std::size_t>(out * in)), ref(gw.size());
            round_array(Format::fp16, dy.data(), dy_op.data(), dy.size());
            mm.multiply(dy_op.data(), true, x.data(), false, gw.data(), out, in, batch);
            round_array(Format::fp16, gw.data(), gw.size());
            mm.multiply(dy.data(), true, x.data(), false, ref.data(), out, in, batch);
            std::int64_t expected = 0;
            for (std::size_t i = 0; i < gw.size(); ++i)
                expected += (std::bit_cast<std::uint32_t>(ref[i]) & 0x7fffffffu) != 0 &&
                            (std::bit_cast<std::uint32_t>(gw[i]) & 0x7fffffffu) == 0;
            QCOMPARE(cpu_detail::count_flushed_against_reference(ref.data(), gw.data(),
                                                                 static_cast<std::int64_t>(gw.size())),
                     expected);
            const std::int64_t got = cpu_detail::count_flushed_weight_gradient(dy.data(), x.data(), gw.data(),
                                                                               batch, out, in, scratch);
            if (got < 0) continue;
            ++decided;
            QCOMPARE(got, expected);
        }
        QVERIFY(decided > 0);
    }
};

QTEST_GUILESS_MAIN(TestCpuSpeedPaths)
#include "test_cpu_speed_paths.moc"
