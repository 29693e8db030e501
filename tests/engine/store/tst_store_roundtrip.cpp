// Recording and reading back: every table through a Recorder, field by field (memory, histograms,
// NaN and inf included); the run's layers (image and flat shapes), written with its row in one
// transaction; the op statistics (schema version 5) and their summary per op; the runs list's summary columns; terminal events; live following from a
// second connection; resolving ids and name prefixes; editing and removing; the recorder's
// backpressure notice (block-scale views weighed by their size) and its behaviour on a full disk.
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <QTemporaryDir>
#include <QtTest>

#include "error.h"
#include "store/histogram_codec.h"
#include "store/op_summary.h"
#include "store/run_store.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

namespace {

RunInfo info(const std::string& name) {
    RunInfo i;
    i.name = name;
    i.backend = "cpu";
    i.device = "test CPU (2 threads)";
    i.config_json = R"({"name":")" + name + R"(","train":{"lr":0.001}})";
    i.layers = make_layer_infos();
    return i;
}

// Records `steps` synthetic steps with `layers` layer rows each, the op rows of a two-block GPT on
// even steps, an eval every 50 steps (test and train splits) and a few events, then finishes as
// `completed`.
std::int64_t record_run(RunStore& store, const std::string& name, int steps, int layers,
                        const RecorderOptions& options = {}) {
    auto rec = store.start_run(info(name), options);
    for (int i = 0; i < steps; ++i) {
        rec->on_step(make_step(i), make_layers(i, layers));
        if (i % 2 == 0) rec->on_op_steps(make_ops(i, 2));
        if (i % 50 == 49) {
            rec->on_eval({i, "train", 0.5 / (i + 1), 0.80 + i * 1e-5});
            rec->on_eval({i, "test", 0.6 / (i + 1), 0.75 + i * 1e-5});
        }
        if (i == 10)
            rec->on_event({i, 0.2, EventKind::setting_change, "fc1 precision changed from auto to fp16.",
                           R"({"key":"precision.layers.fc1","old":"auto","new":"fp16"})"});
    }
    rec->finish(RunStatus::completed);
    return rec->run_id();
}

bool wait_until(const std::function<bool()>& pred, int timeout_ms = 5000) {
    QElapsedTimer t;
    t.start();
    while (!pred()) {
        if (t.elapsed() > timeout_ms) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

}  // namespace

class StoreRoundTrip : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString db(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void histogramCodec_data() {
        QTest::addColumn<QVector<int>>("bins");  // bin indices set
        QTest::addColumn<QVector<uint>>("counts");
        QTest::addColumn<int>("maxBytes");
        QTest::newRow("all zero") << QVector<int>{} << QVector<uint>{} << 3;
        QTest::newRow("lowest bin") << QVector<int>{0} << QVector<uint>{1} << 5;
        QTest::newRow("highest bin") << QVector<int>{ExponentHistogram::bins - 1} << QVector<uint>{3} << 5;
        QTest::newRow("both ends") << QVector<int>{0, ExponentHistogram::bins - 1} << QVector<uint>{1, 2}
                                   << 5 + ExponentHistogram::bins;
        QTest::newRow("largest count") << QVector<int>{140} << QVector<uint>{4294967295u} << 9;
        QVector<int> typical;
        QVector<uint> typical_counts;
        for (int i = 100; i < 130; ++i) {
            typical << i;
            typical_counts << static_cast<uint>(1 + (i - 100) * 37);
        }
        QTest::newRow("typical 30 binades") << typical << typical_counts << 70;
    }

    void histogramCodec() {
        QFETCH(QVector<int>, bins);
        QFETCH(QVector<uint>, counts);
        QFETCH(int, maxBytes);
        ExponentHistogram h;
        for (int i = 0; i < bins.size(); ++i) h.counts[static_cast<std::size_t>(bins[i])] = counts[i];
        std::vector<std::uint8_t> blob;
        store::encode_histogram(h, blob);
        QVERIFY2(static_cast<int>(blob.size()) <= maxBytes, qPrintable(QString::number(blob.size())));
        QCOMPARE(blob[0], std::uint8_t{1});
        ExponentHistogram back;
        back.counts.fill(99);
        QVERIFY(store::decode_histogram(blob, back));
        QVERIFY(back.counts == h.counts);
    }

    void histogramCodecMatchesTheDocumentedExample() {  // docs/schema.md, "The grad_exponents blob"
        ExponentHistogram h;
        h.counts[static_cast<std::size_t>(-21 - ExponentHistogram::min_exponent)] = 3;
        h.counts[static_cast<std::size_t>(-20 - ExponentHistogram::min_exponent)] = 200;
        h.counts[static_cast<std::size_t>(-19 - ExponentHistogram::min_exponent)] = 1;
        std::vector<std::uint8_t> blob;
        store::encode_histogram(h, blob);
        QCOMPARE(blob, (std::vector<std::uint8_t>{0x01, 0x29, 0x03, 0x03, 0xC8, 0x01, 0x01}));
        ExponentHistogram zero;
        store::encode_histogram(zero, blob);
        QCOMPARE(blob, (std::vector<std::uint8_t>{0x01, 0x00, 0x00}));
    }

    void histogramCodecRejectsMalformed_data() {
        QTest::addColumn<QByteArray>("blob");
        QTest::newRow("unknown version") << QByteArray::fromHex("020000");
        QTest::newRow("truncated header") << QByteArray::fromHex("01");
        QTest::newRow("missing counts") << QByteArray::fromHex("01280301");
        QTest::newRow("trailing bytes") << QByteArray::fromHex("0128010500");
        QTest::newRow("count beyond 32 bits") << QByteArray::fromHex("012801ffffffff7f");
        QTest::newRow("unterminated varint") << QByteArray::fromHex("0128018080");
    }

    void histogramCodecRejectsMalformed() {
        QFETCH(QByteArray, blob);
        ExponentHistogram h;
        std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(blob.constData()),
                                            static_cast<std::size_t>(blob.size()));
        QVERIFY(!store::decode_histogram(bytes, h));
        for (auto c : h.counts) QCOMPARE(c, 0u);
    }

    void comparisonSeesEachField() {  // so the round trip below cannot pass by comparing too little
        StepRecord s = make_step(5);
        s.memory.modelled = !s.memory.modelled;
        QVERIFY(diff(s, make_step(5)).contains("memory.modelled"));
        LayerStepRecord l = make_layers(5, 1)[0];
        l.grad_exponents.counts[200] += 1;
        QVERIFY(diff(l, make_layers(5, 1)[0]).contains("histogram"));
        QVERIFY(diff(make_step(5), make_step(5)).isEmpty());
        LayerStepRecord f = make_layers(4, 1)[0];  // fp8-e4m3: carries its scaling
        QVERIFY(f.fp8.has_value());
        QVERIFY(!make_layers(5, 1)[0].fp8.has_value());
        f.fp8->grad_output.amax *= 2;
        QVERIFY(diff(f, make_layers(4, 1)[0]).contains("fp8.grad_output.amax"));
        f.fp8.reset();
        QVERIFY(diff(f, make_layers(4, 1)[0]).contains("fp8 scaling absent != present"));
    }

    void everyTableRoundTrips() {
        const QString path = db("roundtrip.sqlite");
        const int steps = 600, layers = 3;
        std::vector<Event> sent_events;
        std::int64_t id = 0;
        {
            RunStore store(path.toStdString());
            auto rec = store.start_run(info("round-trip"));
            id = rec->run_id();
            for (int i = 0; i < steps; ++i) {
                rec->on_step(make_step(i), make_layers(i, layers));
                if (i % 3 == 0) rec->on_op_steps(make_ops(i, 2));  // layer_stats_every 3, as it were
            }
            StepRecord odd = make_step(steps);
            odd.loss = NAN;
            odd.grad_norm = -INFINITY;
            odd.loss_scale = INFINITY;
            rec->on_step(odd, make_layers(steps, layers));
            std::vector<OpStepRecord> odd_ops = make_ops(steps, 1);
            odd_ops[1].value = -INFINITY;  // not a logit amax, but stored as any infinity is
            rec->on_op_steps(odd_ops);
            rec->on_op_steps({});  // nothing to write
            rec->on_eval({100, "test", 0.25, 0.875});
            rec->on_eval({100, "train", 0.125, 0.9375});
            rec->on_eval({200, "test", 0.5, NAN});  // regression: no accuracy
            sent_events = {
                {0, 0.0, EventKind::run_started, "Run started on cpu.", "{}"},
                {3, 0.05, EventKind::overflow, "Gradient overflow in fc2, \"dW\", step skipped.",
                 R"({"layer":"fc2","tensor":"dW"})"},
                {3, 0.05, EventKind::scale_change, "Loss scale 65536 -> 32768.",
                 R"({"old":65536,"new":32768,"reason":"backoff"})"},
                {7, 0.1, EventKind::notice, "Unicode: Größe µ → ∞, and a line\nbreak.", "{}"},
                {9, 0.12, EventKind::checkpoint, "", ""},
            };
            for (const Event& e : sent_events) rec->on_event(e);
            rec->finish(RunStatus::completed);
            QVERIFY(rec->error().empty());
        }
        RunStore store(path.toStdString(), true);
        auto got = store.steps(id);
        QCOMPARE(got.size(), std::size_t(steps + 1));
        for (int i = 0; i < steps; ++i) {
            QString d = diff(got[static_cast<std::size_t>(i)], make_step(i));
            QVERIFY2(d.isEmpty(), qPrintable(d));
        }
        QVERIFY(std::isnan(got.back().loss));
        QCOMPARE(got.back().grad_norm, -INFINITY);
        QCOMPARE(got.back().loss_scale, INFINITY);

        auto got_layers = store.layer_steps(id);
        QCOMPARE(got_layers.size(), std::size_t((steps + 1) * layers));
        for (int i = 0; i <= steps; ++i) {
            auto want = make_layers(i, layers);
            for (int l = 0; l < layers; ++l) {
                QString d =
                    diff(got_layers[static_cast<std::size_t>(i * layers + l)], want[static_cast<std::size_t>(l)]);
                QVERIFY2(d.isEmpty(), qPrintable(d));
            }
        }

        // The op rows, in step order and within a step in the order handed in; NaN and inf kept.
        const auto got_ops = store.op_steps(id);
        const std::size_t per_step = make_ops(0, 2).size();
        QCOMPARE(got_ops.size(), std::size_t(steps / 3) * per_step + make_ops(steps, 1).size());
        for (int i = 0; i < steps; i += 3) {
            const auto want = make_ops(i, 2);
            for (std::size_t o = 0; o < per_step; ++o) {
                const QString d = diff(got_ops[static_cast<std::size_t>(i / 3) * per_step + o], want[o]);
                QVERIFY2(d.isEmpty(), qPrintable(d));
            }
        }
        int nans = 0, infs = 0;
        for (const OpStepRecord& o : got_ops) {
            nans += std::isnan(o.value);
            infs += std::isinf(o.value) && o.value > 0;
        }
        QVERIFY(nans > 10 && infs > 10);  // make_ops' NaN and inf logits came back as such
        QCOMPARE(got_ops.back().step, std::int64_t(steps));
        QCOMPARE(got_ops[got_ops.size() - 3].value, -INFINITY);
        QCOMPARE(got_ops[got_ops.size() - 3].name, std::string("blocks.0.attn"));
        QCOMPARE(got_ops.back().name, std::string("ln_f"));
        const auto later_ops = store.op_steps(id, 597);
        QCOMPARE(later_ops.size(), per_step + make_ops(steps, 1).size());  // steps 597 and 600
        QCOMPARE(later_ops.front().step, std::int64_t(597));
        QVERIFY(store.op_steps(999).empty());

        // The layers, as start_run() was given them: image and flat shapes, takes_precision.
        const auto got_infos = store.layers(id);
        const auto want_infos = make_layer_infos();
        QCOMPARE(got_infos.size(), want_infos.size());
        for (std::size_t l = 0; l < want_infos.size(); ++l) {
            const QString d = diff(got_infos[l], want_infos[l]);
            QVERIFY2(d.isEmpty(), qPrintable(d));
        }
        QCOMPARE(got_infos[0].in_shape, (SampleShape{1, 28, 28}));
        QVERIFY(!got_infos[0].in_shape.flat());
        QVERIFY(got_infos[3].in_shape.flat());
        QCOMPARE(got_infos[3].in_features, std::int64_t(12544));
        QVERIFY(!got_infos[1].takes_precision);

        auto evals = store.evals(id);
        QCOMPARE(evals.size(), std::size_t(3));
        QCOMPARE(evals[0].split, std::string("test"));
        QCOMPARE(evals[1].split, std::string("train"));
        QCOMPARE(evals[1].accuracy, 0.9375);
        QVERIFY(std::isnan(evals[2].accuracy));
        QCOMPARE(store.evals(id, 150).size(), std::size_t(1));

        auto events = store.events(id);
        // Ours, plus run_finished added by finish().
        QCOMPARE(events.size(), sent_events.size() + 1);
        for (std::size_t i = 0; i < sent_events.size(); ++i) {
            QCOMPARE(events[i].step, sent_events[i].step);
            QCOMPARE(events[i].time_s, sent_events[i].time_s);
            QCOMPARE(events[i].kind, sent_events[i].kind);
            QCOMPARE(events[i].message, sent_events[i].message);
            QCOMPARE(events[i].data_json,
                     sent_events[i].data_json.empty() ? std::string("{}") : sent_events[i].data_json);
        }
        QCOMPARE(events.back().kind, EventKind::run_finished);
        QCOMPARE(events.back().step, std::int64_t(steps));
        QCOMPARE(store.events(id, 5).size(), std::size_t(3));

        RunRow row = store.run(id);
        QCOMPARE(row.name, std::string("round-trip"));
        QCOMPARE(row.status, RunStatus::completed);
        QCOMPARE(row.steps, std::int64_t(steps + 1));
        QVERIFY(row.final_loss.has_value() && std::isnan(*row.final_loss));
        QVERIFY(row.test_accuracy.has_value() && std::isnan(*row.test_accuracy));  // the last test eval
        QCOMPARE(row.test_loss.value(), 0.5);
        QCOMPARE(row.backend, std::string("cpu"));
        QCOMPARE(row.device, std::string("test CPU (2 threads)"));
        QCOMPARE(row.config_json, info("round-trip").config_json);
        QCOMPARE(row.app_version, std::string(MANTISSA_VERSION));
        QCOMPARE(row.uuid.size(), std::size_t(36));
        QVERIFY(QRegularExpression(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$)")
                    .match(QString::fromStdString(row.created_at))
                    .hasMatch());
        QVERIFY(!row.finished_at.empty());
        QVERIFY(row.finished_at >= row.created_at);

        RunTotals t = store.totals(id);
        QCOMPARE(t.steps, std::int64_t(steps + 1));
        std::int64_t overflows = 0;
        for (int i = 0; i < steps; ++i) overflows += make_step(i).overflow;
        QCOMPARE(t.overflow_steps, overflows);
        QCOMPARE(t.layer_rows, std::int64_t((steps + 1) * layers));
        QCOMPARE(t.op_rows, static_cast<std::int64_t>(got_ops.size()));
        QCOMPARE(t.evals, std::int64_t(3));
        QCOMPARE(t.events, std::int64_t(sent_events.size() + 1));
        QCOMPARE(t.peak_memory_bytes, make_step(steps).memory.total());
        QCOMPARE(t.elapsed_s.value(), make_step(steps).time_s);
    }

    // summarize_op_steps: per (name, stat) in first-appearance order, the latest step's value and
    // the extreme (max logit, min variance) at the first step that reached it, NaN left out of
    // the extreme but counted, inf taken as the largest logit.
    void opSummaries() {
        const std::vector<OpStepRecord> rows = {
            {0, "blocks.0.ln1", "min_variance", 0.5},   {0, "blocks.0.attn", "logit_amax", 4.0},
            {0, "ln_f", "min_variance", NAN},           {0, "blocks.0.x", "new_stat", -3.0},
            {2, "blocks.0.ln1", "min_variance", 0.125}, {2, "blocks.0.attn", "logit_amax", 9.0},
            {2, "ln_f", "min_variance", NAN},           {2, "blocks.0.x", "new_stat", -1.0},
            {4, "blocks.0.ln1", "min_variance", 0.125}, {4, "blocks.0.attn", "logit_amax", NAN},
            {6, "blocks.0.ln1", "min_variance", 0.25},  {6, "blocks.0.attn", "logit_amax", 7.5},
        };
        auto got = summarize_op_steps(rows);
        QCOMPARE(got.size(), std::size_t(4));
        const OpStatSummary& ln = got[0];
        QCOMPARE(ln.name, std::string("blocks.0.ln1"));
        QCOMPARE(ln.stat, std::string("min_variance"));
        QCOMPARE(ln.steps, std::int64_t(4));
        QCOMPARE(ln.last_step, std::int64_t(6));
        QCOMPARE(ln.last, 0.25);
        QCOMPARE(ln.extreme, 0.125);
        QCOMPARE(ln.extreme_step, std::int64_t(2));  // the first step that reached it
        QCOMPARE(ln.nan_steps, std::int64_t(0));
        const OpStatSummary& attn = got[1];
        QCOMPARE(attn.name, std::string("blocks.0.attn"));
        QCOMPARE(attn.last, 7.5);
        QCOMPARE(attn.extreme, 9.0);
        QCOMPARE(attn.extreme_step, std::int64_t(2));
        QCOMPARE(attn.nan_steps, std::int64_t(1));
        const OpStatSummary& lnf = got[2];  // every value NaN: no extreme
        QVERIFY(std::isnan(lnf.last) && std::isnan(lnf.extreme));
        QCOMPARE(lnf.nan_steps, std::int64_t(2));
        QCOMPARE(got[3].extreme, -1.0);  // a stat this build does not know: its largest value
        QVERIFY(op_stat_larger_is_worse("logit_amax") && !op_stat_larger_is_worse("min_variance"));

        // An infinite logit is the largest; rows out of step order still give the latest as last.
        got = summarize_op_steps({{8, "a", "logit_amax", 3.0}, {5, "a", "logit_amax", INFINITY},
                                  {9, "a", "logit_amax", 1e300}, {7, "a", "logit_amax", 2.0}});
        QCOMPARE(got.size(), std::size_t(1));
        QCOMPARE(got[0].extreme, INFINITY);
        QCOMPARE(got[0].extreme_step, std::int64_t(5));
        QCOMPARE(got[0].last_step, std::int64_t(9));
        QCOMPARE(got[0].last, 1e300);
        QVERIFY(summarize_op_steps({}).empty());
    }

    void listRunsSummarises() {
        const QString path = db("list.sqlite");
        RunStore store(path.toStdString());
        std::int64_t a = record_run(store, "alpha", 120, 0);
        std::int64_t b = record_run(store, "beta", 0, 0);
        auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t(2));
        QCOMPARE(runs[0].id, a);
        QCOMPARE(runs[0].steps, std::int64_t(120));
        QCOMPARE(runs[0].final_loss.value(), make_step(119).loss);
        QCOMPARE(runs[0].test_accuracy.value(), 0.75 + 99 * 1e-5);  // the last *test* eval, step 99
        QCOMPARE(runs[0].test_loss.value(), 0.6 / 100);
        QCOMPARE(runs[1].id, b);
        QCOMPARE(runs[1].steps, std::int64_t(0));
        QVERIFY(!runs[1].final_loss.has_value());
        QVERIFY(!runs[1].test_accuracy.has_value());
        QVERIFY(runs[0].uuid != runs[1].uuid);
    }

