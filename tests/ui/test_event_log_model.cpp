// The Events panel's model and view over a RunSeries: repeats on consecutive steps are one row
// (the engine's rule, config/event_coalesce.h), a live run's last merged row grows in place with
// "so far", each arriving batch touches only the rows still open, clicking a merged row centres on
// its first step, the filter still matches, the tooltip gives the step range, and a long message
// wraps in the width the other columns leave. No training.
#include <QLineEdit>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QtTest>

#include <set>

#include "models/event_log_model.h"
#include "panels/events_panel.h"
#include "series/run_series.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

Event overflow(std::int64_t step, const char* layer = "fc1") {
    return {step, 0.01 * static_cast<double>(step), EventKind::overflow,
            std::string("Overflow: ") + layer + "'s weight gradient held inf/NaN; the step was skipped.",
            std::string(R"({"layer":")") + layer + R"(","skipped":true,"tensor":"dW"})"};
}

Event backoff(std::int64_t step, double from) {
    return {step, 0.01 * static_cast<double>(step), EventKind::scale_change, "Loss scale backed off.",
            R"({"new":)" + std::to_string(from / 2) + R"(,"old":)" + std::to_string(from) + R"(,"reason":"backoff"})"};
}

Event plain(EventKind kind, std::int64_t step, const char* message) {
    return {step, 0.01 * static_cast<double>(step), kind, message, "{}"};
}

QString message(const QAbstractItemModel& m, int row) {
    return m.index(row, EventLogModel::Message).data().toString();
}

}  // namespace

