// The GUI's recipe table (docs/gui.md, "Sweeps: the recipe table"), on a store in a temp dir with a
// sweep of the six standard recipes times train.lr = 1e-3, 3e-3 (12 planned runs) whose runs are
// fed to Recorders with figures chosen so that the fronts of different axes differ:
//   - one row per planned run, in plan order, with the recipe, the grid's varying key and the
//     latest run of each index, every figure the store's (totals() for samples/s, peak memory and
//     skipped steps), a failed run and a never-run index shown as such;
//   - sorting by a figure orders by its value (not its text), by a grid key numerically;
//   - the ★ marks are pareto_front's (engine/sweep/pareto.h) for the default axes, peak memory
//     against test accuracy, and change with the axes; the step line joins the front's points;
//   - selecting rows rings their points, clicking a point selects its row (through sorting);
//   - Compare overlays the selected runs, and refuses more than CompareView::maxRuns;
//   - File ▸ Sweeps… and the run history's "Sweep" open it, the latter on the run's row;
//   - a spec the plan refuses lists the recorded runs with the reason;
//   - an empty plot (no sweep, or no completed run yet) shows its figures' own span (accuracy
//     0..100 %) and says why it is empty.
// With MANTISSA_SCREENSHOT_DIR set, screenshots() trains the six recipes on spirals for 300 steps
// (the runs `mantissa-cli sweep --set dataset.kind=spirals --recipes standard --steps 300` makes)
// and writes sweep.png there.
#include <QtTest>

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QListWidget>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>

#include <cmath>
#include <map>
#include <memory>

#include "config/telemetry.h"
#include "history/compare_view.h"
#include "history/run_browser.h"
#include "history/run_table_model.h"
#include "main_window.h"
#include "model/model_plan.h"
#include "panels/notice_bar.h"
#include "store/run_store.h"
#include "sweep/pareto.h"
#include "sweep/sweep_plan.h"
#include "sweeps/sweep_scatter.h"
#include "sweeps/sweep_table_model.h"
#include "sweeps/sweep_view.h"
#include "test_history_fixture.h"
#include "train/session.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

// What a run of an index is fed: its figures, and how it ends.
struct Figures {
    double accuracy, memoryKiB, samplesPerS, loss;
    int skipped = 0;
    RunStatus status = RunStatus::completed;
};

// Index → figures. Peak memory against test accuracy has the front {1, 6, 10}; samples/s against
// final loss has {1, 2, 4, 6, 8, 9}. Index 5's accuracy (9.5 %) sorts after 90 % as text, not as
// a number. Index 3 fails; index 7 is never run.
const std::map<std::int64_t, Figures>& figures() {
    static const std::map<std::int64_t, Figures> f = {
        {0, {0.92, 1300, 1000, 0.15}},     {1, {0.93, 1300, 1100, 0.14}},
        {2, {0.91, 1300, 1500, 0.16}},     {3, {0.50, 1300, 1400, 0.9, 0, RunStatus::failed}},
        {4, {0.90, 900, 2000, 0.17}},      {5, {0.095, 900, 2100, 2.3}},
        {6, {0.905, 900, 1900, 0.165, 3}}, {8, {0.80, 900, 2500, 0.4}},
        {9, {0.85, 900, 2400, 0.3}},       {10, {0.89, 700, 1200, 0.18}},
        {11, {0.88, 700, 1300, 0.19}},
    };
    return f;
}

constexpr std::int64_t stepsPerRun = 20;

std::vector<std::string> matmulLayers(const Experiment& e) {
    std::vector<std::string> names;
    for (const PlannedLayer& l : plan_model(e).layers)
        if (l.info.takes_precision) names.push_back(l.info.name);
    return names;
}

SweepSpec recipesTimesLr() {
    SweepSpec spec;
    spec.base = history_test::spirals("base", stepsPerRun);
    spec.recipes = {"fp32", "tf32", "bf16", "fp16", "fp16-noscale", "fp8"};
    spec.grid = {parse_grid_axis("train.lr=1e-3,3e-3")};
    return spec;
}

