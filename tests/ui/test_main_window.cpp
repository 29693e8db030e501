// The main window driving real runs on spirals (offscreen): starting a run, changing a layer's
// precision through the table model (event recorded at a step, the engine's next steps report the
// new precision, live and in the store), injecting an overflow (skipped step, halved scale in the
// chart's data), pause and resume, closing during a run (recorded `stopped`, within a second), and
// errors that become messages while the window keeps working. Between runs: a new experiment
// clears the last run's views and its layers show before Start, as the run then builds them; the
// default experiment; the dataset fallback's warning; one vocabulary and one number style; the
// backend's CPU threads; and the layout of a small (1024x700) window: a first window that fits its
// screen, the Layers dock that keeps and follows its columns' width, the last run's cells marked
// once a layer's setting changes after it, whole words in the status bar and the dock tabs. Save
// experiment refuses what mantissa-cli's -o refuses (a checkpoint, a pipe, a database) with its
// sentence in a message box, and saves through a symbolic link keeping the link.
#include <QtTest>
#include <QTableView>

#include <QPushButton>
#include <QCheckBox>
#include <QComboBox>
#include <QTimer>
#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QLineEdit>
#include <QSpinBox>
#include <QScreen>
#include <QStatusBar>
#include <QTabBar>

#include <nlohmann/json.hpp>

#include "charts/charts_panel.h"
#include "live/run_controller.h"
#include "main_window.h"
#include "main_window_fixture.h"
#include "models/layer_table_model.h"
#include "models/precision_delegate.h"
#include "panels/layer_setting_dialog.h"
#include "histogram/gradient_histogram_view.h"
#include "models/event_log_model.h"
#include "panels/events_panel.h"
#include "panels/experiment_panel.h"
#include "panels/layers_panel.h"
#include "panels/notice_bar.h"
#include "panels/precision_panel.h"
#include "panels/run_status_bar.h"
#include "panels/what_if_panel.h"
#include "error.h"
#include "store/run_store.h"
#include "tiny_gpt.h"
#include "checkpoint_edits.h"

#include <sys/stat.h>

using namespace mantissa;
using namespace mantissa::ui;

namespace {

Experiment spirals() { return window_test::endlessSpirals("gui-test", {32, 32}, 50); }

// The Layers table's text at (row, column).
QString cell(MainWindow& w, int row, int column) {
    return w.layerModel()->index(row, column).data().toString();
}

QStringList columnTexts(MainWindow& w, int column) {
    QStringList texts;
    for (int r = 0; r < w.layerModel()->rowCount(); ++r) texts << cell(w, r, column);
    return texts;
}

bool hasEvent(const RunSeries& s, EventKind kind, std::int64_t* step = nullptr, const std::string& contains = {}) {
    for (const auto& e : s.events()) {
        if (e.kind == kind && (contains.empty() || e.data_json.find(contains) != std::string::npos ||
                               e.message.find(contains) != std::string::npos)) {
            if (step) *step = e.step;
            return true;
        }
    }
    return false;
}

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    QString storePath() const { return m_dir.filePath(QStringLiteral("runs.sqlite")); }

    std::unique_ptr<MainWindow> makeWindow() {
        auto w = window_test::openWindow(m_dir, {1200, 800});
        w->setExperiment(spirals());
        return w;
    }

    static void stopAndWait(MainWindow& w) { QVERIFY(window_test::stopAndWait(w)); }

