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

// A statistic of an op measured in a training step, by the op's name: the quantities of a
// transformer that overflow or lose precision first in a narrow format (measured in the forward,
// of ops without parameters of their own), and how much a matmul layer's sums lose in its
// accumulator (at statistics steps, with train.accumulation_error).
//   stat "logit_amax":   an attention layer's largest |logit| (the scaled scores the softmax
//                        reads, after its input cast if any); +inf once one is inf or NaN
//   stat "min_variance": a layer norm's smallest row variance
//   stat "accumulation_error", "accumulation_error_wgrad": a linear or conv2d layer's forward
//                        (and a linear layer's weight-gradient) sums against FP64, the median of
//                        |sum - exact| / Σ|products| (train/accumulation_error.h); +inf once one
//                        overflowed
struct OpStepRecord {
    std::int64_t step = 0;
    std::string name;   // the op's layer: "blocks.0.attn", "blocks.0.ln1", "fc1"
    std::string stat;   // "logit_amax", "min_variance", "accumulation_error", ...
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

// Which of a matmul layer's operands a record is about: its input x, its weight W, or its output
// gradient dy (as the input-gradient matmul receives it, scaled by the loss scale).
enum class MatmulOperand : std::uint8_t { input, weight, grad_output };
const char* matmul_operand_name(MatmulOperand operand);  // "x", "W", "dy"

// At a statistics step, the block scales of one matmul operand (docs/numerics.md, "Block-scale
// views"): the tensor viewed as rows along its matmul's reduction dimension, each row cut into
// blocks of the format's block size, and for each block the power of two its scale gives.
// Only a sample of whole rows when the tensor has more blocks than train.block_scales.max_blocks:
// `rows` of its `rows_total`, the i-th being row i·rows_total/rows.
struct BlockScaleRecord {
    // exponents[] entries that are not exponents: a block of zeros (any scale would do; MX gives
    // it 2^-127, NVFP4 a zero scale) and a block holding a NaN or an infinity (the NaN scale).
    static constexpr std::int16_t zero_block = -32768;
    static constexpr std::int16_t nan_block = 32767;

    std::int64_t step = 0;
    std::int32_t layer = 0;     // as LayerStepRecord::layer
    std::string name;           // "fc1"
    MatmulOperand operand = MatmulOperand::input;
    BlockFormat format = BlockFormat::mxfp8_e4m3;  // the matmul's own, or train.block_scales.format
    bool own = false;           // the format is the one the layer's matmul runs this step
    std::int64_t rows_total = 0, rows = 0;
    std::int64_t row_length = 0;       // K, the values along the reduction
    std::int64_t blocks_per_row = 0;   // ceil(K / block size)
    // rows × blocks_per_row, row-major: floor(log2) of each block's decode factor (MX: its E8M0
    // exponent; NVFP4: its E4M3 scale over the tensor scale), or zero_block / nan_block.
    std::vector<std::int16_t> exponents;
};

// A record's blocks counted by exponent: the distribution the views draw, one definition for the
// CLI, the GUI and the export. counts[i] holds the blocks with exponent min_exponent + i.
struct BlockScaleHistogram {
    int min_exponent = 0;
    std::vector<std::int64_t> counts;  // empty when no block has a finite scale
    std::int64_t zero_blocks = 0, nan_blocks = 0;
    std::int64_t blocks() const;       // every block, zeros and NaNs included
    int max_exponent() const { return min_exponent + static_cast<int>(counts.size()) - 1; }
    // The exponent at or below which half the finite-scale blocks lie; 0 when there are none.
    int median_exponent() const;
};
BlockScaleHistogram block_scale_histogram(const BlockScaleRecord& record);

struct EvalRecord {
    std::int64_t step = 0;
    std::string split;                      // "test" (or "train")
    double loss = 0;
    double accuracy = 0;                    // fraction in [0,1]; NaN for regression
};

// A checkpoint the training thread has written (engine/train/checkpoint.h): the whole state of
// the run after `step` steps, from which it continues with step `step`. The file is complete
// (written, synced and renamed into place) before this is handed to a sink, so a row listing it
// never names a half file. keep: train.keep_checkpoints, the newest this many of the run's
// checkpoints are kept (0: all); a store drops the older ones' rows, then their files.
struct CheckpointRecord {
    std::int64_t step = 0;
    double time_s = 0;         // the run's training time at the checkpoint
    std::string file;          // absolute path
    std::int64_t bytes = 0;
    int keep = 0;
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
// A size in bytes as events and displays write it: binary units, one decimal ("402.8 KiB",
// "1.3 MiB", "512 B").
std::string format_byte_size(std::int64_t bytes);

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
    // The block-scale views of a step (after its on_what_if), on statistics steps of a run that
    // asks for them (train.block_scales) and has a block-scaled operand to show.
    virtual void on_block_scales(const std::vector<BlockScaleRecord>& rows) { (void)rows; }
    // A checkpoint written between steps, after every row of the steps before it was handed over.
    virtual void on_checkpoint(const CheckpointRecord& checkpoint) { (void)checkpoint; }
};

}  // namespace mantissa