// Records a run of the sweep's index with figures `f` (all steps alike; the accuracy in one test
// evaluation at the end). Returns its id.
std::int64_t feedRun(RunStore& store, const SweepRow& sweep, const PlannedRun& p, const Figures& f) {
    RunInfo info{p.experiment.name, "cpu", "synthetic", experiment_to_json(p.experiment).dump()};
    info.sweep_uuid = sweep.uuid;
    info.sweep_index = p.index;
    RecorderOptions fast;
    fast.commit_interval_ms = 5;
    auto r = store.start_run(info, fast);
    const std::int64_t steps = f.status == RunStatus::failed ? 5 : stepsPerRun;
    for (std::int64_t i = 0; i < steps; ++i) {
        StepRecord s;
        s.step = i;
        s.step_time_ms = 10;
        s.time_s = 0.01 * static_cast<double>(i + 1);
        s.loss = f.loss;
        s.loss_scale = 1;
        s.skipped = i < f.skipped;
        s.overflow = s.skipped;
        s.learning_rate = 1e-3;
        s.samples_per_s = f.samplesPerS;
        s.memory.parameters = static_cast<std::int64_t>(f.memoryKiB * 1024);
        r->on_step(s, {});
    }
    if (f.status != RunStatus::failed) r->on_eval({steps - 1, "test", f.loss, f.accuracy});
    r->finish(f.status, f.status == RunStatus::failed ? "the loss became NaN" : "");
    return r->run_id();
}

// The sweep above in the store at `path`; index 0 is recorded twice (the second is the latest).
SweepRow makeSweep(const QString& path) {
    RunStore store(path.toStdString());
    const SweepSpec spec = recipesTimesLr();
    const SweepRow sweep = store.create_sweep({"recipes-lr", sweep_spec_to_json(spec).dump(), 12, "local"});
    const auto plan = plan_sweep(spec, sweep.name, matmulLayers);
    Figures early = figures().at(0);
    early.accuracy = 0.5;
    feedRun(store, sweep, plan[0], early);
    for (const auto& [index, f] : figures()) feedRun(store, sweep, plan[static_cast<std::size_t>(index)], f);
    return sweep;
}

// pareto_front over the store's own figures of the sweep's latest runs, as the CLI builds it.
std::vector<bool> expectedFront(RunStore& store, const SweepRow& sweep, std::size_t planned, SweepFigure x,
                                SweepFigure y) {
    std::map<std::int64_t, RunRow> latest;
    for (const RunRow& r : store.sweep_runs(sweep.id)) latest[*r.sweep_index] = r;
    const auto value = [&](const RunRow& r, const RunTotals& t, SweepFigure f) {
        switch (f) {
            case SweepFigure::finalLoss: return r.final_loss.value_or(NAN);
            case SweepFigure::testAccuracy: return r.test_accuracy.value_or(NAN);
            case SweepFigure::samplesPerS: return t.samples_per_s.value_or(NAN);
            case SweepFigure::peakMemory:
                return t.peak_memory_bytes > 0 ? static_cast<double>(t.peak_memory_bytes) : NAN;
            case SweepFigure::skippedSteps: return static_cast<double>(t.skipped_steps);
        }
        return double(NAN);
    };
    std::vector<ParetoPoint> points(planned, ParetoPoint{NAN, NAN});
    for (const auto& [index, r] : latest) {
        if (r.status != RunStatus::completed) continue;
        const RunTotals t = store.totals(r.id);
        points[static_cast<std::size_t>(index)] = {value(r, t, x), value(r, t, y)};
    }
    return pareto_front(points, higherIsBetter(x), higherIsBetter(y));
}

std::vector<int> frontRows(const std::vector<bool>& front) {
    std::vector<int> rows;
    for (std::size_t i = 0; i < front.size(); ++i)
        if (front[i]) rows.push_back(static_cast<int>(i));
    return rows;
}

}  // namespace

