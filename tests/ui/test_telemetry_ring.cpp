// SpscRing and TelemetryRing: the lock-free path from the training thread to the GUI. A full ring
// must refuse at once (never block) and count the drop; what gets through arrives whole and in
// order, also with the producer and consumer on different threads.
#include <QtTest>

#include <cmath>
#include <limits>
#include <thread>

#include "live/spsc_ring.h"
#include "live/telemetry_ring.h"

using namespace mantissa;
using mantissa::ui::SpscRing;
using mantissa::ui::TelemetryRing;

class TestTelemetryRing : public QObject {
    Q_OBJECT
private slots:
    void capacityIsAPowerOfTwo_data() {
        QTest::addColumn<int>("asked");
        QTest::addColumn<int>("got");
        QTest::newRow("0") << 0 << 2;
        QTest::newRow("3") << 3 << 4;
        QTest::newRow("4096") << 4096 << 4096;
        QTest::newRow("5000") << 5000 << 8192;
    }
    void capacityIsAPowerOfTwo() {
        QFETCH(int, asked);
        QFETCH(int, got);
        SpscRing<int> r(static_cast<std::size_t>(asked));
        QCOMPARE(r.capacity(), static_cast<std::size_t>(got));
    }

    void fullRingRefusesAndKeepsOrder() {
        SpscRing<int> r(4);
        for (int i = 0; i < 4; ++i) QVERIFY(r.tryPush([&](int& v) { v = i; }));
        bool called = false;
        QVERIFY(!r.tryPush([&](int&) { called = true; }));
        QVERIFY(!called);
        QCOMPARE(r.size(), std::size_t{4});
        std::vector<int> got;
        QCOMPARE(r.drain([&](int& v) { got.push_back(v); }), std::size_t{4});
        QCOMPARE(got, (std::vector<int>{0, 1, 2, 3}));
        QVERIFY(!r.tryPop([](int&) {}));
    }

    void twoThreadsPassEveryValueInOrder() {
        SpscRing<std::int64_t> r(1024);
        constexpr std::int64_t count = 100000;
        std::thread producer([&] {
            for (std::int64_t i = 0; i < count; ++i)
                while (!r.tryPush([&](std::int64_t& v) { v = i; })) std::this_thread::yield();
        });
        std::int64_t expected = 0;
        bool inOrder = true;
        while (expected < count) {
            r.drain([&](std::int64_t& v) {
                if (v != expected) inOrder = false;
                ++expected;
            });
        }
        producer.join();
        QVERIFY(inOrder);
        QCOMPARE(expected, count);
    }

    void sinkCopiesStepsWithTheirLayers() {
        TelemetryRing ring(2, 8, 8);
        StepRecord s;
        s.step = 7;
        s.loss = 0.5;
        std::vector<LayerStepRecord> layers(2);
        layers[0].layer = 0;
        layers[0].precision = Format::fp16;
        layers[0].frac_underflow = 0.25;
        layers[1].layer = 1;
        ring.on_step(s, layers);
        int seen = 0;
        ring.drainSteps([&](ui::StepPacket& p) {
            ++seen;
            QCOMPARE(p.step.step, std::int64_t{7});
            QCOMPARE(p.layers.size(), std::size_t{2});
            QCOMPARE(p.layers[0].precision, ComputeFormat(Format::fp16));
            QCOMPARE(p.layers[0].frac_underflow, 0.25);
        });
        QCOMPARE(seen, 1);
    }

    void fullSinkDropsAndCounts() {
        TelemetryRing ring(1, 4, 2);
        StepRecord s;
        for (int i = 0; i < 10; ++i) {
            s.step = i;
            ring.on_step(s, {});
        }
        QCOMPARE(ring.droppedSteps(), std::int64_t{6});
        std::vector<std::int64_t> got;
        ring.drainSteps([&](ui::StepPacket& p) { got.push_back(p.step.step); });
        QCOMPARE(got, (std::vector<std::int64_t>{0, 1, 2, 3}));  // the oldest kept, newest dropped

        Event e;
        e.message = "hello";
        for (int i = 0; i < 3; ++i) ring.on_event(e);
        ring.on_eval(EvalRecord{});
        QCOMPARE(ring.droppedNotes(), std::int64_t{2});
        int events = 0;
        ring.drainNotes([&](ui::NotePacket& p) {
            QVERIFY(std::holds_alternative<Event>(p));
            QCOMPARE(std::get<Event>(p).message, std::string("hello"));
            ++events;
        });
        QCOMPARE(events, 2);
    }

    // A transformer's op statistics arrive after their step's on_step, in a ring of their own: the
    // records come through whole and in order, a full ring drops and counts, and the steps' ring
    // is not touched.
    void opStepsTravelInTheirOwnRing() {
        TelemetryRing ring(1, 8, 8, 2);
        std::vector<OpStepRecord> ops = {{10, "blocks.0.attn", "logit_amax", 7.5},
                                         {10, "blocks.0.ln1", "min_variance", 1e-3}};
        ring.on_op_steps(ops);
        ops[0].step = ops[1].step = 20;
        ops[0].value = std::numeric_limits<double>::infinity();  // as measured: an overflowed logit
        ring.on_op_steps(ops);
        ring.on_op_steps(ops);  // the ring holds two: dropped
        QCOMPARE(ring.droppedOps(), std::int64_t{1});
        QCOMPARE(ring.droppedSteps(), std::int64_t{0});
        std::vector<OpStepRecord> got;
        QCOMPARE(ring.drainOps([&](ui::OpPacket& p) { got.insert(got.end(), p.ops.begin(), p.ops.end()); }),
                 std::size_t{2});
        QCOMPARE(got.size(), std::size_t{4});
        QCOMPARE(got[0].name, std::string("blocks.0.attn"));
        QCOMPARE(got[0].stat, std::string("logit_amax"));
        QCOMPARE(got[0].value, 7.5);
        QCOMPARE(got[1].step, std::int64_t{10});
        QCOMPARE(got[1].value, 1e-3);
        QCOMPARE(got[2].step, std::int64_t{20});
        QVERIFY(std::isinf(got[2].value));
        QCOMPARE(ring.drainSteps([](ui::StepPacket&) {}), std::size_t{0});
    }
};

QTEST_APPLESS_MAIN(TestTelemetryRing)
#include "test_telemetry_ring.moc"
