// The main window wires the history and teaching views to what it records: a run trained in the
// window is listed by the run browser (Ctrl+H) and opens with the same steps, the gradient
// histogram dock follows it through the store, the format explorer opens from Tools, and a chart
// exports to a file that decodes.
#include <QtTest>

#include <QDockWidget>
#include <QImage>

#include <memory>

#include "charts/charts_panel.h"
#include "explorer/format_explorer.h"
#include "export/chart_export.h"
#include "histogram/gradient_histogram_view.h"
#include "histogram/histogram_feed.h"
#include "history/run_browser.h"
#include "history/run_table_model.h"
#include "history/run_viewer.h"
#include "live/run_controller.h"
#include "main_window.h"
#include "main_window_fixture.h"
#include "series/run_series.h"
#include "config/experiment.h"

using namespace mantissa;
using namespace mantissa::ui;

class TestWindowViews : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::unique_ptr<MainWindow> m_window;

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_dir.isValid());
        m_window = window_test::openWindow(m_dir);
        Experiment e;
        e.name = "views-run";
        e.dataset.kind = "spirals";
        e.dataset.samples = 600;
        e.model.hidden = {16, 16};
        e.train.batch_size = 64;
        e.train.steps = 40;
        e.train.eval_every = 20;
        e.precision.autocast = Autocast::fp16;
        e.backend = "cpu";
        m_window->setExperiment(e);
        QVERIFY2(m_window->startRun(), qPrintable(m_window->lastError()));
        QTRY_VERIFY_WITH_TIMEOUT(!m_window->controller()->active(), 30000);
        QCOMPARE(m_window->controller()->series().stepCount(), std::int64_t{40});
    }

    void browserListsAndOpensTheRun() {
        m_window->showRunBrowser();
        RunBrowser* b = m_window->runBrowser();
        QVERIFY(b->isVisible());
        QCOMPARE(b->storePath(), m_window->controller()->storePath());
        QCOMPARE(b->model()->rowCount(), 1);
        RunViewer* viewer = b->openRun(m_window->controller()->runId());
        QVERIFY2(viewer != nullptr, qPrintable(b->lastError()));
        QCOMPARE(viewer->series().stepCount(), std::int64_t{40});
        QCOMPARE(viewer->series().loss().lastY(), m_window->controller()->series().loss().lastY());
        viewer->close();
    }

    void histogramFollowsTheRecordedRun() {
        GradientHistogramView* h = m_window->histogramView();
        QCOMPARE(h->feed()->runId(), m_window->controller()->runId());
        // Its dock is a tab behind the events: it read nothing during the run. Its tab selected,
        // it reads the whole run at once; the events' tab selected again, it pauses.
        QVERIFY(h->feed()->paused());
        QCOMPARE(static_cast<std::int64_t>(h->feed()->series().size()), std::int64_t{0});
        auto* histogramDock = m_window->findChild<QDockWidget*>(QStringLiteral("histogramDock"));
        auto* eventsDock = m_window->findChild<QDockWidget*>(QStringLiteral("eventsDock"));
        histogramDock->raise();
        QTRY_VERIFY(!h->feed()->paused());
        QCOMPARE(static_cast<std::int64_t>(h->feed()->series().size()), std::int64_t{40});
        eventsDock->raise();
        QTRY_VERIFY(h->feed()->paused());
        h->feed()->poll();
        QCOMPARE(static_cast<std::int64_t>(h->feed()->series().size()), std::int64_t{40});
        QVERIFY(h->feed()->layers().contains(QStringLiteral("fc1")));
    }

    void formatExplorerOpens() {
        m_window->showFormatExplorer();
        FormatExplorer* x = m_window->formatExplorer();
        QVERIFY(x->isVisible());
        QVERIFY(x->setValueText(QStringLiteral("65520")));
        const auto fp16 = x->described(Format::fp16);
        QVERIFY(fp16.has_value());
        QVERIFY(std::isinf(fp16->value));  // ties to even past the largest finite value: inf
        x->close();
    }

    void chartExportsFromTheWindow() {
        const QString path = m_dir.filePath(QStringLiteral("loss.png"));
        QCOMPARE(exportChart(m_window->chartsPanel()->lossChart(), path, ChartExportSize{800, 300, 1}), QString());
        const QImage image(path);
        QCOMPARE(image.size(), QSize(800, 300));
    }

    void cleanupTestCase() { m_window.reset(); }
};

QTEST_MAIN(TestWindowViews)
#include "test_window_views.moc"
