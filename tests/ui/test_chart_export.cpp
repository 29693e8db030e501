// Chart export: a chart (a plain QCustomPlot and a ChartView) written as PNG decodes at the asked
// size (times the scale), as SVG parses as XML with an <svg> root and the asked view box, as PDF
// starts with %PDF; charts stack into one image; the dialog follows suffix and format; every bad
// request returns one sentence and writes nothing; a file no output may replace (a checkpoint, a
// named pipe, an SQLite database and its side files: store/output_guard.h) is refused with the
// CLI's sentence, by the function and in the dialog, and a symbolic link is written through.
#include <QtTest>

#include <QTemporaryDir>
#include <QXmlStreamReader>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "charts/chart_view.h"
#include "export/chart_export.h"
#include "export/chart_export_dialog.h"
#include "store/run_store.h"
#include "checkpoint_edits.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {
QCustomPlot* makePlot(QWidget* parent, int w, int h) {
    auto* plot = new QCustomPlot(parent);
    QCPGraph* g = plot->addGraph();
    QVector<double> x, y;
    for (int i = 0; i < 100; ++i) {
        x << i;
        y << std::sin(i * 0.1);
    }
    g->setData(x, y);
    plot->rescaleAxes();
    plot->xAxis->setLabel(QStringLiteral("step"));
    plot->resize(w, h);
    plot->replot();
    return plot;
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// A small Mantissa checkpoint: one tensor and the checkpoint's metadata entry.
void writeCheckpoint(const QString& path) { test::write_checkpoint_like_file(QFile::encodeName(path).toStdString()); }

// Makes in `dir` the file `kind` names (a checkpoint, a FIFO, an SQLite database and its -wal, a
// link to a checkpoint) and returns the path an export is aimed at.
QString makeGuardedFile(const QString& dir, const QString& kind) {
    if (kind == QLatin1String("checkpoint")) {
        const QString path = dir + QStringLiteral("/step-100.png");  // any name: the contents say what it is
        writeCheckpoint(path);
        return path;
    }
    if (kind == QLatin1String("fifo")) {
        const QString path = dir + QStringLiteral("/pipe.png");
        return ::mkfifo(QFile::encodeName(path).constData(), 0600) == 0 ? path : QString();
    }
    if (kind == QLatin1String("sqlite") || kind == QLatin1String("wal")) {
        const QString db = dir + QStringLiteral("/runs-%1.png").arg(kind);
        { RunStore store(QFile::encodeName(db).toStdString()); }
        if (kind == QLatin1String("sqlite")) return db;
        QFile wal(db + QStringLiteral("-wal"));
        if (!wal.open(QIODevice::WriteOnly) || wal.write("wal frames") < 0) return {};
        return wal.fileName();
    }
    const QString target = dir + QStringLiteral("/linked.safetensors");
    writeCheckpoint(target);
    const QString link = dir + QStringLiteral("/link.png");
    return QFile::link(target, link) ? link : QString();
}
}  // namespace

