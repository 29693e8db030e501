// The Block scales panel's words (see block_scale_text.h).
#include "block_scales/block_scale_text.h"

#include <QCoreApplication>
#include <QLocale>

#include <cmath>

#include "config/experiment.h"
#include "model/layer_formats.h"
#include "numeric/block_format.h"

namespace mantissa::ui::blockscale {

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("BlockScalePanel", text);
}

QString count(std::int64_t n) {
    return QLocale().toString(static_cast<qlonglong>(n));
}

const QChar minus(0x2212);

}  // namespace

Expectation expectationOf(const Experiment& e) {
    if (!e.train.block_scales.enabled) return Expectation::off;
    if (e.train.block_scales.format) return Expectation::expected;
    for (const auto& [name, setting] : e.precision.layers)
        for (LayerPrecision p : {setting.forward, setting.dgrad, setting.wgrad})
            if (block_format_of(p)) return Expectation::expected;
    return Expectation::none;
}

QString emptySentence(Expectation expectation) {
    switch (expectation) {
        case Expectation::off:
            return tr("Block-scale views are off in this run (train.block_scales.format is \"off\").");
        case Expectation::expected:
            return tr("The block scales appear at the run's first statistics step (train.layer_stats_every).");
        case Expectation::none: break;
    }
    return tr(
        "No block-scaled operands in this run: set a layer to mxfp8, mxfp6, mxfp4 or nvfp4, or "
        "train.block_scales.format to view every layer in one.");
}

QString exponentText(int e) {
    return e < 0 ? minus + QString::number(-e) : QString::number(e);
}

QString scaleText(int e) {
    const double v = std::ldexp(1.0, e);
    const QString power = QStringLiteral("2^") + exponentText(e);
    // Up to 2^±16 the value is short and exact; beyond, three digits say its size.
    if (e >= -16 && e <= 16) return power + QStringLiteral(" = ") + QString::number(v, 'g', 17);
    return power + QStringLiteral(" ≈ ") + QString::number(v, 'g', 3);
}

QString formatName(BlockFormat format) {
    const std::string_view n = block_format_name(format);
    return QString::fromUtf8(n.data(), static_cast<qsizetype>(n.size()));
}

int blockSize(BlockFormat format) {
    return block_format_info(format).block_size;
}

QString operandName(MatmulOperand operand) {
    return QString::fromLatin1(matmul_operand_name(operand));
}

QString operandWords(MatmulOperand operand) {
    switch (operand) {
        case MatmulOperand::input: return tr("input");
        case MatmulOperand::weight: return tr("weight");
        case MatmulOperand::grad_output: return tr("output gradient");
    }
    return {};
}

QString tensorLabel(const BlockScaleTensor& tensor, const BlockScaleStep& latest) {
    return QStringLiteral("%1 · %2 (%3, %4)")
        .arg(QString::fromStdString(tensor.name), operandName(tensor.operand), formatName(latest.format),
             latest.own ? tr("own") : tr("as if"));
}

QString caption(const BlockScaleTensor& tensor, const BlockScaleStep& step, const BlockScaleHistogram& histogram) {
    const int size = blockSize(step.format);
    QString text = QStringLiteral("%1 · %2 in %3 ")
                       .arg(QString::fromStdString(tensor.name), operandName(tensor.operand), formatName(step.format));
    text +=
        step.own ? tr("(the layer's own format)") : tr("(train.block_scales.format; the layer runs another format)");
    text += (step.blocks_per_row == 1 ? tr(", %1 of %2 rows × %3 block of %4 values")
                                      : tr(", %1 of %2 rows × %3 blocks of %4 values"))
                .arg(count(step.rows), count(step.rows_total), count(step.blocks_per_row))
                .arg(size);
    // A row that does not fill its last block: the quantiser pads it with zeros.
    if (step.row_length % size != 0) text += tr(" (K = %1)").arg(count(step.row_length));
    if (histogram.counts.empty())
        text += tr(", no block with a finite scale");
    else
        text += tr(", exponents %1…%2, median %3")
                    .arg(exponentText(histogram.min_exponent), exponentText(histogram.max_exponent()),
                         exponentText(histogram.median_exponent()));
    text +=
        histogram.zero_blocks == 1 ? tr(", 1 zero block") : tr(", %1 zero blocks").arg(count(histogram.zero_blocks));
    if (histogram.nan_blocks > 0)
        text +=
            histogram.nan_blocks == 1 ? tr(", 1 NaN block") : tr(", %1 NaN blocks").arg(count(histogram.nan_blocks));
    return text;
}

