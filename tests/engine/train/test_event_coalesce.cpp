// The display rule that merges an event repeated on consecutive steps into one entry
// (config/event_coalesce.h): which events merge, what may interleave, what closes an entry, the
// merged sentences, and a live run whose last entry keeps growing.
#include <QtTest>

#include <vector>

#include "config/event_coalesce.h"

using namespace mantissa;

Q_DECLARE_METATYPE(std::vector<mantissa::Event>)

namespace {

using Events = std::vector<Event>;

Event overflow(std::int64_t step, const char* layer = "fc1", const char* tensor = "dW", bool skipped = true) {
    const std::string what = std::string(tensor) == "dW" ? "weight" : "bias";
    return {step, 0.01 * static_cast<double>(step), EventKind::overflow,
            std::string("Overflow: ") + layer + "'s " + what + " gradient held inf/NaN" +
                (skipped ? "; the step was skipped." : "; the optimizer stepped anyway (loss scaling is off)."),
            std::string(R"({"layer":")") + layer + R"(","skipped":)" + (skipped ? "true" : "false") +
                R"(,"tensor":")" + tensor + "\"}"};
}

Event scale(std::int64_t step, double old_scale, double new_scale, const char* reason = "backoff") {
    return {step, 0.01 * static_cast<double>(step), EventKind::scale_change, "Loss scale changed.",
            R"({"new":)" + std::to_string(new_scale) + R"(,"old":)" + std::to_string(old_scale) +
                R"(,"reason":")" + reason + "\"}"};
}

Event other(EventKind kind, std::int64_t step, const char* message = "something") {
    return {step, 0.01 * static_cast<double>(step), kind, message, "{}"};
}

// "first-last x count" per entry, in order.
QStringList shape(const std::vector<EventEntry>& entries) {
    QStringList out;
    for (const EventEntry& e : entries)
        out << QStringLiteral("%1-%2x%3").arg(e.first_step).arg(e.last_step).arg(e.count);
    return out;
}

std::vector<EventEntry> coalesce(const Events& events) {
    EventCoalescer c;
    for (const Event& e : events) c.add(e);
    return c.entries();
}

}  // namespace