class EventLogModelTest : public QObject {
    Q_OBJECT
private slots:
    // A recorded run opened whole: 100 overflow steps with their backoffs are two rows.
    void recordedRunIsCoalesced() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        series.addEvent(plain(EventKind::run_started, 0, "Run started."));
        series.addEvent({5, 0.05, EventKind::setting_change, "precision.autocast: off -> fp16.",
                         R"({"key":"precision.autocast","old":"off","new":"fp16"})"});
        double s = 65536;
        for (int step = 412; step <= 511; ++step, s /= 2) {
            series.addEvent(overflow(step));
            series.addEvent(backoff(step, s));
        }
        series.addEvent(plain(EventKind::run_finished, 512, "Run finished after 512 steps."));
        EventLogModel model;
        model.setSeries(&series);
        QCOMPARE(model.rowCount(), 5);
        QCOMPARE(message(model, 2), QString("Overflow on every step from 412 to 511 (100 steps): fc1's weight gradient "
                                            "held inf/NaN; the steps were skipped."));
        QVERIFY2(message(model, 3).startsWith("Loss scale backed off on every step from 412 to 511 (100 steps): 65536 -> "),
                 qPrintable(message(model, 3)));
        const QModelIndex merged = model.index(2, EventLogModel::Step);
        QCOMPARE(merged.data().toLongLong(), 412);
        QCOMPARE(merged.data(EventLogModel::StepRole).toLongLong(), 412);
        QCOMPARE(merged.data(EventLogModel::LastStepRole).toLongLong(), 511);
        QCOMPARE(merged.data(EventLogModel::CountRole).toLongLong(), 100);
        QCOMPARE(merged.data(EventLogModel::KindRole).toString(), QString("overflow"));
        const QString tip = merged.data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains("Steps 412 to 511: 100 events, one per step."), qPrintable(tip));
        QVERIFY2(!tip.contains("so far"), qPrintable(tip));
        // A single event keeps its own message and a tooltip without a range.
        QCOMPARE(message(model, 1), QString("precision.autocast: off -> fp16."));
        QVERIFY(!model.index(1, 0).data(Qt::ToolTipRole).toString().contains("Steps"));
        QCOMPARE(model.index(1, 0).data(EventLogModel::CountRole).toLongLong(), 1);
    }

    // A run that ended without a closing event (killed, opened later as `interrupted`): once the
    // model is told the run is not live, its last merged row no longer says "so far".
    void interruptedRunDoesNotSaySoFar() {
        RunSeries series;
        series.reset({"fc1"});
        series.addEvent(plain(EventKind::run_started, 0, "Run started."));
        for (int step = 10; step <= 20; ++step) series.addEvent(overflow(step));
        EventLogModel model;
        model.setSeries(&series);
        QCOMPARE(model.rowCount(), 2);
        QVERIFY(message(model, 1).contains("(11 steps so far)"));
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        model.setLive(false);
        QCOMPARE(changed.count(), 1);
        QVERIFY2(message(model, 1).contains("from 10 to 20 (11 steps):"), qPrintable(message(model, 1)));
        QVERIFY(!model.index(1, 0).data(Qt::ToolTipRole).toString().contains("so far"));
    }

    // Live: the merged row grows in place ("so far"); only it is redrawn, and only new entries insert rows.
    void liveRowGrows() {
        RunSeries series;
        series.reset({"fc1"});
        EventLogModel model;
        model.setSeries(&series);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        series.addEvent(plain(EventKind::run_started, 0, "Run started."));
        model.sync();
        for (int step = 10; step < 47; ++step) {
            series.addEvent(overflow(step));
            model.sync();
        }
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(inserted.count(), 2);  // the start, then the overflow row once
        QCOMPARE(changed.count(), 36);  // each later overflow redraws that one row
        for (const auto& args : changed) {
            QCOMPARE(args.at(0).toModelIndex().row(), 1);
            QCOMPARE(args.at(1).toModelIndex().row(), 1);
        }
        QCOMPARE(message(model, 1), QString("Overflow on every step from 10 to 46 (37 steps so far): fc1's weight "
                                            "gradient held inf/NaN; the steps were skipped."));
        QVERIFY(model.index(1, 0).data(Qt::ToolTipRole).toString().contains("Steps 10 to 46 so far: 37 events"));
        // The run ends: the row stops growing and says so (a redraw of that row, and one new row).
        changed.clear();
        series.addEvent(plain(EventKind::run_stopped, 47, "Run stopped after 47 steps."));
        model.sync();
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(message(model, 1).contains("(37 steps)"), true);
        // A new run in the same series: the model resets.
        series.reset({"fc1"});
        model.sync();
        QCOMPARE(model.rowCount(), 0);
    }

    // 100k overflow steps arriving in batches, as the 30 Hz timer drains them: every batch costs
    // the same few signals, and the log stays three rows.
    void longRunStaysCheap() {
        RunSeries series;
        series.reset({"fc1"});
        EventLogModel model;
        model.setSeries(&series);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        series.addEvent(plain(EventKind::run_started, 0, "Run started."));
        double s = 65536;
        int batches = 0;
        for (int step = 0; step < 100'000; ++step) {
            series.addEvent(overflow(step));
            if (step < 60) {  // until the scale has nowhere to go
                series.addEvent(backoff(step, s));
                s /= 2;
            }
            if (step % 50 == 49) {
                model.sync();
                ++batches;
            }
        }
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(inserted.count(), 1);                  // the first batch made all three rows
        QVERIFY(changed.count() <= 2 * batches);        // never more than the open rows per batch
        QVERIFY(message(model, 1).contains("from 0 to 99999 (100000 steps so far)"));
        QVERIFY(message(model, 2).contains("from 0 to 59 (60 steps)"));
    }

    // The panel: the filter matches merged rows, a click centres on the first step.
    void panelFiltersAndCentres() {
        RunSeries series;
        series.reset({"fc1", "fc2"});
        series.addEvent(plain(EventKind::run_started, 0, "Run started."));
        for (int step = 20; step < 30; ++step) series.addEvent(overflow(step, "fc2"));
        series.addEvent({30, 0.3, EventKind::setting_change, "precision.layers.fc2: fp16 -> fp32.",
                         R"({"key":"precision.layers.fc2","old":"fp16","new":"fp32"})"});
        for (int step = 31; step < 40; ++step) series.addEvent(overflow(step, "fc1"));
        EventLogModel model;
        model.setSeries(&series);
        QCOMPARE(model.rowCount(), 4);

        EventsPanel panel(&model);
        panel.resize(700, 300);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QSignalSpy centred(&panel, &EventsPanel::stepActivated);
        QTableView* view = panel.view();
        const QModelIndex row = view->model()->index(1, EventLogModel::Message);
        QVERIFY(view->model()->data(row).toString().contains("from 20 to 29 (10 steps)"));
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(row).center());
        QCOMPARE(centred.count(), 1);
        QCOMPARE(centred.takeFirst().at(0).value<std::int64_t>(), std::int64_t{20});

        auto* filter = panel.findChild<QLineEdit*>();
        QVERIFY(filter);
        filter->setText("fc2");  // the merged fc2 row and the setting that changed fc2
        QCOMPARE(view->model()->rowCount(), 2);
        QVERIFY(view->model()->index(0, EventLogModel::Message).data().toString().startsWith("Overflow on every step"));
        filter->setText("every step");
        QCOMPARE(view->model()->rowCount(), 2);
        filter->setText("overflow");  // the kind column
        QCOMPARE(view->model()->rowCount(), 2);
        filter->clear();
        QCOMPARE(view->model()->rowCount(), 4);
    }

    // In a narrow panel a long message wraps at words onto a taller row (three lines at most, the
    // tooltip whole) in the column the others leave, instead of "Checkpoint at step 1…"; a
    // narrower panel measures the rows again. The Time column's header says which time it is.
    void longMessagesWrapInTheRemainingWidth() {
        RunSeries series;
        series.reset({"fc1"});
        series.addEvent(plain(EventKind::run_started, 0, "Run \"fmnist-fp32-reference\" started on cpu."));
        series.addEvent(plain(EventKind::checkpoint, 100, "Checkpoint at step 100 (2.7 MiB)."));
        series.addEvent(plain(EventKind::notice, 120,
                              "A notice long enough to need many lines in a narrow column: it goes on and on, "
                              "word after word, well past three lines of any reasonable width here."));
        EventLogModel model;
        model.setSeries(&series);
        EventsPanel panel(&model);
        panel.resize(380, 400);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QTableView* view = panel.view();
        const QFontMetrics fm = view->fontMetrics();
        const auto messageWidth = [view] { return view->columnWidth(EventLogModel::Message); };
        // The message column takes what the others leave.
        int others = 0;
        for (int c = 0; c < EventLogModel::Message; ++c) others += view->columnWidth(c);
        QTRY_COMPARE(others + messageWidth(), view->viewport()->width());
        const QString checkpoint = view->model()->index(1, EventLogModel::Message).data().toString();
        QVERIFY(fm.horizontalAdvance(checkpoint) > messageWidth() - 12);  // the case: it needs two lines
        QTRY_VERIFY2(view->rowHeight(1) >= 2 * fm.lineSpacing(),
                     qPrintable(QStringLiteral("row %1 px for %2 px of text in %3 px")
                                    .arg(view->rowHeight(1)).arg(fm.horizontalAdvance(checkpoint)).arg(messageWidth())));
        QVERIFY(view->rowHeight(2) <= EventsPanel::maxMessageLines * fm.lineSpacing() + 6);  // at most three lines
        QVERIFY(view->rowHeight(2) > view->rowHeight(1));
        QVERIFY(view->model()->index(2, EventLogModel::Message).data(Qt::ToolTipRole).toString().contains(
            QStringLiteral("well past three lines")));
        // Wide enough for every message on one line: one-line rows again.
        panel.resize(1600, 400);
        QTRY_VERIFY(view->rowHeight(1) < 2 * fm.lineSpacing());
        QVERIFY(view->rowHeight(0) < 2 * fm.lineSpacing());
        // Rows arriving later are measured too.
        panel.resize(380, 400);
        series.addEvent(plain(EventKind::checkpoint, 200, "Checkpoint at step 200 (2.7 MiB)."));
        model.sync();
        QTRY_VERIFY(view->rowHeight(3) >= 2 * fm.lineSpacing());
        const QString header = view->model()->headerData(EventLogModel::Time, Qt::Horizontal, Qt::ToolTipRole).toString();
        QVERIFY2(header.contains(QStringLiteral("Training time")), qPrintable(header));
    }
};

QTEST_MAIN(EventLogModelTest)
#include "test_event_log_model.moc"
