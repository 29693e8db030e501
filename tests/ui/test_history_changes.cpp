// The history says what was changed while a run trained: the run browser's configuration column
// ("fp16 · dynamic · master fp32 → fc1=fp8 at 500, autocast=bf16 at 900", the first three then
// "+N more", every change in its tooltip), a running run's new changes at the next refresh, and
// the run's window. And the history's windows close with Esc and Ctrl+W (window-scoped: an
// embedded browser leaves the keys to its host).
#include <QtTest>

#include <QPointer>
#include <QVBoxLayout>

#include "history/compare_view.h"
#include "history/live_changes.h"
#include "history/run_browser.h"
#include "history/run_table_model.h"
#include "history/run_viewer.h"
#include "test_history_fixture.h"

using namespace mantissa;
using namespace mantissa::ui;
using namespace history_test;

namespace {

Event change(std::int64_t step, const std::string& key, const std::string& value) {
    return {step, 0.1 * static_cast<double>(step), EventKind::setting_change, key + " set to " + value,
            R"({"key": ")" + key + R"(", "old": "auto", "new": ")" + value + R"("})"};
}

// A finished synthetic run with `changes` made during it (none: a run left as it started).
std::int64_t runWithChanges(RunStore& store, const std::string& name, const std::vector<Event>& changes,
                            RunStatus status = RunStatus::completed, std::shared_ptr<Recorder>* open = nullptr) {
    RecorderOptions fast;
    fast.commit_interval_ms = 5;
    auto r = store.start_run({name, "cpu", "synthetic", syntheticConfig(name)}, fast);
    std::size_t next = 0;
    for (std::int64_t i = 0; i < 1000; ++i) {
        r->on_step(syntheticStep(i), syntheticLayers(i));
        while (next < changes.size() && changes[next].step == i) r->on_event(changes[next++]);
    }
    const std::int64_t id = r->run_id();
    if (status == RunStatus::running && open) *open = r;
    else r->finish(status);
    return id;
}

QString configCell(RunBrowser& b, std::int64_t id, int role = Qt::DisplayRole) {
    const int row = b.model()->rowOf(id);
    return b.model()->index(row, RunTableModel::Configuration).data(role).toString();
}

void activate(QWidget* w) {
    w->show();
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w));
}

}  // namespace

