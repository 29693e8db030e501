// What the bench's limits rest on, without timing anything against a threshold: the peak-rate
// loops (app/bench/peak_rate.h) measure a positive, finite rate on this CPU's FP32 FMA unit and
// say which units it lacks; the limit of a step split between the FP32 and bf16 primitives is
// each part at its own peak, and which matmuls count as bf16; and a quick engine run's JSON has the limits table, the FLOP columns
// of the steps table (the reference MLP's 128.9 MFLOP) and the threads table.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

#include "bench/peak_rate.h"
#include "bench/step_flops.h"
#include "model/matmul_flops.h"
#include "run_cli.h"

using namespace mantissa;
using namespace mantissa::bench;

namespace {

QJsonObject table_named(const QJsonArray& tables, const QString& name) {
    for (const auto& t : tables)
        if (t.toObject()["name"].toString() == name) return t.toObject();
    return {};
}

QStringList column_keys(const QJsonObject& table) {
    QStringList keys;
    for (const auto& c : table["columns"].toArray()) keys << c.toObject()["key"].toString();
    return keys;
}

}  // namespace

class TestBenchLimits : public QObject {
    Q_OBJECT
private slots:
    void fp32PeakIsMeasured() {
        if (!unit_missing(PeakUnit::fp32_fma).empty())
            QSKIP(qPrintable(QString::fromStdString("FP32 FMA unit: " + unit_missing(PeakUnit::fp32_fma))));
        const PeakMeasurement m = measure_peak(PeakUnit::fp32_fma, 1, 3, 0.01);
        QVERIFY2(std::isfinite(m.gflops) && m.gflops > 0, qPrintable(QString::number(m.gflops)));
        QCOMPARE(m.repetitions, 3);
        const PeakMeasurement two = measure_peak(PeakUnit::fp32_fma, 2, 2, 0.01);
        QVERIFY(std::isfinite(two.gflops) && two.gflops > 0);
        QVERIFY(QString::fromStdString(unit_name(PeakUnit::fp32_fma)).startsWith("FP32 FMA AVX"));
    }

    // A unit the CPU lacks is named, measured as NaN, and the table says so.
    void missingUnitsSayWhy() {
        for (PeakUnit u : {PeakUnit::bf16_dot, PeakUnit::amx_bf16}) {
            if (unit_missing(u).empty()) continue;
            QVERIFY(std::isnan(measure_peak(u, 1, 1, 0.001).gflops));
        }
        PeakRates peaks;
        const Table t = limits_table({1}, true, peaks);
        QCOMPARE(QString::fromStdString(t.name), QStringLiteral("limits"));
        QVERIFY(t.rows.size() >= 3);
        for (const auto& row : t.rows) {
            const bool measured = row["gflops"].is_number();
            QVERIFY(measured != !row["note"].get<std::string>().empty());
        }
        QVERIFY(std::isfinite(peaks.fp32_fma) && peaks.fp32_fma > 0);
        QVERIFY(QString::fromStdString(t.title).contains(QString::fromStdString(vector_extensions())));
    }

    void limitArithmetic() {
        PeakRates p;
        p.fp32_fma = 100;
        p.bf16_dot = 200;
        p.amx_bf16 = std::nan("");
        QCOMPARE(p.bf16(), 200.0);
        QCOMPARE(limit_gflops(p, 300, 0, 1), 100.0);    // all FP32
        QCOMPARE(limit_gflops(p, 300, 300, 2), 400.0);  // all bf16, two threads
        // 100 FLOPs at 100 and 200 at 200 take 2 time units: 300 / 2.
        QCOMPARE(limit_gflops(p, 300, 200, 1), 150.0);
        p.amx_bf16 = 1000;
        QCOMPARE(p.bf16(), 1000.0);  // AMX where present
        QVERIFY(std::isnan(limit_gflops(p, 0, 0, 1)));
        QVERIFY(std::isnan(limit_gflops(p, 300, 0, 0)));  // no CPU threads: another backend
        p.fp32_fma = std::nan("");
        QVERIFY(std::isnan(limit_gflops(p, 300, 100, 1)));
    }