class TestSweepView : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_path;
    SweepRow m_sweep;
    std::shared_ptr<RunStore> m_store;

    std::unique_ptr<SweepView> openView() {
        auto v = std::make_unique<SweepView>();
        v->resize(1400, 640);
        v->setStore(m_store);
        v->show();
        if (!QTest::qWaitForWindowExposed(v.get())) return nullptr;
        v->scatter()->replot();  // laid out at its size: pixels for the points
        return v;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite"));
        m_sweep = makeSweep(m_path);
        m_store = std::make_shared<RunStore>(m_path.toStdString());
    }

    // One row per planned run in plan order: index, recipe, train.lr, status, run id and every
    // figure as the store has it for the index's latest run, written in the table's styles.
    void rowsAreTheStores() {
        auto v = openView();
        QVERIFY(v);
        QCOMPARE(v->sweepId(), m_sweep.id);
        QCOMPARE(v->sweepList()->count(), 1);
        SweepTableModel* m = v->model();
        const auto plan = plan_sweep(recipesTimesLr(), m_sweep.name, matmulLayers);
        QCOMPARE(m->rowCount(), 12);
        QCOMPARE(m->headerData(2, Qt::Horizontal).toString(), QString("train.lr"));
        std::map<std::int64_t, RunRow> latest;
        for (const RunRow& r : m_store->sweep_runs(m_sweep.id)) latest[*r.sweep_index] = r;
        QCOMPARE(latest.size(), std::size_t(11));
        const int status = m->columnOf(SweepTableModel::Kind::status), runCol = m->columnOf(SweepTableModel::Kind::run);
        for (int row = 0; row < 12; ++row) {
            const PlannedRun& p = plan[static_cast<std::size_t>(row)];
            QCOMPARE(m->text(row, 0), QString::number(p.index));
            QCOMPARE(m->text(row, 1), QString::fromStdString(p.recipe));
            QCOMPARE(m->text(row, 2), QString::fromStdString(p.point.at(0).second));
            const auto it = latest.find(row);
            if (it == latest.end()) continue;
            const RunRow& r = it->second;
            const RunTotals t = m_store->totals(r.id);
            QCOMPARE(m->text(row, runCol), QString::number(r.id));
            QCOMPARE(m->text(row, status), QString::fromLatin1(run_status_name(r.status)));
            QCOMPARE(m->text(row, m->columnOf(SweepTableModel::Kind::steps)),
                     QLocale().toString(static_cast<qlonglong>(r.steps)));
            QCOMPARE(m->text(row, m->columnOf(SweepFigure::peakMemory)),
                     QString::fromStdString(format_byte_size(t.peak_memory_bytes)));
            QCOMPARE(m->text(row, m->columnOf(SweepFigure::samplesPerS)),
                     QLocale().toString(static_cast<qlonglong>(std::llround(*t.samples_per_s))));
            QCOMPARE(m->text(row, m->columnOf(SweepFigure::skippedSteps)), QString::number(t.skipped_steps));
            QVERIFY(std::abs(m->text(row, m->columnOf(SweepFigure::finalLoss)).toDouble() - *r.final_loss) < 5e-5);
            if (r.test_accuracy)
                QCOMPARE(m->text(row, m->columnOf(SweepFigure::testAccuracy)),
                         QString::number(*r.test_accuracy * 100, 'f', 2) + QStringLiteral(" %"));
        }
        // The figures fed, through the store: index 0's latest run, not the earlier one.
        QCOMPARE(m->text(0, m->columnOf(SweepFigure::testAccuracy)), QString("92.00 %"));
        QCOMPARE(m->text(6, m->columnOf(SweepFigure::skippedSteps)), QString("3"));
        QCOMPARE(m->text(10, m->columnOf(SweepFigure::peakMemory)), QString("700.0 KiB"));
        QCOMPARE(m->text(1, m->columnOf(SweepFigure::samplesPerS)), QLocale().toString(1100));
    }

    // The failed index and the one never run are rows of their own, drawn nowhere on the scatter.
    void failedAndNotRun() {
        auto v = openView();
        QVERIFY(v);
        SweepTableModel* m = v->model();
        const int status = m->columnOf(SweepTableModel::Kind::status);
        QCOMPARE(m->text(3, status), QString("failed"));
        QVERIFY(m->data(m->index(3, status), Qt::ToolTipRole).toString().contains("the loss became NaN"));
        QCOMPARE(m->text(7, status), QString("not run"));
        for (SweepFigure f : sweepFigures) QCOMPARE(m->text(7, m->columnOf(f)), QString());
        QCOMPARE(m->text(7, m->columnOf(SweepTableModel::Kind::run)), QString());
        QCOMPARE(m->data(m->index(7, 0), SweepTableModel::RunIdRole).toLongLong(), -1LL);
        QCOMPARE(v->scatter()->points().size(), std::size_t(10));
        QCOMPARE(v->scatter()->pixelOf(3), QPointF(-1, -1));
        QCOMPARE(v->scatter()->pixelOf(7), QPointF(-1, -1));
        QVERIFY2(v->caption()->text().contains("1 not run") && v->caption()->text().contains("1 not completed"),
                 qPrintable(v->caption()->text()));
    }

    // Sorting by test accuracy orders by the value (9.5 % below 80 %), by train.lr numerically, by
    // the recipe as text; the table's rows, not their order, are what the scatter names.
    void sorting() {
        auto v = openView();
        QVERIFY(v);
        SweepTableModel* m = v->model();
        QSortFilterProxyModel* proxy = v->proxy();
        const auto rowAt = [&](int i) { return proxy->index(i, 0).data(SweepTableModel::RowRole).toInt(); };
        v->view()->sortByColumn(m->columnOf(SweepFigure::testAccuracy), Qt::DescendingOrder);
        std::vector<double> seen;
        for (int i = 0; i < proxy->rowCount(); ++i) {
            const auto& r = m->table().rows[static_cast<std::size_t>(rowAt(i))];
            seen.push_back(r.run && r.run->test_accuracy ? *r.run->test_accuracy : -1);
        }
        QVERIFY(std::is_sorted(seen.begin(), seen.end(), std::greater<>()));
        QCOMPARE(rowAt(0), 1);     // 93 %
        QCOMPARE(seen[9], 0.095);  // the last accuracy before the failed run's none and the not-run row
        v->view()->sortByColumn(2, Qt::DescendingOrder);        // train.lr
        for (int i = 0; i < 6; ++i) QCOMPARE(rowAt(i) % 2, 1);  // 3e-3 first
        v->view()->sortByColumn(1, Qt::AscendingOrder);         // recipe
        QCOMPARE(m->table().rows[static_cast<std::size_t>(rowAt(0))].recipe, std::string("bf16"));
        QCOMPARE(m->table().rows[static_cast<std::size_t>(rowAt(11))].recipe, std::string("tf32"));
    }

    // The ★ rows are pareto_front's of the store's figures: peak memory against test accuracy by
    // default (the CLI's), samples/s against final loss once the axes say so, through the combo boxes.
    void paretoMarks() {
        auto v = openView();
        QVERIFY(v);
        SweepTableModel* m = v->model();
        QCOMPARE(v->xFigure(), SweepFigure::peakMemory);
        QCOMPARE(v->yFigure(), SweepFigure::testAccuracy);
        const auto byDefault = expectedFront(*m_store, m_sweep, 12, SweepFigure::peakMemory, SweepFigure::testAccuracy);
        QCOMPARE(frontRows(byDefault), (std::vector<int>{1, 6, 10}));
        QCOMPARE(m->front(), byDefault);
        const int star = m->columnOf(SweepTableModel::Kind::front);
        for (int row = 0; row < 12; ++row)
            QCOMPARE(m->text(row, star), byDefault[static_cast<std::size_t>(row)] ? QString("★") : QString());
        for (const SweepScatter::Point& p : v->scatter()->points())
            QCOMPARE(p.front, bool(byDefault[static_cast<std::size_t>(p.row)]));
        // The step line: through the three front points, a corner between neighbours.
        const auto& line = v->scatter()->frontLine();
        QCOMPARE(line.size(), std::size_t(5));
        QCOMPARE(line.front(), QPointF(700.0 / 1024, 89.0));  // MiB (the largest is 1.3 MiB), %: fp8 · 1e-3
        QCOMPARE(line[1], QPointF(900.0 / 1024, 89.0));       // lower memory is better: the left point's y holds
        QCOMPARE(line.back(), QPointF(1300.0 / 1024, 93.0));
        QVERIFY(v->scatter()->xAxis->label().startsWith("peak memory (MiB)"));

        v->xChoice()->setCurrentIndex(v->xChoice()->findData(static_cast<int>(SweepFigure::samplesPerS)));
        v->yChoice()->setCurrentIndex(v->yChoice()->findData(static_cast<int>(SweepFigure::finalLoss)));
        QCOMPARE(v->xFigure(), SweepFigure::samplesPerS);
        QCOMPARE(v->yFigure(), SweepFigure::finalLoss);
        const auto other = expectedFront(*m_store, m_sweep, 12, SweepFigure::samplesPerS, SweepFigure::finalLoss);
        QCOMPARE(frontRows(other), (std::vector<int>{1, 2, 4, 6, 8, 9}));
        QCOMPARE(m->front(), other);
        QCOMPARE(m->text(10, star), QString());
        QCOMPARE(m->text(8, star), QString("★"));
        // Higher samples/s is better: between neighbours the right point's (higher) loss holds.
        const auto& steps = v->scatter()->frontLine();
        QCOMPARE(steps.size(), std::size_t(11));
        QCOMPARE(steps[0], QPointF(1100, 0.14));
        QCOMPARE(steps[1], QPointF(1100, 0.16));
        QCOMPARE(steps[2], QPointF(1500, 0.16));
        QVERIFY(
            m->headerData(star, Qt::Horizontal, Qt::ToolTipRole).toString().contains("final loss against samples/s"));
    }

    // Selecting rows rings their points; clicking a point selects its row, Ctrl-click adds one,
    // through a sorted table.
    void selectionSync() {
        auto v = openView();
        QVERIFY(v);
        v->selectRows({4});
        QCOMPARE(v->scatter()->selectedRows(), (std::vector<int>{4}));
        v->view()->sortByColumn(v->model()->columnOf(SweepFigure::samplesPerS), Qt::AscendingOrder);
        v->scatter()->replot();
        const QPointF at = v->scatter()->pixelOf(10);
        QVERIFY(at.x() >= 0);
        QTest::mouseClick(v->scatter(), Qt::LeftButton, Qt::NoModifier, at.toPoint());
        QCOMPARE(v->selectedRows(), (std::vector<int>{10}));
        QCOMPARE(v->scatter()->selectedRows(), (std::vector<int>{10}));
        QCOMPARE(v->view()->currentIndex().data(SweepTableModel::RowRole).toInt(), 10);
        QTest::mouseClick(v->scatter(), Qt::LeftButton, Qt::ControlModifier, v->scatter()->pixelOf(1).toPoint());
        auto rows = v->selectedRows();
        std::sort(rows.begin(), rows.end());
        QCOMPARE(rows, (std::vector<int>{1, 10}));
        // A click away from every point selects nothing new.
        QTest::mouseClick(v->scatter(), Qt::LeftButton, Qt::NoModifier, QPoint(2, 2));
        QCOMPARE(v->selectedRows().size(), std::size_t(2));
        QVERIFY(v->scatter()->toolTipAt(v->scatter()->pixelOf(10)).contains("fp8"));
    }

    // Compare: the selected runs in a CompareView; with none selected, the sweep's 11 recorded runs
    // are more than one chart takes, and the sentence says to select some.
    void compare() {
        auto v = openView();
        QVERIFY(v);
        v->selectRows({});
        QVERIFY(!v->compare());
        QVERIFY2(v->lastError().contains("select 2 to 8"), qPrintable(v->lastError()));
        v->selectRows({0, 4, 10});
        QVERIFY(v->compareAction()->isEnabled());
        CompareView* c = v->compare();
        QVERIFY(c);
        std::vector<std::int64_t> shown;
        for (const auto& curve : c->curves()) shown.push_back(curve.id);
        const auto& rows = v->model()->table().rows;
        QCOMPARE(shown, (std::vector<std::int64_t>{rows[0].run->id, rows[4].run->id, rows[10].run->id}));
        c->close();
    }

    // File ▸ Sweeps… opens the window on the store runs are recorded in; the run history's "Sweep"
    // opens it on the selected run's row, and is disabled for a run outside a sweep.
    void fromTheMenusAndHistory() {
        {
            RunStore s(m_path.toStdString());
            history_test::syntheticRun(s, "loose", 5, RunStatus::completed);
        }
        MainWindow::Options o;
        o.storePath = m_path;
        o.useSettings = false;
        MainWindow w(o);
        w.sweepsAction()->trigger();
        SweepView* v = w.sweepView();
        QVERIFY(v->isVisible());
        QCOMPARE(v->sweepId(), m_sweep.id);
        QCOMPARE(v->model()->rowCount(), 12);
        v->close();

        RunBrowser* b = w.runBrowser();
        b->refresh();
        const std::int64_t target = v->model()->table().rows[6].run->id;
        std::int64_t loose = -1;
        for (const RunRow& r : b->model()->runs())
            if (r.name == "loose") loose = r.id;
        QVERIFY(loose > 0);
        b->selectRuns({loose});
        QVERIFY(!b->sweepAction()->isEnabled());
        b->selectRuns({target});
        QVERIFY(b->sweepAction()->isEnabled());
        QSignalSpy spy(b, &RunBrowser::sweepRequested);
        v->selectRows({});
        b->sweepAction()->trigger();
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.at(0).at(1).toString(), QString::fromStdString(m_sweep.uuid));
        QVERIFY(v->isVisible());
        QCOMPARE(v->selectedRows(), (std::vector<int>{6}));
        QVERIFY(!v->showSweepOfRun("no-such-uuid", 1));
        QVERIFY(v->lastError().contains("no sweep with the uuid no-such-uuid"));
    }

    // A spec the plan refuses (a recipe this Mantissa does not know): the recorded runs alone, by
    // index, named by their runs, and the notice says why.
    void planRefused() {
        QTemporaryDir dir;
        const QString path = dir.filePath("other.sqlite");
        auto store = std::make_shared<RunStore>(path.toStdString());
        SweepSpec spec = recipesTimesLr();
        nlohmann::json j = sweep_spec_to_json(spec);
        const SweepRow sweep = store->create_sweep({"odd", j.dump(), 12, "local"});
        const auto plan = plan_sweep(spec, sweep.name, matmulLayers);
        feedRun(*store, sweep, plan[2], figures().at(2));
        feedRun(*store, sweep, plan[5], figures().at(5));
        store->remove_sweep(sweep.id);
        j["recipes"] = nlohmann::json::array({"fp4-magic"});
        const SweepRow odd = store->create_sweep({"odd", j.dump(), 12, "local"});
        for (int i : {2, 5}) {
            RunInfo info{"odd · x", "cpu", "synthetic", "{}"};
            info.sweep_uuid = odd.uuid;
            info.sweep_index = i;
            auto r = store->start_run(info, RecorderOptions{});
            r->finish(RunStatus::stopped, "");
        }
        SweepView v;
        v.setStore(store);
        QCOMPARE(v.sweepId(), odd.id);
        QVERIFY(!v.table().planError.empty());
        QCOMPARE(v.model()->rowCount(), 2);
        QCOMPARE(v.model()->text(0, 0), QString("2"));
        QCOMPARE(v.model()->text(1, 1), QString("x"));
        QVERIFY2(v.noticeBar()->isVisibleTo(&v), "the notice says why");
    }

    // No point to draw: the accuracy axis spans 0..100 % (not 0..1 under a "%" label), and a
    // note in the plot says why it is empty; the first completed run takes the note away.
    void emptyPlotShowsItsUnitsRange() {
        QTemporaryDir dir;
        const QString path = dir.filePath("empty.sqlite");
        auto store = std::make_shared<RunStore>(path.toStdString());
        SweepView v;
        v.resize(1200, 600);
        v.setStore(store);  // no sweep at all
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QCOMPARE(v.yFigure(), SweepFigure::testAccuracy);
        QVERIFY(v.scatter()->points().empty());
        QVERIFY(v.scatter()->yAxis->label().startsWith(QStringLiteral("test accuracy (%)")));
        QCOMPARE(v.scatter()->yAxis->range().lower, 0.0);
        QCOMPARE(v.scatter()->yAxis->range().upper, 100.0);
        QCOMPARE(v.scatter()->emptyNoteShown(), QStringLiteral("No runs yet"));
        v.scatter()->replot();
        QVERIFY(v.scatter()->yAxis->tickVectorLabels().contains(QStringLiteral("100")));

        // A sweep planned, nothing completed: the same span on whichever axis shows accuracy.
        const SweepSpec spec = recipesTimesLr();
        const SweepRow sweep = store->create_sweep({"planned", sweep_spec_to_json(spec).dump(), 12, "local"});
        v.setStore(store);
        QCOMPARE(v.sweepId(), sweep.id);
        v.setAxes(SweepFigure::testAccuracy, SweepFigure::finalLoss);
        QCOMPARE(v.scatter()->xAxis->range().upper, 100.0);
        QCOMPARE(v.scatter()->emptyNoteShown(), QStringLiteral("No completed runs yet"));

        const auto plan = plan_sweep(spec, sweep.name, matmulLayers);
        feedRun(*store, sweep, plan[0], figures().at(0));
        v.refresh();
        QCOMPARE(v.scatter()->points().size(), std::size_t(1));
        QVERIFY(v.scatter()->emptyNoteShown().isEmpty());
        QVERIFY(v.scatter()->xAxis->range().contains(92.0));
    }

    // The picture for docs/gui.md; written only when MANTISSA_SCREENSHOT_DIR is set.
    void screenshots();
};