class EventCoalesceTest : public QObject {
    Q_OBJECT
private slots:
    void entries_data() {
        QTest::addColumn<Events>("events");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("no events") << Events{} << QStringList{};
        QTest::newRow("one overflow") << Events{overflow(5)} << QStringList{"5-5x1"};
        QTest::newRow("two on consecutive steps") << Events{overflow(5), overflow(6)} << QStringList{"5-6x2"};
        Events many;
        for (int s = 412; s <= 511; ++s) many.push_back(overflow(s));
        QTest::newRow("a hundred") << many << QStringList{"412-511x100"};
        QTest::newRow("backoffs interleaved: both grow")
            << Events{overflow(5), scale(5, 8, 4), overflow(6), scale(6, 4, 2), overflow(7), scale(7, 2, 1)}
            << QStringList{"5-7x3", "5-7x3"};
        QTest::newRow("backoffs stop while overflows go on")
            << Events{overflow(5), scale(5, 2, 1), overflow(6), scale(6, 1, 0.5), overflow(7), overflow(8),
                      scale(8, 0.5, 0.25)}
            << QStringList{"5-8x4", "5-6x2", "8-8x1"};
        QTest::newRow("different layers") << Events{overflow(5, "fc1"), overflow(6, "fc2"), overflow(7, "fc1")}
                                          << QStringList{"5-5x1", "6-6x1", "7-7x1"};
        QTest::newRow("layers alternate in runs")
            << Events{overflow(5, "fc1"), overflow(6, "fc1"), overflow(7, "fc2"), overflow(8, "fc2")}
            << QStringList{"5-6x2", "7-8x2"};
        QTest::newRow("weight then bias") << Events{overflow(5, "fc1", "dW"), overflow(6, "fc1", "dB")}
                                          << QStringList{"5-5x1", "6-6x1"};
        QTest::newRow("skipped then stepped") << Events{overflow(5, "fc1", "dW", true), overflow(6, "fc1", "dW", false)}
                                              << QStringList{"5-5x1", "6-6x1"};
        QTest::newRow("a gap in steps") << Events{overflow(5), overflow(6), overflow(8), overflow(9)}
                                        << QStringList{"5-6x2", "8-9x2"};
        QTest::newRow("the same step twice") << Events{overflow(5), overflow(5)} << QStringList{"5-5x1", "5-5x1"};
        QTest::newRow("backoff and growth are different")
            << Events{scale(5, 4, 2, "backoff"), scale(6, 2, 4, "growth")} << QStringList{"5-5x1", "6-6x1"};
        QTest::newRow("growth every step (interval 1)")
            << Events{scale(5, 1, 2, "growth"), scale(6, 2, 4, "growth"), scale(7, 4, 8, "growth")}
            << QStringList{"5-7x3"};
        QTest::newRow("a setting change closes the run")
            << Events{overflow(5), overflow(6), other(EventKind::setting_change, 7), overflow(7), overflow(8)}
            << QStringList{"5-6x2", "7-7x1", "7-8x2"};
        QTest::newRow("pause and resume close the run")
            << Events{overflow(5), other(EventKind::paused, 6), other(EventKind::resumed, 6), overflow(6)}
            << QStringList{"5-5x1", "6-6x1", "6-6x1", "6-6x1"};
        QTest::newRow("a notice closes the run") << Events{overflow(5), other(EventKind::notice, 6), overflow(6)}
                                                 << QStringList{"5-5x1", "6-6x1", "6-6x1"};
        QTest::newRow("an evaluation interleaves")
            << Events{overflow(5), overflow(6), other(EventKind::evaluation, 6), overflow(7)}
            << QStringList{"5-7x3", "6-6x1"};
        QTest::newRow("divergence interleaves")
            << Events{overflow(5), scale(5, 4, 2), other(EventKind::divergence, 5), overflow(6), scale(6, 2, 1)}
            << QStringList{"5-6x2", "5-6x2", "5-5x1"};
        QTest::newRow("the run's end closes it")
            << Events{overflow(5), overflow(6), other(EventKind::run_finished, 7), overflow(7)}
            << QStringList{"5-6x2", "7-7x1", "7-7x1"};
        QTest::newRow("settings never merge")
            << Events{other(EventKind::setting_change, 5), other(EventKind::setting_change, 6)}
            << QStringList{"5-5x1", "6-6x1"};
        QTest::newRow("an overflow without its data stays alone")
            << Events{other(EventKind::overflow, 5), other(EventKind::overflow, 6)} << QStringList{"5-5x1", "6-6x1"};
    }
    void entries() {
        QFETCH(Events, events);
        QFETCH(QStringList, expected);
        const auto entries = coalesce(events);
        QCOMPARE(shape(entries), expected);
        // Every event belongs to exactly one entry, and entries keep their first events' order.
        std::int64_t merged = 0;
        for (std::size_t i = 0; i < entries.size(); ++i) {
            merged += entries[i].count;
            QCOMPARE(events[entries[i].first].step, entries[i].first_step);
            QCOMPARE(events[entries[i].last].step, entries[i].last_step);
            QCOMPARE(entries[i].last_step - entries[i].first_step + 1, entries[i].count);
            if (i > 0) QVERIFY(entries[i].first > entries[i - 1].first);
        }
        QCOMPARE(merged, static_cast<std::int64_t>(events.size()));
    }

    void messages_data() {
        QTest::addColumn<Events>("events");
        QTest::addColumn<bool>("growing");
        QTest::addColumn<QString>("expected");
        Events run;
        for (int s = 412; s <= 511; ++s) run.push_back(overflow(s));
        QTest::newRow("skipped") << run << false
                                 << "Overflow on every step from 412 to 511 (100 steps): fc1's weight gradient held "
                                    "inf/NaN; the steps were skipped.";
        QTest::newRow("so far") << Events(run.begin(), run.begin() + 37) << true
                                << "Overflow on every step from 412 to 448 (37 steps so far): fc1's weight gradient "
                                   "held inf/NaN; the steps were skipped.";
        QTest::newRow("stepped anyway, bias")
            << Events{overflow(3, "fc2", "dB", false), overflow(4, "fc2", "dB", false)} << false
            << "Overflow on every step from 3 to 4 (2 steps): fc2's bias gradient held inf/NaN; the optimizer "
               "stepped anyway (loss scaling is off).";
        Event bare = overflow(8);
        bare.data_json = R"({"layer": "fc3", "tensor": "dW"})";  // as stores before "skipped" have it
        Event bare2 = bare;
        bare2.step = 9;
        QTest::newRow("no skipped in the data") << Events{bare, bare2} << false
                                                << "Overflow on every step from 8 to 9 (2 steps): fc3's weight "
                                                   "gradient held inf/NaN.";
        QTest::newRow("backoffs: first old, last new")
            << Events{scale(5, 65536, 32768), scale(6, 32768, 16384), scale(7, 16384, 8192)} << false
            << "Loss scale backed off on every step from 5 to 7 (3 steps): 65536 -> 8192.";
        QTest::newRow("growth") << Events{scale(5, 1, 2, "growth"), scale(6, 2, 4, "growth")} << true
                                << "Loss scale grew on every step from 5 to 6 (2 steps so far): 1 -> 4.";
        QTest::newRow("one event is its own message") << Events{overflow(5)} << true
                                                      << "Overflow: fc1's weight gradient held inf/NaN; the step was "
                                                         "skipped.";
    }
    void messages() {
        QFETCH(Events, events);
        QFETCH(bool, growing);
        QFETCH(QString, expected);
        const auto entries = coalesce(events);
        QCOMPARE(entries.size(), std::size_t{1});
        const EventEntry& e = entries.front();
        QCOMPARE(QString::fromStdString(event_entry_message(e, events[e.first], events[e.last], growing)), expected);
    }

