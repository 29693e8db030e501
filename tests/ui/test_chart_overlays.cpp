// Recorded runs overlaid on the live charts (ChartsPanel::addOverlay, history/run_overlay.h): the
// overlay's drawn points are the stored rows (loss scale as recorded, underflow as their mean over
// layers, loss smoothed as the live loss is), the legends name it, it follows the live run's range
// and stays through live redraws and a new live series, removing or clearing takes it off every
// chart, a run still recording keeps growing on the charts, and the run browser's "Overlay on live
// charts" asks for it with the store, the run and a name. Every overlay is dashed; a reference is
// grey wherever and whenever it is overlaid, and so is the first overlay after a clear.
#include <QtTest>

#include <QAction>
#include <QSignalSpy>

#include <map>

#include "charts/charts_panel.h"
#include "history/run_browser.h"
#include "history/run_overlay.h"
#include "series/run_series.h"
#include "test_history_fixture.h"
#include "exact_compare.h"

using namespace mantissa;
using namespace mantissa::ui;
using namespace history_test;

namespace {

void fillLive(RunSeries& s, std::int64_t from, std::int64_t to) {
    if (from == 0) s.reset({"fc1", "fc2", "fc3"});
    for (std::int64_t i = from; i < to; ++i) {
        StepRecord r;
        r.step = i;
        r.loss = 1.5 / static_cast<double>(i + 1) + 0.1;
        r.loss_scale = 65536;
        r.samples_per_s = 900;
        s.addStep(r);
    }
}

QCPGraph* graphNamed(ChartView* chart, const QString& name) {
    for (int i = 0; i < chart->graphCount(); ++i)
        if (chart->graph(i)->name() == name) return chart->graph(i);
    return nullptr;
}

bool legendHas(ChartView* chart, const QString& name) {
    for (int i = 0; i < chart->legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(chart->legend->item(i)); item && item->plottable()->name() == name)
            return true;
    return false;
}

std::vector<std::pair<double, double>> drawnPoints(QCPGraph* g) {
    std::vector<std::pair<double, double>> out;
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) out.push_back({it->key, it->value});
    return out;
}

}  // namespace