class TestHistoryChanges : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_path;
    std::int64_t m_two = 0, m_five = 0, m_none = 0;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite"));
        RunStore store(m_path.toStdString());
        m_two = runWithChanges(store, "two-changes",
                               {change(500, "precision.layers.fc1", "fp8"), change(900, "precision.autocast", "bf16")});
        m_five = runWithChanges(store, "five-changes",
                                {change(100, "precision.layers.fc1", "fp16"), change(200, "precision.layers.fc2", "bf16"),
                                 change(300, "precision.loss_scaling.mode", "off"), change(400, "train.lr", "0.01"),
                                 change(800, "precision.layers.fc3", "fp32")});
        m_none = runWithChanges(store, "unchanged", {});
    }

    void theListSaysWhatChanged() {
        RunBrowser b;
        QVERIFY(b.openStore(m_path));
        QCOMPARE(configCell(b, m_two), QStringLiteral("fp16 · dynamic · master fp32 → fc1=fp8 at 500, autocast=bf16 at 900"));
        QCOMPARE(configCell(b, m_five),
                 QStringLiteral("fp16 · dynamic · master fp32 → fc1=fp16 at 100, fc2=bf16 at 200, scaling=off at 300, +2 more"));
        QCOMPARE(configCell(b, m_none), QStringLiteral("fp16 · dynamic · master fp32"));
        const QString tip = configCell(b, m_five, Qt::ToolTipRole);
        for (const char* line : {"step 100: fc1=fp16", "step 200: fc2=bf16", "step 300: scaling=off", "step 400: lr=0.01",
                                 "step 800: fc3=fp32"})
            QVERIFY2(tip.contains(QLatin1String(line)), qPrintable(tip));
        // The filter finds a run by what was changed during it.
        b.setTextFilter(QStringLiteral("autocast=bf16"));
        QCOMPARE(b.visibleRunCount(), 1);
    }

    void aRunningRunsChangesAppearAtTheNextRefresh() {
        const QString path = m_dir.filePath(QStringLiteral("running.sqlite"));
        RunStore store(path.toStdString());
        std::shared_ptr<Recorder> recorder;
        const std::int64_t id = runWithChanges(store, "running", {change(300, "precision.layers.fc2", "fp8")},
                                               RunStatus::running, &recorder);
        QVERIFY(recorder);
        QTRY_COMPARE(store.events(id).size(), std::size_t{1});
        RunBrowser b;
        QVERIFY(b.openStore(path));
        QCOMPARE(configCell(b, id), QStringLiteral("fp16 · dynamic · master fp32 → fc2=fp8 at 300"));
        recorder->on_step(syntheticStep(1000), syntheticLayers(1000));
        recorder->on_event(change(1000, "precision.autocast", "bf16"));
        QTRY_COMPARE(store.events(id).size(), std::size_t{2});
        b.refresh();
        QCOMPARE(configCell(b, id), QStringLiteral("fp16 · dynamic · master fp32 → fc2=fp8 at 300, autocast=bf16 at 1000"));
        b.refresh();  // read once: not twice
        QCOMPARE(configCell(b, id), QStringLiteral("fp16 · dynamic · master fp32 → fc2=fp8 at 300, autocast=bf16 at 1000"));
        recorder->finish(RunStatus::completed);
    }

    void theRunWindowSaysWhatChanged() {
        auto store = std::make_shared<RunStore>(m_path.toStdString());
        RunViewer viewer(store, m_five);
        QVERIFY(viewer.load());
        QVERIFY2(viewer.summaryText().contains(QStringLiteral("→ fc1=fp16 at 100, fc2=bf16 at 200, scaling=off at 300, +2 more")),
                 qPrintable(viewer.summaryText()));
        RunViewer unchanged(store, m_none);
        QVERIFY(unchanged.load());
        QVERIFY(!unchanged.summaryText().contains(QStringLiteral("→")));
    }

    void summariesElideAfterThree() {
        std::vector<SettingChange> changes;
        for (int i = 1; i <= 4; ++i) changes.push_back({i * 10, "lr=0." + std::to_string(i)});
        QCOMPARE(liveChangesText(changes), QStringLiteral("lr=0.1 at 10, lr=0.2 at 20, lr=0.3 at 30, +1 more"));
        QCOMPARE(liveChangesText({changes.begin(), changes.begin() + 3}), QStringLiteral("lr=0.1 at 10, lr=0.2 at 20, lr=0.3 at 30"));
        QCOMPARE(liveChangesText({}), QString());
        QCOMPARE(summaryWithChanges(QStringLiteral("fp32"), {}), QStringLiteral("fp32"));
    }

    // Esc and Ctrl+W close a run's window, a comparison and the browser.
    void closeKeysCloseTheWindows() {
        auto* browser = new RunBrowser;
        browser->setAttribute(Qt::WA_DeleteOnClose);
        QPointer<RunBrowser> guard(browser);
        QVERIFY(browser->openStore(m_path));
        QPointer<RunViewer> viewer = browser->openRun(m_two);  // WA_DeleteOnClose
        QVERIFY(viewer);
        activate(viewer);
        QTest::keyClick(viewer, Qt::Key_Escape);
        QTRY_VERIFY(!viewer);

        viewer = browser->openRun(m_two);
        QVERIFY(viewer);
        activate(viewer);
        QTest::keySequence(viewer.data(), QKeySequence(Qt::CTRL | Qt::Key_W));
        QTRY_VERIFY(!viewer);

        QPointer<CompareView> compare = browser->compareRuns({m_two, m_five});
        QVERIFY(compare);
        activate(compare);
        QTest::keySequence(compare.data(), QKeySequence(Qt::CTRL | Qt::Key_W));
        QTRY_VERIFY(!compare);
        compare = browser->compareRuns({m_two, m_five});
        activate(compare);
        QTest::keyClick(compare, Qt::Key_Escape);
        QTRY_VERIFY(!compare);

        activate(browser);
        QTest::keyClick(browser, Qt::Key_Escape);
        QTRY_VERIFY(!guard);
    }

    // Embedded in another window, the browser leaves Esc to it.
    void anEmbeddedBrowserKeepsItsHostOpen() {
        QWidget host;
        auto* layout = new QVBoxLayout(&host);
        auto* browser = new RunBrowser;
        layout->addWidget(browser);
        QVERIFY(browser->openStore(m_path));
        host.resize(900, 500);
        activate(&host);
        QTest::keyClick(browser, Qt::Key_Escape);
        QTest::keySequence(browser, QKeySequence(Qt::CTRL | Qt::Key_W));
        QCoreApplication::processEvents();
        QVERIFY(host.isVisible());
        QVERIFY(browser->isVisible());
    }
};

QTEST_MAIN(TestHistoryChanges)
#include "test_history_changes.moc"