void TestSweepView::screenshots() {
    const QString outDir = qEnvironmentVariable("MANTISSA_SCREENSHOT_DIR");
    if (outDir.isEmpty()) QSKIP("MANTISSA_SCREENSHOT_DIR is not set");
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
    // mantissa-cli sweep --set dataset.kind=spirals --recipes standard --steps 300, run here.
    SweepSpec spec;
    spec.base.dataset.kind = "spirals";
    spec.base.train.steps = 300;
    spec.base.backend = "cpu";
    for (const Recipe& r : standard_recipes()) spec.recipes.push_back(r.name);
    {
        RunStore store(path.toStdString());
        const SweepRow sweep = store.create_sweep({"spirals-recipes", sweep_spec_to_json(spec).dump(),
                                                   static_cast<std::int64_t>(spec.recipes.size()), "local"});
        for (const PlannedRun& p : plan_sweep(spec, sweep.name, matmulLayers)) {
            Session session(p.experiment);
            RunInfo info{p.experiment.name, session.backend_name(), session.device_name(),
                         experiment_to_json(p.experiment).dump(), session.layers()};
            info.sweep_uuid = sweep.uuid;
            info.sweep_index = p.index;
            auto recorder = store.start_run(info, RecorderOptions{});
            session.add_sink(recorder);
            session.start();
            session.wait();
            QCOMPARE(session.summary().state, SessionState::completed);
            recorder->finish(RunStatus::completed, "");
        }
    }
    SweepView v;
    v.resize(1600, 540);
    v.setStore(std::make_shared<RunStore>(path.toStdString()));
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.selectRows({2});
    QTest::qWait(100);
    v.scatter()->replot();
    const QImage shot = v.grab().toImage();
    QVERIFY(!shot.isNull());
    QVERIFY(shot.save(outDir + QStringLiteral("/sweep.png")));
}

QTEST_MAIN(TestSweepView)
#include "test_sweep_view.moc"
