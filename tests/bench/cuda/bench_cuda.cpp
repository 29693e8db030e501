// bench_cuda: training throughput of the CUDA backend per precision, for MLPs of width W
// (W -> W -> W -> 16, ReLU, AdamW, softmax cross-entropy) at W = 256, 1024, 8192 and batch 256
// and 16384: samples/s, achieved TFLOP/s (6·B·Σ in·out per step, less the first layer's input
// gradient), peak memory; and the cost of the loss-scaling checks and the telemetry (on vs off,
// same run). Two ways to drive the same kernels:
//   engine  the Backend interface as the Trainer calls it (the loss, the check and the optimizer
//           counts come back to the host every step);
//   graph   the asynchronous step (no host wait inside the step) captured as a CUDA graph once
//           GraphPolicy sees it stable, then replayed.
// The input batch stays on the device (the data loader is not measured). Prints a table (and
// CSV rows to a file with --csv FILE); never a test. Options: --widths 256,1024 --batches 256
// --precisions fp16,bf16 --seconds 0.5 --csv FILE. Without a usable GPU it says why, exits 0.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/graph_policy.h"
#include "error.h"
#include "backend/loss_scaler.h"
#include "train/trainer.h"

using namespace mantissa;
using namespace mantissa::cuda;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int classes = 16;

Format activation_format(Format compute) {
    switch (compute) {
        case Format::fp16: return Format::fp16;
        case Format::bf16:
        case Format::fp8_e4m3: return Format::bf16;
        default: return Format::fp32;
    }
}

// Dense bf16 tensor-core peaks (TFLOP/s, FP32 accumulation) of common GPUs, for "% of peak".
double bf16_peak_tflops(const std::string& name) {
    const std::pair<const char*, double> peaks[] = {
        {"H200", 989},     {"H100 SXM", 989},     {"H100 NVL", 835}, {"H100 PCIe", 756}, {"H100", 756},
        {"GH200", 989},    {"A100", 312},         {"A10", 125},      {"L40S", 362},      {"L4", 121},
        {"RTX 4090", 165}, {"RTX 6000 Ada", 364}, {"B200", 2250},    {"T4", 65}};
    for (const auto& [key, value] : peaks)
        if (name.find(key) != std::string::npos) return value;
    return 0;
}

struct Layer {
    std::int64_t in = 0, out = 0;
    std::unique_ptr<Tensor> w, wc, b, bc, gw, gb, saved, z, a, dz, dx, mw, vw, mb, vb;
    std::unique_ptr<Fp8State> fp8;
    LinearTensors tensors(Format compute) {
        LinearTensors l;
        l.compute = compute;
        l.weight = w.get();
        l.weight_compute = wc.get();
        l.bias = b.get();
        l.bias_compute = bc.get();
        l.grad_weight = gw.get();
        l.grad_bias = gb.get();
        l.saved_input = saved.get();
        l.fp8 = fp8.get();
        return l;
    }
};

// The MLP's tensors, declared as model/network.cpp declares them (FP32 masters, compute copies,
// gradients and activations in the activation format, FP32 AdamW state).
struct Mlp {
    CudaBackend& b;
    Format compute;
    std::int64_t batch, width;
    std::vector<Layer> layers;
    std::unique_ptr<Tensor> x;
    std::vector<std::int32_t> labels;
    std::int32_t* labels_dev = nullptr;
    float* row_loss = nullptr;
    std::int32_t* row_correct = nullptr;