    void finishWritesStatusAndTerminalEvent_data() {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("error");
        QTest::addColumn<bool>("sessionSendsOwn");
        QTest::addColumn<int>("expectedKind");
        QTest::newRow("completed") << int(RunStatus::completed) << "" << false << int(EventKind::run_finished);
        QTest::newRow("completed, session's event")
            << int(RunStatus::completed) << "" << true << int(EventKind::run_finished);
        QTest::newRow("stopped") << int(RunStatus::stopped) << "" << false << int(EventKind::run_stopped);
        QTest::newRow("failed") << int(RunStatus::failed) << "The loss diverged to NaN at step 4." << false
                                << int(EventKind::run_failed);
    }

    void finishWritesStatusAndTerminalEvent() {
        QFETCH(int, status);
        QFETCH(QString, error);
        QFETCH(bool, sessionSendsOwn);
        QFETCH(int, expectedKind);
        RunStore store(db("finish.sqlite").toStdString());
        auto rec = store.start_run(info("finish"));
        for (int i = 0; i < 5; ++i) rec->on_step(make_step(i), {});
        if (sessionSendsOwn) rec->on_event({4, 0.06, EventKind(expectedKind), "Session's own final event.", "{}"});
        rec->finish(RunStatus(status), error.toStdString());
        rec->finish(RunStatus::completed);  // a second finish changes nothing
        RunRow r = store.run(rec->run_id());
        QCOMPARE(int(r.status), status);
        QCOMPARE(QString::fromStdString(r.error), error);
        auto events = store.events(rec->run_id());
        int finals = 0;
        for (const auto& e : events)
            if (e.kind == EventKind(expectedKind)) {
                ++finals;
                QCOMPARE(e.step, std::int64_t(4));
                if (!error.isEmpty()) QCOMPARE(QString::fromStdString(e.message), error);
            }
        QCOMPARE(finals, 1);
    }

