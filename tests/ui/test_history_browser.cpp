// The run browser over a store made here (three short spirals runs trained by the engine with
// different precision settings, and synthetic runs fed to a Recorder): the list and its columns,
// sorting, filters by text, tag and status, editing that persists in the store, confirmed deletion,
// read-only and bad stores (and the banner that says so going with its cause), the configuration
// summary (every form of a per-layer setting), the Configuration column readable at the window's
// default size, the figures and tags whole beside a long one (which takes the squeeze), long names that share their beginning told apart, opening a run (the charts'
// series hold exactly the recorded values; the viewer laid out so an MLP's or a language model's
// charts, events, sample and what-if table can be read), and following a run that is still being
// recorded.
#include <QtTest>

#include <csignal>

#include <QProcess>

#include <QAction>
#include <QHeaderView>
#include <QScrollBar>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>

#include "charts/chart_view.h"
#include "charts/charts_panel.h"
#include "history/config_summary.h"
#include "history/run_browser.h"
#include "history/run_filter_proxy.h"
#include "history/run_loader.h"
#include "history/run_table_columns.h"
#include "history/run_table_model.h"
#include "history/run_viewer.h"
#include "models/event_log_model.h"
#include "panels/events_panel.h"
#include "panels/notice_bar.h"
#include "panels/sample_panel.h"
#include "panels/what_if_panel.h"
#include "test_history_fixture.h"

using namespace mantissa;
using namespace mantissa::ui;
using namespace history_test;

// `store` opened in `b`, shown at `width` x `height` and exposed.
bool openAndShow(RunBrowser& b, const QString& store, int width, int height) {
    if (!b.openStore(store)) return false;
    b.resize(width, height);
    b.show();
    return QTest::qWaitForWindowExposed(&b);
}

// A run with what-if statistics, as the GUI records one; for a language model (`text`) also a text
// experiment, a sample in each evaluation event and the attention logits and layer-norm
// variances (seven charts in all).
std::int64_t statisticsRun(RunStore& store, bool text) {
    Experiment e = spirals(text ? "gpt-like" : "mlp-like");
    if (text) e.dataset.kind = "text";
    auto r = store.start_run({e.name, "cpu", "synthetic", experiment_to_json(e).dump()});
    r->on_event({0, 0, EventKind::run_started, "run started", "{}"});
    for (std::int64_t i = 0; i < 60; ++i) {
        r->on_step(syntheticStep(i), syntheticLayers(i));
        if (i % 10 != 9) continue;
        std::vector<WhatIfRecord> whatIf;
        for (int l = 0; l < 3; ++l)
            for (ComputeFormat f : {ComputeFormat(Format::fp16), ComputeFormat(Format::bf16), ComputeFormat(Format::fp8_e4m3)})
                whatIf.push_back({i, l, "fc" + std::to_string(l + 1), f, {0, 0, 40, 4096}, {0, 0, 50, 4096}, {0.01, 0, 30, 4096}});
        r->on_eval({i, "test", 2.0, 0.3});
        if (text) {
            std::vector<OpStepRecord> ops;
            for (int b = 0; b < 4; ++b) {
                const std::string block = "blocks." + std::to_string(b);
                ops.push_back({i, block + ".attn", "logit_amax", 4.0 + static_cast<double>(i + b)});
                ops.push_back({i, block + ".ln1", "min_variance", 0.01 / static_cast<double>(i + b + 1)});
            }
            r->on_op_steps(ops);
            r->on_event({i, 0.1 * static_cast<double>(i), EventKind::evaluation, "Test loss 2.0 nats/token",
                         R"({"loss": 2.0, "accuracy": 0.3, "prompt": "The glory of ", "sample": "the rown everig,\nseven mier", "temperature": 0.8})"});
        }
        r->on_what_if(whatIf);
    }
    r->finish(RunStatus::completed, "");
    return r->run_id();
}