    Mlp(CudaBackend& backend, Format c, std::int64_t bsz, std::int64_t w)
        : b(backend), compute(c), batch(bsz), width(w) {
        const Format act = activation_format(c);
        const bool fp8 = c == Format::fp8_e4m3;
        const std::int64_t dims[] = {w, w, w, classes};
        std::uint32_t seed = 1;
        auto random = [&](std::int64_t n, float scale) {
            std::vector<float> v(static_cast<std::size_t>(n));
            std::uint32_t s = seed++ * 2654435761u;
            for (auto& e : v) {
                s = s * 1664525u + 1013904223u;
                e = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 2.0f * scale;
            }
            return v;
        };
        auto make = [&](const std::string& name, std::int64_t r, std::int64_t cols, Format f, MemoryCategory cat) {
            return b.allocate(TensorDesc{name, r, cols, f, cat});
        };
        for (int i = 0; i < 3; ++i) {
            Layer l;
            l.in = dims[i];
            l.out = dims[i + 1];
            const std::string n = "fc" + std::to_string(i + 1);
            l.w = make(n + ".weight", l.out, l.in, Format::fp32, MemoryCategory::master_weights);
            const auto wv = random(l.out * l.in, 1.0f / std::sqrt(static_cast<float>(l.in)));
            b.upload(*l.w, wv.data(), l.out * l.in);
            l.b = make(n + ".bias", 1, l.out, Format::fp32, MemoryCategory::master_weights);
            if (c != Format::fp32 && c != Format::tf32)
                l.wc = make(n + ".weight_compute", l.out, l.in, fp8 ? Format::fp8_e4m3 : c, MemoryCategory::parameters);
            if (act != Format::fp32) l.bc = make(n + ".bias_compute", 1, l.out, act, MemoryCategory::parameters);
            l.gw = make(n + ".grad_weight", l.out, l.in, act, MemoryCategory::gradients);
            l.gb = make(n + ".grad_bias", 1, l.out, act, MemoryCategory::gradients);
            // The input kept for backward in the operand format, unless it already is in it.
            const Format input_format = i == 0 ? Format::fp32 : act;
            if (fp8 || (c != Format::fp32 && input_format != c))
                l.saved =
                    make(n + ".saved_input", batch, l.in, fp8 ? Format::fp8_e4m3 : c, MemoryCategory::activations);
            l.z = make(n + ".z", batch, l.out, act, MemoryCategory::activations);
            if (i < 2) l.a = make(n + ".a", batch, l.out, act, MemoryCategory::activations);
            l.dz = make(n + ".dz", batch, l.out, act, MemoryCategory::workspace);
            if (i > 0) l.dx = make(n + ".dx", batch, l.in, act, MemoryCategory::workspace);
            l.mw = make(n + ".exp_avg", l.out, l.in, Format::fp32, MemoryCategory::optimizer_state);
            l.vw = make(n + ".exp_avg_sq", l.out, l.in, Format::fp32, MemoryCategory::optimizer_state);
            l.mb = make(n + ".bias.exp_avg", 1, l.out, Format::fp32, MemoryCategory::optimizer_state);
            l.vb = make(n + ".bias.exp_avg_sq", 1, l.out, Format::fp32, MemoryCategory::optimizer_state);
            if (fp8) l.fp8 = b.create_fp8_state(Fp8Recipe{});
            layers.push_back(std::move(l));
        }
        x = make("x", batch, w, Format::fp32, MemoryCategory::activations);
        const auto xv = random(batch * w, 1.0f);
        b.upload(*x, xv.data(), batch * w);
        labels.resize(static_cast<std::size_t>(batch));
        for (std::int64_t r = 0; r < batch; ++r)
            labels[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(r % classes);
        labels_dev = static_cast<std::int32_t*>(b.device_buffer(labels.size() * 4, "labels"));
        row_loss = static_cast<float*>(b.device_buffer(labels.size() * 4, "row losses"));
        row_correct = static_cast<std::int32_t*>(b.device_buffer(labels.size() * 4, "row correct"));
        b.synchronize();
        if (cudaMemcpy(labels_dev, labels.data(), labels.size() * 4, cudaMemcpyHostToDevice) != cudaSuccess)
            throw Error("uploading the labels failed");
    }
    ~Mlp() {
        b.synchronize();
        for (void* p : {static_cast<void*>(labels_dev), static_cast<void*>(row_loss), static_cast<void*>(row_correct)})
            b.release_buffer(p);
    }
    double flops_per_step() const {
        double f = 0;
        for (std::size_t i = 0; i < layers.size(); ++i) {
            const double mnk = static_cast<double>(batch) * static_cast<double>(layers[i].in * layers[i].out);
            f += 2 * mnk * (i == 0 ? 2 : 3);  // forward, weight gradient, input gradient (not the first layer)
        }
        return f;
    }
    std::vector<Tensor*> grads() {
        std::vector<Tensor*> g;
        for (auto& l : layers) {
            g.push_back(l.gw.get());
            g.push_back(l.gb.get());
        }
        return g;
    }
    void forward() {
        const Tensor* in = x.get();
        for (auto& l : layers) {
            LinearTensors t = l.tensors(compute);
            b.linear_forward(t, *in, *l.z, batch, true);
            if (l.a) {
                b.activation_forward(Activation::relu, *l.z, *l.a, batch);
                in = l.a.get();
            }
        }
    }
    // The last layer's dz already holds the loss gradient.
    void backward(std::vector<RoundingStats>* stats) {
        for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i) {
            Layer& l = layers[static_cast<std::size_t>(i)];
            const Tensor& in = i == 0 ? *x : *layers[static_cast<std::size_t>(i - 1)].a;
            LinearTensors t = l.tensors(compute);
            b.linear_backward(t, in, *l.dz, l.dx.get(), batch,
                              stats ? &(*stats)[static_cast<std::size_t>(i)] : nullptr);
            if (i > 0) {
                Layer& prev = layers[static_cast<std::size_t>(i - 1)];
                b.activation_backward(Activation::relu, *prev.z, *prev.a, *l.dx, *prev.dz, batch);
            }
        }
    }
};

