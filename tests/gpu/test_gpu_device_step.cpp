// The CUDA backend's asynchronous step (cuda_device_step.cpp), the part that keeps a step on the
// device (docs/cuda.md): GradScaler's update as a kernel (bit-identical to the host LossScaler),
// the optimizers skipping on the device's found_inf, and a step captured as a CUDA graph, at the
// moment GraphPolicy says, replayed with the same results as running it eagerly. Links the
// module's code directly (mantissa_cuda_impl). Skips with the reason when there is no usable GPU.
#include <QtTest>

#include <cuda_runtime_api.h>

#include <bit>
#include <cmath>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/graph_policy.h"
#include "error.h"
#include "gpu_compare.h"
#include "backend/loss_scaler.h"

using namespace mantissa;
using namespace mantissa::cuda;
using namespace gpu_test;

namespace {

ScalerState read_state(CudaBackend& b, const ScalerState* st) {
    ScalerState s{};
    b.synchronize();
    if (cudaMemcpy(&s, st, sizeof s, cudaMemcpyDeviceToHost) != cudaSuccess) throw Error("reading the scaler failed");
    return s;
}

void set_found_inf(CudaBackend& b, ScalerState* st, int value) {
    b.synchronize();
    if (cudaMemcpy(&st->found_inf, &value, sizeof value, cudaMemcpyHostToDevice) != cudaSuccess)
        throw Error("writing found_inf failed");
}

// A tiny training step's tensors: two parameters (an fp32 master and fp16 stored weights) with
// their gradients, regenerated each step from fixed sources, so every step does the same work.
struct StepTensors {
    std::unique_ptr<Tensor> p1, p2, g1, g2, src1, src2, m1;
    unsigned long long* counts = nullptr;
    CheckResult* results = nullptr;
    int* first_bad = nullptr;
    ScalerState* scaler = nullptr;
    CudaBackend::CheckPlan plan;
    CudaBackend* b = nullptr;

    StepTensors(CudaBackend& backend, const LossScalingSpec& spec) : b(&backend) {
        const std::int64_t n = 100000;
        p1 = b->allocate({"p1", 1, n, Format::fp32, MemoryCategory::master_weights});
        p2 = b->allocate({"p2", 1, n, Format::fp16, MemoryCategory::parameters});
        g1 = b->allocate({"g1", 1, n, Format::fp32, MemoryCategory::gradients});
        g2 = b->allocate({"g2", 1, n, Format::fp16, MemoryCategory::gradients});
        src1 = b->allocate({"src1", 1, n, Format::fp32, MemoryCategory::workspace});
        src2 = b->allocate({"src2", 1, n, Format::fp32, MemoryCategory::workspace});
        m1 = b->allocate({"m1", 1, n, Format::fp32, MemoryCategory::optimizer_state});
        const auto v1 = random_values(n, 0.5f, 1), v2 = random_values(n, 0.5f, 2);
        b->upload(*p1, v1.data(), n);
        b->upload(*p2, v2.data(), n);
        const auto s1 = random_values(n, 300.0f, 3), s2 = random_values(n, 300.0f, 4);
        b->upload(*src1, s1.data(), n);
        b->upload(*src2, s2.data(), n);
        counts = static_cast<unsigned long long*>(b->device_buffer(4 * sizeof(unsigned long long), "counts"));
        results = static_cast<CheckResult*>(b->device_buffer(2 * sizeof(CheckResult), "results"));
        first_bad = static_cast<int*>(b->device_buffer(sizeof(int), "first_bad"));
        scaler = b->create_scaler_state(spec);
        plan = b->prepare_check({g1.get(), g2.get()}, {true, true});
    }
    ~StepTensors() {
        for (void* p : {static_cast<void*>(counts), static_cast<void*>(results), static_cast<void*>(first_bad),
                        static_cast<void*>(scaler), static_cast<void*>(plan.chunks)})
            b->release_buffer(p);
    }
    // Launches one step; nothing waits.
    void step(const LossScalingSpec& spec, bool first) {
        b->cast(*src1, *g1);
        b->cast(*src2, *g2);
        b->unscale_and_check_async(plan, scaler, results, first_bad);
        SgdParams sp;
        sp.lr = 0.01;
        sp.momentum = 0.9;
        sp.first_step = first;
        b->sgd_step_async({p1.get(), g1.get(), m1.get(), nullptr}, sp, scaler, counts);
        sp.momentum = 0;
        b->sgd_step_async({p2.get(), g2.get(), nullptr, nullptr}, sp, scaler, counts + 2);
        b->update_loss_scale_async(scaler, spec);
    }
};

std::vector<std::uint32_t> bits_of(CudaBackend& b, const Tensor& t) {
    const std::vector<float> v = read(b, t);
    std::vector<std::uint32_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = std::bit_cast<std::uint32_t>(v[i]);
    return out;
}

}  // namespace