    void destructorFinishesAsStopped() {
        RunStore store(db("dtor.sqlite").toStdString());
        std::int64_t id = 0;
        {
            auto rec = store.start_run(info("dropped"));
            id = rec->run_id();
            rec->on_step(make_step(0), make_layers(0, 2));
        }
        QCOMPARE(store.run(id).status, RunStatus::stopped);
        QCOMPARE(store.steps(id).size(), std::size_t(1));
    }

    void finishNeedsAFinalStatus() {
        RunStore store(db("finish-running.sqlite").toStdString());
        auto rec = store.start_run(info("x"));
        QVERIFY_THROWS_EXCEPTION(Error, rec->finish(RunStatus::running));
        rec->finish(RunStatus::completed);
        QCOMPARE(store.run(rec->run_id()).status, RunStatus::completed);
    }

    void recorderOutlivesItsStore() {
        const std::string path = db("outlive.sqlite").toStdString();
        std::shared_ptr<Recorder> rec;
        {
            RunStore store(path);
            rec = store.start_run(info("outlive"));
        }
        for (int i = 0; i < 10; ++i) rec->on_step(make_step(i), {});
        rec->finish(RunStatus::completed);
        RunStore store(path, true);
        QCOMPARE(store.steps(rec->run_id()).size(), std::size_t(10));
    }