struct Variant {
    const char* name;
    bool checks;     // loss scaling: unscale + inf/NaN check + scale update
    bool telemetry;  // per-layer statistics: rounding counts, amax, exponent histograms
};

// One step through the Backend interface, as the Trainer drives it (forward done by the caller).
void engine_step(Mlp& m, LossScaler& scaler, const Variant& v, std::int64_t step) {
    CudaBackend& b = m.b;
    const float scale = v.checks ? scaler.scale() : 1.0f;
    b.softmax_cross_entropy(*m.layers.back().z, m.labels.data(), m.batch, scale, m.layers.back().dz.get());
    std::vector<RoundingStats> stats(m.layers.size());
    m.backward(v.telemetry ? &stats : nullptr);
    bool skip = false;
    const std::vector<Tensor*> grads = m.grads();
    std::vector<GradientSummary> summaries;
    if (v.checks || v.telemetry) {
        const UnscaleResult r =
            b.unscale_and_check(grads, v.checks ? scaler.inv_scale() : 1.0f,
                                std::vector<bool>(grads.size(), v.telemetry), v.telemetry ? &summaries : nullptr);
        skip = v.checks && r.found_nonfinite;
    }
    if (!skip) {
        AdamWParams p;
        p.lr = 1e-4;
        p.step = step + 1;
        for (auto& l : m.layers) {
            b.adamw_step({l.w.get(), l.gw.get(), l.mw.get(), l.vw.get()}, p);
            b.adamw_step({l.b.get(), l.gb.get(), l.mb.get(), l.vb.get()}, p);
        }
    }
    if (v.checks) scaler.update(skip);
    for (auto& l : m.layers)
        if (l.fp8) b.update_fp8_scales(*l.fp8);
}

// The asynchronous step's device state.
struct DeviceStep {
    CudaBackend& b;
    LossScalingSpec spec;
    ScalerState* scaler = nullptr;
    CudaBackend::CheckPlan plan;
    CheckResult* results = nullptr;
    int* first_bad = nullptr;
    AdamWScalars* scalars = nullptr;
    long long* step = nullptr;
    unsigned long long* counts = nullptr;
    void* host = nullptr;  // pinned: telemetry copied out every step, read later
    std::size_t host_bytes = 0;