std::int64_t realRow(const BlockScaleStep& step, std::int64_t sampledRow) {
    if (step.rows <= 0 || step.rows >= step.rows_total) return sampledRow;
    return sampledRow * step.rows_total / step.rows;
}

QString blockToolTip(const BlockScaleStep& step, std::int64_t sampledRow, std::int64_t block, std::int16_t exponent) {
    const int size = blockSize(step.format);
    const std::int64_t k0 = block * size;
    const std::int64_t k1 = std::min<std::int64_t>(k0 + size, step.row_length) - 1;
    QString text = tr("row %1").arg(count(realRow(step, sampledRow)));
    if (step.rows < step.rows_total) text += tr(" (sampled row %1 of %2)").arg(count(sampledRow + 1), count(step.rows));
    text += tr(", block %1: values k = %2…%3 of %4").arg(count(block), count(k0), count(k1), count(step.row_length));
    text += QLatin1Char('\n');
    const bool nvfp4 = block_format_info(step.format).scale == ScaleKind::e4m3_with_tensor_scale;
    if (exponent == BlockScaleRecord::zero_block)
        return text + (nvfp4 ? tr("A block of zeros, or one whose E4M3 scale rounded to zero: its scale decodes "
                                  "every value to zero.")
                             : tr("A block of zeros: any scale would do, and MX stores 2^−127."));
    if (exponent == BlockScaleRecord::nan_block)
        return text + tr("The block holds a NaN or an infinity: it gets the NaN scale, and every value of it "
                         "decodes as NaN.");
    text += tr("Exponent %1: the block's scale is %2.").arg(exponentText(exponent), scaleText(exponent));
    if (nvfp4)
        text += QLatin1Char('\n') + tr("NVFP4: the block's E4M3 scale over the tensor's FP32 scale, floored to a "
                                       "power of two.");
    return text;
}

QString missingMapSentence(std::int64_t step, BlockMapState state, std::size_t budgetBytes,
                           std::optional<std::pair<std::int64_t, std::int64_t>> held) {
    const QString at = count(step);
    if (state == BlockMapState::notDelivered)
        return tr("The block map of step %1 did not reach the window: the run outpaced it, and only the step's "
                  "distribution came (left). Open the run in Run history to see the map.")
            .arg(at);
    const QString budget = QLocale().formattedDataSize(static_cast<qint64>(budgetBytes), 0, QLocale::DataSizeIecFormat);
    QString kept = held ? tr(" (now steps %1–%2)").arg(count(held->first), count(held->second)) : QString();
    return tr("The block map of step %1 is no longer held: the window keeps the maps of the newest steps within "
              "%2%3, and the distribution of every step (left). Open the run in Run history to see this map.")
        .arg(at, budget, kept);
}

QString heldText(const BlockScaleSeries& series) {
    const auto held = series.heldSteps();
    const QLocale locale;
    const QString used =
        locale.formattedDataSize(static_cast<qint64>(series.mapBytes()), 1, QLocale::DataSizeIecFormat);
    const QString budget =
        locale.formattedDataSize(static_cast<qint64>(series.mapBudget()), 0, QLocale::DataSizeIecFormat);
    if (!held) return tr("No maps held (budget %1)").arg(budget);
    return tr("Maps held: steps %1–%2 (%3 of %4)").arg(count(held->first), count(held->second), used, budget);
}

}  // namespace mantissa::ui::blockscale
