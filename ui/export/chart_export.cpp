// Chart export. Each format is drawn through QCustomPlot::toPainter onto its own paint device (a
// QImage, a QSvgGenerator, a QPdfWriter at 72 dpi so one unit is one point), so one code path
// serves a single chart and a stack of them. The file is checked for writability first, so the
// sentence a person reads names the real cause rather than "painting failed"; before that, a file
// no output may replace (the run store or any SQLite database and the files SQLite keeps beside
// one, a Mantissa checkpoint, a named pipe: export/output_check.h) is refused without being
// opened, and a symbolic link is written through to the file it names. A ChartView is drawn
// without its hover crosshair and with its step axis labelled (ExportLook below).
#include "export/chart_export.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <qcustomplot.h>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QImageWriter>
#include <QPageSize>
#include <QPdfWriter>
#include <QSvgGenerator>

#include "charts/chart_view.h"
#include "export/output_check.h"

namespace mantissa::ui {

namespace {

constexpr int min_side = 16;
constexpr int max_side = 20000;
constexpr double max_scale = 8;
constexpr double max_png_pixels = 400e6;  // about 1.6 GB of ARGB: beyond this QImage fails anyway

struct Placed {
    QCustomPlot* plot;
    int width, height;
};

QString checkWritable(const QString& path) {
    if (path.trimmed().isEmpty()) return QStringLiteral("Choose a file name to export the chart to.");
    const QFileInfo info(path);
    if (info.isDir()) return QStringLiteral("'%1' is a folder; choose a file name inside it.").arg(path);
    const QFileInfo dir(info.absolutePath());
    if (!dir.exists() || !dir.isDir())
        return QStringLiteral("The folder '%1' does not exist; choose another place to save the chart.")
            .arg(info.absolutePath());
    if (QString refusal = outputRefusal(path); !refusal.isEmpty()) return refusal;
    QFile f(outputDestination(path));  // a link's own target: removing a new file keeps the link
    const bool existed = f.exists();
    if (!f.open(QIODevice::WriteOnly | QIODevice::Append))
        return QStringLiteral("Cannot write '%1' (%2); choose another place to save the chart.")
            .arg(path, f.errorString());
    f.close();
    if (!existed) f.remove();
    return {};
}

// Sizes each plot (0 = its current size) and checks the figures.
QString place(const QList<QCustomPlot*>& plots, const ChartExportSize& size, std::vector<Placed>* out, int* total_w,
              int* total_h) {
    if (plots.isEmpty()) return QStringLiteral("There is no chart to export.");
    if (size.width < 0 || size.height < 0 || size.width > max_side || size.height > max_side)
        return QStringLiteral("The size %1 × %2 is out of range; give a width and height from %3 to %4 pixels.")
            .arg(size.width)
            .arg(size.height)
            .arg(min_side)
            .arg(max_side);
    if (!(size.scale > 0) || size.scale > max_scale)
        return QStringLiteral("The scale %1 is out of range; give a scale above 0 and at most %2.")
            .arg(size.scale)
            .arg(max_scale);
    *total_w = 0;
    *total_h = 0;
    for (QCustomPlot* p : plots) {
        if (!p) return QStringLiteral("There is no chart to export.");
        const int w = size.width > 0 ? size.width : p->width();
        const int h = size.height > 0 ? size.height : p->height();
        if (w < min_side || h < min_side)
            return QStringLiteral("The size %1 × %2 is too small; give a width and height of at least %3 pixels.")
                .arg(w)
                .arg(h)
                .arg(min_side);
        out->push_back({p, w, h});
        *total_w = std::max(*total_w, w);
        *total_h += h;
    }
    if (*total_h > max_side)
        return QStringLiteral(
                   "The stacked charts would be %1 pixels high; export fewer or smaller charts (at most %2).")
            .arg(*total_h)
            .arg(max_side);
    return {};
}

// Draws the plots one below the other on an active painter (in logical units).
void drawStack(QCPPainter* painter, const std::vector<Placed>& placed) {
    int y = 0;
    for (const Placed& p : placed) {
        painter->save();
        painter->translate(0, y);
        p.plot->toPainter(painter, p.width, p.height);
        painter->restore();
        y += p.height;
    }
}

QString writePng(const std::vector<Placed>& placed, int w, int h, double scale, const QString& path) {
    const int pw = static_cast<int>(std::lround(w * scale));
    const int ph = static_cast<int>(std::lround(h * scale));
    if (static_cast<double>(pw) * ph > max_png_pixels)
        return QStringLiteral("A %1 × %2 pixel image is too large; lower the size or the scale.").arg(pw).arg(ph);
    QImage image(pw, ph, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull())
        return QStringLiteral("There is not enough memory for a %1 × %2 pixel image; lower the size or the scale.")
            .arg(pw)
            .arg(ph);
    image.fill(Qt::white);  // under a plot whose own background is transparent
    {
        QCPPainter painter;
        if (!painter.begin(&image)) return QStringLiteral("Could not draw the chart into an image.");
        painter.setRenderHint(QPainter::Antialiasing);
        if (scale > 1) painter.setMode(QCPPainter::pmNonCosmetic);
        painter.scale(scale, scale);
        drawStack(&painter, placed);
    }
    QImageWriter writer(path, "png");
    if (!writer.write(image)) return QStringLiteral("Could not write '%1' (%2).").arg(path, writer.errorString());
    return {};
}

QString writeSvg(const std::vector<Placed>& placed, int w, int h, const QString& path) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(QSize(w, h));
    svg.setViewBox(QRect(0, 0, w, h));
    svg.setTitle(QStringLiteral("Mantissa chart"));
    QCPPainter painter;
    if (!painter.begin(&svg)) return QStringLiteral("Could not write '%1' as SVG.").arg(path);
    drawStack(&painter, placed);
    painter.end();
    return {};
}

QString writePdf(const std::vector<Placed>& placed, int w, int h, const QString& path) {
    QPdfWriter pdf(path);
    pdf.setCreator(QStringLiteral("Mantissa"));
    pdf.setResolution(72);  // one painter unit = one point
    pdf.setPageSize(QPageSize(QSizeF(w, h), QPageSize::Point, QString(), QPageSize::ExactMatch));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    QCPPainter painter;
    if (!painter.begin(&pdf)) return QStringLiteral("Could not write '%1' as PDF.").arg(path);
    // Lines stay as thin as on screen: the PDF's own unit is already the screen pixel.
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    drawStack(&painter, placed);
    painter.end();
    return {};
}

// While it lives, the ChartViews among the plots look as a reader of the file should see them: no
// crosshair or read-out, and the step axis labelled on a chart exported alone and on the bottom
// chart of a stack (the panels show it only on their bottom chart).
class ExportLook {
public:
    explicit ExportLook(const std::vector<Placed>& placed) {
        for (std::size_t i = 0; i < placed.size(); ++i) {
            if (auto* chart = qobject_cast<ChartView*>(placed[i].plot)) {
                chart->beginExport(i + 1 == placed.size());
                m_charts.push_back(chart);
            }
        }
    }
    ~ExportLook() {
        for (ChartView* chart : m_charts) chart->endExport();
    }
    ExportLook(const ExportLook&) = delete;
    ExportLook& operator=(const ExportLook&) = delete;

private:
    std::vector<ChartView*> m_charts;
};

QString exportAs(const QList<QCustomPlot*>& plots, const QString& path, ChartFileFormat format,
                 const ChartExportSize& size) {
    std::vector<Placed> placed;
    int w = 0, h = 0;
    if (QString e = place(plots, size, &placed, &w, &h); !e.isEmpty()) return e;
    if (QString e = checkWritable(path); !e.isEmpty()) return e;
    const QString target = outputDestination(path);
    const ExportLook look(placed);
    QString error;
    switch (format) {
        case ChartFileFormat::png: error = writePng(placed, w, h, size.scale, target); break;
        case ChartFileFormat::svg: error = writeSvg(placed, w, h, target); break;
        case ChartFileFormat::pdf: error = writePdf(placed, w, h, target); break;
    }
    // toPainter laid each plot out at the export size; the next replot lays it out for the screen.
    for (const Placed& p : placed) p.plot->replot(QCustomPlot::rpQueuedReplot);
    return error;
}

}  // namespace

