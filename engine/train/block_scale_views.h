// BlockScaleViews: at a statistics step, the scale of every block of each matmul operand that is
// quantised in blocks (train.block_scales; docs/numerics.md, "Block-scale views"). Each layer shows
// its x, W and dy at the start of its backward (model/operand_observer.h); each operand is cut into
// blocks as its matmul cuts it (x and W along the forward's reduction, dy along the
// input-gradient matmul's: train/operand_sampler.h), and each block's scale is chosen by the rule
// its format's quantiser uses (numeric/block_format.h, block_decode_exponents; dy's as its
// stochastic quantisation chooses it with stochastic gradients). A linear layer's own x and W
// are read from the exponents its forward's quantiser kept where the backend keeps them (the CPU
// backend: Backend::kept_block_exponents), which are those values, without a second pass over
// the operands. Nothing is written back, so viewing never changes a run. Training thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/experiment.h"
#include "config/telemetry.h"
#include "model/operand_observer.h"
#include "train/operand_sampler.h"
#include "train/pending_steps.h"

namespace mantissa {

// floor(log2) of the factor a block's values are decoded with (MX: its E8M0 exponent; NVFP4: its
// E4M3 scale over the tensor scale), or BlockScaleRecord::zero_block when the scale decodes every
// value to zero (a block of zeros; an NVFP4 scale that rounded to zero), nan_block for the NaN scale.
// `values` are the block's count values; tensor_scale as for quantise_block. One block of
// block_decode_exponents (numeric/block_format.h), whose sentinels these are.
std::int16_t block_scale_exponent(BlockFormat format, float tensor_scale, const float* values, std::size_t count);

// The record of one operand's sample viewed in `format`: its rows cut into blocks from the start of
// each row (a last partial block as the quantiser pads it). `stochastic`: the operand is rounded
// stochastically (a gradient, precision.rounding.gradients), whose MX scales never clip.
BlockScaleRecord view_block_scales(BlockFormat format, const OperandSample& s, bool stochastic = false);
// The same record from exponents a quantiser kept (Backend::kept_block_exponents) for a tensor of
// rows_total rows of K values: the rows a sample of max_values values takes (sample_row_indices).
BlockScaleRecord kept_block_scales(BlockFormat format, const Backend::KeptBlockExponents& kept, std::int64_t rows_total,
                                   std::int64_t K, std::int64_t max_values);

class BlockScaleViews final : public OperandObserver {
public:
    explicit BlockScaleViews(BlockScaleSpec spec) : m_spec(spec) {}

    const BlockScaleSpec& spec() const { return m_spec; }
    // The next backward is a statistics step's: its layers are viewed. Rows from before are
    // dropped. With `later` (a pipeline that reads operands after the step), the operands are
    // asked of it and viewed by take_collected when the step is collected.
    void begin_step(std::int64_t step, StepPipeline* later = nullptr);
    // This step's rows, by layer in backward order then operand (x, W, dy); empties them.
    std::vector<BlockScaleRecord> take();
    // After the step: the rows of `step`, the oldest still pending, from its collected samples.
    std::vector<BlockScaleRecord> take_collected(std::int64_t step, std::span<const float> samples);
    // PendingSteps: the body just issued was recorded; `step` replays it.
    void keep_recorded() { m_steps.pending.keep_recorded(); }
    void replay(std::int64_t step) { m_steps.pending.replay(step); }

    void observe(Backend& backend, const MatmulOperands& operands) override;

private:
    // A layer as observe() found it, for view().
    struct Observed {
        int layer = 0;
        std::string name;
        std::optional<BlockFormat> x_format, dy_format;  // x's and W's, dy's (none: not viewed)
        bool own_forward = false, own_dgrad = false;     // the format is the matmul's own
        bool stochastic_dy = false;                      // dy quantised stochastically
        PendingSamples samples;
    };
    // One layer's records from its samples: x and W unless `x_and_w` is false (their records
    // already made from kept exponents), then dy.
    static void view(const Observed& layer, const OperandSampler::Samples& s, bool x_and_w, std::int64_t step,
                     std::vector<BlockScaleRecord>& out);
    static void label(BlockScaleRecord& r, const Observed& layer, MatmulOperand operand, std::int64_t step);

    BlockScaleSpec m_spec;
    StatisticSteps<BlockScaleRecord, Observed> m_steps;
    OperandSampler m_sampler;
};

}  // namespace mantissa