    // A live run: each new overflow extends the last entry, which says "so far" until the run ends.
    void liveRunKeepsGrowing() {
        EventCoalescer c;
        QVERIFY(c.add(other(EventKind::run_started, 0)).appended);
        QVERIFY(c.add(other(EventKind::setting_change, 3)).appended);
        const auto first = c.add(overflow(10));
        QVERIFY(first.appended);
        QCOMPARE(first.entry, std::size_t{2});
        Events fed{overflow(10)};
        for (int s = 11; s < 47; ++s) {
            const auto added = c.add(overflow(s));
            QVERIFY(!added.appended);
            QCOMPARE(added.entry, std::size_t{2});
            QCOMPARE(c.entries().size(), std::size_t{3});
            QVERIFY(c.growing(2));
            QVERIFY(!c.growing(1));
        }
        const EventEntry& e = c.entries()[2];
        QCOMPARE(e.count, std::int64_t{37});
        QCOMPARE(c.open_entries(), std::vector<std::size_t>{2});
        QVERIFY(QString::fromStdString(event_entry_message(e, overflow(10), overflow(46), c.growing(2)))
                    .contains("from 10 to 46 (37 steps so far)"));
        // A step without an overflow: the entry can no longer grow.
        c.add(other(EventKind::evaluation, 48));
        QVERIFY(!c.growing(2));
        QVERIFY(c.add(overflow(48)).appended);
        QVERIFY(c.growing(4));
        c.add(other(EventKind::run_finished, 48));
        QVERIFY(!c.growing(4));
        QVERIFY(c.open_entries().empty());
        QCOMPARE(c.events_fed(), std::size_t{42});
        c.clear();
        QVERIFY(c.entries().empty());
        QCOMPARE(c.events_fed(), std::size_t{0});
    }

    // What a view keeps per arriving event stays bounded: 100k overflow + backoff steps are two
    // entries, with at most two of them open.
    void longRunStaysSmall() {
        EventCoalescer c;
        double s = 65536;
        for (int step = 0; step < 100'000; ++step) {
            c.add(overflow(step));
            c.add(scale(step, s, s / 2));
            s /= 2;
            if (c.open_entries().size() > 2) QFAIL("more than two entries open");
        }
        QCOMPARE(shape(c.entries()), (QStringList{"0-99999x100000", "0-99999x100000"}));
    }

    void repeatKeys() {
        QVERIFY(!event_repeat_key(overflow(1)).empty());
        QCOMPARE(event_repeat_key(overflow(1)), event_repeat_key(overflow(2)));
        QVERIFY(event_repeat_key(overflow(1, "fc1")) != event_repeat_key(overflow(1, "fc2")));
        QVERIFY(event_repeat_key(other(EventKind::notice, 1)).empty());
        QVERIFY(event_repeat_key(other(EventKind::setting_change, 1)).empty());
        Event broken = overflow(1);
        broken.data_json = "not json";
        QVERIFY(event_repeat_key(broken).empty());
        QVERIFY(event_may_interleave(EventKind::evaluation));
        QVERIFY(!event_may_interleave(EventKind::setting_change));
        QVERIFY(!event_may_interleave(EventKind::notice));
    }
};

QTEST_GUILESS_MAIN(EventCoalesceTest)
#include "test_event_coalesce.moc"