    void readerFollowsALiveRun() {
        const std::string path = db("live.sqlite").toStdString();
        RunStore writer_store(path);
        RecorderOptions fast;
        fast.commit_interval_ms = 20;
        auto rec = writer_store.start_run(info("live"), fast);
        RunStore reader(path, true);
        QCOMPARE(reader.run(rec->run_id()).status, RunStatus::running);
        std::int64_t seen = 0;
        for (int i = 0; i < 300; ++i) {
            rec->on_step(make_step(i), make_layers(i, 1));
            if (i % 100 == 99) {
                QVERIFY(wait_until([&] {
                    auto more = reader.steps(rec->run_id(), seen);
                    seen += static_cast<std::int64_t>(more.size());
                    return seen == i + 1;
                }));
                QCOMPARE(reader.layer_steps(rec->run_id(), i).size(), std::size_t(1));
            }
        }
        QCOMPARE(reader.list_runs().back().status, RunStatus::running);
        rec->finish(RunStatus::completed);
        QCOMPARE(reader.run(rec->run_id()).status, RunStatus::completed);
    }

    void resolveIdsAndPrefixes_data() {
        QTest::addColumn<QString>("given");
        QTest::addColumn<int>("expectedIndex");  // into the runs made below; -1: an error
        QTest::addColumn<QString>("messagePart");
        QTest::newRow("id") << "2" << 1 << "";
        QTest::newRow("unique prefix") << "fmnist-bf" << 2 << "";
        QTest::newRow("whole name") << "fmnist-bf16" << 2 << "";
        QTest::newRow("exact name among prefixes") << "mlp" << 3 << "";
        QTest::newRow("ambiguous prefix") << "fmnist" << -1 << "matches 2 runs: 2 (fmnist-fp16), 3 (fmnist-bf16)";
        QTest::newRow("unknown") << "resnet" << -1 << "No run in";
        QTest::newRow("unknown id") << "99" << -1 << "starting with '99'";
        QTest::newRow("empty") << "" << -1 << "No run was given";
        QTest::newRow("duplicate names") << "twin" << -1 << "matches 2 runs";
    }

