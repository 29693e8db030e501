// Resume and branch in the GUI (docs/gui.md, "Resume and branch"), on short spirals runs trained
// through the RunController into a store in a temp dir, with a checkpoint every 10 steps:
//   - Resume continues a stopped run as the same run id from its latest checkpoint, its earlier
//     steps (read from the store) in the series before the live ones, and every resumed step's
//     loss bit-equal to an uninterrupted run's;
//   - a branch from a middle checkpoint with autocast changed is a new run whose parent and step
//     are recorded and whose first step is the checkpoint's; the table, the details pane, compare
//     (not re-based to step 0, a marker at the branch step) and the main window's prepared branch
//     show the family;
//   - a run killed after its last checkpoint, before it recorded its end, resumes to that end;
//   - the browser's Resume is disabled, with the reason, for a completed run, a run without
//     checkpoints and a run still being recorded; a damaged checkpoint is one sentence and nothing
//     changes in the store.
// With MANTISSA_SCREENSHOT_DIR set, screenshots() writes resume.png and branch.png there.
#include <QtTest>

#include <QAction>
#include <QFile>
#include <QMenu>
#include <QPainter>
#include <QSignalSpy>
#include <QTableView>

#include <sqlite3.h>

#include <bit>
#include <cstdint>
#include <memory>

#include "charts/chart_view.h"
#include "charts/charts_panel.h"
#include "history/compare_view.h"
#include "history/run_browser.h"
#include "history/run_table_model.h"
#include "history/run_viewer.h"
#include "live/run_controller.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "panels/notice_bar.h"
#include "panels/precision_panel.h"
#include "store/run_store.h"
#include "test_history_fixture.h"
#include "train/checkpoint.h"
#include "exact_compare.h"
#include "checkpoint_edits.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

constexpr std::int64_t budget = 40;     // steps
constexpr std::int64_t stopAt = 25;     // where the interrupted runs are stopped
constexpr std::int64_t every = 10;      // train.checkpoint_every

Experiment tiny(const std::string& name) {
    Experiment e;
    e.name = name;
    e.dataset.kind = "spirals";
    e.dataset.samples = 600;
    e.model.hidden = {16, 16};
    e.train.batch_size = 32;
    e.train.steps = budget;
    e.train.eval_every = 20;
    e.train.checkpoint_every = every;
    e.train.keep_checkpoints = 0;  // all of them
    e.backend = "cpu";
    return e;
}

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

// Runs `c` until its run has ended (up to two minutes: a loaded machine trains slowly).
bool waitForEnd(RunController& c) {
    return QTest::qWaitFor([&] { return !c.active(); }, 120000);
}

// Trains `e` through `c` and stops it once `stopAt` steps are taken; returns the run id (-1: failed).
std::int64_t trainAndStop(RunController& c, const Experiment& e, std::int64_t at = stopAt) {
    if (!c.start(e, {command::PauseAt{at, true}})) return -1;
    if (!QTest::qWaitFor([&] { return c.state() == SessionState::paused; }, 120000)) return -1;
    c.stop();
    if (!waitForEnd(c) || c.state() != SessionState::stopped) return -1;
    return c.runId();
}

std::int64_t trainToEnd(RunController& c, const Experiment& e) {
    if (!c.start(e) || !waitForEnd(c) || c.state() != SessionState::completed) return -1;
    return c.runId();
}

// The browser's row of `id` selected.
void select(RunBrowser& b, std::int64_t id) { b.selectRuns({id}); }

// The first menu entry whose text contains `text`, or nullptr.
QAction* entry(QMenu& menu, const QString& text) {
    for (QAction* a : menu.actions())
        if (a->text().contains(text)) return a;
    return nullptr;
}

}  // namespace