class TestGpuDeviceStep : public QObject {
    Q_OBJECT
    std::unique_ptr<CudaBackend> m_gpu;
    std::string m_reason;

#define REQUIRE_GPU() GPU_TEST_REQUIRE(m_gpu, m_reason)

private slots:
    void initTestCase() {
        try {
            m_gpu = std::make_unique<CudaBackend>(0);
        } catch (const Error& e) {
            m_reason = e.what();
        }
        if (!m_gpu) QSKIP(qPrintable(gpu_test::suite_skipped(m_reason)));
    }
    void cleanupTestCase() {
        m_gpu.reset();
    }

    void loss_scale_update_matches_the_host_data() {
        QTest::addColumn<int>("mode");
        QTest::addColumn<double>("maxScale");
        QTest::newRow("dynamic") << int(LossScalingMode::dynamic) << 0.0;
        QTest::newRow("dynamic, max 2^17") << int(LossScalingMode::dynamic) << 131072.0;
        QTest::newRow("static") << int(LossScalingMode::fixed) << 0.0;
        QTest::newRow("off") << int(LossScalingMode::off) << 0.0;
    }
    void loss_scale_update_matches_the_host() {
        REQUIRE_GPU();
        QFETCH(int, mode);
        QFETCH(double, maxScale);
        LossScalingSpec spec;
        spec.mode = static_cast<LossScalingMode>(mode);
        spec.growth_interval = 3;
        spec.backoff_factor = 0.3;  // not a power of two: the double product is rounded to FP32
        if (maxScale > 0) spec.max_scale = maxScale;
        LossScaler host(spec);
        ScalerState* st = m_gpu->create_scaler_state(spec);
        const int pattern[] = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
        for (int found : pattern) {
            set_found_inf(*m_gpu, st, found);
            m_gpu->update_loss_scale_async(st, spec);
            const LossScaler::Update u = host.update(found != 0);
            const ScalerState s = read_state(*m_gpu, st);
            QCOMPARE(std::bit_cast<std::uint32_t>(s.scale), std::bit_cast<std::uint32_t>(host.scale()));
            QCOMPARE(std::bit_cast<std::uint32_t>(s.inv_scale), std::bit_cast<std::uint32_t>(host.inv_scale()));
            QCOMPARE(s.growth_tracker, static_cast<long long>(host.growth_tracker()));
            QCOMPARE(s.skipped != 0, u.skipped);
            QCOMPARE(s.found_inf, 0);  // consumed
        }
        m_gpu->release_buffer(st);
    }