std::optional<ChartFileFormat> chartFormatFromPath(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("png")) return ChartFileFormat::png;
    if (suffix == QLatin1String("svg")) return ChartFileFormat::svg;
    if (suffix == QLatin1String("pdf")) return ChartFileFormat::pdf;
    return std::nullopt;
}

QString chartFormatSuffix(ChartFileFormat format) {
    switch (format) {
        case ChartFileFormat::png: return QStringLiteral("png");
        case ChartFileFormat::svg: return QStringLiteral("svg");
        case ChartFileFormat::pdf: return QStringLiteral("pdf");
    }
    return {};
}

QString exportChart(QCustomPlot* plot, const QString& path, const ChartExportSize& size) {
    return exportChartsStacked({plot}, path, size);
}

QString exportChart(QCustomPlot* plot, const QString& path, ChartFileFormat format, const ChartExportSize& size) {
    return exportAs({plot}, path, format, size);
}

QString exportChartsStacked(const QList<QCustomPlot*>& plots, const QString& path, const ChartExportSize& size) {
    if (path.trimmed().isEmpty()) return QStringLiteral("Choose a file name to export the chart to.");
    const auto format = chartFormatFromPath(path);
    if (!format) {
        const QString suffix = QFileInfo(path).suffix();
        return suffix.isEmpty()
                   ? QStringLiteral("'%1' has no suffix; end the file name in .png, .svg or .pdf.").arg(path)
                   : QStringLiteral("'%1' ends in .%2, which is not a chart format; use .png, .svg or .pdf.")
                         .arg(path, suffix);
    }
    return exportAs(plots, path, *format, size);
}

}  // namespace mantissa::ui