    // Which matmuls a step's limit holds to the BF16 peak when the bf16 path is on: operands bf16
    // holds exactly (bf16, fp8-e4m3, the block formats) and attention's bf16 products; fp32, tf32
    // and fp16 operands, and attention's products in those, to the FP32 one.
    void bf16PrimitiveRule() {
        auto matmul = [](ComputeFormat f, bool batched) {
            MatmulFlops m;
            m.operands = f;
            m.batched = batched;
            return m;
        };
        for (bool batched : {false, true}) {
            QVERIFY(on_bf16_primitive(matmul(Format::bf16, batched)));
            QVERIFY(!on_bf16_primitive(matmul(Format::fp32, batched)));
            QVERIFY(!on_bf16_primitive(matmul(Format::tf32, batched)));
            QVERIFY(!on_bf16_primitive(matmul(Format::fp16, batched)));
        }
        QVERIFY(on_bf16_primitive(matmul(Format::fp8_e4m3, false)));
        QVERIFY(on_bf16_primitive(matmul(BlockFormat::mxfp4, false)));
        QVERIFY(on_bf16_primitive(matmul(BlockFormat::nvfp4, false)));
    }

    void engineJson() {
        const CliResult r = run_cli({"bench", "--quick", "--suite", "engine", "--json", "--threads", "1"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject engine = QJsonDocument::fromJson(r.out).object()["suites"].toObject()["engine"].toObject();
        const QJsonArray tables = engine["tables"].toArray();

        const QJsonObject limits = table_named(tables, "limits");
        QVERIFY2(!limits.isEmpty(), "no limits table");
        bool fp32_one_thread = false;
        for (const auto& v : limits["rows"].toArray()) {
            const QJsonObject row = v.toObject();
            if (row["unit"].toString().startsWith("FP32 FMA") && row["threads"].toInt() == 1)
                fp32_one_thread = row["gflops"].toDouble() > 0;
        }
        QVERIFY(fp32_one_thread);

        const QJsonObject steps = table_named(tables, "steps");
        for (const char* key : {"mflop_per_step", "gflops", "limit_pct", "limit"})
            QVERIFY2(column_keys(steps).contains(key), key);
        const QJsonArray rows = steps["rows"].toArray();
        QVERIFY(!rows.isEmpty());
        for (const auto& v : rows) {
            const QJsonObject row = v.toObject();
            QCOMPARE(row["model"].toString(), QStringLiteral("784-256-128-10"));
            QCOMPARE(row["mflop_per_step"].toDouble(), 128.909312);
            QVERIFY(row["gflops"].toDouble() > 0);
            QVERIFY(row["limit_pct"].toDouble() > 0);
            QCOMPARE(row["threads"].toInt(), 1);
            if (row["precision"].toString() == "fp32") QCOMPARE(row["limit"].toString(), QStringLiteral("fma x1"));
        }
        const QString notes = QJsonDocument(steps["notes"].toArray()).toJson();
        QVERIFY2(notes.contains("aim: reference fp32 step >= 75% of the FMA limit on one thread: "), qPrintable(notes));
        QVERIFY(notes.contains("met"));  // "met" or "NOT MET": measured, whatever the figure

        const QJsonObject threads = table_named(tables, "threads");
        for (const char* key : {"threads", "speedup", "gflops", "limit_pct"})
            QVERIFY2(column_keys(threads).contains(key), key);
        const QJsonArray trows = threads["rows"].toArray();
        QVERIFY(!trows.isEmpty());
        QCOMPARE(trows[0].toObject()["threads"].toInt(), 1);
        QCOMPARE(trows[0].toObject()["speedup"].toDouble(), 1.0);
        QCOMPARE(trows[0].toObject()["model"].toString(), QStringLiteral("784-1024-1024-10"));
        const QString tnotes = QJsonDocument(threads["notes"].toArray()).toJson();
        QVERIFY(tnotes.contains("aim: 2 threads >= 1.7x one thread on 784-1024-1024-10 batch 256 (fp32): "));
    }
};

QTEST_GUILESS_MAIN(TestBenchLimits)
#include "test_bench_limits.moc"