    void skip_stays_on_the_device() {
        REQUIRE_GPU();
        LossScalingSpec spec;
        spec.init_scale = 1024;
        StepTensors t(*m_gpu, spec);
        const auto p1 = bits_of(*m_gpu, *t.p1), p2 = bits_of(*m_gpu, *t.p2);
        // An inf in the fp16 gradient: the check finds it, both optimizers skip, the scale backs off.
        m_gpu->cast(*t.src1, *t.g1);
        m_gpu->cast(*t.src2, *t.g2);
        m_gpu->poke(*t.g2, 123, INFINITY);
        m_gpu->unscale_and_check_async(t.plan, t.scaler, t.results, t.first_bad);
        SgdParams sp;
        sp.lr = 0.01;
        m_gpu->sgd_step_async({t.p1.get(), t.g1.get(), nullptr, nullptr}, sp, t.scaler, t.counts);
        m_gpu->sgd_step_async({t.p2.get(), t.g2.get(), nullptr, nullptr}, sp, t.scaler, t.counts + 2);
        QCOMPARE(read_state(*m_gpu, t.scaler).found_inf, 1);
        m_gpu->update_loss_scale_async(t.scaler, spec);
        const ScalerState s = read_state(*m_gpu, t.scaler);
        QCOMPARE(s.skipped, 1);
        QCOMPARE(s.scale, 512.0f);
        QVERIFY(bits_of(*m_gpu, *t.p1) == p1);
        QVERIFY(bits_of(*m_gpu, *t.p2) == p2);
        int first = -1;
        QCOMPARE(cudaMemcpy(&first, t.first_bad, sizeof first, cudaMemcpyDeviceToHost), cudaSuccess);
        QCOMPARE(first, 1);
        // Without the inf the same step updates, exactly as the synchronous path does.
        auto twin_p = m_gpu->allocate({"twin", 1, t.p2->numel(), Format::fp16, MemoryCategory::parameters});
        auto twin_g = m_gpu->allocate({"twin_g", 1, t.p2->numel(), Format::fp16, MemoryCategory::gradients});
        m_gpu->cast(*t.p2, *twin_p);
        m_gpu->cast(*t.src2, *twin_g);
        m_gpu->cast(*t.src1, *t.g1);
        m_gpu->cast(*t.src2, *t.g2);
        m_gpu->unscale_and_check_async(t.plan, t.scaler, t.results, t.first_bad);
        m_gpu->sgd_step_async({t.p2.get(), t.g2.get(), nullptr, nullptr}, sp, t.scaler, t.counts + 2);
        m_gpu->unscale_and_check({twin_g.get()}, 1.0f / 512.0f, {false}, nullptr);
        m_gpu->sgd_step({twin_p.get(), twin_g.get(), nullptr, nullptr}, sp);
        QVERIFY(bits_of(*m_gpu, *t.p2) == bits_of(*m_gpu, *twin_p));
        QVERIFY(bits_of(*m_gpu, *t.p2) != p2);
    }

    void captured_graph_replays_the_step() {
        REQUIRE_GPU();
        LossScalingSpec spec;
        spec.init_scale = 256;
        spec.growth_interval = 4;
        StepTensors eager(*m_gpu, spec), graphed(*m_gpu, spec);
        GraphPolicy policy(3);
        cudaGraphExec_t exec = nullptr;
        const int steps = 12;
        for (int i = 0; i < steps; ++i) {
            const bool first = i == 0;
            eager.step(spec, first);
            // The fingerprint: what the launches bake in (the first step's momentum flag differs).
            const std::uint64_t fp = Fingerprint().add(first).add(eager.p1.get()).value();
            const GraphPolicy::Action a = policy.next(fp);
            if (a == GraphPolicy::Action::eager) {
                graphed.step(spec, first);
            } else if (a == GraphPolicy::Action::capture) {
                cudaGraph_t graph = nullptr;
                QCOMPARE(cudaStreamBeginCapture(m_gpu->stream(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
                graphed.step(spec, first);
                QCOMPARE(cudaStreamEndCapture(m_gpu->stream(), &graph), cudaSuccess);
                QCOMPARE(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
                cudaGraphDestroy(graph);
                policy.captured(true);
                QCOMPARE(cudaGraphLaunch(exec, m_gpu->stream()), cudaSuccess);
            } else {
                QCOMPARE(cudaGraphLaunch(exec, m_gpu->stream()), cudaSuccess);
            }
        }
        m_gpu->synchronize();
        QCOMPARE(policy.captures(), 1);
        QCOMPARE(policy.replays(), std::int64_t{steps - 4});  // eager, eager (first flag), eager, capture
        if (exec) cudaGraphExecDestroy(exec);
        QVERIFY(bits_of(*m_gpu, *graphed.p1) == bits_of(*m_gpu, *eager.p1));
        QVERIFY(bits_of(*m_gpu, *graphed.p2) == bits_of(*m_gpu, *eager.p2));
        QVERIFY(bits_of(*m_gpu, *graphed.m1) == bits_of(*m_gpu, *eager.m1));
        const ScalerState a = read_state(*m_gpu, eager.scaler), b = read_state(*m_gpu, graphed.scaler);
        QCOMPARE(b.scale, a.scale);
        QCOMPARE(b.growth_tracker, a.growth_tracker);
        QCOMPARE(a.scale, 256.0f * 8.0f);  // grew every 4 steps: 12 steps, 3 growths
    }
};

QTEST_GUILESS_MAIN(TestGpuDeviceStep)
#include "test_gpu_device_step.moc"