class TestResumeBranch : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    QString m_path;  // the store
    std::unique_ptr<RunController> m_controller;
    std::vector<StepRecord> m_reference;  // an uninterrupted run's steps
    std::int64_t m_completed = -1;        // that run: completed, with checkpoints

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite"));
        m_controller = std::make_unique<RunController>();
        m_controller->setStorePath(m_path);
        m_completed = trainToEnd(*m_controller, tiny("reference"));
        QVERIFY(m_completed >= 0);
        RunStore store(m_path.toStdString());
        m_reference = store.steps(m_completed);
        QCOMPARE(static_cast<std::int64_t>(m_reference.size()), budget);
    }

    // Each case starts with the controller idle, whatever the one before left running.
    void init() { m_controller->shutdown(); }

    // A run started from the GUI gets its checkpoint folder beside the store, as mantissa-cli train's.
    void newRunsWriteCheckpoints() {
        RunStore store(m_path.toStdString());
        const std::vector<CheckpointRow> checkpoints = store.checkpoints(m_completed);
        std::vector<std::int64_t> steps;
        for (const auto& c : checkpoints) steps.push_back(c.step);
        QCOMPARE(steps, (std::vector<std::int64_t>{10, 20, 30, 40}));
        const QString folder =
            QString::fromStdString(checkpoint_folder(store.path(), store.run(m_completed).uuid));
        for (const auto& c : checkpoints) {
            QVERIFY(QString::fromStdString(c.file).startsWith(folder));
            QVERIFY(QFile::exists(QString::fromStdString(c.file)));
        }
    }

    void resumeContinuesTheSameRun() {
        RunController& c = *m_controller;
        const std::int64_t id = trainAndStop(c, tiny("interrupted"));
        QVERIFY(id >= 0);
        {
            RunStore store(m_path.toStdString());
            QCOMPARE(store.run(id).status, RunStatus::stopped);
            QCOMPARE(store.checkpoints(id).back().step, stopAt);
        }
        QSignalSpy errors(&c, &RunController::errorOccurred);
        QVERIFY(c.resumeRun(m_path, id));
        QCOMPARE(errors.count(), 0);
        QCOMPARE(c.runId(), id);  // the same run, not a new one
        QCOMPARE(c.runKind(), RunController::RunKind::continued);
        QCOMPARE(c.firstStep(), stopAt);
        QCOMPARE(c.runStorePath(), m_path);
        // Before the first live step arrives: the run's earlier steps, read from the store.
        QCOMPARE(c.series().stepCount(), stopAt);
        QCOMPARE_EXACT(c.series().loss().x(0), 0.0);
        QCOMPARE(c.series().loss().lastX(), static_cast<double>(stopAt - 1));
        QVERIFY(waitForEnd(c));
        QCOMPARE(c.state(), SessionState::completed);

        // The series: steps 0..39 once each, the resumed ones bit-equal to the uninterrupted run's.
        const LodSeries& loss = c.series().loss();
        QCOMPARE(static_cast<std::int64_t>(loss.size()), budget);
        for (std::size_t i = 0; i < loss.size(); ++i) QCOMPARE(loss.x(i), static_cast<double>(i));
        QCOMPARE(bits(loss.y(static_cast<std::size_t>(stopAt))), bits(m_reference[stopAt].loss));
        // Where the continuation took over is marked on the charts.
        bool marked = false;
        for (const ChartMarker& m : c.series().markers())
            marked |= m.step == stopAt && m.kind == ChartMarker::Kind::origin;
        QVERIFY(marked);

        // The store: the same run, completed, every step once and as the uninterrupted run's.
        RunStore store(m_path.toStdString());
        QCOMPARE(store.run(id).status, RunStatus::completed);
        const std::vector<StepRecord> steps = store.steps(id);
        QCOMPARE(static_cast<std::int64_t>(steps.size()), budget);
        for (std::size_t i = 0; i < steps.size(); ++i) {
            QCOMPARE(steps[i].step, static_cast<std::int64_t>(i));
            QCOMPARE(bits(steps[i].loss), bits(m_reference[i].loss));
        }
        QCOMPARE(store.checkpoints(id).back().step, budget);
    }

    // A run whose process died after the checkpoint at its last step, before it recorded its end:
    // Resume records the end (its final evaluation where missing) and the run completes.
    void resumeAtTheLastCheckpointRecordsTheEnd() {
        RunController& c = *m_controller;
        const std::int64_t id = trainToEnd(c, tiny("killed at its end"));
        QVERIFY(id >= 0);
        sqlite3* raw = nullptr;
        QCOMPARE(sqlite3_open(m_path.toUtf8().constData(), &raw), SQLITE_OK);
        const QString sql = QStringLiteral("UPDATE runs SET status = 'running', finished_at = NULL, pid = 999999999 "
                                           "WHERE id = %1").arg(id);
        QCOMPARE(sqlite3_exec(raw, sql.toUtf8().constData(), nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(raw);
        QCOMPARE(RunStore(m_path.toStdString()).run(id).status, RunStatus::interrupted);

        QSignalSpy errors(&c, &RunController::errorOccurred);
        QVERIFY(c.resumeRun(m_path, id));
        QCOMPARE(c.firstStep(), budget);
        QVERIFY(waitForEnd(c));
        QCOMPARE(errors.count(), 0);
        QCOMPARE(c.state(), SessionState::completed);
        QCOMPARE(c.series().stepCount(), budget);
        RunStore store(m_path.toStdString());
        QCOMPARE(store.run(id).status, RunStatus::completed);
        QCOMPARE(static_cast<std::int64_t>(store.steps(id).size()), budget);
        QCOMPARE(store.evals(id).back().step, budget);
    }

    void branchFromAMiddleCheckpoint() {
        RunController& c = *m_controller;
        const std::int64_t parent = trainAndStop(c, tiny("parent"));
        QVERIFY(parent >= 0);
        constexpr std::int64_t at = 10;  // a middle checkpoint (10, 20 and 25 exist)
        RunRow parentRow;
        Experiment e;
        {
            RunStore store(m_path.toStdString());
            parentRow = store.run(parent);
            const Checkpoint checkpoint(store.checkpoints(parent).front().file);
            QCOMPARE(checkpoint.info().trainer.step, at);
            e = checkpoint.info().experiment;
        }
        QCOMPARE(e.precision.autocast, Autocast::off);
        e.precision.autocast = Autocast::bf16;
        e.name = "parent @10";
        QVERIFY(c.startBranch(m_path, parent, at, e));
        const std::int64_t branch = c.runId();
        QVERIFY(branch >= 0);
        QVERIFY(branch != parent);
        QCOMPARE(c.runKind(), RunController::RunKind::branch);
        QCOMPARE(c.firstStep(), at);
        QVERIFY(waitForEnd(c));
        QCOMPARE(c.state(), SessionState::completed);
        QCOMPARE(c.series().loss().x(0), static_cast<double>(at));  // its own steps, from the branch step
        QCOMPARE(static_cast<std::int64_t>(c.series().loss().size()), budget - at);

        RunStore store(m_path.toStdString());
        const RunRow row = store.run(branch);
        QCOMPARE(row.parent_uuid, parentRow.uuid);
        QVERIFY(row.parent_step.has_value());
        QCOMPARE(*row.parent_step, at);
        const std::vector<StepRecord> steps = store.steps(branch);
        QCOMPARE(steps.front().step, at);
        QCOMPARE(steps.back().step, budget - 1);
        // Autocast changed: the layers train in BF16 from the branch's first step (the parent's in FP32).
        const auto layers = store.layer_steps(branch);
        QVERIFY(!layers.empty());
        QCOMPARE(layers.front().step, at);
        QCOMPARE(layers.front().precision, ComputeFormat(Format::bf16));
        QCOMPARE(store.layer_steps(parent).front().precision, ComputeFormat(Format::fp32));
        // The parent is untouched.
        QCOMPARE(store.run(parent).status, RunStatus::stopped);
        QCOMPARE(static_cast<std::int64_t>(store.steps(parent).size()), stopAt);

        // The family in the browser: the "Branch of" column, the details pane, the parent's branches.
        RunBrowser browser;
        QVERIFY(browser.openStore(m_path));
        const int branchRow = browser.model()->rowOf(branch);
        QCOMPARE(browser.model()->index(branchRow, RunTableModel::Parent).data().toString(),
                 QStringLiteral("#%1 @10").arg(parent));
        QCOMPARE(
            browser.model()->index(branchRow, RunTableModel::Parent).data(RunTableModel::ParentIdRole).toLongLong(),
            parent);
        QCOMPARE(browser.model()->index(browser.model()->rowOf(parent), RunTableModel::Parent).data().toString(),
                 QString());
        select(browser, branch);
        QVERIFY2(
            browser.detailsText().contains(QStringLiteral("Branched from run %1 (“parent”) at step 10").arg(parent)),
            qPrintable(browser.detailsText()));
        QVERIFY(browser.detailsText().contains(QStringLiteral("Checkpoints at steps 20, 30 and 40")));
        select(browser, parent);
        QVERIFY(browser.detailsText().contains(QStringLiteral("Checkpoints at steps 10, 20 and 25")));
        QVERIFY(browser.detailsText().contains(QStringLiteral("Branches: run %1 at step 10").arg(branch)));

        // Compare: the branch is drawn from step 10, not re-based to 0, and step 10 is marked.
        CompareView compare(browser.store());
        QCOMPARE(compare.setRuns({parent, branch}), QString());
        QCOMPARE(compare.curves()[1].loss.x(0), static_cast<double>(at));
        QCOMPARE_EXACT(compare.curves()[0].loss.x(0), 0.0);
        QCOMPARE(compare.lossChart()->markerCount(), std::size_t{1});
        compare.resize(1200, 800);
        compare.show();
        QVERIFY(QTest::qWaitForWindowExposed(&compare));
        compare.redrawNow();
        QCOMPARE(compare.lossChart()->markerLabelText(0),
                 QStringLiteral("#%1 branched from #%2").arg(branch).arg(parent));
        compare.setXAxis(CompareView::XAxis::time);  // a marker sits on a step: not on the time axis
        QCOMPARE(compare.lossChart()->markerCount(), std::size_t{0});
    }

    // The chart's "Branch from the checkpoint at step ≤ N…" in a run's window picks the newest
    // checkpoint at or before the step under the cursor.
    void chartMenuBranchesFromTheCheckpointBefore() {
        RunController& c = *m_controller;
        const std::int64_t id = trainAndStop(c, tiny("menu"));
        QVERIFY(id >= 0);
        auto store = std::make_shared<RunStore>(m_path.toStdString());
        RunViewer viewer(store, id);
        QVERIFY(viewer.load());
        QVERIFY(viewer.summaryText().contains(QStringLiteral("checkpoints at steps 10, 20 and 25")));
        viewer.resize(1100, 800);
        viewer.show();
        QVERIFY(QTest::qWaitForWindowExposed(&viewer));
        viewer.chartsPanel()->redrawNow(true);
        ChartView* chart = viewer.chartsPanel()->lossChart();
        const auto at = [&](double step) {
            return QPoint(static_cast<int>(std::lround(chart->xAxis->coordToPixel(step))), chart->height() / 2);
        };
        QSignalSpy asked(&viewer, &RunViewer::branchRequested);
        {
            QMenu menu;
            chart->fillContextMenu(menu, at(23.2));
            QAction* branch = entry(menu, QStringLiteral("Branch from the checkpoint at step ≤ 23 (step 20)"));
            QVERIFY2(branch, qPrintable(menu.actions().last()->text()));
            QVERIFY(branch->isEnabled());
            branch->trigger();
        }
        QCOMPARE(asked.count(), 1);
        QCOMPARE(asked.first().at(0).toLongLong(), id);
        QCOMPARE(asked.first().at(1).toLongLong(), 20);
        {
            QMenu menu;  // before the first checkpoint: said, and disabled
            chart->fillContextMenu(menu, at(5.4));
            QAction* none = entry(menu, QStringLiteral("no checkpoint at or before step 5 (the first is at 10)"));
            QVERIFY2(none, qPrintable(menu.actions().last()->text()));
            QVERIFY(!none->isEnabled());
        }
    }

    void resumeIsOnlyForAStoppedRunWithACheckpoint() {
        RunController& c = *m_controller;
        const std::int64_t stopped = trainAndStop(c, tiny("stopped"));
        QVERIFY(stopped >= 0);
        std::int64_t bare = -1;  // stopped, but recorded without checkpoints
        {
            RunStore store(m_path.toStdString());
            history_test::syntheticRun(store, "no-checkpoints", 30, RunStatus::stopped);
            for (const RunRow& r : store.list_runs())
                if (r.name == "no-checkpoints") bare = r.id;
        }
        QVERIFY(bare >= 0);
        RunBrowser browser;
        QVERIFY(browser.openStore(m_path));
        QSignalSpy resumes(&browser, &RunBrowser::resumeRequested);

        select(browser, stopped);
        QVERIFY(browser.resumeAction()->isEnabled());
        QVERIFY(browser.resumeAction()->toolTip().contains(QStringLiteral("step 25")));
        QVERIFY(browser.branchAction()->isEnabled());

        select(browser, m_completed);
        QVERIFY(!browser.resumeAction()->isEnabled());
        QVERIFY2(browser.resumeAction()->toolTip().contains(QStringLiteral("completed its steps")),
                 qPrintable(browser.resumeAction()->toolTip()));
        QVERIFY(browser.branchAction()->isEnabled());  // a completed run can still be branched
        QVERIFY(!browser.resumeRun(m_completed));
        QVERIFY(browser.lastError().contains(QStringLiteral("completed its steps")));

        select(browser, bare);
        QVERIFY(!browser.resumeAction()->isEnabled());
        QVERIFY2(browser.resumeAction()->toolTip().contains(QStringLiteral("no checkpoint")),
                 qPrintable(browser.resumeAction()->toolTip()));
        QVERIFY(!browser.branchAction()->isEnabled());
        QVERIFY(!browser.resumeRun(bare));
        QCOMPARE(resumes.count(), 0);

        // A run still being recorded (here by a Recorder of this process, which lives): the store's
        // process and host are named, as RunStore::continue_run names them.
        std::shared_ptr<Recorder> live;
        std::int64_t recording = -1;
        {
            RunStore store(m_path.toStdString());
            live = history_test::syntheticRun(store, "still-recording", 10, RunStatus::running);
            recording = live->run_id();
        }
        browser.refresh();
        select(browser, recording);
        QVERIFY(!browser.resumeAction()->isEnabled());
        const QString byProcess =
            QStringLiteral("still being recorded by process %1").arg(QCoreApplication::applicationPid());
        QVERIFY2(browser.resumeAction()->toolTip().contains(byProcess), qPrintable(browser.resumeAction()->toolTip()));

        browser.selectRuns({stopped, bare});  // two runs: neither action
        QVERIFY(!browser.resumeAction()->isEnabled());
        QVERIFY(!browser.branchAction()->isEnabled());

        QVERIFY(browser.resumeRun(stopped));
        QCOMPARE(resumes.count(), 1);
        QCOMPARE(resumes.first().at(1).toLongLong(), stopped);

        // The controller refuses the same runs with the same sentence, and starts nothing.
        QSignalSpy errors(&c, &RunController::errorOccurred);
        QVERIFY(!c.resumeRun(m_path, m_completed));
        QVERIFY(!c.resumeRun(m_path, bare));
        QVERIFY(!c.resumeRun(m_path, recording));
        QCOMPARE(errors.count(), 3);
        QVERIFY(errors.at(0).at(0).toString().contains(QStringLiteral("completed its steps")));
        QVERIFY(errors.at(1).at(0).toString().contains(QStringLiteral("no checkpoint")));
        QVERIFY(errors.at(2).at(0).toString().contains(byProcess));
        QVERIFY(!c.active());
        live->finish(RunStatus::stopped);
    }

    void damagedCheckpointIsASentence() {
        RunController& c = *m_controller;
        const std::int64_t id = trainAndStop(c, tiny("damaged"));
        QVERIFY(id >= 0);
        std::string file;
        std::vector<Event> events;  // the run_stopped event comes after the last checkpoint
        {
            RunStore store(m_path.toStdString());
            file = store.checkpoints(id).back().file;
            events = store.events(id);
        }
        QCOMPARE(events.back().kind, EventKind::run_stopped);
        {
            QFile f(QString::fromStdString(file));
            QVERIFY(f.open(QIODevice::ReadWrite));
            const QByteArray junk(64, '\xff');  // the safetensors header's length and start
            QCOMPARE(f.write(junk), junk.size());
        }
        QSignalSpy errors(&c, &RunController::errorOccurred);
        QVERIFY(!c.resumeRun(m_path, id));
        QCOMPARE(errors.count(), 1);
        const QString sentence = errors.first().first().toString();
        QVERIFY2(sentence.contains(QFileInfo(QString::fromStdString(file)).fileName()), qPrintable(sentence));
        QVERIFY(!c.active());
        // Nothing was changed in the store: the run is still stopped with its 25 steps, and what it
        // recorded after its checkpoint (which a continuation drops) is still there.
        {
            RunStore store(m_path.toStdString());
            QCOMPARE(store.run(id).status, RunStatus::stopped);
            QCOMPARE(static_cast<std::int64_t>(store.steps(id).size()), stopAt);
            const std::vector<Event> after = store.events(id);
            QCOMPARE(after.size(), events.size());
            for (std::size_t i = 0; i < after.size(); ++i) {
                QCOMPARE(after[i].step, events[i].step);
                QCOMPARE(after[i].message, events[i].message);
            }
        }
        // A branch from it is refused likewise; the controller still trains a new run afterwards.
        Experiment e = tiny("damaged @25");
        QVERIFY(!c.startBranch(m_path, id, stopAt, e));
        QCOMPARE(errors.count(), 2);
        QVERIFY(trainAndStop(c, tiny("after")) >= 0);
    }

    // A byte flipped inside a tensor: Resume, a branch and the window's Branch… say so in the GUI's
    // terms (the run browser's Branch…), never with a mantissa-cli command, and nothing changes.
    void damagedBytesAreSaidInTheGuisTerms() {
        RunController& c = *m_controller;
        const std::int64_t id = trainAndStop(c, tiny("flipped"));
        QVERIFY(id >= 0);
        std::string file;
        {
            RunStore store(m_path.toStdString());
            file = store.checkpoints(id).back().file;
        }
        test::flip_a_byte(file, "fc1.weight");
        QSignalSpy errors(&c, &RunController::errorOccurred);
        QVERIFY(!c.resumeRun(m_path, id));
        QVERIFY(!c.startBranch(m_path, id, stopAt, tiny("flipped @25")));
        MainWindow::Options o;
        o.storePath = m_path;
        o.useSettings = false;
        MainWindow w(o);
        QVERIFY(!w.prepareBranch(m_path, id, stopAt));
        QCOMPARE(errors.count(), 2);
        const QString expected = QString::fromStdString(file) +
                                 QStringLiteral(": tensor fc1.weight's bytes do not match the checksum written with "
                                                "them; the checkpoint is damaged, so branch from an earlier one with "
                                                "Run history ▸ Branch… (it lists the run's checkpoints).");
        for (const QString& sentence : {errors.at(0).at(0).toString(), errors.at(1).at(0).toString(), w.lastError()}) {
            QCOMPARE(sentence, expected);
            QVERIFY2(!sentence.contains(QStringLiteral("mantissa-cli")), qPrintable(sentence));
        }
        QVERIFY(!c.active());
        RunStore store(m_path.toStdString());
        QCOMPARE(store.run(id).status, RunStatus::stopped);
    }

    // The main window: Branch… puts the checkpoint's experiment in the panels, Start trains the
    // branch with what they say; a damaged checkpoint is a message and the window goes on.
    void mainWindowPreparesAndStartsABranch() {
        MainWindow::Options o;
        o.storePath = m_path;
        o.useSettings = false;
        MainWindow w(o);
        w.resize(1400, 900);
        w.show();
        const std::int64_t parent = trainAndStop(*w.controller(), tiny("window-parent"));
        QVERIFY(parent >= 0);
        QVERIFY(w.continueAction()->isEnabled());  // the window's stopped run

        QVERIFY(w.prepareBranch(m_path, parent, 20));
        QVERIFY(w.branchPending());
        QCOMPARE(w.experimentPanel()->experiment().name, std::string("window-parent @20"));
        QCOMPARE(w.startAction()->text(), QStringLiteral("&Start branch"));
        QVERIFY(w.noticeBar()->text().contains(QStringLiteral("Branch of run %1").arg(parent)));
        QCOMPARE(w.chartsPanel()->overlays().size(), 1);  // the parent, faintly
        PrecisionSpec p = w.precisionPanel()->precision();
        p.autocast = Autocast::fp16;
        p.loss_scaling.mode = LossScalingMode::dynamic;
        w.precisionPanel()->setPrecision(p);
        QVERIFY(w.startRun());
        QVERIFY(!w.branchPending());
        QCOMPARE(w.controller()->runKind(), RunController::RunKind::branch);
        const std::int64_t branch = w.controller()->runId();
        QVERIFY(waitForEnd(*w.controller()));
        {
            RunStore store(m_path.toStdString());
            const RunRow row = store.run(branch);
            QCOMPARE(row.name, std::string("window-parent @20"));
            QCOMPARE(*row.parent_step, std::int64_t{20});
            QCOMPARE(row.parent_uuid, store.run(parent).uuid);
            QVERIFY(row.config_json.find("\"fp16\"") != std::string::npos);
            QCOMPARE(store.steps(branch).front().step, std::int64_t{20});
        }
        // Opening another experiment drops a prepared branch.
        QVERIFY(w.prepareBranch(m_path, parent, 10));
        w.setExperiment(tiny("plain"));
        QVERIFY(!w.branchPending());
        QCOMPARE(w.startAction()->text(), QStringLiteral("&Start"));

        // Resume from the window: its stopped run continues as the same run.
        const std::int64_t stopped = trainAndStop(*w.controller(), tiny("window-stopped"));
        QVERIFY(stopped >= 0);
        w.continueAction()->trigger();
        QCOMPARE(w.controller()->runId(), stopped);
        QCOMPARE(w.controller()->runKind(), RunController::RunKind::continued);
        QVERIFY(waitForEnd(*w.controller()));
        QVERIFY(!w.continueAction()->isEnabled());  // completed

        // A damaged checkpoint: a message, no branch prepared, the window keeps working.
        {
            RunStore store(m_path.toStdString());
            QFile f(QString::fromStdString(store.checkpoints(parent).front().file));
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            QVERIFY(f.write("not a checkpoint") > 0);
        }
        QVERIFY(!w.prepareBranch(m_path, parent, 10));
        QVERIFY(!w.lastError().isEmpty());
        QVERIFY(!w.branchPending());
        QVERIFY(w.startRun());
        w.controller()->stop();
        QVERIFY(waitForEnd(*w.controller()));
    }

    // The pictures for docs/gui.md; written only when MANTISSA_SCREENSHOT_DIR is set.
    void screenshots();
};

namespace {

// `top` over `bottom`, on the window colour, the bottom one as wide as it is.
QImage stacked(const QPixmap& top, const QPixmap& bottom) {
    const int gap = 8;
    QImage out(std::max(top.width(), bottom.width()), top.height() + gap + bottom.height(), QImage::Format_RGB32);
    out.setDevicePixelRatio(top.devicePixelRatio());
    out.fill(QApplication::palette().color(QPalette::Window).darker(115));
    QPainter p(&out);
    p.drawPixmap(0, 0, top);
    p.drawPixmap(0, top.height() + gap, bottom);
    return out;
}

}  // namespace

void TestResumeBranch::screenshots() {
    const QString outDir = qEnvironmentVariable("MANTISSA_SCREENSHOT_DIR");
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
    // The FP16 underflow lesson's experiment, without its lesson: FP16 without loss scaling.
    const QString lesson = qEnvironmentVariable("MANTISSA_SOURCE_DIR") +
                           QStringLiteral("/resources/experiments/lessons/01-fp16-underflow.json");
    Experiment base = load_experiment(lesson.toStdString());
    base.lesson = {};
    base.train.checkpoint_every = 50;
    base.train.keep_checkpoints = 0;

    MainWindow::Options o;
    o.storePath = path;
    o.useSettings = false;
    MainWindow w(o);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));

    // branch.png: FP16 without loss scaling, its gradients underflowing, and its branch from the
    // checkpoint at step 150 in BF16 autocast, whose range keeps them.
    Experiment parent = base;
    parent.name = "blobs-fp16-no-scaling";
    const std::int64_t parentId = trainToEnd(*w.controller(), parent);
    QVERIFY(parentId >= 0);
    QVERIFY(w.prepareBranch(path, parentId, 150));
    PrecisionSpec p = w.precisionPanel()->precision();
    p.autocast = Autocast::bf16;
    w.precisionPanel()->setPrecision(p);
    QVERIFY(w.startRun());
    const std::int64_t branchId = w.controller()->runId();
    QVERIFY(waitForEnd(*w.controller()));

    // resume.png: a run stopped at step 170 and continued from its checkpoint at 170.
    Experiment dynamic = base;
    dynamic.name = "blobs-fp16-dynamic";
    dynamic.precision.loss_scaling.mode = LossScalingMode::dynamic;
    w.setExperiment(dynamic);
    const std::int64_t resumedId = trainAndStop(*w.controller(), dynamic, 170);
    QVERIFY(resumedId >= 0);
    w.setExperiment(dynamic);  // the window as a person finds it later: the run's views cleared
    QVERIFY(w.resumeRun(path, resumedId));
    QVERIFY(waitForEnd(*w.controller()));
    w.chartsPanel()->setLogLoss(true);  // the loss falls by decades: on a linear axis it is a flat line
    w.chartsPanel()->resetView();
    w.refreshViews();

    RunBrowser* browser = w.runBrowser();
    browser->resize(1400, 360);
    browser->show();
    QVERIFY(QTest::qWaitForWindowExposed(browser));
    browser->refresh();
    browser->selectRuns({resumedId});
    QTest::qWait(100);  // the details pane laid out for its new text
    w.refreshViews();
    const QImage resume = stacked(w.grab(), browser->grab());
    QVERIFY(!resume.isNull());

    browser->selectRuns({branchId});
    auto compare = std::make_unique<CompareView>(browser->store());
    QCOMPARE(compare->setRuns({parentId, branchId}), QString());
    compare->setLogLoss(true);
    compare->resize(1400, 820);
    compare->show();
    QVERIFY(QTest::qWaitForWindowExposed(compare.get()));
    QTest::qWait(100);
    compare->redrawNow();
    const QImage branch = stacked(browser->grab(), compare->grab());
    QVERIFY(!branch.isNull());
    if (!outDir.isEmpty()) {
        QVERIFY(resume.save(outDir + QStringLiteral("/resume.png")));
        QVERIFY(branch.save(outDir + QStringLiteral("/branch.png")));
    }
}

QTEST_MAIN(TestResumeBranch)
#include "test_resume_branch.moc"
