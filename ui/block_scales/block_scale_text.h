// The Block scales panel's words: the tensor picker's labels, the caption line, the tooltips of
// the distribution and of a block, the sentences for a missing map and for a run without views.
// One place, so the panel, its two plots and the tests say the same thing the same way (a minus
// sign, not a hyphen; counts with the locale's grouping; exponents as the engine gives them).
// GUI thread only (QLocale, tr).
#pragma once

#include <QString>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "series/block_scale_series.h"

namespace mantissa {
struct Experiment;
}

namespace mantissa::ui::blockscale {

// What a run gives the panel, from its experiment: nothing (no block format anywhere and no
// train.block_scales.format), nothing because the views are off, or views at statistics steps.
enum class Expectation { none, off, expected };
Expectation expectationOf(const Experiment& e);
// The one sentence the panel shows while it has no views.
QString emptySentence(Expectation expectation);

QString exponentText(int e);                  // "−5", "3"
QString scaleText(int e);                     // "2^−5 = 0.03125", "2^−20 ≈ 9.54e-07"
QString formatName(BlockFormat format);       // "mxfp4"
int blockSize(BlockFormat format);            // 32, or 16 for NVFP4
QString operandName(MatmulOperand operand);   // "x", "W", "dy"
QString operandWords(MatmulOperand operand);  // "input", "weight", "output gradient"

// "fc1 · x (mxfp4, own)", "fc2 · W (mxfp8-e4m3, as if)": the format of the tensor's latest step.
QString tensorLabel(const BlockScaleTensor& tensor, const BlockScaleStep& latest);
// "fc1 · x in mxfp4 (the layer's own format), 128 of 128 rows × 25 blocks of 32 values (K = 784),
// exponents −9…−2, median −5, 0 zero blocks" (K given when the last block is partial).
QString caption(const BlockScaleTensor& tensor, const BlockScaleStep& step, const BlockScaleHistogram& histogram);

// A block of the map: row `row` of the sample (its real row given), block `block`.
QString blockToolTip(const BlockScaleStep& step, std::int64_t sampledRow, std::int64_t block, std::int16_t exponent);
// The real row index of the sample's i-th row (BlockScaleRecord: row i·rows_total/rows).
std::int64_t realRow(const BlockScaleStep& step, std::int64_t sampledRow);

// Why the shown step has no map (BlockMapState evicted or notDelivered), for a window that cannot
// read it again (the live one): held are the steps whose maps it keeps, budget its bytes.
QString missingMapSentence(std::int64_t step, BlockMapState state, std::size_t budgetBytes,
                           std::optional<std::pair<std::int64_t, std::int64_t>> held);
// "Maps held: steps 380–400 (1.2 of 32 MiB)".
QString heldText(const BlockScaleSeries& series);

}  // namespace mantissa::ui::blockscale