    DeviceStep(CudaBackend& backend, Mlp& m, bool telemetry) : b(backend) {
        scaler = b.create_scaler_state(spec);
        const auto grads = m.grads();
        plan = b.prepare_check(grads, std::vector<bool>(grads.size(), telemetry));
        results = static_cast<CheckResult*>(b.device_buffer(grads.size() * sizeof(CheckResult), "check results"));
        first_bad = static_cast<int*>(b.device_buffer(sizeof(int), "first bad"));
        scalars = static_cast<AdamWScalars*>(b.device_buffer(sizeof(AdamWScalars), "adamw scalars"));
        step = static_cast<long long*>(b.device_buffer(sizeof(long long), "adamw step"));
        counts = static_cast<unsigned long long*>(b.device_buffer(2 * sizeof(unsigned long long), "update counts"));
        b.synchronize();
        if (cudaMemset(step, 0, sizeof(long long)) != cudaSuccess) throw Error("cudaMemset failed");
        host_bytes = grads.size() * sizeof(CheckResult) + static_cast<std::size_t>(m.batch) * 8 + sizeof(ScalerState);
        if (cudaHostAlloc(&host, host_bytes, cudaHostAllocDefault) != cudaSuccess) throw Error("cudaHostAlloc failed");
    }
    ~DeviceStep() {
        b.synchronize();
        for (void* p : {static_cast<void*>(scaler), static_cast<void*>(plan.chunks), static_cast<void*>(results),
                        static_cast<void*>(first_bad), static_cast<void*>(scalars), static_cast<void*>(step),
                        static_cast<void*>(counts)})
            b.release_buffer(p);
        cudaFreeHost(host);
    }
    void launch(Mlp& m, const Variant& v) {
        ScalerState* s = v.checks ? scaler : nullptr;
        m.forward();
        b.softmax_cross_entropy_async(*m.layers.back().z, m.labels_dev, m.batch, s, m.layers.back().dz.get(),
                                      m.row_loss, m.row_correct);
        m.backward(nullptr);
        if (v.checks || v.telemetry) b.unscale_and_check_async(plan, s, results, first_bad);
        launch_adamw_prepare(scalars, step, 1e-4, 0.9, 0.999, 1e-8, 0.0, s ? &s->found_inf : nullptr, b.stream());
        for (auto& l : m.layers) {
            b.adamw_step_async({l.w.get(), l.gw.get(), l.mw.get(), l.vw.get()}, scalars, s, counts);
            b.adamw_step_async({l.b.get(), l.gb.get(), l.mb.get(), l.vb.get()}, scalars, s, counts);
        }
        if (s) b.update_loss_scale_async(s, spec);
        for (auto& l : m.layers)
            if (l.fp8) b.update_fp8_scales(*l.fp8);
        // Telemetry leaves the device without the host waiting; it would be read a step later.
        auto* h = static_cast<unsigned char*>(host);
        const std::size_t rb = static_cast<std::size_t>(plan.tensors) * sizeof(CheckResult);
        const std::size_t lb = static_cast<std::size_t>(m.batch) * 4;
        if (v.telemetry) cudaMemcpyAsync(h, results, rb, cudaMemcpyDeviceToHost, b.stream());
        cudaMemcpyAsync(h + rb, m.row_loss, lb, cudaMemcpyDeviceToHost, b.stream());
        if (s) cudaMemcpyAsync(h + rb + 2 * lb, s, sizeof(ScalerState), cudaMemcpyDeviceToHost, b.stream());
    }
};

struct Result {
    double samples_per_s = 0, tflops = 0;
    int steps = 0;
};

template <typename Step>
Result time_steps(CudaBackend& b, Mlp& m, double seconds, Step&& step) {
    b.synchronize();
    const auto start = Clock::now();
    int n = 0;
    double elapsed = 0;
    while (n < 3 || (elapsed < seconds && n < 200)) {
        step(n);
        ++n;
        if (n % 4 == 0 || n < 4) {
            b.synchronize();
            elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        }
    }
    b.synchronize();
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    Result r;
    r.steps = n;
    r.samples_per_s = static_cast<double>(m.batch) * n / elapsed;
    r.tflops = m.flops_per_step() * n / elapsed / 1e12;
    return r;
}