    // A window that remembers its settings (QSettings, cleared first) and records into the store.
    MainWindow::Options rememberingOptions() {
        QSettings().clear();
        MainWindow::Options o;
        o.storePath = storePath();
        o.useSettings = true;
        return o;
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("MantissaTest"));
        QCoreApplication::setApplicationName(QStringLiteral("test_main_window"));
        QVERIFY(m_dir.isValid());
    }

    void startsARunOnSpirals() {
        auto w = makeWindow();
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QVERIFY(c->active());
        QCOMPARE(w->layerModel()->rowCount(), 3);
        QCOMPARE(w->layerModel()->layerName(2), QStringLiteral("fc3"));
        QTRY_VERIFY_WITH_TIMEOUT(c->series().stepCount() >= 60, 20000);
        QVERIFY(c->runId() >= 0);
        // The charts draw what arrived, and the table shows each layer's statistics.
        w->chartsPanel()->redrawNow(true);
        QVERIFY(w->chartsPanel()->lossChart()->drawnPoints() > 0);
        QVERIFY(w->chartsPanel()->underflowChart()->drawnPoints() > 0);
        QTRY_VERIFY(c->series().testLoss().size() >= 1);  // eval_every 50
        QTRY_VERIFY(w->layerModel()->index(0, LayerTableModel::GradAmax).data().toString().toDouble() > 0);
        QVERIFY(hasEvent(c->series(), EventKind::run_started));
        stopAndWait(*w);
        QCOMPARE(c->state(), SessionState::stopped);
    }

    void tablePrecisionChangeAppliesAtTheNextStep() {
        auto w = makeWindow();
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->series().stepCount() >= 10, 20000);
        QCOMPARE(c->series().latestLayers()[0]->precision, ComputeFormat(Format::fp32));

        LayerTableModel* model = w->layerModel();
        const QModelIndex cell = model->index(0, LayerTableModel::Precision);
        QVERIFY(model->flags(cell) & Qt::ItemIsEditable);
        QVERIFY(model->setData(cell, QStringLiteral("fp16"), Qt::EditRole));
        QCOMPARE(model->setting(0), LayerPrecision::fp16);

        std::int64_t changedAt = -1;
        QTRY_VERIFY_WITH_TIMEOUT(hasEvent(c->series(), EventKind::setting_change, &changedAt, "precision.layers.fc1"),
                                 10000);
        QVERIFY(changedAt > 0);
        // The engine's following steps report fp16 for fc1 (and the others stay fp32).
        QTRY_VERIFY_WITH_TIMEOUT(c->series().latestLayers()[0]->step > changedAt + 3, 10000);
        QCOMPARE(c->series().latestLayers()[0]->precision, ComputeFormat(Format::fp16));
        QCOMPARE(c->series().latestLayers()[1]->precision, ComputeFormat(Format::fp32));
        QVERIFY(model->index(0, LayerTableModel::Precision).data().toString().startsWith(QStringLiteral("fp16")));
        // A labelled marker on every chart.
        QCOMPARE(c->series().markers().size(), std::size_t{1});
        QCOMPARE(QString::fromStdString(c->series().markers()[0].label), QStringLiteral("fc1=fp16"));
        w->chartsPanel()->redrawNow(true);
        for (ChartView* chart : w->chartsPanel()->charts()) QCOMPARE(chart->markerCount(), std::size_t{1});
        // The change is kept for the next run and for saving.
        QCOMPARE(w->currentExperiment().precision.layers.at("fc1"), LayerPrecision::fp16);
        const std::int64_t runId = c->runId();
        stopAndWait(*w);

        // The store holds the event at its step and the layer records on either side of it.
        RunStore store(storePath().toStdString(), true);
        bool eventStored = false;
        for (const auto& e : store.events(runId))
            if (e.kind == EventKind::setting_change && e.step == changedAt) eventStored = true;
        QVERIFY(eventStored);
        int before = 0, after = 0;
        for (const auto& r : store.layer_steps(runId)) {
            if (r.layer != 0) continue;
            if (r.step < changedAt) {
                QCOMPARE(r.precision, ComputeFormat(Format::fp32));
                ++before;
            } else {
                QCOMPARE(r.precision, ComputeFormat(Format::fp16));
                ++after;
            }
        }
        QVERIFY(before > 0);
        QVERIFY(after > 0);
    }

    // The combo box's last item opens the per-matmul dialog; what it accepts (a precision per
    // matmul, FP16 accumulation) reaches the running session, the table and the experiment.
    void perMatmulDialogSetsALayer() {
        auto w = makeWindow();
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->series().stepCount() >= 5, 20000);
        QTableView* view = w->layersPanel()->view();
        auto* delegate = qobject_cast<PrecisionDelegate*>(view->itemDelegateForColumn(LayerTableModel::Precision));
        QVERIFY(delegate);
        QStyleOptionViewItem option;
        const QModelIndex cell = w->layerModel()->index(1, LayerTableModel::Precision);
        std::unique_ptr<QWidget> editor(delegate->createEditor(view, option, cell));
        auto* combo = qobject_cast<QComboBox*>(editor.get());
        QVERIFY(combo);
        QCOMPARE(combo->itemText(combo->count() - 1), QStringLiteral("per matmul…"));
        QString opened;  // the forward's setting the dialog opened with
        connect(delegate, &PrecisionDelegate::dialogOpened, this, [&opened](QDialog* d) {
            auto* dialog = static_cast<LayerSettingDialog*>(d);
            opened = dialog->gemmBox(0)->currentText();
            for (int i = 0; i < 3; ++i) dialog->gemmBox(i)->setCurrentIndex(dialog->gemmBox(i)->findText("fp16"));
            dialog->fp16AccumulationBox()->setChecked(true);
            QTimer::singleShot(0, dialog, &QDialog::accept);
        });
        emit combo->activated(combo->count() - 1);  // a pick of "per matmul…"
        QTRY_COMPARE_WITH_TIMEOUT(opened, QStringLiteral("auto"), 5000);
        LayerSetting want = LayerPrecision::fp16;
        want.accumulate = Accumulation::fp16;
        QCOMPARE(w->layerModel()->setting(1), want);
        QCOMPARE(cell.data().toString(), QStringLiteral("fp16, accumulate fp16"));
        QTRY_VERIFY_WITH_TIMEOUT(hasEvent(c->series(), EventKind::setting_change, nullptr, "precision.layers.fc2"),
                                 10000);
        QCOMPARE(w->currentExperiment().precision.layers.at("fc2"), want);
        stopAndWait(*w);
    }

    // The x, W and dy scale columns appear only once some layer is FP8, and then stay for the run.
    void fp8ScaleColumnsOnlyWithAnFp8Layer() {
        auto w = makeWindow();
        QTableView* view = w->layersPanel()->view();
        const auto scaleColumnsHidden = [view](bool hidden) {
            for (int column : {LayerTableModel::XScale, LayerTableModel::WScale, LayerTableModel::DyScale})
                if (view->isColumnHidden(column) != hidden) return false;
            return true;
        };
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->series().stepCount() >= 3, 20000);
        QVERIFY(scaleColumnsHidden(true));
        LayerTableModel* model = w->layerModel();
        QVERIFY(model->setData(model->index(1, LayerTableModel::Precision), QStringLiteral("fp8-e4m3"), Qt::EditRole));
        QVERIFY(scaleColumnsHidden(false));
        // fc2's FP8 steps fill its scales; the other layers' cells stay blank.
        QTRY_VERIFY_WITH_TIMEOUT(!model->index(1, LayerTableModel::XScale).data().toString().isEmpty(), 10000);
        QVERIFY(model->index(0, LayerTableModel::XScale).data().toString().isEmpty());
        QVERIFY(model->setData(model->index(1, LayerTableModel::Precision), QStringLiteral("fp32"), Qt::EditRole));
        QVERIFY(scaleColumnsHidden(false));  // no columns vanishing under the pointer mid-run
        stopAndWait(*w);
    }

    void injectedOverflowSkipsTheStepAndHalvesTheScale() {
        auto w = makeWindow();
        // No growth during the test: on a loaded machine the click can land after step 2000 (the
        // default growth interval), when the scale has doubled since it was read below.
        Experiment e = spirals();
        e.precision.loss_scaling.growth_interval = 1'000'000;
        w->setExperiment(e);
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->series().stepCount() >= 10, 20000);
        const double scale = c->series().lossScale().lastY();
        QCOMPARE(scale, 65536.0);

        auto* layer = w->precisionPanel()->findChild<QComboBox*>(QStringLiteral("injectLayer"));
        auto* inject = w->precisionPanel()->findChild<QPushButton*>(QStringLiteral("injectOverflow"));
        QVERIFY(layer && inject);
        QVERIFY(inject->isEnabled());
        layer->setCurrentIndex(layer->findText(QStringLiteral("fc2")));
        inject->click();

        QTRY_VERIFY_WITH_TIMEOUT(c->series().overflowCount() == 1, 10000);
        const double step = c->series().overflows().x(0);
        QTRY_VERIFY_WITH_TIMEOUT(c->series().lossScale().lastX() >= step + 1, 10000);
        QCOMPARE(c->series().skipped().size(), std::size_t{1});
        QCOMPARE(c->series().skipped().x(0), step);
        QCOMPARE(c->series().lossScale().atOrBefore(step)->y, scale);
        QCOMPARE(c->series().lossScale().atOrBefore(step + 1)->y, scale / 2);
        std::int64_t overflowAt = -1;
        QVERIFY(hasEvent(c->series(), EventKind::overflow, &overflowAt, "fc2"));
        QCOMPARE(double(overflowAt), step);
        stopAndWait(*w);

        // What the loss-scale chart draws: the marker at the step and the halved scale after it.
        ChartsPanel* charts = w->chartsPanel();
        charts->centerOn(static_cast<std::int64_t>(step));
        charts->redrawNow(true);
        QCPGraph* scaleGraph = charts->scaleChart()->graph(0);
        QCPGraph* markers = charts->scaleChart()->graph(1);
        auto valueAt = [](QCPGraph* g, double key) {
            for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
                if (it->key == key) return it->value;
            return qQNaN();
        };
        QCOMPARE(valueAt(markers, step), scale);
        QCOMPARE(valueAt(scaleGraph, step), scale);
        QCOMPARE(valueAt(scaleGraph, step + 1), scale / 2);
    }

    void liveSettingsBecomeEvents_data() {
        QTest::addColumn<QString>("assignment");
        QTest::addColumn<QString>("key");
        QTest::newRow("autocast") << "precision.autocast=bf16" << "precision.autocast";
        QTest::newRow("master weights") << "precision.master_weights=false" << "precision.master_weights";
        QTest::newRow("scaling") << "precision.loss_scaling.mode=off" << "precision.loss_scaling.mode";
        QTest::newRow("layer") << "precision.layers.fc2=bf16" << "precision.layers.fc2";
        QTest::newRow("learning rate") << "train.lr=0.01" << "train.lr";
        QTest::newRow("weight rounding") << "precision.rounding.weights=kahan" << "precision.rounding.weights";
        QTest::newRow("gradient rounding") << "precision.rounding.gradients=stochastic"
                                           << "precision.rounding.gradients";
        QTest::newRow("fp16 accumulation")
            << R"(precision.layers.fc2={"forward":"fp16","dgrad":"fp16","wgrad":"fp16","accumulate":"fp16"})"
            << "precision.layers.fc2";
    }
    void liveSettingsBecomeEvents() {
        QFETCH(QString, assignment);
        QFETCH(QString, key);
        auto w = makeWindow();
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->series().stepCount() >= 3, 20000);
        w->applyLiveSetting(assignment.toStdString());
        QTRY_VERIFY_WITH_TIMEOUT(hasEvent(c->series(), EventKind::setting_change, nullptr,
                                          "\"key\":\"" + key.toStdString() + "\""),
                                 10000);
        // The panels show what is in effect, so a save keeps it.
        Experiment expected = spirals();
        apply_setting(expected, assignment.toStdString());
        const Experiment now = w->currentExperiment();
        QCOMPARE(experiment_to_json(now).dump(), experiment_to_json(expected).dump());
        // What cannot change during a run is refused with a sentence, and the run goes on.
        QVERIFY_THROWS_EXCEPTION(mantissa::Error, w->applyLiveSetting("model.hidden=[8]"));
        QVERIFY_THROWS_EXCEPTION(mantissa::Error, w->applyLiveSetting("inject=fc9"));
        QVERIFY(c->active());
        stopAndWait(*w);
    }

    void pauseAndResume() {
        auto w = makeWindow();
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->series().stepCount() >= 5, 20000);
        c->togglePause();
        QTRY_COMPARE_WITH_TIMEOUT(c->state(), SessionState::paused, 5000);
        QTest::qWait(100);
        c->drainNow();
        const std::int64_t pausedAt = c->series().stepCount();
        QTest::qWait(300);
        c->drainNow();
        QCOMPARE(c->series().stepCount(), pausedAt);
        QVERIFY(hasEvent(c->series(), EventKind::paused));
        c->togglePause();
        QTRY_COMPARE_WITH_TIMEOUT(c->state(), SessionState::running, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(c->series().stepCount() > pausedAt + 5, 10000);
        QVERIFY(hasEvent(c->series(), EventKind::resumed));
        // Stop works from a pause too.
        c->togglePause();
        QTRY_COMPARE_WITH_TIMEOUT(c->state(), SessionState::paused, 5000);
        stopAndWait(*w);
        QCOMPARE(c->state(), SessionState::stopped);
    }

    void closingDuringARunRecordsItStopped() {
        auto w = makeWindow();
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QTRY_VERIFY_WITH_TIMEOUT(c->series().stepCount() >= 5, 20000);
        const std::int64_t runId = c->runId();
        QVERIFY(runId >= 0);
        QElapsedTimer clock;
        clock.start();
        QVERIFY(w->close());
        const qint64 ms = clock.elapsed();
        QVERIFY2(ms < 1000, qPrintable(QStringLiteral("closing took %1 ms").arg(ms)));
        QVERIFY(!c->active());
        RunStore store(storePath().toStdString(), true);
        const RunRow row = store.run(runId);
        QCOMPARE(row.status, RunStatus::stopped);
        QVERIFY(row.steps >= 5);
        QVERIFY(!row.finished_at.empty());
    }

    void destroyingTheWindowDuringARunRecordsItStopped() {
        auto w = makeWindow();
        QVERIFY(w->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(w->controller()->series().stepCount() >= 3, 20000);
        const std::int64_t runId = w->controller()->runId();
        w.reset();
        RunStore store(storePath().toStdString(), true);
        QCOMPARE(store.run(runId).status, RunStatus::stopped);
    }

    void errorsAreMessagesAndTheWindowKeepsWorking() {
        auto w = makeWindow();
        // A bad experiment file.
        const QString bad = m_dir.filePath(QStringLiteral("bad.json"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"train": {"batch_size": "many"}})");
        f.close();
        QVERIFY(!w->openExperiment(bad));
        QVERIFY2(w->lastError().contains(QStringLiteral("batch_size")), qPrintable(w->lastError()));
        QCOMPARE(w->currentExperiment().dataset.kind, std::string("spirals"));  // the form is unchanged
        // A missing dataset.
        Experiment missing = spirals();
        missing.dataset.kind = "csv";
        missing.dataset.path = m_dir.filePath(QStringLiteral("no-such.csv")).toStdString();
        w->setExperiment(missing);
        QVERIFY(!w->startRun());
        QVERIFY2(w->lastError().contains(QStringLiteral("no-such.csv")), qPrintable(w->lastError()));
        QVERIFY(!w->controller()->active());
        // The window still runs a good experiment, and saves and reopens it.
        w->setExperiment(spirals());
        const QString good = m_dir.filePath(QStringLiteral("good.json"));
        QVERIFY(w->saveExperiment(good));
        QVERIFY(w->openExperiment(good));
        QCOMPARE(w->currentExperiment().model.hidden, (std::vector<int>{32, 32}));
        QVERIFY(w->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(w->controller()->series().stepCount() >= 3, 20000);
        stopAndWait(*w);
    }

    // Save experiment never writes over a checkpoint, a named pipe or an SQLite database: the
    // sentence store/output_guard.h gives (the file's name first) is the window's error, the file
    // is left as it was, and the window goes on saving elsewhere.
    void saveRefusesFilesNoOutputMayReplace_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("says");
        QTest::newRow("checkpoint") << "checkpoint" << "holds a Mantissa checkpoint, which is never overwritten";
        QTest::newRow("named pipe") << "fifo" << "is a named pipe (FIFO)";
        QTest::newRow("SQLite database") << "sqlite" << "is an SQLite database, which is never overwritten";
    }
    void saveRefusesFilesNoOutputMayReplace() {
        QFETCH(QString, kind);
        QFETCH(QString, says);
        auto w = makeWindow();
        const QString target = m_dir.filePath(QStringLiteral("save-over-%1.json").arg(kind));
        QFile::remove(target);
        if (kind == QLatin1String("checkpoint")) {
            test::write_checkpoint_like_file(target.toStdString());
        } else if (kind == QLatin1String("fifo")) {
            QCOMPARE(::mkfifo(QFile::encodeName(target).constData(), 0600), 0);
        } else {
            RunStore store(target.toStdString());
        }
        QFile before(target);
        const QByteArray bytes = kind == QLatin1String("fifo") || !before.open(QIODevice::ReadOnly) ? QByteArray()
                                                                                                   : before.readAll();
        before.close();

        QVERIFY(!w->saveExperiment(target));
        QVERIFY2(w->lastError().startsWith(target + QLatin1Char(' ')) && w->lastError().contains(says),
                 qPrintable(w->lastError()));
        struct stat st {};
        QCOMPARE(::lstat(QFile::encodeName(target).constData(), &st), 0);
        if (kind == QLatin1String("fifo")) {
            QVERIFY(S_ISFIFO(st.st_mode));
        } else {
            QFile after(target);
            QVERIFY(after.open(QIODevice::ReadOnly));
            QCOMPARE(after.readAll(), bytes);
        }
        QVERIFY(!QFile::exists(target + QStringLiteral(".partial")));
        QVERIFY(w->saveExperiment(m_dir.filePath(QStringLiteral("save-elsewhere.json"))));
    }

    // Saving to a symbolic link replaces the file it names and keeps the link.
    void saveWritesThroughASymbolicLink() {
        auto w = makeWindow();
        const QString real = m_dir.filePath(QStringLiteral("linked-experiment.json"));
        const QString link = m_dir.filePath(QStringLiteral("experiment-link.json"));
        QVERIFY(test::link_to_older_file(real, link, "{}\n"));
        QVERIFY(w->saveExperiment(link));
        QVERIFY(QFileInfo(link).isSymLink());
        QCOMPARE(load_experiment(real.toStdString()).name, w->currentExperiment().name);
    }

    void unopenableStoreStillTrains() {
        MainWindow::Options o;
        o.storePath = m_dir.filePath(QStringLiteral("bad.json/runs.sqlite"));  // a file used as a folder
        o.useSettings = false;
        QFile(m_dir.filePath(QStringLiteral("bad.json"))).open(QIODevice::WriteOnly | QIODevice::Append);
        MainWindow w(o);
        w.setExperiment(spirals());
        w.show();
        QVERIFY(w.startRun());
        QVERIFY(w.noticeBar()->isVisible());
        QVERIFY2(w.noticeBar()->text().contains(QStringLiteral("not be recorded")), qPrintable(w.noticeBar()->text()));
        QCOMPARE(w.controller()->runId(), std::int64_t{-1});
        QTRY_VERIFY_WITH_TIMEOUT(w.controller()->series().stepCount() >= 3, 20000);
        stopAndWait(w);
    }

    void remembersTheLastExperiment() {
        const MainWindow::Options o = rememberingOptions();
        {
            MainWindow w(o);
            Experiment e = spirals();
            e.name = "remember-me";
            e.precision.autocast = Autocast::bf16;
            w.setExperiment(e);
            w.show();
            QVERIFY(w.close());
        }
        MainWindow again(o);
        QCOMPARE(again.currentExperiment().name, std::string("remember-me"));
        QCOMPARE(again.currentExperiment().precision.autocast, Autocast::bf16);
    }

    // A window closed narrow, its forms tabbed by the layout, and opened wide gets its two sides
    // back.
    void narrowTabsUndoneWhenReopenedWide() {
        const MainWindow::Options o = rememberingOptions();
        {
            MainWindow w(o);
            w.resize(1024, 700);
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            QTRY_VERIFY(w.tabifiedDockWidgets(w.experimentDock()).contains(w.precisionDock()));
            QVERIFY(w.close());
        }
        QSettings settings;
        settings.setValue(QStringLiteral("window/geometry"), QByteArray());  // opened at the size below
        MainWindow again(o);
        QVERIFY(again.tabifiedDockWidgets(again.experimentDock()).contains(again.precisionDock()));  // as left
        again.resize(1600, 1000);
        again.show();
        QVERIFY(QTest::qWaitForWindowExposed(&again));
        QTRY_COMPARE(again.dockWidgetArea(again.precisionDock()), Qt::RightDockWidgetArea);
        QVERIFY(!again.tabifiedDockWidgets(again.experimentDock()).contains(again.precisionDock()));
        QVERIFY(again.close());
    }

    // Opening another experiment after a run clears the run's charts, table and events, and the
    // table shows the new experiment's layers and precisions before Start.
    void openingAnExperimentClearsTheLastRun() {
        auto w = makeWindow();
        QVERIFY(w->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(w->controller()->series().stepCount() >= 20, 60000);
        stopAndWait(*w);
        w->refreshViews();
        QVERIFY(w->eventsPanel()->view()->model()->rowCount() > 0);
        QVERIFY(w->chartsPanel()->lossChart()->drawnPoints() > 0);

        Experiment next = spirals();
        next.name = "next";
        next.model.hidden = {24};
        next.precision.autocast = Autocast::bf16;
        next.precision.layers = {{"fc2", LayerPrecision::fp32}};
        const QString path = m_dir.filePath(QStringLiteral("next.json"));
        save_experiment(next, path.toStdString());
        QVERIFY(w->openExperiment(path));
        QCOMPARE(w->controller()->series().stepCount(), std::int64_t{0});
        QCOMPARE(w->eventsPanel()->view()->model()->rowCount(), 0);
        w->chartsPanel()->redrawNow(true);
        QCOMPARE(w->chartsPanel()->lossChart()->drawnPoints(), std::size_t{0});
        QVERIFY(w->layerModel()->showsPlan());
        QCOMPARE(columnTexts(*w, LayerTableModel::Name), (QStringList{"fc1", "fc2"}));
        QCOMPARE(columnTexts(*w, LayerTableModel::Shape), (QStringList{"2 → 24", "24 → 3"}));
        QCOMPARE(columnTexts(*w, LayerTableModel::Precision), (QStringList{"auto → bf16", "fp32"}));
        QCOMPARE(columnTexts(*w, LayerTableModel::Memory), (QStringList{"144 B", "300 B"}));
        // The form's edits before Start follow: autocast, a layer, the widths.
        w->setExperiment([&] {
            Experiment e = next;
            e.model.hidden = {8, 8};
            e.precision.autocast = Autocast::fp16;
            return e;
        }());
        QCOMPARE(columnTexts(*w, LayerTableModel::Precision), (QStringList{"auto → fp16", "fp32", "auto → fp16"}));
        auto* autocast = w->precisionPanel()->findChild<QComboBox*>(QStringLiteral("autocast"));
        autocast->setCurrentIndex(autocast->findText(QStringLiteral("bf16")));
        emit autocast->activated(autocast->currentIndex());  // as a person's pick
        QCOMPARE(cell(*w, 2, LayerTableModel::Precision), QStringLiteral("auto → bf16"));
        QVERIFY(w->layerModel()->setData(w->layerModel()->index(0, LayerTableModel::Precision), QStringLiteral("fp8-e4m3")));
        QCOMPARE(w->currentExperiment().precision.layers.at("fc1"), LayerPrecision::fp8_e4m3);
        QCOMPARE(cell(*w, 0, LayerTableModel::Precision), QStringLiteral("fp8-e4m3"));
        QVERIFY(!w->layersPanel()->view()->isColumnHidden(LayerTableModel::XScale));
        // Start: the run's layers are the ones shown.
        QVERIFY(w->startRun());
        QVERIFY(!w->layerModel()->showsPlan());
        QCOMPARE(columnTexts(*w, LayerTableModel::Shape), (QStringList{"2 → 8", "8 → 8", "8 → 3"}));
        stopAndWait(*w);
    }

    // The plan shown before Start is what the run then builds, dataset kind by kind; where only
    // the data can tell a width (a CSV file), it says "?".
    void planAgreesWithTheRun_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("classes");
        QTest::newRow("spirals") << "spirals" << 3;
        QTest::newRow("blobs, 5 classes") << "blobs" << 5;
        QTest::newRow("sine") << "sine" << 0;
        QTest::newRow("fashion-mnist missing") << "fashion-mnist" << 4;
        QTest::newRow("csv") << "csv" << 0;
    }
    void planAgreesWithTheRun() {
        QFETCH(QString, kind);
        QFETCH(int, classes);
        auto w = makeWindow();
        Experiment e = spirals();
        e.dataset.kind = kind.toStdString();
        if (classes > 0) e.dataset.classes = classes;
        if (kind == QLatin1String("fashion-mnist")) e.dataset.path = m_dir.filePath(QStringLiteral("no-such-folder")).toStdString();
        if (kind == QLatin1String("csv")) {
            const QString csv = m_dir.filePath(QStringLiteral("table.csv"));
            QFile f(csv);
            QVERIFY(f.open(QIODevice::WriteOnly));
            for (int i = 0; i < 60; ++i) f.write(QStringLiteral("%1,%2,%3,%4\n").arg(i * 0.1).arg(i % 7).arg(-i).arg(i % 2).toUtf8());
            f.close();
            e.dataset.path = csv.toStdString();
        }
        w->setExperiment(e);
        const QStringList planned = columnTexts(*w, LayerTableModel::Shape);
        const QStringList params = columnTexts(*w, LayerTableModel::Parameters);
        QCOMPARE(planned.size(), 3);
        QCOMPARE(w->experimentPanel()->datasetNote().contains(QStringLiteral("spirals")),
                 kind == QLatin1String("fashion-mnist"));
        QVERIFY(w->startRun());
        const QStringList built = columnTexts(*w, LayerTableModel::Shape);
        stopAndWait(*w);
        if (kind == QLatin1String("csv")) {
            QCOMPARE(planned, (QStringList{"? → 32", "32 → 32", "32 → ?"}));
            QCOMPARE(params.first(), QStringLiteral("—"));
            QCOMPARE(built, (QStringList{"3 → 32", "32 → 32", "32 → 2"}));
        } else {
            QCOMPARE(planned, built);
            QCOMPARE(params, columnTexts(*w, LayerTableModel::Parameters));
        }
    }

    // The plan's Memory column is the run's: under bf16 autocast a layer norm, the embeddings and
    // the layers without a precision setting keep FP32 (the plan counted them in bf16). Rows whose
    // size only the data tells (the vocabulary's) are "—" in the plan. Its shapes are the run's
    // too, but for the vocabulary, "?" in the plan: the token table is described as vocabulary →
    // width (the shape of its vocab × width parameters, Layer::described_input_shape), and the
    // head as width → vocabulary.
    void plannedShapesAndMemoryAreTheRuns() {
        QFile corpus(m_dir.filePath(QStringLiteral("plan-corpus.txt")));
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        for (int i = 0; i < 60; ++i) corpus.write("sphinx of black quartz, judge my vow\n");
        corpus.close();
        auto w = makeWindow();
        Experiment e = test::tiny_gpt_experiment(corpus.fileName().toStdString());
        e.train.batch_size = 2;
        e.train.steps = 100'000;  // stopped once the layers have reported
        e.precision.autocast = Autocast::bf16;
        auto* inject = w->precisionPanel()->findChild<QComboBox*>(QStringLiteral("injectLayer"));
        QVERIFY(inject);
        w->setExperiment(spirals());
        QCOMPARE(inject->itemText(0), QStringLiteral("fc1"));
        w->setExperiment(e);
        QCOMPARE(inject->itemText(0), QStringLiteral("wte"));  // the model shown, not the one before
        QVERIFY(!inject->isEnabled());
        const QStringList names = columnTexts(*w, LayerTableModel::Name);
        const QStringList planned = columnTexts(*w, LayerTableModel::Memory);
        const QStringList plannedShapes = columnTexts(*w, LayerTableModel::Shape);
        const QStringList plannedParameters = columnTexts(*w, LayerTableModel::Parameters);
        QVERIFY(w->startRun());
        const int wpe = names.indexOf(QStringLiteral("wpe"));
        QTRY_VERIFY_WITH_TIMEOUT(columnTexts(*w, LayerTableModel::Memory)[wpe] != QStringLiteral("—"), 30000);
        const QStringList built = columnTexts(*w, LayerTableModel::Memory);
        const QStringList builtShapes = columnTexts(*w, LayerTableModel::Shape);
        const QStringList builtParameters = columnTexts(*w, LayerTableModel::Parameters);
        stopAndWait(*w);
        QCOMPARE(columnTexts(*w, LayerTableModel::Name), names);
        const int wte = names.indexOf(QStringLiteral("wte"));
        QCOMPARE(plannedShapes[wte], QStringLiteral("? → 16"));
        QCOMPARE(plannedParameters[wte], QStringLiteral("—"));  // a row per token of the vocabulary
        QCOMPARE(plannedShapes.filter(QStringLiteral("?")),
                 (QStringList{QStringLiteral("? → 16"), QStringLiteral("16 → ?")}));  // wte, the head
        const qlonglong vocab = QLocale().toLongLong(builtParameters[wte]) / 16;
        QVERIFY(vocab > 1);
        QCOMPARE(builtShapes[wte], QStringLiteral("%1 → 16").arg(vocab));  // not "1 → 16": one id of vocab
        for (int r = 0; r < names.size(); ++r) {
            if (!plannedShapes[r].contains(QLatin1Char('?')))
                QCOMPARE(names[r] + ": " + plannedShapes[r], names[r] + ": " + builtShapes[r]);
            if (plannedParameters[r] != QStringLiteral("—"))
                QCOMPARE(names[r] + ": " + plannedParameters[r], names[r] + ": " + builtParameters[r]);
        }
        int compared = 0;
        for (int r = 0; r < names.size(); ++r) {
            if (planned[r] == QStringLiteral("—")) continue;
            QCOMPARE(names[r] + ": " + planned[r], names[r] + ": " + built[r]);
            ++compared;
        }
        QVERIFY(compared >= 6);
        QCOMPARE(planned[names.indexOf(QStringLiteral("blocks.0.ln1"))], QStringLiteral("128 B"));  // 32 values in FP32
        QCOMPARE(planned[names.indexOf(QStringLiteral("wpe"))], QStringLiteral("1.00 KiB"));        // 16×16 in FP32
    }

    // A missing dataset folder: the run trains on spirals and the banner says so, the whole
    // sentence, as a warning; the Experiment panel says it before Start.
    void datasetFallbackIsAWarningInTheBanner() {
        auto w = makeWindow();
        Experiment e = spirals();
        e.dataset.kind = "fashion-mnist";
        e.dataset.path = m_dir.filePath(QStringLiteral("nowhere")).toStdString();
        w->setExperiment(e);
        QVERIFY(w->experimentPanel()->findChild<QLabel*>(QStringLiteral("datasetNote"))->isVisibleTo(w.get()));
        QVERIFY2(w->experimentPanel()->datasetNote().contains(QStringLiteral("was not found")),
                 qPrintable(w->experimentPanel()->datasetNote()));
        QVERIFY(w->startRun());
        const std::vector<std::string> notices = w->controller()->session()->notices();
        QCOMPARE(notices.size(), std::size_t{1});
        QVERIFY(w->noticeBar()->isVisible());
        QCOMPARE(w->noticeBar()->level(), NoticeBar::Level::warning);
        QCOMPARE(w->noticeBar()->text(), QString::fromStdString(notices[0]).toHtmlEscaped());
        QVERIFY(w->noticeBar()->text().contains(QStringLiteral("apt-get install")));  // to its end
        stopAndWait(*w);
    }

    // Without --config and nothing remembered, the window shows resources/experiments/default.json,
    // as ./mantissa.sh run opens it, not the engine's bare defaults.
    void defaultExperiment() {
        MainWindow::Options o;
        o.storePath = storePath();
        o.useSettings = false;
        MainWindow w(o);
        QVERIFY(!w.restoredExperiment());
        QCOMPARE(w.currentExperiment().precision.autocast, Autocast::off);  // the engine's, until then
        QVERIFY(w.showDefaultExperiment());
        const Experiment expected = load_experiment(
            (qEnvironmentVariable("MANTISSA_SOURCE_DIR") + QStringLiteral("/resources/experiments/default.json")).toStdString());
        QCOMPARE(experiment_to_json(w.currentExperiment()).dump(), experiment_to_json(expected).dump());
        QCOMPARE(w.currentExperiment().precision.autocast, Autocast::fp16);
        QCOMPARE(columnTexts(w, LayerTableModel::Name).size(), 3);
        QCOMPARE(cell(w, 2, LayerTableModel::Precision), QStringLiteral("fp32"));
    }

    // The FP8 scaling combo speaks the file's and the events' words; each number column one style.
    void oneVocabularyAndOneNumberStyle() {
        auto w = makeWindow();
        auto* fp8 = w->precisionPanel()->findChild<QComboBox*>(QStringLiteral("fp8Scaling"));
        QVERIFY(fp8);
        QCOMPARE(fp8->itemText(0), QStringLiteral("delayed (per tensor)"));
        QCOMPARE(fp8->itemText(1), QStringLiteral("none (scale 1)"));
        QCOMPARE(fp8->itemText(2), QStringLiteral("current (this step's amax)"));
        QCOMPARE(fp8->itemText(3), QStringLiteral("rowwise (a scale per row)"));
        for (int i = 0; i < fp8->count(); ++i)
            QVERIFY(fp8->itemText(i).startsWith(QLatin1String(fp8_scaling_name(static_cast<Fp8Scaling>(fp8->itemData(i).toInt())))));
        auto* weights = w->precisionPanel()->findChild<QComboBox*>(QStringLiteral("weightRounding"));
        auto* gradients = w->precisionPanel()->findChild<QComboBox*>(QStringLiteral("gradientRounding"));
        QVERIFY(weights && gradients);
        QCOMPARE(weights->count(), 3);
        for (int i = 0; i < weights->count(); ++i)
            QCOMPARE(weights->itemText(i),
                     QLatin1String(weight_rounding_name(static_cast<WeightRounding>(weights->itemData(i).toInt()))));
        QCOMPARE(gradients->itemText(1), QStringLiteral("stochastic"));
        QCOMPARE(formatScale(8), QStringLiteral("2^3"));
        QCOMPARE(formatScale(1), QStringLiteral("2^0"));
        QCOMPARE(formatScale(0.125), QStringLiteral("2^-3"));
        QCOMPARE(formatScale(222), QStringLiteral("2^7.8"));
        QCOMPARE(formatScale(2.1e8), QStringLiteral("2^27.6"));
        QCOMPARE(formatScale(0.7), QStringLiteral("2^-0.5"));
        QCOMPARE(formatAmax(1.234e-5), QStringLiteral("1.23e-5"));
        QCOMPARE(formatAmax(4), QStringLiteral("4.00e0"));
        QCOMPARE(formatAmax(123.4), QStringLiteral("1.23e2"));
    }

    // The backend's CPU threads (backend.threads): 0 shows as "auto", a count round-trips (one
    // above this machine's threads too), the CUDA backend disables it, and a run on the CPU takes it.
    void cpuThreadsSetting() {
        auto w = makeWindow();
        ExperimentPanel* panel = w->experimentPanel();
        auto* threads = panel->findChild<QSpinBox*>(QStringLiteral("cpuThreads"));
        QVERIFY(threads);
        QCOMPARE(threads->value(), 0);
        QCOMPARE(threads->text(), QStringLiteral("auto"));
        QVERIFY(threads->toolTip().contains(QStringLiteral("but one")));
        QVERIFY(threads->isEnabled());

        Experiment e = spirals();
        e.backend = "cpu";
        e.threads = 1024;
        w->setExperiment(e);
        QCOMPARE(threads->value(), 1024);
        QCOMPARE(w->currentExperiment().threads, 1024);
        threads->setValue(0);
        QCOMPARE(w->currentExperiment().threads, 0);
        threads->setValue(1);
        QCOMPARE(w->currentExperiment().threads, 1);
        QCOMPARE(experiment_to_json(w->currentExperiment())["backend"]["threads"].get<int>(), 1);

        QVERIFY(w->startRun());
        QVERIFY(!threads->isEnabled());  // a setting of the next run, not of this one
        const std::string device = w->controller()->session()->device_name();
        QVERIFY2(device.find("(1 thread, ") != std::string::npos, device.c_str());
        stopAndWait(*w);
        QVERIFY(threads->isEnabled());

        e.backend = "cuda";
        e.threads = 0;
        w->setExperiment(e);
        QVERIFY(!threads->isEnabled());
        e.backend = "auto";  // the CPU when no GPU is usable
        w->setExperiment(e);
        QVERIFY(threads->isEnabled());
    }

    // The form shows a file's values without changing them: a seed of 64 bits, steps beyond 2^31,
    // epochs 0 beside steps, a GPU index above 63 and a learning rate of many digits come back
    // exactly (a form that clamped them started another run than the file's, and Save wrote it).
    void formKeepsEveryValueOfTheFile() {
        auto w = makeWindow();
        Experiment e = spirals();
        e.train.seed = 18446744073709551615ull;
        e.train.steps = 999'999'999'999;
        e.train.epochs = 0;
        e.device = 200;
        e.train.lr = 0.0012345678901234;
        w->setExperiment(e);
        const Experiment shown = w->currentExperiment();
        QCOMPARE(shown.train.seed, e.train.seed);
        QCOMPARE(shown.train.steps, e.train.steps);
        QCOMPARE(shown.train.epochs, 0);
        QCOMPARE(shown.device, 200);
        QCOMPARE(shown.train.lr, e.train.lr);
        QCOMPARE(experiment_to_json(shown).dump(), experiment_to_json(e).dump());

        // Edited, they are the user's: a seed typed, one beyond 64 bits put back on leaving the field.
        auto* seed = qobject_cast<QLineEdit*>(w->experimentPanel()->findChild<QLineEdit*>(QStringLiteral("seed")));
        QVERIFY(seed);
        seed->setText(QStringLiteral("5000000001"));
        QCOMPARE(w->currentExperiment().train.seed, std::uint64_t{5000000001});
        seed->setText(QStringLiteral("18446744073709551616"));
        QCOMPARE(w->currentExperiment().train.seed, e.train.seed);  // not a seed: the file's stays
        QMetaObject::invokeMethod(seed, "editingFinished");
        QCOMPARE(seed->text(), QStringLiteral("18446744073709551615"));
    }

    // A 1024x700 window: the charts keep a readable height and scroll rather than shrink to a
    // sliver, the Layers table shows at least three rows and its columns, and the gradient
    // histogram keeps a usable height when its tab is raised.
    void smallWindowLayout() {
        auto w = makeWindow();
        w->resize(1024, 700);
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QTest::qWait(200);  // the docks settle over a few layouts
        w->chartsPanel()->redrawNow(true);
        QTest::qWait(100);
        for (ChartView* chart : w->chartsPanel()->charts()) {
            if (!chart->isVisibleTo(w.get())) continue;
            QVERIFY2(chart->height() >= 120, qPrintable(QStringLiteral("a chart is %1 px tall").arg(chart->height())));
        }
        QTableView* table = w->layersPanel()->view();
        const int rowHeight = table->verticalHeader()->sectionSize(0);
        QVERIFY(rowHeight > 0);
        const int rows = table->viewport()->height() / rowHeight;
        QVERIFY2(rows >= 3, qPrintable(QStringLiteral("%1 rows visible (viewport %2 px, rows %3 px)")
                                           .arg(rows).arg(table->viewport()->height()).arg(rowHeight)));
        // Every column the table shows fits its width.
        int columns = 0;
        for (int c = 0; c < LayerTableModel::ColumnCount; ++c)
            if (!table->isColumnHidden(c)) columns += table->columnWidth(c);
        QVERIFY2(columns <= table->viewport()->width(),
                 qPrintable(QStringLiteral("columns %1 px in %2 px").arg(columns).arg(table->viewport()->width())));
        // The histogram's tab, raised.
        w->histogramDock()->show();
        w->histogramDock()->raise();
        QTest::qWait(200);
        QTRY_VERIFY2(w->histogramView()->height() >= GradientHistogramView::usableHeight,
                     qPrintable(QStringLiteral("the histogram is %1 px tall").arg(w->histogramView()->height())));
        QCOMPARE(w->width(), 1024);  // nothing in the bottom docks made the window wider
        // Back to the events: the bottom docks return to their height, the charts get it back.
        w->eventsDock()->raise();
        QTRY_VERIFY(w->layersDock()->height() < GradientHistogramView::usableHeight);
        // Floated, the histogram is a usable window of its own.
        w->histogramDock()->setFloating(true);
        QTRY_VERIFY(w->histogramDock()->height() >= GradientHistogramView::usableHeight &&
                    w->histogramDock()->width() >= GradientHistogramView::usableWidth);
    }

    // A transformer's Layers table (Kind and Format (why) columns) is wider than a 1024 px window
    // can give it: it scrolls sideways in its share (DockLayout::scrollingLayersShare) rather than
    // taking 70 % of the width, so the events (and the sample, their tab) keep a readable width, and the columns that
    // name each op (Layer to Precision) stay whole in view.
    void transformerLayersDockLeavesTheSampleItsWidth() {
        QFile corpus(m_dir.filePath(QStringLiteral("share-corpus.txt")));
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        for (int i = 0; i < 60; ++i) corpus.write("sphinx of black quartz, judge my vow\n");
        corpus.close();
        Experiment e = test::tiny_gpt_experiment(corpus.fileName().toStdString());
        e.model.depth = 2;
        e.precision.autocast = Autocast::bf16;
        auto w = window_test::openWindow(m_dir, {1024, 768});
        w->setExperiment(e);
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QTest::qWait(200);  // the docks settle over a few layouts
        QTableView* table = w->layersPanel()->view();
        QVERIFY(!table->isColumnHidden(LayerTableModel::FormatWhy));
        const auto say = [&] {
            return QStringLiteral("Layers dock %1 px, events %2 px of %3")
                .arg(w->layersDock()->width()).arg(w->eventsDock()->width()).arg(w->width());
        };
        QTRY_VERIFY2(w->layersDock()->width() <= w->width() * 6 / 10, qPrintable(say()));
        QVERIFY2(w->eventsDock()->width() >= w->width() * 4 / 10, qPrintable(say()));
        int named = 0;
        for (int c = 0; c <= LayerTableModel::Precision; ++c)
            if (!table->isColumnHidden(c)) named += table->columnWidth(c);
        QVERIFY2(named <= table->viewport()->width(),
                 qPrintable(QStringLiteral("Layer to Precision %1 px in %2 px").arg(named).arg(table->viewport()->width())));
        QVERIFY(table->horizontalScrollBar()->maximum() > 0);  // the rest scrolls into view
    }

    // A first window (nothing remembered) fits the screen it opens on, however small: its status
    // bar and bottom docks are on it. A geometry remembered from a larger screen is brought in too.
    void firstWindowFitsTheScreen() {
        MainWindow::Options o;
        o.storePath = storePath();
        o.useSettings = false;
        MainWindow w(o);
        QVERIFY(w.screen());
        const QRect room = w.screen()->availableGeometry();
        QVERIFY2(room.width() < 1500 || room.height() < 950, "the test needs a screen smaller than 1500x950");
        QVERIFY2(w.width() <= room.width() && w.height() <= room.height(),
                 qPrintable(QStringLiteral("a %1x%2 window on a %3x%4 screen")
                                .arg(w.width()).arg(w.height()).arg(room.width()).arg(room.height())));

        const MainWindow::Options remembering = rememberingOptions();
        {
            MainWindow big(remembering);
            big.resize(room.width() + 700, room.height() + 400);
            big.move(room.topLeft() + QPoint(300, 200));
            big.show();
            QVERIFY(QTest::qWaitForWindowExposed(&big));
            QVERIFY(big.close());
        }
        MainWindow again(remembering);
        again.show();
        QVERIFY(QTest::qWaitForWindowExposed(&again));
        QTRY_VERIFY2(room.contains(again.frameGeometry()),
                     qPrintable(QStringLiteral("restored at %1,%2, %3x%4 with its frame")
                                    .arg(again.x()).arg(again.y())
                                    .arg(again.frameGeometry().width()).arg(again.frameGeometry().height())));
        QVERIFY(again.close());
    }

    // At 1024x700 the Layers dock gets the width its columns need, and keeps it when a run starts
    // (the What-if tab behind the events, filled by the run, once took 170 px of it), follows
    // them when they widen (the FP8 scale columns), and a per-matmul setting's long text is elided
    // in a Precision column of bounded width, so Lost updates stays in view.
    void layersDockKeepsItsColumnsWhenARunStarts() {
        auto w = makeWindow();
        w->resize(1024, 700);
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QTableView* table = w->layersPanel()->view();
        const auto columnsUpTo = [table](int last) {
            int width = 0;
            for (int c = 0; c <= last; ++c)
                if (!table->isColumnHidden(c)) width += table->columnWidth(c);
            return width;
        };
        const auto fits = [&](int last) { return columnsUpTo(last) <= table->viewport()->width(); };
        const auto say = [&](int last) {
            return QStringLiteral("columns %1 px in %2 px (dock %3 px)")
                .arg(columnsUpTo(last)).arg(table->viewport()->width()).arg(w->layersDock()->width());
        };
        QTRY_VERIFY2(fits(LayerTableModel::ColumnCount - 1), qPrintable(say(LayerTableModel::ColumnCount - 1)));
        QVERIFY(w->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(w->controller()->series().stepCount() >= 20, 60000);
        QTRY_VERIFY_WITH_TIMEOUT(!w->whatIfPanel()->showsEmptyState(), 30000);  // the tab that grew has its content
        w->refreshViews();
        QTest::qWait(200);
        QVERIFY2(fits(LayerTableModel::ColumnCount - 1), qPrintable(say(LayerTableModel::ColumnCount - 1)));

        // fc2 per matmul, in FP8 forward: a long Precision text and three more columns.
        LayerSetting wide;
        wide.forward = LayerPrecision::fp8_e4m3;
        wide.dgrad = LayerPrecision::fp8_e4m3;
        wide.wgrad = LayerPrecision::bf16;
        QVERIFY(w->layerModel()->setData(w->layerModel()->index(1, LayerTableModel::Precision),
                                         QVariant::fromValue(wide), LayerTableModel::SettingRole));
        QTRY_VERIFY_WITH_TIMEOUT(!table->isColumnHidden(LayerTableModel::XScale), 5000);
        QTest::qWait(200);
        QVERIFY(table->columnWidth(LayerTableModel::Precision) <= w->layersPanel()->precisionColumnWidth());
        QVERIFY(QFontMetrics(table->font()).horizontalAdvance(w->layerModel()->index(1, LayerTableModel::Precision).data().toString()) >
                table->columnWidth(LayerTableModel::Precision));  // elided: the tooltip has it whole
        QTRY_VERIFY2(fits(LayerTableModel::LostUpdates), qPrintable(say(LayerTableModel::LostUpdates)));
        QVERIFY(w->layersDock()->width() <= w->width() * 7 / 10 + 2);  // the events keep the rest
        stopAndWait(*w);
    }

    // A numeric cell is never cut mid-value ("6.77e-" for 6.77e-05), however small the window: its
    // column is as wide as its widest text once the run's figures arrive (not as the "—" it had
    // before); a text column (Precision) takes the squeeze, elided, and the rest scrolls.
    void numericColumnsAreNeverCut() {
        auto w = makeWindow();
        w->resize(1024, 700);
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QTableView* table = w->layersPanel()->view();
        QVERIFY(w->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(w->controller()->series().stepCount() >= 20, 60000);
        w->refreshViews();
        QTest::qWait(300);
        const QFontMetrics fm(table->font());
        int checked = 0;
        for (int column : {int(LayerTableModel::Shape), int(LayerTableModel::Parameters), int(LayerTableModel::Memory),
                           int(LayerTableModel::GradAmax), int(LayerTableModel::Underflow),
                           int(LayerTableModel::NonFinite), int(LayerTableModel::LostUpdates)}) {
            if (table->isColumnHidden(column)) continue;
            for (int row = 0; row < w->layerModel()->rowCount(); ++row) {
                const QString text = w->layerModel()->index(row, column).data().toString();
                if (text.isEmpty()) continue;
                ++checked;
                QVERIFY2(fm.horizontalAdvance(text) + 6 <= table->columnWidth(column),
                         qPrintable(QStringLiteral("\"%1\" in a %2 px column").arg(text).arg(table->columnWidth(column))));
            }
        }
        QVERIFY(checked > 10);
        stopAndWait(*w);
    }

    // After a run, a layer's setting changed for the next one: its measured cells are the last
    // run's, under the old setting, and the table says so for that row only; a new run ends it.
    void changedRowsShowTheLastRunAsSuch() {
        auto w = makeWindow();
        Experiment e = spirals();
        e.train.steps = 30;
        w->setExperiment(e);
        QVERIFY(w->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(!w->controller()->active(), 30000);
        LayersPanel* panel = w->layersPanel();
        LayerTableModel* model = w->layerModel();
        QVERIFY(!model->showsPlan());
        QVERIFY(!model->index(1, LayerTableModel::GradAmax).data().toString().startsWith(QStringLiteral("—")));
        for (int row = 0; row < model->rowCount(); ++row) QVERIFY(!panel->showsLastRun(row));

        LayerSetting perMatmul;
        perMatmul.forward = LayerPrecision::fp16;
        perMatmul.dgrad = LayerPrecision::fp16;
        perMatmul.wgrad = LayerPrecision::bf16;
        QVERIFY(model->setData(model->index(1, LayerTableModel::Precision), QVariant::fromValue(perMatmul),
                               LayerTableModel::SettingRole));
        QVERIFY(panel->showsLastRun(1));
        QVERIFY(!panel->showsLastRun(0));
        QVERIFY(!panel->showsLastRun(2));
        QVERIFY(LayersPanel::isMeasuredColumn(LayerTableModel::GradAmax));
        QVERIFY(LayersPanel::isMeasuredColumn(LayerTableModel::LostUpdates));
        QVERIFY(!LayersPanel::isMeasuredColumn(LayerTableModel::Precision));
        // Set back as it ran, the numbers are its own again.
        QVERIFY(model->setData(model->index(1, LayerTableModel::Precision), QVariant::fromValue(LayerSetting{}),
                               LayerTableModel::SettingRole));
        QVERIFY(!panel->showsLastRun(1));
        // An auto layer follows autocast: changed after the run, every auto row is the last run's.
        PrecisionSpec p = w->currentExperiment().precision;
        p.autocast = Autocast::bf16;
        model->setPrecision(p);
        QVERIFY(panel->showsLastRun(0) && panel->showsLastRun(1) && panel->showsLastRun(2));
        // The next run measures them again.
        QVERIFY(w->startRun());
        QVERIFY(!panel->showsLastRun(0));
        stopAndWait(*w);
    }

    // The status bar never cuts a word: the device's description is elided at a word, whole in its
    // tooltip; the dock tabs show whole titles (scrolling when they do not fit).
    void statusBarAndTabsShowWholeWords() {
        auto w = makeWindow();
        w->resize(1024, 700);
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QVERIFY(w->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(w->controller()->series().stepCount() >= 5, 60000);
        w->refreshViews();
        WordElidedLabel* device = w->findChild<RunStatusBar*>()->deviceLabel();
        const QString full = device->fullText();
        QVERIFY(full.startsWith(QStringLiteral("cpu · ")));
        device->resize(device->fontMetrics().horizontalAdvance(full) / 2, device->height());
        const QString shown = device->text();
        QVERIFY2(shown.endsWith(QChar(0x2026)), qPrintable(shown));
        const QString head = shown.chopped(1);
        QVERIFY(full.startsWith(head));
        QVERIFY2(!full.at(head.size()).isLetterOrNumber(), qPrintable(shown));  // cut between words
        QVERIFY(device->toolTip().contains(full));
        QVERIFY(device->fontMetrics().horizontalAdvance(shown) <= device->contentsRect().width());
        // The status bar's figures all show: none is squeezed under its text's width, once the
        // layout has taken in the texts refreshViews() set (a layout request waits for the event
        // loop; only those requests are delivered here, so no step changes a text meanwhile).
        for (int i = 0; i < 3; ++i) QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        for (QLabel* l : w->statusBar()->findChildren<QLabel*>())
            if (l != device && l->isVisible() && !l->text().isEmpty())
                QVERIFY2(l->width() >= l->fontMetrics().horizontalAdvance(l->text()), qPrintable(l->text()));
        stopAndWait(*w);
        int bars = 0;
        for (QTabBar* bar : w->findChildren<QTabBar*>(Qt::FindDirectChildrenOnly)) {
            if (bar->count() == 0) continue;
            ++bars;
            QCOMPARE(bar->elideMode(), Qt::ElideNone);
            QVERIFY(bar->usesScrollButtons());
        }
        QVERIFY(bars >= 2);  // the bottom docks' and, at 1024 px, the two forms'
    }

    // A narrow window: the Experiment and Precision forms are two tabs on the left, and the charts
    // get the width the second form took (about 340 px of 1024 when they stood on both sides);
    // widened, Precision goes back to the right. A form a person has moved is left where it is.
    void narrowWindowTabsTheSideForms() {
        auto w = makeWindow();
        w->resize(1600, 1000);
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        QTest::qWait(100);
        QCOMPARE(w->dockWidgetArea(w->precisionDock()), Qt::RightDockWidgetArea);
        QVERIFY(!w->tabifiedDockWidgets(w->experimentDock()).contains(w->precisionDock()));

        w->resize(1024, 700);
        QTRY_VERIFY(w->tabifiedDockWidgets(w->experimentDock()).contains(w->precisionDock()));
        QCOMPARE(w->dockWidgetArea(w->precisionDock()), Qt::LeftDockWidgetArea);
        QTRY_VERIFY(w->experimentDock()->isVisible() && w->precisionDock()->visibleRegion().isEmpty());  // Experiment raised
        QTRY_VERIFY2(w->chartsPanel()->width() >= 560,
                     qPrintable(QStringLiteral("the charts are %1 px wide").arg(w->chartsPanel()->width())));
        w->precisionDock()->raise();  // one click away, whole
        QTRY_VERIFY(!w->precisionDock()->visibleRegion().isEmpty());

        w->resize(1600, 1000);
        QTRY_COMPARE(w->dockWidgetArea(w->precisionDock()), Qt::RightDockWidgetArea);
        QVERIFY(!w->tabifiedDockWidgets(w->experimentDock()).contains(w->precisionDock()));
        QVERIFY(w->experimentDock()->isVisible() && w->precisionDock()->isVisible());

        // Moved by a person (floated), the form is not pulled back into the tabs.
        w->precisionDock()->setFloating(true);
        w->resize(1024, 700);
        QTest::qWait(100);
        QVERIFY(w->precisionDock()->isFloating());
        QVERIFY(!w->tabifiedDockWidgets(w->experimentDock()).contains(w->precisionDock()));
    }

    void shortcutsAreBound_data() {
        QTest::addColumn<QString>("action");
        QTest::addColumn<QKeySequence>("keys");
        QTest::newRow("start") << "&Start" << QKeySequence(Qt::CTRL | Qt::Key_R);
        QTest::newRow("pause") << "&Pause" << QKeySequence(Qt::Key_Space);
        QTest::newRow("stop") << "S&top" << QKeySequence(Qt::CTRL | Qt::Key_Period);
        QTest::newRow("open") << "&Open…" << QKeySequence(QKeySequence::Open);
        QTest::newRow("save") << "&Save…" << QKeySequence(QKeySequence::Save);
        QTest::newRow("step") << "Step &once" << QKeySequence(Qt::Key_N);
        QTest::newRow("pause at") << "Pause at &step…" << QKeySequence(Qt::CTRL | Qt::Key_B);
        QTest::newRow("shortcuts") << "&Keyboard shortcuts" << QKeySequence(Qt::CTRL | Qt::Key_Slash);
        QTest::newRow("documentation") << "&Documentation" << QKeySequence(QKeySequence::HelpContents);
    }
    void shortcutsAreBound() {
        QFETCH(QString, action);
        QFETCH(QKeySequence, keys);
        auto w = makeWindow();
        QAction* found = nullptr;
        for (QAction* a : w->findChildren<QAction*>())
            if (a->text() == action) found = a;
        QVERIFY(found);
        QCOMPARE(found->shortcut(), keys);
    }

    void ctrlRStartsAndCtrlPeriodStops() {
        auto w = makeWindow();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        w->activateWindow();
        QTest::keyClick(w.get(), Qt::Key_R, Qt::ControlModifier);
        QTRY_VERIFY_WITH_TIMEOUT(w->controller()->active(), 5000);
        QTRY_VERIFY_WITH_TIMEOUT(w->controller()->series().stepCount() >= 3, 20000);
        QTest::keyClick(w.get(), Qt::Key_Period, Qt::ControlModifier);
        QTRY_VERIFY_WITH_TIMEOUT(!w->controller()->active(), 10000);
        QCOMPARE(w->controller()->state(), SessionState::stopped);
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