class TestChartExport : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QWidget m_host;

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void pngAtTheAskedSize_data() {
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("height");
        QTest::addColumn<double>("scale");
        QTest::addColumn<QSize>("expected");
        QTest::newRow("640x480") << 640 << 480 << 1.0 << QSize(640, 480);
        QTest::newRow("300x200 at 2x") << 300 << 200 << 2.0 << QSize(600, 400);
        QTest::newRow("current size") << 0 << 0 << 1.0 << QSize(420, 260);
    }
    void pngAtTheAskedSize() {
        QFETCH(int, width);
        QFETCH(int, height);
        QFETCH(double, scale);
        QFETCH(QSize, expected);
        QCustomPlot* plot = makePlot(&m_host, 420, 260);
        const QString path = m_dir.filePath(QStringLiteral("chart-%1.png").arg(QTest::currentDataTag()));
        QCOMPARE(exportChart(plot, path, {width, height, scale}), QString());
        QImage image(path);
        QVERIFY2(!image.isNull(), "the PNG does not decode");
        QCOMPARE(image.size(), expected);
        // Something was drawn: not a single colour.
        const QRgb first = image.pixel(0, 0);
        bool varied = false;
        for (int y = 0; y < image.height() && !varied; y += 7)
            for (int x = 0; x < image.width() && !varied; x += 7) varied = image.pixel(x, y) != first;
        QVERIFY(varied);
        // The plot on screen keeps its size.
        QCOMPARE(plot->size(), QSize(420, 260));
    }

    void chartViewExports() {
        ChartView view(QStringLiteral("loss"), &m_host);
        view.resize(500, 300);
        view.replot();
        const QString path = m_dir.filePath(QStringLiteral("chartview.png"));
        QCOMPARE(exportChart(&view, path, {800, 400, 1}), QString());
        QCOMPARE(QImage(path).size(), QSize(800, 400));
    }

    void svgParsesWithAnSvgRoot() {
        QCustomPlot* plot = makePlot(&m_host, 400, 300);
        const QString path = m_dir.filePath(QStringLiteral("chart.svg"));
        QCOMPARE(exportChart(plot, path, {640, 480, 1}), QString());
        QXmlStreamReader xml(readAll(path));
        QString root, viewBox;
        int elements = 0;
        while (!xml.atEnd()) {
            if (xml.readNext() == QXmlStreamReader::StartElement) {
                if (root.isEmpty()) {
                    root = xml.name().toString();
                    viewBox = xml.attributes().value(QStringLiteral("viewBox")).toString();
                }
                ++elements;
            }
        }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QCOMPARE(root, QStringLiteral("svg"));
        QCOMPARE(viewBox.simplified(), QStringLiteral("0 0 640 480"));
        QVERIFY(elements > 10);  // axes, ticks, the graph
    }

    void pdfStartsWithPdfMagic() {
        QCustomPlot* plot = makePlot(&m_host, 400, 300);
        const QString path = m_dir.filePath(QStringLiteral("chart.pdf"));
        QCOMPARE(exportChart(plot, path, {640, 480, 1}), QString());
        const QByteArray bytes = readAll(path);
        QVERIFY(bytes.startsWith("%PDF"));
        QVERIFY(bytes.size() > 1000);
        // The page is the asked size in points.
        const qsizetype box = bytes.indexOf("/MediaBox");
        QVERIFY(box > 0);
        const QByteArray mediaBox = bytes.mid(box, bytes.indexOf(']', box) - box + 1);
        QCOMPARE(mediaBox, QByteArray("/MediaBox [0 0 640.000000 480.000000]"));
    }

    void formatGivenExplicitly() {
        QCustomPlot* plot = makePlot(&m_host, 400, 300);
        const QString path = m_dir.filePath(QStringLiteral("explicit.data"));
        QCOMPARE(exportChart(plot, path, ChartFileFormat::pdf, {300, 200, 1}), QString());
        QVERIFY(readAll(path).startsWith("%PDF"));
    }

    void chartsStackIntoOneImage() {
        QList<QCustomPlot*> plots = {makePlot(&m_host, 300, 100), makePlot(&m_host, 300, 120),
                                     makePlot(&m_host, 250, 80)};
        const QString png = m_dir.filePath(QStringLiteral("stack.png"));
        QCOMPARE(exportChartsStacked(plots, png), QString());
        QCOMPARE(QImage(png).size(), QSize(300, 300));
        const QString svg = m_dir.filePath(QStringLiteral("stack.svg"));
        QCOMPARE(exportChartsStacked(plots, svg, {400, 150, 1}), QString());
        QVERIFY(readAll(svg).contains("viewBox=\"0 0 400 450\""));
    }

    void errorsAreOneSentence_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<int>("width");
        QTest::addColumn<QString>("says");
        QTest::newRow("missing folder") << QStringLiteral("/no/such/folder/chart.png") << 0
                                        << QStringLiteral("does not exist");
        QTest::newRow("unknown suffix") << QStringLiteral("@/chart.bmp") << 0 << QStringLiteral("not a chart format");
        QTest::newRow("no suffix") << QStringLiteral("@/chart") << 0 << QStringLiteral("no suffix");
        QTest::newRow("empty path") << QString() << 0 << QStringLiteral("Choose a file name");
        QTest::newRow("a folder") << QStringLiteral("@/folder.png") << 0 << QStringLiteral("is a folder");
        QTest::newRow("unwritable") << QStringLiteral("/proc/chart.png") << 0 << QStringLiteral("Cannot write");
        QTest::newRow("too small") << QStringLiteral("@/small.png") << 4 << QStringLiteral("too small");
        QTest::newRow("too large") << QStringLiteral("@/large.png") << 50000 << QStringLiteral("out of range");
    }
    void errorsAreOneSentence() {
        QFETCH(QString, path);
        QFETCH(int, width);
        QFETCH(QString, says);
        path.replace(QLatin1Char('@'), m_dir.path());
        QDir(m_dir.path()).mkpath(QStringLiteral("folder.png"));
        QCustomPlot* plot = makePlot(&m_host, 400, 300);
        const QString error = exportChart(plot, path, {width, width, 1});
        QVERIFY2(error.contains(says), qPrintable(error));
        QVERIFY(error.endsWith(QLatin1Char('.')));
        QCOMPARE(error.count(QStringLiteral(". ")), 0);  // one sentence
        if (!QFileInfo(path).isDir()) QVERIFY(!QFileInfo::exists(path));
    }

    // The files mantissa-cli's -o refuses are refused here with the same sentence (file name
    // first), by the export function and by the dialog, which keeps the sentence shown and stays
    // open; nothing is written to them (a pipe gets no bytes, a file keeps its own).
    void refusesFilesNoOutputMayReplace_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("says");
        QTest::newRow("checkpoint") << "checkpoint" << "holds a Mantissa checkpoint, which is never overwritten; "
                                                       "choose another file.";
        QTest::newRow("named pipe") << "fifo" << "is a named pipe (FIFO), which writing would wait on until a "
                                                 "program reads it; choose a regular file.";
        QTest::newRow("SQLite database") << "sqlite" << "is an SQLite database, which is never overwritten; "
                                                        "choose another file.";
        QTest::newRow("its -wal") << "wal" << "is the write-ahead log (-wal) of the SQLite database";
        QTest::newRow("link to a checkpoint") << "link" << "holds a Mantissa checkpoint";
    }
    void refusesFilesNoOutputMayReplace() {
        QFETCH(QString, kind);
        QFETCH(QString, says);
        QTemporaryDir dir;
        const QString target = makeGuardedFile(dir.path(), kind);
        QVERIFY(!target.isEmpty());
        const bool pipe = kind == QLatin1String("fifo");
        // A reader on the pipe, so that code which wrote into it would not block the test but
        // leave its bytes there.
        const int reader = pipe ? ::open(QFile::encodeName(target).constData(), O_RDONLY | O_NONBLOCK) : -1;
        QVERIFY(!pipe || reader >= 0);
        const QByteArray before = pipe ? QByteArray() : readAll(target);
        QCustomPlot* plot = makePlot(&m_host, 400, 300);

        const QString error = exportChart(plot, target, ChartFileFormat::png, {});
        QVERIFY2(error.startsWith(target + QLatin1Char(' ')) && error.contains(says), qPrintable(error));
        QCOMPARE(error.count(QStringLiteral(". ")), 0);  // one sentence
        ChartExportDialog dialog({plot});
        dialog.setPath(target);
        dialog.accept();
        QVERIFY(dialog.result() != int(QDialog::Accepted));
        QCOMPARE(dialog.errorText(), error);

        if (pipe) {
            char byte = 0;
            QCOMPARE(::read(reader, &byte, 1), ssize_t(0));  // no writer ever opened it
            ::close(reader);
        } else {
            QCOMPARE(readAll(target), before);
        }
        QVERIFY(!QFileInfo::exists(target + QStringLiteral(".partial")));
    }

    // A symbolic link to a file not written yet: the export creates that file and the link stays.
    void writesThroughASymbolicLink() {
        QTemporaryDir dir;
        const QString real = dir.filePath(QStringLiteral("real.png"));
        const QString link = dir.filePath(QStringLiteral("link.png"));
        QVERIFY(QFile::link(real, link));
        QCustomPlot* plot = makePlot(&m_host, 320, 200);
        QCOMPARE(exportChart(plot, link, {}), QString());
        QVERIFY(QFileInfo(link).isSymLink());
        QCOMPARE(QImage(real).size(), QSize(320, 200));
    }

    void dialogFollowsSuffixAndFormat() {
        QCustomPlot* plot = makePlot(&m_host, 410, 230);
        ChartExportDialog dialog({plot}, QStringLiteral("loss"));
        QVERIFY(dialog.path().endsWith(QStringLiteral("loss.png")));
        QCOMPARE(dialog.size().width, 410);
        QCOMPARE(dialog.size().height, 230);
        dialog.setPath(m_dir.filePath(QStringLiteral("d.svg")));
        QCOMPARE(dialog.format(), ChartFileFormat::svg);
        QCOMPARE(dialog.size().scale, 1.0);  // scale is for PNG only
        dialog.setFormat(ChartFileFormat::pdf);
        QCOMPARE(dialog.path(), m_dir.filePath(QStringLiteral("d.pdf")));
        dialog.accept();
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
        QCOMPARE(dialog.errorText(), QString());
        QVERIFY(readAll(m_dir.filePath(QStringLiteral("d.pdf"))).startsWith("%PDF"));
    }

    void dialogShowsTheErrorAndStaysOpen() {
        QCustomPlot* plot = makePlot(&m_host, 400, 300);
        ChartExportDialog dialog({plot});
        dialog.setPath(QStringLiteral("/no/such/folder/x.png"));
        dialog.accept();
        QVERIFY(dialog.result() != int(QDialog::Accepted));
        QVERIFY2(dialog.errorText().contains(QStringLiteral("does not exist")), qPrintable(dialog.errorText()));
    }
};

QTEST_MAIN(TestChartExport)
#include "test_chart_export.moc"