Result run_engine(CudaBackend& b, Mlp& m, const Variant& v, double seconds) {
    LossScaler scaler(LossScalingSpec{});
    std::int64_t step = 0;
    for (int i = 0; i < 2; ++i) {  // warm-up: matmul plans, scratch buffers
        m.forward();
        engine_step(m, scaler, v, step++);
    }
    return time_steps(b, m, seconds, [&](int) {
        m.forward();
        engine_step(m, scaler, v, step++);
    });
}

Result run_graph(CudaBackend& b, Mlp& m, const Variant& v, double seconds, std::string& note) {
    DeviceStep ds(b, m, v.telemetry);
    GraphPolicy policy(2);
    cudaGraphExec_t exec = nullptr;
    const std::uint64_t fp =
        Fingerprint().add(m.batch).add(m.width).add(static_cast<int>(m.compute)).add(v.checks).add(v.telemetry).value();
    auto one = [&](int) {
        switch (policy.next(fp)) {
            case GraphPolicy::Action::eager: ds.launch(m, v); break;
            case GraphPolicy::Action::capture: {
                cudaGraph_t graph = nullptr;
                std::string why;
                bool ok = cudaStreamBeginCapture(b.stream(), cudaStreamCaptureModeRelaxed) == cudaSuccess;
                if (ok) {
                    try {
                        ds.launch(m, v);
                    } catch (const Error& e) {
                        why = e.what();
                        ok = false;
                    }
                    ok = cudaStreamEndCapture(b.stream(), &graph) == cudaSuccess && ok;
                }
                ok = ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
                if (graph) cudaGraphDestroy(graph);
                cudaGetLastError();
                policy.captured(ok, why.empty() ? "the capture failed" : why);
                if (ok)
                    cudaGraphLaunch(exec, b.stream());
                else
                    ds.launch(m, v);
                break;
            }
            case GraphPolicy::Action::replay: cudaGraphLaunch(exec, b.stream()); break;
        }
    };
    for (int i = 0; i < 4; ++i) one(i);  // eager, capture, replay, replay
    const Result r = time_steps(b, m, seconds, one);
    if (policy.disabled()) note = "no graph: " + policy.last_reason();
    if (exec) cudaGraphExecDestroy(exec);
    return r;
}

