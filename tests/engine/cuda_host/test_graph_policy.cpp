// When the CUDA backend captures a step as a graph, replays it, or drops it
// (engine/backend/cuda/graph_policy.h): sequences of steps and live changes, step by step.
#include <QtTest>

#include "backend/cuda/graph_policy.h"

using namespace mantissa::cuda;
using Action = GraphPolicy::Action;

namespace {

// The actions for a sequence of fingerprints ('a', 'b', ...; '!' = invalidate before the step;
// after every capture the capture succeeds).
QString run(GraphPolicy& p, const QString& steps) {
    QString out;
    for (QChar c : steps) {
        if (c == '!') {
            p.invalidate("live change");
            continue;
        }
        const Action a = p.next(static_cast<std::uint64_t>(c.unicode()));
        out += a == Action::eager ? 'e' : a == Action::capture ? 'C' : 'r';
        if (a == Action::capture) p.captured(true);
    }
    return out;
}

}  // namespace

class TestCudaGraphPolicy : public QObject {
    Q_OBJECT
private slots:
    void sequences_data() {
        QTest::addColumn<int>("stable");
        QTest::addColumn<QString>("steps");
        QTest::addColumn<QString>("actions");
        QTest::newRow("stable run") << 3 << "aaaaaa"
                                    << "eeCrrr";
        QTest::newRow("capture at once") << 1 << "aaa"
                                         << "Crr";
        QTest::newRow("change drops the graph") << 2 << "aaaabbbb"
                                                << "eCrreCrr";
        QTest::newRow("flapping never captures") << 2 << "ababab"
                                                 << "eeeeee";
        QTest::newRow("live change") << 2 << "aaa!aaa"
                                     << "eCreCr";
        QTest::newRow("live change before capture") << 3 << "aa!aaaa"
                                                    << "eeeeCr";
        QTest::newRow("back to an old config recaptures") << 2 << "aaabba"
                                                          << "eCreCe";
    }
    void sequences() {
        QFETCH(int, stable);
        QFETCH(QString, steps);
        QFETCH(QString, actions);
        GraphPolicy p(stable);
        QCOMPARE(run(p, steps), actions);
    }

    void counters_and_reasons() {
        GraphPolicy p(2);
        QCOMPARE(run(p, "aaaa"), QString("eCrr"));
        QCOMPARE(p.captures(), 1);
        QCOMPARE(p.replays(), 2);
        QVERIFY(p.has_graph());
        p.invalidate("set layer precision fc1");
        QVERIFY(!p.has_graph());
        QCOMPARE(QString::fromStdString(p.last_reason()), QString("set layer precision fc1"));
        QCOMPARE(run(p, "bb"), QString("eC"));
        QCOMPARE(run(p, "c"), QString("e"));
        QCOMPARE(QString::fromStdString(p.last_reason()), QString("the step's configuration changed"));
    }

    void failed_capture_disables_graphs() {
        GraphPolicy p(2);
        QCOMPARE(p.next(1), Action::eager);
        QCOMPARE(p.next(1), Action::capture);
        p.captured(false, "cudaStreamBeginCapture: operation not permitted");
        QVERIFY(p.disabled());
        QVERIFY(!p.has_graph());
        for (int i = 0; i < 5; ++i) QCOMPARE(p.next(1), Action::eager);
        QCOMPARE(QString::fromStdString(p.last_reason()), QString("cudaStreamBeginCapture: operation not permitted"));
    }

    void captured_without_pending_capture_is_ignored() {
        GraphPolicy p(3);
        p.captured(true);
        QVERIFY(!p.has_graph());
        QCOMPARE(p.next(7), Action::eager);
        QCOMPARE(p.captures(), 0);
    }

    void fingerprint() {
        int x = 0;
        const auto f1 = Fingerprint().add(std::int64_t{256}).add(1e-3).add(&x).add(true).value();
        const auto f2 = Fingerprint().add(std::int64_t{256}).add(1e-3).add(&x).add(true).value();
        const auto f3 = Fingerprint().add(std::int64_t{256}).add(1e-3 * 2).add(&x).add(true).value();
        const auto f4 = Fingerprint().add(1e-3).add(std::int64_t{256}).add(&x).add(true).value();
        QCOMPARE(f1, f2);
        QVERIFY(f1 != f3);  // a changed learning rate is a changed step
        QVERIFY(f1 != f4);  // order matters
        QVERIFY(Fingerprint().add(0.0).value() != Fingerprint().add(-0.0).value());
        QCOMPARE(QString(graph_action_name(Action::replay)), QString("replay"));
    }
};

QTEST_APPLESS_MAIN(TestCudaGraphPolicy)
#include "test_graph_policy.moc"
