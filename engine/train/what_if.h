// WhatIfStatistics: at a statistics step, what each of a list of formats would do to every matmul
// layer's operands, measured without changing the run (train.what_if; docs/numerics.md, "What-if
// statistics"). Each layer shows it x, W and dy at the start of its backward
// (model/operand_observer.h); a sample of whole rows of each is quantised to each format as the
// layer's matmuls would quantise it (x and W for the forward, along its reduction; dy for the
// input-gradient matmul, along its own) and compared with itself: underflow, saturation, SQNR.
// A layer that runs in one of the formats gets, in that column, the numbers of its own operands.
//
// "fp8-e4m3" is per-tensor FP8 with delayed scaling: x and W in e4m3, dy in e5m2, each scaled by
// what its amax history gives. A layer whose matmul runs FP8 with delayed scaling uses its own
// history; any other keeps a shadow one here, fed with the tensor's amax at each statistics step,
// so with statistics at every step it is the history the layer would have had in FP8 all along.
// Training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/amax_history.h"
#include "backend/backend.h"
#include "config/experiment.h"
#include "config/telemetry.h"
#include "model/operand_observer.h"
#include "train/operand_sampler.h"
#include "train/pending_steps.h"

namespace mantissa {

// The scale per-tensor FP8 would use: multiply before the saturating cast, multiply after by the
// inverse (as the matmul's dequantisation does).
struct Fp8Scale {
    float scale = 1, scale_inv = 1;
};

// What quantising `s` to `format` as operand `role` does; scratch is resized as needed. fp8_e4m3
// takes `fp8` (dy in e5m2); the other formats ignore it.
QuantisationStats measure_operand(const ComputeFormat& format, MatmulOperand role, const OperandSample& s,
                                  Fp8Scale fp8, std::vector<float>& scratch);

class WhatIfStatistics final : public OperandObserver {
public:
    // layers: the number of layers with parameters (their index() is the record's layer).
    WhatIfStatistics(WhatIfSpec spec, const Fp8Recipe& recipe, int layers);

    const WhatIfSpec& spec() const { return m_spec; }
    // A live change of precision.fp8: the shadow histories follow the margin and algorithm (their
    // windows kept), and whether layers' own histories count as delayed.
    void set_fp8_recipe(const Fp8Recipe& recipe);

    // The next backward is a statistics step's: its layers are measured. Rows from before are
    // dropped. With `later` (a pipeline that reads operands after the step), they are asked of it
    // and measured by take_collected when the step is collected.
    void begin_step(std::int64_t step, StepPipeline* later = nullptr);
    // This step's rows, by layer in backward order then by format in the spec's order; empties them.
    std::vector<WhatIfRecord> take();
    // After the step: the rows of `step`, the oldest still pending, from its collected samples.
    std::vector<WhatIfRecord> take_collected(std::int64_t step, std::span<const float> samples);
    // PendingSteps: the body just issued was recorded; `step` replays it.
    void keep_recorded() { m_steps.pending.keep_recorded(); }
    void replay(std::int64_t step) { m_steps.pending.replay(step); }

    void observe(Backend& backend, const MatmulOperands& operands) override;

private:
    struct Shadow {  // a layer's what-if delayed scaling, one history per operand
        AmaxHistory x, w, dy;
    };
    // A layer as observe() found it, for measure(): where a matmul of the layer runs FP8 with
    // delayed scaling, the operand's scale is its own history's (read in place, or where the
    // step's samples hold it); otherwise the shadow's.
    struct Observed {
        int layer = 0;
        std::string name;
        bool own[3] = {};
        Fp8Scale own_scale[3];
        std::int64_t own_offset[3] = {-1, -1, -1};
        PendingSamples samples;
    };
    Shadow& shadow(int layer);
    bool own_history(const MatmulOperands& o, MatmulOperand role) const;
    void measure(const Observed& layer, const OperandSampler::Samples& s, std::span<const float> step_samples,
                 std::int64_t step, std::vector<WhatIfRecord>& out);

    WhatIfSpec m_spec;
    Fp8Recipe m_recipe;
    std::vector<std::unique_ptr<Shadow>> m_shadows;
    StatisticSteps<WhatIfRecord, Observed> m_steps;
    // Kept between steps: the samples and the quantised copies.
    OperandSampler m_sampler;
    std::vector<std::vector<float>> m_scratch;  // one per thread
};

}  // namespace mantissa