// The same MLP trained by the Trainer, as the application runs it: a dataset in memory (random
// inputs of the MLP's width, 10 classes), AdamW, dynamic loss scaling, statistics every step.
// pipelined: Trainer::advance through CudaStepPipeline (graphs once stable); otherwise the
// synchronous Backend calls (TrainerOptions::synchronous).
Result run_trainer(Format f, std::int64_t batch, std::int64_t width, double seconds, bool pipelined,
                   std::string& how) {
    Dataset data;
    data.name = "bench";
    data.features = static_cast<int>(width);
    data.shape = {width, 1, 1};
    data.classes = data.outputs = classes;
    data.train.rows = 4 * batch;
    data.train.x.resize(static_cast<std::size_t>(data.train.rows * width));
    data.train.y.resize(static_cast<std::size_t>(data.train.rows));
    std::uint32_t s = 12345;
    for (auto& v : data.train.x) {
        s = s * 1664525u + 1013904223u;
        v = static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
    }
    for (std::size_t r = 0; r < data.train.y.size(); ++r) data.train.y[r] = static_cast<std::int32_t>(r % classes);
    Experiment e;
    e.model.hidden = {static_cast<int>(width), static_cast<int>(width)};
    e.train.batch_size = batch;
    e.train.steps = 1000000;
    e.train.optimizer = OptimizerKind::adamw;
    e.train.lr = 1e-4;
    e.train.eval_every = 0;
    e.train.layer_stats_every = 1;
    e.precision.loss_scaling.mode = LossScalingMode::dynamic;
    e.precision.master_weights = true;
    const LayerPrecision layer = f == Format::fp32   ? LayerPrecision::fp32
                                 : f == Format::tf32 ? LayerPrecision::tf32
                                 : f == Format::fp16 ? LayerPrecision::fp16
                                 : f == Format::bf16 ? LayerPrecision::bf16
                                                     : LayerPrecision::fp8_e4m3;
    e.precision.autocast = f == Format::fp16 ? Autocast::fp16 : f == Format::fp32 || f == Format::tf32 ? Autocast::off
                                                                                                      : Autocast::bf16;
    for (const char* l : {"fc1", "fc2", "fc3"}) e.precision.layers[l] = layer;
    TrainerOptions options;
    options.synchronous = !pipelined;
    Trainer t(e, std::move(data), std::make_unique<CudaBackend>(0), options);
    for (int i = 0; i < 6; ++i) t.advance();  // warm-up: plans, scratch, the graphs' capture
    t.flush();
    const auto start = Clock::now();
    int n = 0;
    double elapsed = 0;
    while (n < 3 || (elapsed < seconds && n < 400)) {
        t.advance();
        ++n;
        elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    }
    t.flush();
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    Result r;
    r.steps = n;
    r.samples_per_s = static_cast<double>(batch) * n / elapsed;
    how = t.pipeline_description();
    return r;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

int usage() {
    std::fprintf(stderr,
                 "usage: bench_cuda [--widths LIST] [--batches LIST] [--precisions LIST] [--seconds S] "
                 "[--csv FILE]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::int64_t> widths = {256, 1024, 8192}, batches = {256, 16384};
    std::vector<Format> precisions = {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::fp8_e4m3};
    double seconds = 0.5;
    std::FILE* csv = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        const std::string next = argv[++i];
        if (a == "--widths") {
            widths.clear();
            for (auto& w : split(next)) widths.push_back(std::stoll(w));
        } else if (a == "--batches") {
            batches.clear();
            for (auto& w : split(next)) batches.push_back(std::stoll(w));
        } else if (a == "--precisions") {
            precisions.clear();
            for (auto& p : split(next)) {
                const auto f = parse_format(p);
                if (!f) {
                    std::fprintf(stderr, "bench_cuda: unknown format %s\n", p.c_str());
                    return 2;
                }
                precisions.push_back(*f);
            }
        } else if (a == "--seconds") {
            seconds = std::stod(next);
        } else if (a == "--csv") {
            csv = std::fopen(next.c_str(), "w");
            if (!csv) {
                std::fprintf(stderr, "bench_cuda: cannot write %s\n", next.c_str());
                return 2;
            }
        } else {
            return usage();
        }
    }

    std::unique_ptr<CudaBackend> backend;
    try {
        backend = std::make_unique<CudaBackend>(0);
    } catch (const Error& e) {
        std::printf("bench_cuda: no usable GPU: %s\n", e.what());
        if (csv) std::fclose(csv);
        return 0;
    }
    CudaBackend& b = *backend;
    const double peak = bf16_peak_tflops(b.device_name());
    std::printf("bench_cuda on %s; MLP W -> W -> W -> %d, ReLU, AdamW; %.2f s per measurement\n",
                b.device_name().c_str(), classes, seconds);
    if (peak > 0) std::printf("dense bf16 peak of this GPU: %.0f TFLOP/s\n", peak);
    const Variant full{"checks+telemetry", true, true}, checks{"checks", true, false}, bare{"bare", false, false};
    if (csv) std::fprintf(csv, "precision,width,batch,path,variant,samples_per_s,tflops,peak_mib\n");
    std::printf("\n%-9s %5s %6s | %12s %8s | %12s %8s %6s | %7s %7s | %8s | %12s %12s | %s\n", "precision", "width",
                "batch", "engine sa/s", "TFLOP/s", "graph sa/s", "TFLOP/s", "%peak", "checks", "telem.", "peak MiB",
                "trainer sync", "trainer pipe", "note");

    for (Format f : precisions) {
        const std::string name(format_name(f));
        const Support s = matmul_support(f, b.capability());
        if (!s.supported) {
            std::printf("%-9s  skipped: %s\n", name.c_str(), s.reason.c_str());
            continue;
        }
        for (std::int64_t w : widths)
            for (std::int64_t batch : batches) {
                std::string note;
                try {
                    b.cache().reset_peaks();
                    Mlp m(b, f, batch, w);
                    const Result eng = run_engine(b, m, full, seconds);
                    const Result g_full = run_graph(b, m, full, seconds, note);
                    const Result g_checks = run_graph(b, m, checks, seconds, note);
                    const Result g_bare = run_graph(b, m, bare, seconds, note);
                    const double checks_cost = g_bare.samples_per_s / g_checks.samples_per_s - 1.0;
                    const double telem_cost = g_checks.samples_per_s / g_full.samples_per_s - 1.0;
                    const double peak_mib = static_cast<double>(b.cache().peak_in_use()) / (1024.0 * 1024.0);
                    std::string how;
                    const Result t_sync = run_trainer(f, batch, w, seconds, false, how);
                    const Result t_pipe = run_trainer(f, batch, w, seconds, true, how);
                    const auto lw = static_cast<long long>(w), lb = static_cast<long long>(batch);
                    if (csv) {
                        std::fprintf(csv, "%s,%lld,%lld,engine,checks+telemetry,%.1f,%.2f,%.0f\n", name.c_str(), lw, lb,
                                     eng.samples_per_s, eng.tflops, peak_mib);
                        const std::pair<const char*, Result> graphs[] = {
                            {"checks+telemetry", g_full}, {"checks", g_checks}, {"bare", g_bare}};
                        for (const auto& [variant, r] : graphs)
                            std::fprintf(csv, "%s,%lld,%lld,graph,%s,%.1f,%.2f,%.0f\n", name.c_str(), lw, lb, variant,
                                         r.samples_per_s, r.tflops, peak_mib);
                        std::fprintf(csv, "%s,%lld,%lld,trainer-sync,checks+telemetry,%.1f,,\n", name.c_str(), lw, lb,
                                     t_sync.samples_per_s);
                        std::fprintf(csv, "%s,%lld,%lld,trainer-pipelined,checks+telemetry,%.1f,,\n", name.c_str(), lw,
                                     lb, t_pipe.samples_per_s);
                        std::fflush(csv);
                    }
                    char pct[16] = "-";
                    if (peak > 0) std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * g_full.tflops / peak);
                    if (how.find("replayed") != std::string::npos && note.empty()) note = how;
                    std::printf(
                        "%-9s %5lld %6lld | %12.0f %8.1f | %12.0f %8.1f %6s | %6.1f%% %6.1f%% | %8.0f | %12.0f %12.0f | "
                        "%s\n",
                        name.c_str(), lw, lb, eng.samples_per_s, eng.tflops, g_full.samples_per_s, g_full.tflops, pct,
                        100.0 * checks_cost, 100.0 * telem_cost, peak_mib, t_sync.samples_per_s, t_pipe.samples_per_s,
                        note.c_str());
                } catch (const Error& e) {
                    std::printf("%-9s %5lld %6lld | failed: %s\n", name.c_str(), static_cast<long long>(w),
                                static_cast<long long>(batch), e.what());
                }
                std::fflush(stdout);
            }
    }
    std::printf(
        "\nengine: the Backend interface (the host reads the loss, the check and the update counts every\n"
        "step); graph: the asynchronous step as a CUDA graph. checks: loss scaling's unscale + check + scale\n"
        "update; telem.: per-tensor amax and exponent histograms; each as its cost over the graph step\n"
        "without it. peak MiB: tensors and workspace in use at the peak. trainer sync / pipe: the same MLP\n"
        "trained by the Trainer (samples/s, checks and telemetry on), through the synchronous calls or the\n"
        "step pipeline (results a step late, CUDA graphs); the note says how the pipeline's steps ran.\n");
    if (csv) std::fclose(csv);
    return 0;
}
