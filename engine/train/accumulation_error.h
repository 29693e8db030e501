// AccumulationErrorStatistics: at a statistics step, how far each matmul layer's sums are from
// exact, in the accumulator its matmuls use (train.accumulation_error; docs/numerics.md,
// "FP16 accumulation"). What tensor cores teach by accumulating in FP32 even for FP16 operands:
// a sum of K products kept in FP16 loses a bit of every product it takes once it is 2^11 times
// larger than them, so its error grows with K where FP32's stays at FP32's roundoff.
//
// Each layer shows it x, W and dy at the start of its backward (model/operand_observer.h). The
// statistic forms dot products of the layer's own operands, each in two ways: in FP64 (the
// reference) and in the layer's accumulator, modelled in order (k = 0 .. K-1):
//   FP16  s = rnd16(s + rnd16(a_k·b_k)): the CPU backend's FP16 accumulation itself
//         (backend/cpu/cpu_fp16_accumulate.h), bit for bit
//   FP32  s = rnd32(s + rnd32(a_k·b_k)): the same model in FP32; oneDNN and cuBLAS add in other
//         orders (blocked partial sums), whose error is of this size or smaller
// The error of one sum is |s - exact| / Σ|a_k·b_k| (relative to the products' magnitudes: a
// zero-mean sum's own value can be near zero), as the numeric bench's fp16_accumulation table
// defines it; a layer's figure is the median over its sampled sums (+inf once a sum overflowed).
//   "accumulation_error"        the forward's sums (K = the layer's reduction: in, or C·k·k):
//                               up to 16 rows of x (spread over the batch) by up to 16 of W
//   "accumulation_error_wgrad"  a linear layer's weight-gradient sums (K = the rows of the
//                               batch): up to 16 outputs by 16 inputs, dy as the matmul takes it
//                               (scaled by the loss scale). Convolutions have none here: their
//                               K is the batch times the output positions, and they always
//                               accumulate in FP32 (docs/numerics.md).
// The operands are those the matmuls read: x, W and dy rounded to the matmul's format where it
// is a tensor format (fp32, tf32, fp16, bf16); FP8 and block-scaled matmuls' operands are taken
// unquantised (their products are added in FP32 either way, and it is the sum being measured).
// Nothing is written: measuring never changes a run. Training thread only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/telemetry.h"
#include "model/operand_observer.h"
#include "train/operand_sampler.h"
#include "train/pending_steps.h"

namespace mantissa {

inline constexpr const char* accumulation_error_stat = "accumulation_error";
inline constexpr const char* accumulation_error_wgrad_stat = "accumulation_error_wgrad";

// The error of one sum of the products a[i·stride_a]·b[i·stride_b], i < K, in the in-order
// accumulator described above (FP16 when fp16, else FP32), against FP64: |s - exact| / Σ|a·b|;
// 0 when every product is 0, +inf when s is not finite. `scratch` is kept by the caller.
double dot_accumulation_error(const float* a, std::int64_t stride_a, const float* b, std::int64_t stride_b,
                              std::int64_t K, bool fp16, std::vector<float>& scratch);

class AccumulationErrorStatistics final : public OperandObserver {
public:
    // The next backward is a statistics step's: its layers are measured. Rows from before are
    // dropped. With `later` (a pipeline that reads operands after the step), the operands are
    // asked of it and measured by take_collected when the step is collected.
    void begin_step(std::int64_t step, StepPipeline* later = nullptr);
    // This step's rows (a layer's in backward order, forward before wgrad); empties them.
    std::vector<OpStepRecord> take();
    // After the step: the rows of `step`, the oldest still pending, from its collected samples.
    std::vector<OpStepRecord> take_collected(std::int64_t step, std::span<const float> samples);
    // PendingSteps: the body just issued was recorded; `step` replays it.
    void keep_recorded() { m_steps.pending.keep_recorded(); }
    void replay(std::int64_t step) { m_steps.pending.replay(step); }

    void observe(Backend& backend, const MatmulOperands& operands) override;

private:
    // A layer as observe() found it, for measure().
    struct Observed {
        std::string name;
        ComputeFormat forward, wgrad;
        bool fp16 = false;    // the layer accumulates in FP16
        bool linear = true;   // else a convolution (no weight-gradient sums)
        std::int64_t K = 0, out = 0;
        PendingSamples samples;
    };
    void measure(const Observed& layer, const OperandSampler::Samples& s, std::int64_t step,
                 std::vector<OpStepRecord>& out);

    StatisticSteps<OpStepRecord, Observed> m_steps;
    // Kept between steps.
    OperandSampler m_sampler;
    std::vector<float> m_x, m_w, m_dy, m_scratch;
    std::vector<double> m_errors;
};

}  // namespace mantissa
