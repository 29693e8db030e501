// What a training session reports: one StepRecord per step, LayerStepRecords (every step, or every
// k steps), EvalRecords and Events. These are plain values: they are copied out of the training
// thread to the GUI's ring and to the store's writer thread, and are the rows of the run store.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "numeric/compute_format.h"
#include "numeric/format.h"

namespace mantissa {

// Bytes by category. On the CPU backend these are the bytes the declared formats would take on a
// device ("modelled"); on CUDA, the allocator's real accounting.
struct MemoryBreakdown {
    std::int64_t parameters = 0;
    std::int64_t master_weights = 0;
    std::int64_t gradients = 0;
    std::int64_t optimizer_state = 0;
    std::int64_t activations = 0;
    std::int64_t workspace = 0;
    std::int64_t device_in_use = 0;   // whole device, from the driver (0 on the CPU backend)
    std::int64_t device_total = 0;
    bool modelled = true;             // true: figures are what a device would need, not measured
    std::int64_t total() const {
        return parameters + master_weights + gradients + optimizer_state + activations + workspace;
    }
};

struct StepRecord {
    std::int64_t step = 0;        // 0-based optimizer step index (skipped steps count)
    std::int32_t epoch = 0;       // 0-based
    double time_s = 0;            // training seconds since the run started (pauses left out), at the step's end
    double loss = 0;              // unscaled training loss of the batch (fp32)
    double loss_scale = 1;        // the scale used for this step's backward
    bool overflow = false;        // a gradient held inf/NaN
    bool skipped = false;         // the optimizer did not step
    double grad_norm = 0;         // L2 norm of the unscaled gradients (inf/NaN on overflow)
    double learning_rate = 0;
    double samples_per_s = 0;     // batch size / step time
    double step_time_ms = 0;
    MemoryBreakdown memory;
};

// Gradient exponent histogram: bin i counts non-zero finite |g| with floor(log2|g|) == min + i,
// clamped to the ends; zeros and non-finite values are counted separately in LayerStepRecord.
struct ExponentHistogram {
    static constexpr int min_exponent = -150;   // below fp32's smallest subnormal (2^-149)
    static constexpr int max_exponent = 127;    // fp32's largest finite binade
    static constexpr int bins = max_exponent - min_exponent + 1;
    std::array<std::uint32_t, bins> counts{};
};

// One tensor's FP8 delayed scaling at a step (backend.h, Fp8Recipe; docs/schema.md, layer_steps).
struct Fp8TensorScaling {
    // The scale after this step's update: fp8_max / amax(history, this step's amax included) /
    // 2^margin (fp8_max 448 for E4M3, 57344 for E5M2), the scale the next step's cast multiplies
    // the tensor by unless the scaling is changed in between; 1 with scaling none, and kept from
    // the step before when the history's amax is 0 or not finite. Always finite and > 0.
    double scale = 1;
    // This step's amax: max |value| of the tensor before scaling, over the step (the entry the
    // step added to the amax history). NaN when the tensor held a NaN, inf when it held an inf.
    double amax = 0;
};

// An FP8 layer's three scaled tensors: x (input, E4M3), W (weight, E4M3), dy (output gradient,
// E5M2), as they stood at the end of the step.
struct Fp8LayerScaling {
    Fp8TensorScaling input, weight, grad_output;
};

struct LayerStepRecord {
    std::int64_t step = 0;
    std::int32_t layer = 0;                 // index into the model's layers, 0 = fc1
    std::string name;                       // "fc1"
    ComputeFormat precision;                // the compute format in effect this step
    double grad_amax = 0;                   // max |dW| (unscaled), over the weight gradient
    std::int64_t grad_elements = 0;
    double frac_zero = 0;                   // of weight-gradient elements, after rounding
    double frac_subnormal = 0;
    double frac_nonfinite = 0;
    double frac_underflow = 0;              // non-zero in fp32, zero after rounding to the format
    double frac_lost_updates = 0;           // of weights whose update changes them in FP32, those whose
                                            // stored value stays the same (lost to the stored precision;
                                            // 0 for FP32 weights and FP32 master weights; Kahan:
                                            // and whose compensation stays the same too)
    ExponentHistogram grad_exponents;
    // FP8 layers only (precision fp8-e4m3), and only where the step's scaling state is known
    // exactly at its report (a pipeline that reports each step at its end: the CPU backend, or
    // CUDA with the synchronous pipeline); absent otherwise (NULL in the store).
    std::optional<Fp8LayerScaling> fp8;
};

// A statistic of an op without parameters of its own, measured in a training step's forward: the
// quantities of a transformer that overflow or lose precision first in a narrow format.
//   stat "logit_amax":   an attention layer's largest |logit| (the scaled scores the softmax
//                        reads, after its input cast if any); +inf once one is inf or NaN
//   stat "min_variance": a layer norm's smallest row variance
struct OpStepRecord {
    std::int64_t step = 0;
    std::string name;   // the op's layer: "blocks.0.attn", "blocks.0.ln1"
    std::string stat;   // "logit_amax", "min_variance"
    double value = 0;   // inf/NaN as measured
};

// What quantising one tensor to one format does, over the values measured (docs/numerics.md,
// "What-if statistics"). Fractions are of the tensor's finite non-zero values.
struct QuantisationStats {
    double underflow = 0;   // those that become ±0
    double saturation = 0;  // those whose magnitude, times the scale they would get, is beyond
                            // the format's largest finite value (clamped, or inf in fp16/bf16)
    // 10·log10(Σ x² / Σ (x − q(x))²) over the finite values: +inf when every value is exact,
    // -inf when a finite value would become infinite, NaN when no value is finite and non-zero.
    double sqnr_db = 0;
    std::int64_t values = 0;  // the values measured (a sample of whole rows: what_if.max_elements)
};

// At a statistics step, what one format would do to one layer's three matmul operands, measured
// without changing the run: the values its forward GEMM's x and W are cast or quantised from (the
// layer's input; the stored weights, FP32 masters where there are any), and its output gradient
// dy (scaled by the loss scale) as the input-gradient GEMM receives it. A layer that runs in
// `format` gets the same numbers from its own operands: what its own casts do.
struct WhatIfRecord {
    std::int64_t step = 0;
    std::int32_t layer = 0;    // as LayerStepRecord::layer: the index among the layers with parameters
    std::string name;          // "fc1"
    ComputeFormat format;      // the format asked about ("fp8-e4m3": delayed scaling)
    QuantisationStats input, weight, grad_output;
};

struct EvalRecord {
    std::int64_t step = 0;
    std::string split;                      // "test" (or "train")
    double loss = 0;
    double accuracy = 0;                    // fraction in [0,1]; NaN for regression
};

enum class EventKind : std::uint8_t {
    run_started,
    run_finished,
    run_stopped,
    run_failed,
    run_interrupted,
    overflow,        // data_json: {"layer": "fc2", "tensor": "dW"}
    scale_change,    // data_json: {"old": 65536, "new": 32768, "reason": "backoff"}
    setting_change,  // data_json: {"key": "precision.layers.fc1", "old": "auto", "new": "fp16"}
    divergence,
    checkpoint,
    evaluation,
    paused,
    resumed,
    notice,          // anything a person should know (fallback dataset, recorder backpressure)
};
const char* event_kind_name(EventKind kind);  // "setting_change", ...
// A number as event messages write it: 9 significant digits ("65536", "0.001"), "inf", "nan".
// One spelling for the trainer's messages and the display's merged entries that quote them.
std::string format_event_number(double v);

struct Event {
    std::int64_t step = 0;
    double time_s = 0;
    EventKind kind = EventKind::notice;
    std::string message;     // one sentence for a person
    std::string data_json;   // machine-readable details, "{}" when none
};

// Receives a session's telemetry on the training thread. Implementations must return quickly
// (copy into a queue or ring); the training thread never waits on a slow subscriber, except the
// store's recorder, which by design makes training wait rather than drop a row.
class TelemetrySink {
public:
    virtual ~TelemetrySink() = default;
    virtual void on_step(const StepRecord& step, const std::vector<LayerStepRecord>& layers) = 0;
    virtual void on_eval(const EvalRecord& eval) = 0;
    virtual void on_event(const Event& event) = 0;
    // The op statistics of a step (after its on_step), on the steps that measure per-layer
    // statistics; never called for a model without such ops.
    virtual void on_op_steps(const std::vector<OpStepRecord>& ops) { (void)ops; }
    // The what-if statistics of a step (after its on_step and on_op_steps), on statistics steps
    // of a run that asks for them (train.what_if).
    virtual void on_what_if(const std::vector<WhatIfRecord>& rows) { (void)rows; }
};

}  // namespace mantissa
