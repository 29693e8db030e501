// OperandSampler: whole rows of a matmul layer's three operands, copied out at a statistics step
// for the statistics that measure them (train/what_if.h, train/block_scale_views.h). Each operand
// is viewed as rows along its matmul's reduction dimension, as that matmul quantises it:
//   x   the forward's input rows (linear: rows of `in`; conv2d: im2col patches, (c, ky, kx) order,
//       zeros in the padding), one row per output position;
//   W   the stored weight's rows of `in` (conv2d: Co rows of C·k·k);
//   dy  the input-gradient matmul's rows along the outputs (conv2d: the output channels at each
//       output position).
// Rows are taken whole and spread evenly (sample_row_indices), and each sample also carries the
// magnitudes of its whole tensor (FP8 scaling and NVFP4's tensor scale use them). Training thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/sampled_rows.h"
#include "backend/step_pipeline.h"
#include "model/operand_observer.h"

namespace mantissa {

// An operand's sample: `rows` runs of K values along the reduction dimension, side by side: the
// rows `row_indices` of the `rows_total` the whole tensor has.
struct OperandSample {
    const float* values = nullptr;
    std::int64_t rows = 0, K = 0;
    std::int64_t rows_total = 0;
    std::span<const std::int64_t> row_indices;
    Backend::RowSample magnitudes;
};

// The rows a sample takes of `total` rows of `row_len` values: as many whole rows as
// max_elements holds (at least one; every row when max_elements is 0 or holds them all), spread
// evenly from the first: row i·total/count (SampledRows::row).
std::int64_t sample_row_count(std::int64_t total, std::int64_t row_len, std::int64_t max_elements);
std::vector<std::int64_t> sample_row_indices(std::int64_t total, std::int64_t row_len, std::int64_t max_elements);

// The values to sample of each operand, as sample_row_indices counts them (0: all).
struct SampleLimits {
    std::int64_t x = 0, w = 0, dy = 0;
    // false: a whole operand read in place is not measured (its magnitudes are left 0), a pass
    // saved where nothing reads them (the MX formats' views need no tensor amax, NVFP4's do).
    bool magnitudes = true;
    // false: x and W are left empty, nothing read (the views have their blocks from the quantiser).
    bool x_and_w = true;
};

// The same samples asked of a pipeline that reads operands after the step
// (StepPipeline::samples_after_step): which rows of each operand, and where the step's samples
// will hold them. An operand not asked for has offset -1.
struct PendingSamples {
    struct Operand {
        std::int64_t offset = -1;
        SampledRows rows;
    };
    Operand x, w, dy;
};

class OperandSampler {
public:
    struct Samples {
        OperandSample x, w, dy;
    };
    // The samples point into this sampler's buffers or, where a whole operand is taken and the
    // backend keeps it in host memory, into the operand itself: valid until the next take() or op.
    Samples take(Backend& backend, const MatmulOperands& o, SampleLimits limits);

    // The rows take() would copy, asked of `later` during the step (magnitudes always come with
    // them); `limits.magnitudes` is ignored.
    static PendingSamples request(StepPipeline& later, const MatmulOperands& o, SampleLimits limits);
    // The samples of a collected step (StepResults::samples), as take() gives them: valid while
    // `samples` is and until the next resolve() or take().
    Samples resolve(const PendingSamples& pending, std::span<const float> samples);

private:
    std::vector<float> m_x, m_w, m_dy, m_whole;
    std::vector<std::int64_t> m_x_rows, m_w_rows, m_dy_rows;
};

}  // namespace mantissa