class TestChartOverlays : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_path;
    std::int64_t m_stored = 0;

    void settle(ChartsPanel& panel) {
        for (int i = 0; i < 4; ++i) {
            QCoreApplication::processEvents();
            panel.redrawNow(true);
        }
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite"));
        RunStore store(m_path.toStdString());
        syntheticRun(store, "stored-baseline", 120, RunStatus::completed);
        m_stored = store.list_runs().front().id;
    }

    void anOverlayDrawsTheStoredRows() {
        RunSeries live;
        fillLive(live, 0, 150);
        ChartsPanel panel;
        panel.resize(1100, 900);
        panel.show();
        panel.setSeries(&live);
        QCOMPARE(overlayStoredRun(panel, m_path, m_stored), QString());
        settle(panel);
        const QString name = QStringLiteral("stored-baseline (run %1)").arg(m_stored);
        QCOMPARE(panel.overlays(), QStringList{name});

        RunStore store(m_path.toStdString(), true);
        const auto steps = store.steps(m_stored);
        const auto layers = store.layer_steps(m_stored);
        QCOMPARE(steps.size(), std::size_t{120});
        // Loss scale: the stored values at their steps (a step function: its corners).
        QCPGraph* scale = graphNamed(panel.scaleChart(), name);
        QVERIFY(scale);
        std::map<double, double> scaleAt;
        for (const StepRecord& s : steps) scaleAt[static_cast<double>(s.step)] = static_cast<float>(s.loss_scale);
        const auto drawnScale = drawnPoints(scale);
        QVERIFY(drawnScale.size() >= 12);  // 12 values, 10 steps each
        for (const auto& [x, y] : drawnScale) QCOMPARE(y, scaleAt.at(x));
        QCOMPARE_EXACT(drawnScale.front().first, 0.0);
        QCOMPARE(drawnScale.back().first, 119.0);
        // Underflow: each step's mean over the three layers, in percent.
        std::map<double, std::vector<double>> perStep;
        for (const LayerStepRecord& r : layers) perStep[static_cast<double>(r.step)].push_back(r.frac_underflow);
        QCPGraph* underflow = graphNamed(panel.underflowChart(), name + QStringLiteral(" (mean)"));
        QVERIFY(underflow);
        const auto drawnUnderflow = drawnPoints(underflow);
        QCOMPARE(drawnUnderflow.size(), std::size_t{120});
        for (const auto& [x, y] : drawnUnderflow) {
            const auto& v = perStep.at(x);
            double mean = 0;
            for (double f : v) mean += f;
            mean /= static_cast<double>(v.size());
            QVERIFY2(std::abs(y - 100 * mean) < 1e-4, qPrintable(QStringLiteral("step %1: %2 drawn, %3 stored").arg(x).arg(y).arg(100 * mean)));
        }
        // Loss: smoothed as the live loss is (TensorBoard's debiased average, the panel's weight).
        QCPGraph* loss = graphNamed(panel.lossChart(), name);
        QVERIFY(loss);
        double biased = 0, weightPow = 1;
        const double w = panel.smoothingWeight();
        std::map<double, double> smoothed;
        for (const StepRecord& s : steps) {
            biased = biased * w + (1 - w) * s.loss;
            weightPow *= w;
            smoothed[static_cast<double>(s.step)] = biased / (1 - weightPow);
        }
        const auto drawnLoss = drawnPoints(loss);
        QCOMPARE(drawnLoss.size(), std::size_t{120});
        for (const auto& [x, y] : drawnLoss) QVERIFY(std::abs(y - smoothed.at(x)) < 1e-5 * std::abs(y));
        QVERIFY(graphNamed(panel.throughputChart(), name));
        QVERIFY(!graphNamed(panel.memoryChart(), name));  // memory is the live run's model alone
        // Named in the legends.
        for (ChartView* c : {panel.lossChart(), panel.scaleChart(), panel.throughputChart()}) QVERIFY(legendHas(c, name));
        QVERIFY(legendHas(panel.underflowChart(), name + QStringLiteral(" (mean)")));
    }

    void anOverlayFollowsTheLiveRunAndStays() {
        RunSeries live;
        fillLive(live, 0, 40);
        ChartsPanel panel;
        panel.resize(1000, 800);
        panel.show();
        panel.setSeries(&live);
        QCOMPARE(overlayStoredRun(panel, m_path, m_stored, QStringLiteral("baseline")), QString());
        settle(panel);
        // The live run has 40 steps: the charts show those, and the overlay there.
        QVERIFY(panel.xRange().upper < 45);
        QCPGraph* loss = graphNamed(panel.lossChart(), QStringLiteral("baseline"));
        QVERIFY(loss);
        QVERIFY(drawnPoints(loss).back().first <= 42);  // one point beyond the window at most
        // Live redraws keep it, and it follows the live run as it grows.
        fillLive(live, 40, 100);
        panel.refresh();
        QTRY_VERIFY(panel.xRange().upper >= 99);
        loss = graphNamed(panel.lossChart(), QStringLiteral("baseline"));
        QVERIFY(loss);
        QTRY_VERIFY(drawnPoints(graphNamed(panel.lossChart(), QStringLiteral("baseline"))).back().first >= 99);
        // A new live series (the next run) keeps the overlays.
        RunSeries next;
        fillLive(next, 0, 10);
        panel.setSeries(&next);
        settle(panel);
        QCOMPARE(panel.overlays(), QStringList{QStringLiteral("baseline")});
        QVERIFY(graphNamed(panel.scaleChart(), QStringLiteral("baseline")));
        // Without a live run the overlay shows its own steps, and before the next run's first step.
        panel.setSeries(nullptr);
        settle(panel);
        QVERIFY(panel.xRange().upper >= 119);
        RunSeries empty;
        empty.reset({"fc1"});
        panel.setSeries(&empty);
        settle(panel);
        QVERIFY(panel.xRange().upper >= 119);
        QVERIFY(!drawnPoints(graphNamed(panel.scaleChart(), QStringLiteral("baseline"))).empty());
        // Removing takes it off every chart and legend.
        panel.setSeries(&next);
        QVERIFY(!panel.removeOverlay(QStringLiteral("nothing")));
        QVERIFY(panel.removeOverlay(QStringLiteral("baseline")));
        QVERIFY(panel.overlays().isEmpty());
        for (ChartView* c : panel.charts()) {
            QVERIFY(!graphNamed(c, QStringLiteral("baseline")));
            QVERIFY(!legendHas(c, QStringLiteral("baseline")));
        }
        // Two, then clear.
        QCOMPARE(overlayStoredRun(panel, m_path, m_stored, QStringLiteral("a")), QString());
        QCOMPARE(overlayStoredRun(panel, m_path, m_stored, QStringLiteral("b")), QString());
        QCOMPARE(panel.overlays(), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
        QVERIFY(graphNamed(panel.lossChart(), QStringLiteral("a"))->pen().color() !=
                graphNamed(panel.lossChart(), QStringLiteral("b"))->pen().color());
        panel.clearOverlays();
        QVERIFY(panel.overlays().isEmpty());
        for (ChartView* c : panel.charts()) QVERIFY(!graphNamed(c, QStringLiteral("a")) && !graphNamed(c, QStringLiteral("b")));
    }

    void aRecordingRunKeepsGrowing() {
        const QString path = m_dir.filePath(QStringLiteral("recording.sqlite"));
        RunStore store(path.toStdString());
        auto recorder = syntheticRun(store, "still-recording", 30, RunStatus::running);
        QVERIFY(recorder);
        QTRY_COMPARE(store.steps(recorder->run_id()).size(), std::size_t{30});
        ChartsPanel panel;
        panel.resize(900, 700);
        panel.show();
        QCOMPARE(overlayStoredRun(panel, path, recorder->run_id(), QStringLiteral("recording")), QString());
        settle(panel);
        QCOMPARE(panel.overlaySeries(QStringLiteral("recording"))->stepCount(), std::int64_t{30});
        feed(*recorder, 30, 80);
        QTRY_VERIFY_WITH_TIMEOUT(panel.overlaySeries(QStringLiteral("recording"))->stepCount() == 80, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(drawnPoints(graphNamed(panel.scaleChart(), QStringLiteral("recording"))).back().first >= 79, 5000);
        recorder->finish(RunStatus::completed);
        panel.clearOverlays();  // and its follower with it
    }

    // One colour rule: a lesson's reference is grey and dashed on every chart, whatever was
    // overlaid before (a previous lesson's reference, cleared) or beside it (a run that held grey
    // moves to a colour of its own); the first overlay after a clear is grey too.
    void referenceOverlaysAreGreyAndDashed() {
        RunSeries live;
        fillLive(live, 0, 60);
        ChartsPanel panel;
        panel.resize(1000, 800);
        panel.show();
        panel.setSeries(&live);
        const QColor grey = ChartsPanel::referenceOverlayColor();
        QCOMPARE(grey.red(), grey.green());
        QCOMPARE(grey.green(), grey.blue());
        const auto drawnIn = [&](const QString& name, const QColor& color) {
            for (ChartView* c : {panel.lossChart(), panel.scaleChart(), panel.throughputChart()}) {
                QCPGraph* g = graphNamed(c, name);
                if (!g) return false;
                if (g->pen().style() != Qt::DashLine || g->pen().color().rgb() != color.rgb()) return false;
            }
            return true;
        };
        // A lesson opened before (its reference overlaid, then cleared with the experiment).
        QCOMPARE(overlayStoredRun(panel, m_path, m_stored, QStringLiteral("lesson 01 reference"),
                                  OverlayRole::reference),
                 QString());
        QVERIFY(drawnIn(QStringLiteral("lesson 01 reference"), grey));
        QCOMPARE(overlayStoredRun(panel, m_path, m_stored, QStringLiteral("another run")), QString());
        panel.clearOverlays();
        // The next lesson's reference, overlaid as a plain run: the first after a clear is grey.
        QCOMPARE(overlayStoredRun(panel, m_path, m_stored, QStringLiteral("lesson 15 reference")), QString());
        QVERIFY(drawnIn(QStringLiteral("lesson 15 reference"), grey));
        panel.clearOverlays();
        // A run overlaid first takes grey; a reference then takes it over, and the run moves.
        QCOMPARE(overlayStoredRun(panel, m_path, m_stored, QStringLiteral("a run")), QString());
        QVERIFY(drawnIn(QStringLiteral("a run"), grey));
        QCOMPARE(overlayStoredRun(panel, m_path, m_stored, QStringLiteral("the reference"), OverlayRole::reference),
                 QString());
        settle(panel);
        QVERIFY(drawnIn(QStringLiteral("the reference"), grey));
        QCPGraph* run = graphNamed(panel.lossChart(), QStringLiteral("a run"));
        QVERIFY(run);
        QVERIFY(run->pen().color().rgb() != grey.rgb());
        QCOMPARE(run->pen().style(), Qt::DashLine);
        // Never the live loss scale's colour: the scale line and an overlay stay told apart.
        const QColor scale = graphNamed(panel.scaleChart(), QStringLiteral("scale"))->pen().color();
        QVERIFY(graphNamed(panel.scaleChart(), QStringLiteral("the reference"))->pen().color().rgb() != scale.rgb());
    }

    void overlayStoredRunSaysWhatIsWrong() {
        ChartsPanel panel;
        QVERIFY(!overlayStoredRun(panel, m_dir.filePath(QStringLiteral("missing.sqlite")), 1).isEmpty());
        QVERIFY(!overlayStoredRun(panel, m_path, 9999).isEmpty());
        QVERIFY(panel.overlays().isEmpty());
    }

    void theBrowserAsksForAnOverlay() {
        RunBrowser browser;
        browser.setOpensWindows(false);
        QVERIFY(browser.openStore(m_path));
        QSignalSpy spy(&browser, &RunBrowser::overlayRequested);
        QVERIFY(!browser.overlayAction()->isEnabled());  // nothing selected
        browser.selectRuns({m_stored});
        QVERIFY(browser.overlayAction()->isEnabled());
        QCOMPARE(browser.overlayAction()->text(), QStringLiteral("Overlay on live charts"));
        browser.overlayAction()->trigger();
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy[0][0].toString(), m_path);
        QCOMPARE(spy[0][1].toLongLong(), m_stored);
        QCOMPARE(spy[0][2].toString(), QStringLiteral("stored-baseline (run %1)").arg(m_stored));
    }
};

QTEST_MAIN(TestChartOverlays)
#include "test_chart_overlays.moc"