    void resolveIdsAndPrefixes() {
        QFETCH(QString, given);
        QFETCH(int, expectedIndex);
        QFETCH(QString, messagePart);
        const QString path = db("resolve.sqlite");
        QFile::remove(path);
        RunStore store(path.toStdString());
        std::vector<std::int64_t> ids;
        for (const char* name : {"1", "fmnist-fp16", "fmnist-bf16", "mlp", "mlp-wide", "twin", "twin"}) {
            auto rec = store.start_run(info(name));
            rec->finish(RunStatus::completed);
            ids.push_back(rec->run_id());
        }
        if (expectedIndex >= 0) {
            QCOMPARE(store.resolve(given.toStdString()), ids[static_cast<std::size_t>(expectedIndex)]);
        } else {
            try {
                store.resolve(given.toStdString());
                QFAIL("resolve() should have thrown");
            } catch (const Error& e) {
                QVERIFY2(QString(e.what()).contains(messagePart), e.what());
            }
        }
    }

    void editAndRemove() {
        const QString path = db("edit.sqlite");
        RunStore store(path.toStdString());
        std::int64_t keep = record_run(store, "keep", 60, 2);
        std::int64_t gone = record_run(store, "gone", 60, 3);
        store.rename(keep, "kept");
        store.set_notes(keep, "FP16 without loss scaling: watch the underflow.");
        store.set_tags(keep, " fp16, lesson ,,fp16, underflow ");
        RunRow r = store.run(keep);
        QCOMPARE(r.name, std::string("kept"));
        QCOMPARE(r.notes, std::string("FP16 without loss scaling: watch the underflow."));
        QCOMPARE(r.tags, std::string("fp16,lesson,underflow"));
        QVERIFY_THROWS_EXCEPTION(Error, store.rename(keep, ""));
        for (const char* blank : {" ", "   ", "\t", " \n "})  // as empty as "" in every list
            QVERIFY2(error_of([&] { store.rename(keep, blank); }).startsWith("A run's name cannot be blank"),
                     qPrintable(error_of([&] { store.rename(keep, blank); })));
        QCOMPARE(store.run(keep).name, std::string("kept"));
        QVERIFY_THROWS_EXCEPTION(Error, store.rename(12345, "x"));
        QVERIFY_THROWS_EXCEPTION(Error, store.set_notes(12345, "x"));

        store.remove(gone);
        QVERIFY_THROWS_EXCEPTION(Error, store.run(gone));
        RawDb raw(path, true);
        for (const char* table : {"steps", "layer_steps", "evals", "events", "layers", "op_steps"}) {
            QCOMPARE(raw.integer(QString("SELECT count(*) FROM %1 WHERE run_id = %2").arg(table).arg(gone)), 0LL);
            QVERIFY(raw.integer(QString("SELECT count(*) FROM %1 WHERE run_id = %2").arg(table).arg(keep)) > 0);
        }
        // A run still being recorded by a live process is not removed.
        auto rec = store.start_run(info("busy"));
        try {
            store.remove(rec->run_id());
            QFAIL("removing a live run should throw");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("still being recorded"), e.what());
        }
        rec->finish(RunStatus::stopped);
        store.remove(rec->run_id());
        QCOMPARE(store.list_runs().size(), std::size_t(1));
    }

    // A run started without layers (a caller that has none to give) has none; layers() of a run
    // that does not exist is empty too, as for the other per-run tables.
    void runWithoutLayersHasNone() {
        RunStore store(db("no-layers.sqlite").toStdString());
        RunInfo bare = info("bare");
        bare.layers.clear();
        auto rec = store.start_run(bare);
        rec->on_step(make_step(0), make_layers(0, 2));
        rec->finish(RunStatus::completed);
        QVERIFY(store.layers(rec->run_id()).empty());
        QCOMPARE(store.layer_steps(rec->run_id()).size(), std::size_t(2));
        QVERIFY(store.layers(999).empty());
    }

    // The run's row and its layers are one transaction: a layer row that cannot be written (here a
    // trigger refuses the third) leaves neither the run nor its first layers behind.
    void runAndLayersAreOneTransaction() {
        const QString path = db("atomic.sqlite");
        RunStore store(path.toStdString());
        record_run(store, "before", 5, 1);
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("CREATE TRIGGER refuse_third BEFORE INSERT ON layers WHEN NEW.layer = 2 "
                              "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"),
                     QString());
        }
        const QString error = error_of([&] { store.start_run(info("refused")); });
        QVERIFY2(error.contains("refused by the test"), qPrintable(error));
        QCOMPARE(store.list_runs().size(), std::size_t(1));
        RawDb raw(path, true);
        QCOMPARE(raw.integer("SELECT count(*) FROM runs"), 1LL);
        QCOMPARE(raw.integer("SELECT count(*) FROM layers"), 4LL);  // the first run's only
    }

    // A layer list that cannot describe a network is refused with a sentence naming the layer,
    // before anything is written.
    void badLayerIsRefused_data() {
        QTest::addColumn<QString>("what");
        QTest::newRow("empty name") << "name";
        QTest::newRow("empty kind") << "kind";
        QTest::newRow("negative channels") << "channels";
        QTest::newRow("negative parameters") << "parameters";
    }

    void badLayerIsRefused() {
        QFETCH(QString, what);
        const QString path = db("bad-layer-" + what + ".sqlite");
        RunStore store(path.toStdString());
        RunInfo bad = info("bad");
        LayerInfo& l = bad.layers[1];
        if (what == "name") l.name.clear();
        if (what == "kind") l.kind.clear();
        if (what == "channels") l.out_shape.channels = -1;
        if (what == "parameters") l.parameters = -5;
        const QString error = error_of([&] { store.start_run(bad); });
        QVERIFY2(error.startsWith("Cannot record layer 1 ("), qPrintable(error));
        QVERIFY2(error.endsWith("a layer needs a name, a kind and sizes that are not negative."), qPrintable(error));
        QVERIFY(store.list_runs().empty());
    }

    void backpressureWaitsAndSaysSo() {
        RunStore store(db("backpressure.sqlite").toStdString());
        RecorderOptions tight;
        tight.queue_bound_rows = 16;
        const int steps = 3000;
        std::int64_t id = record_run(store, "tight", steps, 3, tight);
        auto got = store.steps(id);
        QCOMPARE(got.size(), std::size_t(steps));  // nothing dropped
        for (int i = 0; i < steps; ++i) QCOMPARE(got[static_cast<std::size_t>(i)].step, std::int64_t(i));
        QCOMPARE(store.totals(id).layer_rows, std::int64_t(steps * 3));
        const auto ops = store.op_steps(id);  // queued under the same bound: none dropped either
        QCOMPARE(ops.size(), std::size_t(steps / 2) * make_ops(0, 2).size());
        QCOMPARE(ops.back().step, std::int64_t(steps - 2));
        int notices = 0;
        for (const Event& e : store.events(id))
            if (e.kind == EventKind::notice) {
                ++notices;
                QVERIFY2(QString::fromStdString(e.message).contains("Training waited for the run store"),
                         e.message.c_str());
                QVERIFY(QString::fromStdString(e.data_json).contains("\"bound_rows\":16"));
            }
        QVERIFY(notices >= 1);
        QVERIFY2(notices < steps / 4, qPrintable(QString::number(notices)));  // once per episode, not per wait
    }

    void fullDiskStopsRecordingCleanly() {
        const QString path = db("full.sqlite");
        std::int64_t pages = 0;
        {
            RunStore store(path.toStdString());
            record_run(store, "before", 10, 1);
        }
        {
            RawDb raw(path, true);
            pages = raw.integer("PRAGMA page_count");
        }
        RunStore store(path.toStdString());
        RecorderOptions capped;
        capped.max_page_count = pages + 12;
        capped.commit_interval_ms = 10;
        auto rec = store.start_run(info("full"), capped);
        // A first batch that fits, committed before the flood that will not.
        int pushed = 0;
        for (; pushed < 20; ++pushed) rec->on_step(make_step(pushed), make_layers(pushed, 3));
        RunStore reader(path.toStdString(), true);
        QVERIFY(wait_until([&] { return reader.steps(rec->run_id()).size() == 20; }));
        QElapsedTimer t;
        t.start();
        while (rec->error().empty() && t.elapsed() < 20000) {
            rec->on_step(make_step(pushed), make_layers(pushed, 3));
            ++pushed;
            if (pushed % 200 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        const QString error = QString::fromStdString(rec->error());
        QVERIFY2(error.contains("full"), qPrintable(error));
        QVERIFY2(error.startsWith("Recording of run"), qPrintable(error));
        // After the error the training thread is never held up.
        QElapsedTimer quick;
        quick.start();
        for (int i = 0; i < 100000; ++i) rec->on_step(make_step(pushed + i), make_layers(pushed + i, 3));
        QVERIFY(quick.elapsed() < 2000);
        rec->finish(RunStatus::completed);
        RunRow r = store.run(rec->run_id());
        QCOMPARE(r.status, RunStatus::failed);
        QCOMPARE(QString::fromStdString(r.error), error);
        auto steps = store.steps(rec->run_id());
        QVERIFY(steps.size() >= 20);
        QVERIFY(static_cast<int>(steps.size()) < pushed);
        for (std::size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i].step, std::int64_t(i));
        QCOMPARE(r.steps, std::int64_t(steps.size()));
        QCOMPARE(store.list_runs().front().status, RunStatus::completed);  // the earlier run is intact
    }

    void writerWaitsOutAnotherWritersLock() {
        const QString path = db("locked.sqlite");
        RunStore store(path.toStdString());
        RecorderOptions fast;
        fast.commit_interval_ms = 10;
        auto rec = store.start_run(info("locked"), fast);
        RawDb other(path);
        QCOMPARE(other.exec("PRAGMA busy_timeout = 5000; BEGIN IMMEDIATE; UPDATE runs SET notes = 'busy'"), QString());
        QElapsedTimer held;
        held.start();
        int i = 0;
        while (held.elapsed() < 1200) {
            rec->on_step(make_step(i), make_layers(i, 1));
            ++i;
            if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        QCOMPARE(other.exec("COMMIT"), QString());
        rec->finish(RunStatus::completed);
        QVERIFY2(rec->error().empty(), rec->error().c_str());
        QCOMPARE(store.steps(rec->run_id()).size(), std::size_t(i));
        QCOMPARE(store.run(rec->run_id()).notes, std::string("busy"));
    }

    // A block-scale view counts against the queue's bound by its size (a row per 64 exponents),
    // not as one row: with the writer held up by another writer's lock, a bound of 200 rows lets
    // three steps of one 4096-exponent view each wait (65 + 1 rows a step), where as single rows
    // all ten steps would fit. Once the lock goes, every view is written; the notice says so.
    void blockScaleRowsCountByTheirSize() {
        const QString path = db("views-bound.sqlite");
        RunStore store(path.toStdString());
        RecorderOptions tight;
        tight.queue_bound_rows = 200;
        tight.commit_interval_ms = 10;
        auto rec = store.start_run(info("views-bound"), tight);
        BlockScaleRecord view = make_block_scales(0)[1];  // fc1's W, made 64 rows of 64 blocks
        view.rows_total = view.rows = 64;
        view.blocks_per_row = 64;
        view.row_length = 64 * 32;
        view.exponents.assign(64 * 64, -3);
        RawDb other(path);
        QCOMPARE(other.exec("PRAGMA busy_timeout = 5000; BEGIN IMMEDIATE; UPDATE runs SET notes = 'busy'"), QString());
        std::atomic<int> recorded{0};
        std::thread training([&] {
            for (int i = 0; i < 10; ++i) {
                rec->on_step(make_step(i), {});
                view.step = i;
                rec->on_block_scales({view});
                ++recorded;
            }
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        const int while_held = recorded.load();
        QCOMPARE(other.exec("COMMIT"), QString());
        training.join();
        rec->finish(RunStatus::completed);
        QVERIFY2(rec->error().empty(), rec->error().c_str());
        QVERIFY2(while_held < 10, qPrintable(QString::number(while_held)));
        const auto views = store.block_scale_steps(rec->run_id());
        QCOMPARE(views.size(), std::size_t(10));
        QCOMPARE(views.back().step, std::int64_t(9));
        QCOMPARE(views.back().exponents, view.exponents);
        bool noticed = false;
        for (const Event& e : store.events(rec->run_id()))
            noticed = noticed || (e.kind == EventKind::notice &&
                                  QString::fromStdString(e.message).contains("Training waited for the run store"));
        QVERIFY(noticed);
    }

    void readOnlyStoreRefusesToRecord() {
        const std::string path = db("ro-record.sqlite").toStdString();
        { RunStore store(path); }
        RunStore store(path, true);
        QVERIFY(store.read_only());
        try {
            store.start_run(info("nope"));
            QFAIL("start_run should throw on a read-only store");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("read-only"), e.what());
        }
        QVERIFY_THROWS_EXCEPTION(Error, store.set_tags(1, "x"));
    }
};

QTEST_GUILESS_MAIN(StoreRoundTrip)
#include "tst_store_roundtrip.moc"