class TestHistoryBrowser : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::string m_path;
    std::int64_t m_fp32 = 0, m_fp16NoScale = 0, m_fp16Dynamic = 0, m_failed = 0, m_stopped = 0;

    std::unique_ptr<RunBrowser> makeBrowser() {
        auto b = std::make_unique<RunBrowser>();
        b->resize(1200, 600);
        b->show();
        if (!b->openStore(QString::fromStdString(m_path))) qWarning() << b->lastError();
        return b;
    }
    static int rowOf(RunBrowser& b, std::int64_t id) {  // proxy row
        for (int r = 0; r < b.proxy()->rowCount(); ++r)
            if (b.proxy()->index(r, 0).data(RunTableModel::IdRole).toLongLong() == id) return r;
        return -1;
    }
    static QString cell(RunBrowser& b, std::int64_t id, int column) {
        return b.proxy()->index(rowOf(b, id), column).data().toString();
    }
    static QSet<qint64> visibleIds(RunBrowser& b) {
        QSet<qint64> ids;
        for (int r = 0; r < b.proxy()->rowCount(); ++r) ids << b.proxy()->index(r, 0).data(RunTableModel::IdRole).toLongLong();
        return ids;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        Experiment fp32 = spirals("spirals-fp32");
        Experiment noScale = spirals("spirals-fp16-noscale");
        noScale.precision.autocast = Autocast::fp16;
        noScale.precision.loss_scaling.mode = LossScalingMode::off;
        Experiment dynamic = spirals("spirals-fp16-dynamic");
        dynamic.precision.autocast = Autocast::fp16;
        dynamic.precision.layers["fc3"] = LayerPrecision::fp32;
        m_fp32 = trainRun(m_path, fp32, "baseline, spirals", "the reference");
        m_fp16NoScale = trainRun(m_path, noScale, "spirals");
        m_fp16Dynamic = trainRun(m_path, dynamic, "spirals, fp16");
        RunStore store(m_path);
        syntheticRun(store, "synthetic-failed", 12, RunStatus::failed);
        syntheticRun(store, "synthetic-stopped", 25, RunStatus::stopped);
        for (const auto& r : store.list_runs()) {
            if (r.name == "synthetic-failed") m_failed = r.id;
            if (r.name == "synthetic-stopped") m_stopped = r.id;
        }
        QVERIFY(m_failed > 0 && m_stopped > 0);
    }

    void configSummaries_data() {
        QTest::addColumn<QString>("assignments");  // ";"-separated --set assignments on spirals()
        QTest::addColumn<QString>("summary");
        QTest::newRow("defaults") << "" << "fp32 · dynamic · master fp32";
        QTest::newRow("fp16 off") << "precision.autocast=fp16;precision.loss_scaling.mode=off" << "fp16 · no scaling · master fp32";
        QTest::newRow("bf16 static") << "precision.autocast=bf16;precision.loss_scaling.mode=static;precision.loss_scaling.init_scale=1024"
                                     << "bf16 · static 1024 · master fp32";
        QTest::newRow("layers") << "precision.autocast=fp16;precision.master_weights=false;precision.layers.fc3=fp32;precision.layers.fc1=auto"
                                << "fp16 · dynamic · no master · fc3=fp32";
        // Lesson 15: fc1 and fc2 accumulate in FP16 (objects of their matmuls), its reference in FP32
        // with the matmuls pinned to autocast's own format, which changes nothing worth saying.
        const QString fp16Gemms =
            "precision.layers.%1.forward=fp16;precision.layers.%1.dgrad=fp16;precision.layers.%1.wgrad=fp16";
        QTest::newRow("fp16 accumulation")
            << "precision.autocast=fp16;" + fp16Gemms.arg("fc1") + ";" + fp16Gemms.arg("fc2") +
                   ";precision.layers.fc1.accumulate=fp16;precision.layers.fc2.accumulate=fp16"
            << "fp16 · dynamic · master fp32 · fc1,fc2 acc fp16";
        QTest::newRow("autocast's own format")
            << "precision.autocast=fp16;precision.layers.fc1=fp16;precision.layers.fc2=fp16"
            << "fp16 · dynamic · master fp32";
        QTest::newRow("fp16 accumulation, no autocast")
            << fp16Gemms.arg("fc2") + ";precision.layers.fc2.accumulate=fp16"
            << "fp32 · dynamic · master fp32 · fc2=fp16, acc fp16";
        QTest::newRow("per matmul")
            << "precision.autocast=bf16;precision.layers.fc2.forward=fp8-e4m3;precision.layers.fc2.dgrad=fp8-e4m3"
            << "bf16 · dynamic · master fp32 · fc2 fwd fp8-e4m3, dgrad fp8-e4m3";
        QTest::newRow("in the model's order")
            << "precision.autocast=fp16;precision.layers.fc3=fp32;precision.layers.fc1.wgrad=bf16"
            << "fp16 · dynamic · master fp32 · fc1 wgrad bf16 · fc3=fp32";
        QTest::newRow("alike, together")
            << "precision.autocast=bf16;precision.layers.fc3=fp32;precision.layers.fc2=fp8-e4m3;precision.layers.fc1=fp32"
            << "bf16 · dynamic · master fp32 · fc1,fc3=fp32 · fc2=fp8-e4m3";
        QTest::newRow("op class") << "precision.autocast=bf16;precision.ops.softmax=fp32"
                                  << "bf16 · dynamic · master fp32 · softmax fp32";
    }
    void configSummaries() {
        QFETCH(QString, assignments);
        QFETCH(QString, summary);
        Experiment e = spirals("x");
        for (const QString& a : assignments.split(QLatin1Char(';'), Qt::SkipEmptyParts)) apply_setting(e, a.toStdString());
        QCOMPARE(QString::fromStdString(configSummary(experiment_to_json(e).dump())), summary);
        QCOMPARE(QString::fromStdString(configSummary("not json")), QString());
    }

    void configSummaryReadsEveryFormOfALayerEntry() {
        // As a file may write them: a matmul left out is auto, accumulation left out is FP32; an
        // entry this version cannot read is shown as written rather than dropped.
        const std::string config = R"({"precision": {"autocast": "fp16", "layers": {
            "fc1": {"accumulate": "fp16"}, "fc2": {"forward": "fp32"}, "fc3": {"forward": "auto", "dgrad": "auto"},
            "fc4": "auto", "fc5": {"forward": "fp16", "later": "x"}}}})";
        QCOMPARE(
            QString::fromStdString(configSummary(config)),
            QStringLiteral(
                R"(fp16 · dynamic · master fp32 · fc1 acc fp16 · fc2 fwd fp32 · fc5={"forward":"fp16","later":"x"})"));
    }

    void listsRunsWithTheirColumns() {
        auto b = makeBrowser();
        QCOMPARE(b->model()->rowCount(), 5);
        RunStore store(m_path, true);
        const RunRow dyn = store.run(m_fp16Dynamic);
        QCOMPARE(cell(*b, m_fp16Dynamic, RunTableModel::Name), QStringLiteral("spirals-fp16-dynamic"));
        QCOMPARE(cell(*b, m_fp16Dynamic, RunTableModel::Status), QStringLiteral("completed"));
        QCOMPARE(cell(*b, m_fp16Dynamic, RunTableModel::Backend), QStringLiteral("cpu"));
        QCOMPARE(cell(*b, m_fp16Dynamic, RunTableModel::Configuration), QStringLiteral("fp16 · dynamic · master fp32 · fc3=fp32"));
        QCOMPARE(cell(*b, m_fp16NoScale, RunTableModel::Configuration), QStringLiteral("fp16 · no scaling · master fp32"));
        QCOMPARE(cell(*b, m_fp16Dynamic, RunTableModel::Steps), QStringLiteral("40"));
        QVERIFY(dyn.final_loss && dyn.test_accuracy);
        // One style for the whole column, chosen from every run's final loss (number_format.h).
        std::vector<double> losses;
        for (const RunRow& r : store.list_runs())
            if (r.final_loss) losses.push_back(*r.final_loss);
        QCOMPARE(cell(*b, m_fp16Dynamic, RunTableModel::FinalLoss), ColumnNumberStyle::forValues(losses).format(*dyn.final_loss));
        QCOMPARE(cell(*b, m_fp16Dynamic, RunTableModel::TestAccuracy),
                 QString::number(*dyn.test_accuracy * 100, 'f', 1) + QStringLiteral(" %"));
        QCOMPARE(cell(*b, m_fp32, RunTableModel::Tags), QStringLiteral("baseline, spirals"));
        QCOMPARE(cell(*b, m_failed, RunTableModel::Status), QStringLiteral("failed"));
        QVERIFY(cell(*b, m_failed, RunTableModel::TestAccuracy) == QStringLiteral("53.6 %"));  // its one evaluation: 0.5 + 0.004 * 9
        QVERIFY(!cell(*b, m_fp32, RunTableModel::Date).isEmpty());
        QVERIFY(b->model()->allTags() == (QStringList{QStringLiteral("baseline"), QStringLiteral("fp16"), QStringLiteral("spirals")}));
    }

    void sortsNumbersAsNumbers() {
        auto b = makeBrowser();
        b->view()->sortByColumn(RunTableModel::Steps, Qt::AscendingOrder);
        QList<qint64> steps;
        for (int r = 0; r < b->proxy()->rowCount(); ++r)
            steps << b->proxy()->index(r, RunTableModel::Steps).data(RunTableModel::SortRole).toLongLong();
        QCOMPARE(steps, (QList<qint64>{12, 25, 40, 40, 40}));
        b->view()->sortByColumn(RunTableModel::Name, Qt::DescendingOrder);
        QCOMPARE(b->proxy()->index(0, RunTableModel::Name).data().toString(), QStringLiteral("synthetic-stopped"));
    }

    void filtersByTextTagAndStatus() {
        auto b = makeBrowser();
        b->setTextFilter(QStringLiteral("noscale"));
        QCOMPARE(visibleIds(*b), (QSet<qint64>{m_fp16NoScale}));
        b->setTextFilter(QStringLiteral("fc3=fp32"));  // the configuration summary is searched
        QCOMPARE(visibleIds(*b), (QSet<qint64>{m_fp16Dynamic}));
        b->setTextFilter(QStringLiteral("reference"));  // notes too
        QCOMPARE(visibleIds(*b), (QSet<qint64>{m_fp32}));
        b->setTextFilter({});
        QCOMPARE(b->visibleRunCount(), 5);
        b->setTagFilter(QStringLiteral("spirals"));
        QCOMPARE(visibleIds(*b), (QSet<qint64>{m_fp32, m_fp16NoScale, m_fp16Dynamic}));
        b->setTextFilter(QStringLiteral("fp16"));
        QCOMPARE(visibleIds(*b), (QSet<qint64>{m_fp16NoScale, m_fp16Dynamic}));
        b->setTagFilter({});
        b->setTextFilter({});
        b->setStatusFilter(QStringLiteral("failed"));
        QCOMPARE(visibleIds(*b), (QSet<qint64>{m_failed}));
        b->setStatusFilter(QStringLiteral("completed"));
        QCOMPARE(b->visibleRunCount(), 3);
        b->setStatusFilter({});
        QCOMPARE(b->visibleRunCount(), 5);
    }

    void editsPersistInTheStore() {
        auto b = makeBrowser();
        QVERIFY(b->renameRun(m_stopped, QStringLiteral("synthetic-renamed")));
        QVERIFY(b->setRunNotes(m_stopped, QStringLiteral("two lines\nof notes")));
        QVERIFY(b->setRunTags(m_stopped, QStringLiteral(" a,b ,, a ")));
        QCOMPARE(cell(*b, m_stopped, RunTableModel::Name), QStringLiteral("synthetic-renamed"));
        {
            RunStore fresh(m_path, true);
            const RunRow r = fresh.run(m_stopped);
            QCOMPARE(r.name, std::string("synthetic-renamed"));
            QCOMPARE(r.notes, std::string("two lines\nof notes"));
            QCOMPARE(RunTableModel::splitTags(r.tags), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
        }
        QVERIFY(!b->renameRun(m_stopped, QStringLiteral("   ")));  // a name is required
        QVERIFY(!b->lastError().isEmpty());

        // Through the details pane, as a person edits.
        b->selectRuns({m_stopped});
        auto* name = b->findChild<QLineEdit*>(QStringLiteral("runName"));
        QVERIFY(name);
        QCOMPARE(name->text(), QStringLiteral("synthetic-renamed"));
        name->setText(QStringLiteral("synthetic-stopped"));
        b->findChild<QPlainTextEdit*>(QStringLiteral("runNotes"))->setPlainText(QStringLiteral("edited in the pane"));
        QVERIFY(b->saveDetailsButton()->isEnabled());
        b->saveDetailsButton()->click();
        RunStore fresh(m_path, true);
        QCOMPARE(fresh.run(m_stopped).name, std::string("synthetic-stopped"));
        QCOMPARE(fresh.run(m_stopped).notes, std::string("edited in the pane"));
        QCOMPARE(RunTableModel::splitTags(fresh.run(m_stopped).tags), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
        QCOMPARE(b->selectedRunIds(), std::vector<std::int64_t>{m_stopped});  // kept across the refresh

        // A refresh (the auto-refresh while a run records) keeps unsaved edits in the pane.
        auto* notes = b->findChild<QPlainTextEdit*>(QStringLiteral("runNotes"));
        notes->setPlainText(QStringLiteral("typing, not saved"));
        b->refresh();
        QCOMPARE(notes->toPlainText(), QStringLiteral("typing, not saved"));
        QCOMPARE(name->text(), QStringLiteral("synthetic-stopped"));
        b->selectRuns({m_fp32});
        QCOMPARE(notes->toPlainText(), QStringLiteral("the reference"));  // another run: its own notes
    }

    void deleteAsksThenRemoves() {
        std::int64_t victim = 0;
        {
            RunStore store(m_path);
            syntheticRun(store, "to-delete", 3, RunStatus::completed);
            victim = store.resolve("to-delete");
        }
        auto b = makeBrowser();
        QCOMPARE(b->model()->rowCount(), 6);
        QString asked;
        b->setConfirmHandler([&](const QString& q) { asked = q; return false; });
        QVERIFY(!b->deleteRuns({victim}));
        QVERIFY(asked.contains(QStringLiteral("to-delete")));
        QCOMPARE(b->model()->rowCount(), 6);
        b->setConfirmHandler([&](const QString&) { return true; });
        b->selectRuns({victim});
        QVERIFY(b->deleteAction()->isEnabled());
        b->deleteAction()->trigger();
        QCOMPARE(b->model()->rowCount(), 5);
        QCOMPARE(b->model()->rowOf(victim), -1);
        RunStore fresh(m_path, true);
        for (const auto& r : fresh.list_runs()) QVERIFY(r.id != victim);
    }

    void readOnlyStoreBrowsesButDoesNotEdit() {
        RunBrowser b;
        QVERIFY(b.openStore(QString::fromStdString(m_path), true));
        QVERIFY(b.readOnly());
        QCOMPARE(b.model()->rowCount(), 5);
        b.selectRuns({m_fp32});
        QVERIFY(b.openRunAction()->isEnabled());
        QVERIFY(!b.deleteAction()->isEnabled());
        QVERIFY(b.deleteAction()->toolTip().contains(QStringLiteral("read-only")));
        QVERIFY(!b.saveDetailsButton()->isEnabled());
        QVERIFY(b.saveDetailsButton()->toolTip().contains(QStringLiteral("read-only")));
        QVERIFY(!b.renameRun(m_fp32, QStringLiteral("nope")));
        QVERIFY(b.lastError().contains(QStringLiteral("read-only")));
        QCOMPARE(RunStore(m_path, true).run(m_fp32).name, std::string("spirals-fp32"));
    }

    void badStoreFileIsRefusedAndTheOldOneKept() {
        auto b = makeBrowser();
        const QString bad = m_dir.filePath(QStringLiteral("not-a-store.sqlite"));
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("this is a text file, not a database\n");
        }
        QSignalSpy errors(b.get(), &RunBrowser::errorOccurred);
        QVERIFY(!b->openStore(bad));
        QCOMPARE(errors.count(), 1);
        QVERIFY(b->lastError().contains(QStringLiteral("not-a-store.sqlite")));
        QVERIFY(!b->lastError().contains(QLatin1Char('\n')));
        QVERIFY(b->lastError().endsWith(QLatin1Char('.')));
        QVERIFY(b->noticeBar()->isVisible());
        QCOMPARE(b->storePath().toStdString(), m_path);
        QCOMPARE(b->model()->rowCount(), 5);
        QVERIFY(!b->openStore(m_dir.filePath(QStringLiteral("missing.sqlite"))));
        QVERIFY(b->lastError().contains(QStringLiteral("no run store")));
    }

    void openingARunShowsItsRecordedValues() {
        auto b = makeBrowser();
        QSignalSpy opened(b.get(), &RunBrowser::runOpened);
        RunViewer* v = b->openRun(m_fp16Dynamic);
        QVERIFY(v);
        QCOMPARE(opened.count(), 1);
        QCOMPARE(opened.at(0).at(0).toLongLong(), m_fp16Dynamic);
        QVERIFY(!v->following());
        RunStore store(m_path, true);
        const auto steps = store.steps(m_fp16Dynamic);
        const auto layers = store.layer_steps(m_fp16Dynamic);
        const auto evals = store.evals(m_fp16Dynamic);
        const auto events = store.events(m_fp16Dynamic);
        const RunSeries& s = v->series();
        QCOMPARE(steps.size(), std::size_t{40});
        QCOMPARE(s.loss().size(), steps.size());
        QCOMPARE(s.lossScale().size(), steps.size());
        for (std::size_t i = 0; i < steps.size(); ++i) {
            QCOMPARE(s.loss().x(i), static_cast<double>(steps[i].step));
            QCOMPARE(s.loss().y(i), static_cast<double>(static_cast<float>(steps[i].loss)));  // LodSeries keeps floats
            QCOMPARE(s.lossScale().y(i), static_cast<double>(static_cast<float>(steps[i].loss_scale)));
            QCOMPARE(s.throughput().y(i), static_cast<double>(static_cast<float>(steps[i].samples_per_s)));
        }
        QCOMPARE(s.layerNames(), (std::vector<std::string>{"fc1", "fc2", "fc3"}));
        std::size_t fc2Rows = 0;
        for (const auto& l : layers) {
            if (l.layer != 1) continue;
            QCOMPARE(s.underflow(1).y(fc2Rows), static_cast<double>(static_cast<float>(l.frac_underflow)));
            ++fc2Rows;
        }
        QCOMPARE(s.underflow(1).size(), fc2Rows);
        QVERIFY(fc2Rows > 0);
        QVERIFY(s.latestLayers()[2].has_value());
        QCOMPARE(s.latestLayers()[2]->precision, ComputeFormat(Format::fp32));  // fc3 was kept in fp32
        QCOMPARE(s.latestLayers()[0]->precision, ComputeFormat(Format::fp16));
        QCOMPARE(s.testAccuracy().size(), evals.size());
        QCOMPARE(s.testAccuracy().lastY(), static_cast<double>(static_cast<float>(evals.back().accuracy)));
        QCOMPARE(v->eventModel()->rowCount(), static_cast<int>(events.size()));
        QVERIFY(events.size() >= 2);  // started and finished at least
        v->chartsPanel()->redrawNow(true);
        QVERIFY(v->chartsPanel()->lossChart()->drawnPoints() > 0);
        QVERIFY(v->summaryText().contains(QStringLiteral("completed")));
        QVERIFY(v->summaryText().contains(QStringLiteral("40 steps")));
        // The run's throughput is the one figure the CLI's summary and `show` give (config/throughput.h).
        {
            RunStore store(m_path, StoreAccess::read_only);
            const RunTotals t = store.totals(m_fp16Dynamic);
            QVERIFY(t.samples_per_s.has_value());
            const QString figure = QLocale().toString(*t.samples_per_s, 'f', 0) + QStringLiteral(" samples/s (mean over the run)");
            QVERIFY2(v->summaryText().contains(figure), qPrintable(v->summaryText() + " lacks " + figure));
        }
        // Counts in words, singular or plural, never "3 overflow(s)".
        QVERIFY2(!v->summaryText().contains(QStringLiteral("(s)")), qPrintable(v->summaryText()));
        if (const auto n = s.overflowCount(); n > 0)
            QVERIFY2(v->summaryText().contains(n == 1 ? QStringLiteral("1 overflow") : QStringLiteral("%1 overflows").arg(n)),
                     qPrintable(v->summaryText()));
        // Opening it again raises the same window.
        QCOMPARE(b->openRun(m_fp16Dynamic), v);
        QCOMPARE(b->openViewers().size(), 1);
        QVERIFY(!b->openRun(987654));
        QVERIFY(!b->lastError().isEmpty());
    }

    void activatingARowOpensIt() {
        auto b = makeBrowser();
        b->selectRuns({m_fp32});
        b->view()->setFocus();
        b->view()->setCurrentIndex(b->proxy()->index(rowOf(*b, m_fp32), 0));
        QSignalSpy opened(b.get(), &RunBrowser::runOpened);
        QTest::keyClick(b->view(), Qt::Key_Return);
        QCOMPARE(opened.count(), 1);
        QCOMPARE(opened.at(0).at(0).toLongLong(), m_fp32);
        b->setOpensWindows(false);  // the main window may take the run itself
        b->openRunAction()->trigger();
        QCOMPARE(opened.count(), 2);
        QCOMPARE(b->openViewers().size(), 1);
    }

    void followsARunStillBeingRecorded() {
        RunStore writer(m_path);
        auto recorder = syntheticRun(writer, "live-run", 10, RunStatus::running);
        QVERIFY(recorder);
        const std::int64_t id = recorder->run_id();
        RunStore probe(m_path, true);
        QTRY_COMPARE_WITH_TIMEOUT(probe.steps(id).size(), std::size_t{10}, 5000);

        auto b = makeBrowser();
        QCOMPARE(cell(*b, id, RunTableModel::Status), QStringLiteral("running"));
        QVERIFY(b->autoRefreshing());
        RunViewer* v = b->openRun(id);
        QVERIFY(v);
        QVERIFY(v->following());
        QCOMPARE(v->series().stepCount(), 10);
        QCOMPARE(v->series().underflow(0).size(), std::size_t{10});
        const int eventsBefore = v->eventModel()->rowCount();

        feed(*recorder, 10, 30);  // a setting change is not among these; an eval every 10 steps
        recorder->on_event({29, 1.5, EventKind::overflow, "overflow in fc2", R"({"layer": "fc2", "tensor": "dW"})"});
        QTRY_COMPARE_WITH_TIMEOUT(probe.steps(id).size(), std::size_t{30}, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(probe.events(id).size(), static_cast<std::size_t>(eventsBefore + 1), 5000);
        v->follower()->poll();
        QCOMPARE(v->series().stepCount(), 30);
        QCOMPARE(v->series().loss().y(29), static_cast<double>(static_cast<float>(syntheticStep(29).loss)));
        QCOMPARE(v->series().underflow(2).size(), std::size_t{30});
        QCOMPARE(v->series().testAccuracy().size(), std::size_t{3});
        QCOMPARE(v->eventModel()->rowCount(), eventsBefore + 1);
        v->follower()->poll();  // nothing new: nothing added twice
        QCOMPARE(v->series().stepCount(), 30);
        QCOMPARE(v->eventModel()->rowCount(), eventsBefore + 1);

        // The timer polls by itself, and stops when the run ends.
        QSignalSpy finished(v, &RunViewer::runFinished);
        feed(*recorder, 30, 35);
        recorder->finish(RunStatus::completed);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 5000);
        QVERIFY(!v->following());
        QCOMPARE(v->series().stepCount(), 35);
        QCOMPARE(v->run().status, RunStatus::completed);
        QVERIFY(v->summaryText().contains(QStringLiteral("completed")));
        QCOMPARE(cell(*b, id, RunTableModel::Status), QStringLiteral("completed"));  // the browser refreshed
        QVERIFY(!b->autoRefreshing());
        b->setConfirmHandler([](const QString&) { return true; });
        QVERIFY(b->deleteRuns({id}));
    }

    void followsARunOfAnotherProcess() {
#ifndef MANTISSA_CLI_EXE
        QSKIP("mantissa-cli is not built");
#else
        // `mantissa-cli train` records into the same store from its own process; the viewer
        // follows it, and sees it end when the CLI is interrupted (Ctrl-C: recorded `stopped`).
        QProcess cli;
        cli.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        cli.start(QStringLiteral(MANTISSA_CLI_EXE),
                  {QStringLiteral("train"), QStringLiteral("--db"), QString::fromStdString(m_path), QStringLiteral("--name"),
                   QStringLiteral("cli-live"), QStringLiteral("--steps"), QStringLiteral("1000000"), QStringLiteral("--set"),
                   QStringLiteral("dataset.kind=spirals"), QStringLiteral("--set"), QStringLiteral("dataset.samples=600"),
                   QStringLiteral("--set"), QStringLiteral("model.hidden=[16]"), QStringLiteral("--set"),
                   QStringLiteral("train.batch_size=32"), QStringLiteral("--set"), QStringLiteral("backend=cpu")});
        QVERIFY(cli.waitForStarted(5000));
        RunStore probe(m_path, true);
        std::int64_t id = 0;
        QTRY_VERIFY_WITH_TIMEOUT(([&] {
                                     for (const auto& r : probe.list_runs())
                                         if (r.name == "cli-live" && r.steps >= 5) id = r.id;
                                     return id > 0;
                                 }()),
                                 20000);
        auto b = makeBrowser();
        RunViewer* v = b->openRun(id);
        QVERIFY(v);
        QVERIFY(v->following());
        const std::int64_t first = v->series().stepCount();
        QVERIFY(first >= 5);
        QTRY_VERIFY_WITH_TIMEOUT(v->series().stepCount() > first + 5, 10000);  // appended by the timer's polls
        QSignalSpy finished(v, &RunViewer::runFinished);
        ::kill(static_cast<pid_t>(cli.processId()), SIGINT);
        QVERIFY(cli.waitForFinished(10000));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 5000);
        QCOMPARE(v->run().status, RunStatus::stopped);
        QCOMPARE(static_cast<std::size_t>(v->series().stepCount()), probe.steps(id).size());  // every row, none twice
        for (std::size_t i = 0; i < v->series().loss().size(); ++i)
            QCOMPARE(v->series().loss().x(i), static_cast<double>(i));
        b->setConfirmHandler([](const QString&) { return true; });
        QVERIFY(b->deleteRuns({id}));
#endif
    }

    void configurationColumnReadsAtTheDefaultSize() {
        // The main window opens the browser at 1200x640: the columns beside Configuration once
        // filled the table and left it a sliver.
        auto b = makeBrowser();
        b->resize(1200, 640);
        QVERIFY(QTest::qWaitForWindowExposed(b.get()));
        QTableView* view = b->view();
        const QString summary = cell(*b, m_fp16Dynamic, RunTableModel::Configuration);
        QVERIFY(summary.contains(QStringLiteral("fc3=fp32")));
        QVERIFY2(view->columnWidth(RunTableModel::Configuration) >= view->fontMetrics().horizontalAdvance(summary),
                 qPrintable(QStringLiteral("%1 px for \"%2\"").arg(view->columnWidth(RunTableModel::Configuration)).arg(summary)));
        // A wider window gives it the room the other columns leave.
        const int before = view->columnWidth(RunTableModel::Configuration);
        b->resize(2200, 640);
        QTRY_VERIFY(view->columnWidth(RunTableModel::Configuration) > before + 500);
    }

    void resultColumnsKeepTheirWidth() {
        // docs/screenshots/browser.png (1440x420) once read "97." under "Test a" with no Tags:
        // the Configuration column held the widest summary whole and pushed them out. Now it takes
        // the squeeze, elided, and every other column keeps the width its texts need.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        Experiment fp8;  // a summary far wider than the room it gets
        fp8.name = "fmnist-fp8-try";
        fp8.precision.autocast = Autocast::bf16;
        fp8.precision.layers = {{"fc1", LayerPrecision::fp8_e4m3}, {"fc2", LayerPrecision::fp8_e4m3},
                                {"fc3", LayerPrecision::fp16}};
        Experiment plain = spirals("spirals-fp16-fc3-fp32");
        plain.precision.autocast = Autocast::fp16;
        plain.precision.layers["fc3"] = LayerPrecision::fp32;
        {
            RunStore store(path.toStdString());
            syntheticRun(store, fp8.name, 60, RunStatus::failed, experiment_to_json(fp8).dump());
            syntheticRun(store, plain.name, 12, RunStatus::completed, experiment_to_json(plain).dump());
            store.set_tags(store.resolve(plain.name), "lesson, baseline");
        }
        RunBrowser b;
        QVERIFY(openAndShow(b, path, 1440, 420));
        QTableView* view = b.view();
        const QFontMetrics fm = view->fontMetrics(), header = view->horizontalHeader()->fontMetrics();
        const auto needs = [&](int column) {  // the widest cell or header, with the cell's margins
            int widest = header.horizontalAdvance(b.proxy()->headerData(column, Qt::Horizontal).toString());
            for (int r = 0; r < b.proxy()->rowCount(); ++r)
                widest = std::max(widest, fm.horizontalAdvance(b.proxy()->index(r, column).data().toString()));
            return widest + 6;
        };
        const auto checkOthers = [&] {
            for (int c = 0; c < b.proxy()->columnCount(); ++c)
                if (c != RunTableModel::Configuration)
                    QVERIFY2(view->columnWidth(c) >= needs(c),
                             qPrintable(QStringLiteral("column %1: %2 px for %3").arg(c).arg(view->columnWidth(c)).arg(needs(c))));
        };
        checkOthers();
        QTRY_COMPARE(view->horizontalScrollBar()->maximum(), 0);  // every column on screen, Tags last
        const std::int64_t id = b.store()->resolve(fp8.name);
        const QString summary = cell(b, id, RunTableModel::Configuration);
        const int config = view->columnWidth(RunTableModel::Configuration);
        QVERIFY2(config < fm.horizontalAdvance(summary), qPrintable(QString::number(config)));
        QVERIFY(config >= configurationMinimumWidth(view));
        QVERIFY(b.proxy()->index(rowOf(b, id), RunTableModel::Configuration).data(Qt::ToolTipRole).toString().contains(
            summary.section(QStringLiteral(" → "), 0, 0)));  // the settings; the changes listed below them
        // Too narrow for the others and the minimum: the figures still keep theirs, the table
        // scrolls, and the summaries get the room to read (more than the minimum).
        b.resize(1000, 420);
        QTRY_VERIFY(view->horizontalScrollBar()->maximum() > 0);
        checkOthers();
        QVERIFY(view->columnWidth(RunTableModel::Configuration) > configurationMinimumWidth(view));
    }

    void longNamesStayApart() {
        // Two runs of one lesson share their first 24 characters: the Name column widens to show
        // them (up to a maximum), elides what does not fit in the middle, and the tooltip has it all.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("runs.sqlite"));
        const std::string lesson = "lesson-fp16-accumulation", reference = lesson + "-reference-fp32-accumulation";
        Experiment fp16Sums = spirals(lesson);  // lesson 15's precision: the longer summary reads whole too
        fp16Sums.precision.autocast = Autocast::fp16;
        for (const char* layer : {"fc1", "fc2"}) {
            LayerSetting s(LayerPrecision::fp16);
            s.accumulate = Accumulation::fp16;
            fp16Sums.precision.layers[layer] = s;
        }
        {
            RunStore store(path.toStdString());
            syntheticRun(store, lesson, 3, RunStatus::completed, experiment_to_json(fp16Sums).dump());
            syntheticRun(store, reference, 3, RunStatus::completed);
            syntheticRun(store, reference + "-and-then-some-more-words-to-be-sure", 3, RunStatus::completed);
        }
        RunBrowser b;
        QVERIFY(openAndShow(b, path, 1200, 640));
        QTableView* view = b.view();
        const int width = view->columnWidth(RunTableModel::Name);
        QVERIFY2(width > view->fontMetrics().horizontalAdvance(QString::fromStdString(lesson)),
                 qPrintable(QString::number(width)));
        QCOMPARE(width, nameMaximumWidth(view));
        auto* delegate = dynamic_cast<MiddleElideDelegate*>(view->itemDelegateForColumn(RunTableModel::Name));
        QVERIFY(delegate);
        QStringList shown;
        for (int r = 0; r < b.proxy()->rowCount(); ++r) {
            const QModelIndex index = b.proxy()->index(r, RunTableModel::Name);
            QStyleOptionViewItem option;
            option.initFrom(view);
            delegate->initStyleOption(&option, index);
            QCOMPARE(option.textElideMode, Qt::ElideMiddle);
            shown << view->fontMetrics().elidedText(option.text, option.textElideMode, width - 10);
            QVERIFY(index.data(Qt::ToolTipRole).toString().contains(index.data().toString()));
        }
        shown.removeDuplicates();
        QCOMPARE(shown.size(), 3);
        QVERIFY(shown.contains(QString::fromStdString(lesson)));  // whole where it fits
        const QString summary = QStringLiteral("fp16 · dynamic · master fp32 · fc1,fc2 acc fp16");
        QCOMPARE(cell(b, b.store()->resolve(lesson), RunTableModel::Configuration), summary);
        QVERIFY(view->columnWidth(RunTableModel::Configuration) > view->fontMetrics().horizontalAdvance(summary));
        // A drag of the column stands through a refresh that lists the same names.
        view->setColumnWidth(RunTableModel::Name, width + 40);
        b.refresh();
        QCOMPARE(view->columnWidth(RunTableModel::Name), width + 40);
    }

    void bannerGoesWithItsCause() {
        auto b = makeBrowser();
        QVERIFY(QTest::qWaitForWindowExposed(b.get()));
        const QString bad = m_dir.filePath(QStringLiteral("not-a-store-either.sqlite"));
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("not a database\n");
        }
        QVERIFY(!b->openStore(bad));
        QVERIFY(b->noticeBar()->isVisible());
        QVERIFY(b->openStore(QString::fromStdString(m_path)));  // a store opens: the refusal is over
        QVERIFY(!b->noticeBar()->isVisible());
        // Closed and reopened (as File > Run history does: refresh, then show) on the store it kept.
        QVERIFY(!b->openStore(bad));
        QVERIFY(b->noticeBar()->isVisible());
        b->close();
        b->refresh();
        b->show();
        QVERIFY(QTest::qWaitForWindowExposed(b.get()));
        QVERIFY(!b->noticeBar()->isVisible());
        QCOMPARE(b->storePath().toStdString(), m_path);
    }

    void viewerIsLaidOutToBeRead_data() {
        QTest::addColumn<bool>("text");
        QTest::addColumn<int>("charts");
        QTest::addColumn<int>("tabs");
        QTest::newRow("mlp, what-if") << false << 5 << 1;
        QTest::newRow("language model, sample and what-if") << true << 7 << 2;
    }

    void viewerIsLaidOutToBeRead() {
        // Left to the splitters, a language model's run (Sample and What-if beside the events,
        // seven charts) gave the events a clipped filter box and each chart a plot of a few pixels.
        QFETCH(bool, text);
        QFETCH(int, charts);
        QFETCH(int, tabs);
        auto store = std::make_shared<RunStore>(
            m_dir.filePath(text ? QStringLiteral("lm.sqlite") : QStringLiteral("mlp.sqlite")).toStdString());
        RunViewer v(store, statisticsRun(*store, text));
        QVERIFY(v.load());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        std::vector<ChartView*> shown;
        for (ChartView* c : v.chartsPanel()->charts())
            if (c->isVisibleTo(&v)) shown.push_back(c);
        QCOMPARE(static_cast<int>(shown.size()), charts);
        for (std::size_t i = 0; i < shown.size(); ++i)  // the live window's promise (docs/gui.md, "Small windows")
            QTRY_VERIFY2(shown[i]->axisRect()->height() >= 72,
                         qPrintable(QStringLiteral("chart %1: %2 px of plot").arg(i).arg(shown[i]->axisRect()->height())));
        QVERIFY2(v.eventsPanel()->width() >= 300, qPrintable(QString::number(v.eventsPanel()->width())));
        // Beside the events, tabs (the sample raised), each at its usable height when raised.
        QTabWidget* panels = v.panelTabs();
        QCOMPARE(panels->count(), tabs);
        QCOMPARE(panels->currentWidget(), text ? static_cast<QWidget*>(v.samplePanel()) : v.whatIfPanel());
        if (text)
            QVERIFY2(v.samplePanel()->height() >= SamplePanel::usableHeight,
                     qPrintable(QString::number(v.samplePanel()->height())));
        panels->setCurrentWidget(v.whatIfPanel());
        QTRY_VERIFY(v.whatIfPanel()->isVisible());
        QVERIFY2(v.whatIfPanel()->height() >= WhatIfPanel::usableHeight, qPrintable(QString::number(v.whatIfPanel()->height())));
        QVERIFY(v.whatIfPanel()->width() >= v.whatIfPanel()->minimumSizeHint().width());
        const QByteArray shots = qgetenv("MANTISSA_VIEWER_SHOTS");  // a folder, to look at the layouts
        if (!shots.isEmpty())
            v.grab().save(QDir(QString::fromLocal8Bit(shots)).filePath(QStringLiteral("viewer-%1.png").arg(charts)));
    }

    void loaderReadsEventsSplitOverTwoCommits() {
        // Two events at one step, committed apart: the cursor re-reads that step and keeps the new one.
        RunStore writer(m_path);
        auto recorder = syntheticRun(writer, "split-events", 3, RunStatus::running);
        const std::int64_t id = recorder->run_id();
        recorder->on_event({2, 0.1, EventKind::notice, "first", "{}"});
        RunStore reader(m_path, true);
        QTRY_COMPARE_WITH_TIMEOUT(reader.events(id, 2).size(), std::size_t{1}, 5000);
        RunSeries series;
        RunCursor cursor;
        loadNewRows(reader, id, series, cursor);
        const std::size_t before = series.events().size();
        recorder->on_event({2, 0.2, EventKind::notice, "second", "{}"});
        QTRY_COMPARE_WITH_TIMEOUT(reader.events(id, 2).size(), std::size_t{2}, 5000);
        QCOMPARE(loadNewRows(reader, id, series, cursor), std::int64_t{1});
        QCOMPARE(series.events().size(), before + 1);
        QCOMPARE(series.events().back().message, std::string("second"));
        recorder->finish(RunStatus::completed);
        RunStore(m_path).remove(id);
    }
};

QTEST_MAIN(TestHistoryBrowser)
#include "test_history_browser.moc"
