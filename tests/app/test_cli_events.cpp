// `mantissa-cli show`'s event list: an event repeated on consecutive steps is one entry (the rule of
// config/event_coalesce.h, shared with the GUI's Events panel), the header says how many events were
// recorded and how many entries they make, the last 50 entries are what is listed, and --json still
// prints every event as recorded. One store comes from a real run that diverges (fp16 without loss
// scaling and a huge learning rate: an overflow on every step); another is fabricated through the
// store's API, with a run still being recorded.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "run_cli.h"
#include "store/run_store.h"

using namespace mantissa;

namespace {

QJsonObject show_json(const QString& db, const QString& run) {
    const CliResult r = run_cli({"show", run, "--json", "--db", db});
    if (r.code != 0) return {};
    return QJsonDocument::fromJson(r.out).object();
}

// The lines of `show`'s Events section.
QStringList event_lines(const QString& out) {
    const QString text = out.section("\nEvents (", 1).section("\nConfiguration", 0, 0);
    QStringList lines = text.split('\n', Qt::SkipEmptyParts);
    if (!lines.isEmpty()) lines.removeFirst();  // the rest of the header line
    return lines;
}

Event overflow(std::int64_t step, const char* layer) {
    return {step, 0.01 * static_cast<double>(step), EventKind::overflow,
            std::string("Overflow: ") + layer + "'s weight gradient held inf/NaN; the step was skipped.",
            std::string(R"({"layer":")") + layer + R"(","skipped":true,"tensor":"dW"})"};
}

StepRecord step_record(std::int64_t i) {
    StepRecord s;
    s.step = i;
    s.time_s = 0.01 * static_cast<double>(i);
    s.loss = 1;
    return s;
}

}  // namespace

class CliEvents : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    void divergedRunIsCoalesced() {
        const QString db = m_dir.filePath("diverged.sqlite");
        const CliResult t = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[16]", "--steps",
                                     "80", "--set", "train.lr=1e6", "--set", "train.eval_every=0", "--set",
                                     "precision.autocast=fp16", "--set", "precision.loss_scaling.mode=off", "--db",
                                     db});
        QVERIFY2(t.code == 0 || t.code == 1, t.err.constData());

        const QJsonObject j = show_json(db, "1");
        const QJsonArray events = j["events"].toArray();
        int overflows = 0;
        for (const auto& e : events) overflows += e.toObject()["kind"].toString() == "overflow";
        QVERIFY2(overflows >= 20, qPrintable(QString("only %1 overflow events were recorded").arg(overflows)));
        // --json is the record: every event, each with the trainer's own message and data.
        QCOMPARE(events.size(), j["totals"].toObject()["events"].toInt());
        for (const auto& e : events)
            if (e.toObject()["kind"].toString() == "overflow") {
                QVERIFY(e.toObject()["message"].toString().startsWith("Overflow: "));
                QVERIFY(e.toObject()["data"].toObject().contains("layer"));
            }

        const CliResult s = run_cli({"show", "1", "--db", db});
        QCOMPARE(s.code, 0);
        const QString out = QString::fromUtf8(s.out);
        const QRegularExpression header(R"(\nEvents \((\d+) recorded, as (\d+) entries: repeats on consecutive steps)");
        const auto m = header.match(out);
        QVERIFY2(m.hasMatch(), qPrintable(out));
        QCOMPARE(m.captured(1).toInt(), static_cast<int>(events.size()));
        const QStringList lines = event_lines(out);
        QCOMPARE(lines.size(), m.captured(2).toInt());
        QVERIFY(lines.size() < events.size());
        const QRegularExpression merged(
            R"(overflow +Overflow on every step from (\d+) to (\d+) \((\d+) steps\): fc\d's (weight|bias) gradient held inf/NaN; the optimizer stepped anyway \(loss scaling is off\)\.)");
        int covered = 0;
        for (const QString& line : lines) {
            const auto g = merged.match(line);
            if (!g.hasMatch()) continue;
            QCOMPARE(g.captured(2).toLongLong() - g.captured(1).toLongLong() + 1, g.captured(3).toLongLong());
            QVERIFY2(line.contains(QRegularExpression("^  step " + g.captured(1) + " ")), qPrintable(line));
            covered += g.captured(3).toInt();
        }
        QVERIFY2(covered >= 2, qPrintable(out));
        // No overflow is left as a line of its own: the run overflowed on every step from its first.
        QVERIFY2(!out.contains("overflow        Overflow: "), qPrintable(out));
        QVERIFY2(!out.contains("so far"), qPrintable(out));  // the run is over
    }

    void lastFiftyEntriesAndALiveRun() {
        const QString db = m_dir.filePath("fabricated.sqlite");
        RunStore store(db.toStdString());
        auto rec = store.start_run({"flapping", "cpu", "test CPU", R"({"name":"flapping"})"});
        // 60 alternating runs of two overflows each (fc1, fc2, fc1...): 120 events, 60 entries; then
        // a setting change and a run that goes on.
        std::int64_t step = 0;
        for (int run = 0; run < 60; ++run)
            for (int k = 0; k < 2; ++k, ++step) {
                rec->on_step(step_record(step), {});
                rec->on_event(overflow(step, run % 2 ? "fc2" : "fc1"));
            }
        rec->on_event({step, 0.01 * static_cast<double>(step), EventKind::setting_change,
                       "precision.autocast: fp16 -> bf16.", R"({"key":"precision.autocast","old":"fp16","new":"bf16"})"});
        for (int k = 0; k < 37; ++k, ++step) {
            rec->on_step(step_record(step), {});
            rec->on_event(overflow(step, "fc3"));
        }
        const int recorded = 120 + 1 + 37;
        QTRY_COMPARE_WITH_TIMEOUT(show_json(db, "flapping")["events"].toArray().size(), recorded, 10000);

        CliResult s = run_cli({"show", "flapping", "--db", db});
        QCOMPARE(s.code, 0);
        QString out = QString::fromUtf8(s.out);
        QVERIFY2(out.contains(QString("\nEvents (%1 recorded, as 62 entries").arg(recorded)), qPrintable(out));
        QVERIFY2(out.contains("(12 earlier entries not shown: --all-events shows them)"), qPrintable(out));
        QStringList lines = event_lines(out);
        QCOMPARE(lines.size(), 51);  // the note and 50 entries
        QVERIFY2(lines[1].contains("Overflow on every step from 24 to 25 (2 steps): fc1's"), qPrintable(lines[1]));
        QVERIFY2(lines[50].contains("Overflow on every step from 120 to 156 (37 steps so far): fc3's"),
                 qPrintable(lines[50]));

        CliResult all = run_cli({"show", "flapping", "--all-events", "--db", db});
        QCOMPARE(event_lines(QString::fromUtf8(all.out)).size(), 62);

        rec->finish(RunStatus::completed);
        out = QString::fromUtf8(run_cli({"show", "flapping", "--db", db}).out);
        QVERIFY2(out.contains("Overflow on every step from 120 to 156 (37 steps): fc3's"), qPrintable(out));
        QVERIFY(!out.contains("so far"));
    }
};

QTEST_GUILESS_MAIN(CliEvents)
#include "test_cli_events.moc"
