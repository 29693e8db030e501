// Exports: every table of a run (the layers of schema version 4, the op rows of version 5, the
// block-scale views of version 7 and the checkpoints of version 8 too) as CSV and as JSON, parsed back here with
// independent parsers (an RFC 4180 reader written for this test, and Qt's JSON), with the right row counts, header,
// values (shortest exact doubles, NaN and inf), histograms, and text that needs quoting. The views'
// distributions are checked against figures counted here from the exponents themselves.
#include <algorithm>
#include <sstream>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "error.h"
#include "store/run_store.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

namespace {

// RFC 4180: fields separated by commas, records by CRLF; a quoted field may hold commas, CRLF and
// doubled quotes. Returns false on malformed input.
bool parse_csv(const QByteArray& text, QList<QStringList>& rows) {
    rows.clear();
    QStringList row;
    QByteArray field;
    bool quoted = false, after_quote = false;
    for (qsizetype i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < text.size() && text[i + 1] == '"') {
                    field += '"';
                    ++i;
                } else {
                    quoted = false;
                    after_quote = true;
                }
            } else {
                field += c;
            }
        } else if (c == '"') {
            if (!field.isEmpty() || after_quote) return false;
            quoted = true;
        } else if (c == ',') {
            row << QString::fromUtf8(field);
            field.clear();
            after_quote = false;
        } else if (c == '\r') {
            if (i + 1 >= text.size() || text[i + 1] != '\n') return false;
            ++i;
            row << QString::fromUtf8(field);
            rows << row;
            row.clear();
            field.clear();
            after_quote = false;
        } else if (c == '\n') {
            return false;  // a bare LF outside quotes: not CRLF
        } else {
            if (after_quote) return false;
            field += c;
        }
    }
    return !quoted && field.isEmpty() && row.isEmpty();
}

const std::string tricky = "Loss scale backed off, \"hard\" at step 3;\r\nsee fc2's dW.";

// The views the run records at a step: make_block_scales', fc2 renamed to a name CSV must quote.
std::vector<BlockScaleRecord> views_at(std::int64_t step) {
    auto v = make_block_scales(step);
    for (BlockScaleRecord& r : v)
        if (r.layer == 1) r.name = "head, \"final\"";
    return v;
}

// A view's distribution, counted from its exponents (not through block_scale_histogram): the
// export's blocks .. max_exponent, histogram and exponents fields as CSV writes them.
QStringList expected_distribution(const BlockScaleRecord& r) {
    std::vector<int> finite;
    int zeros = 0, nans = 0;
    QStringList map;
    for (std::int16_t e : r.exponents) {
        if (e == BlockScaleRecord::zero_block) {
            ++zeros;
            map << "zero";
        } else if (e == BlockScaleRecord::nan_block) {
            ++nans;
            map << "nan";
        } else {
            finite.push_back(e);
            map << QString::number(e);
        }
    }
    std::sort(finite.begin(), finite.end());
    QStringList bins;
    for (std::size_t i = 0; i < finite.size();) {
        std::size_t j = i;
        while (j < finite.size() && finite[j] == finite[i]) ++j;
        bins << QString("%1:%2").arg(finite[i]).arg(j - i);
        i = j;
    }
    const bool any = !finite.empty();
    return {QString::number(r.exponents.size()),
            QString::number(zeros),
            QString::number(nans),
            any ? QString::number(finite.front()) : QString(),
            any ? QString::number(finite[(finite.size() - 1) / 2]) : QString(),  // half at or below it
            any ? QString::number(finite.back()) : QString(),
            bins.join(' '),
            map.join(' ')};
}

}  // namespace

class StoreExport : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<RunStore> m_store;
    std::int64_t m_id = 0;
    QString m_checkpoint40;                                 // the stored (relative) file of the checkpoint at step 40
    static constexpr int steps = 120, layers = 3, ops = 7;  // make_ops(step, 2): two blocks and ln_f
    static constexpr int views = 5, view_steps = 3;         // make_block_scales at steps 0, 40, 80

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_store = std::make_unique<RunStore>(m_dir.filePath("export.sqlite").toStdString());
        auto rec = m_store->start_run({"export", "cpu", "", "{}", make_layer_infos()});
        m_id = rec->run_id();
        // Checkpoints: one under the store's folder (stored relative to it), one elsewhere (stored
        // absolute, with a comma CSV must quote) without a training time (NULL).
        const std::string uuid = m_store->run(m_id).uuid;
        m_checkpoint40 = QString::fromStdString("export.checkpoints/" + uuid + "/step-40.safetensors");
        for (int i = 0; i < steps; ++i) {
            if (i == 40)
                rec->on_checkpoint(
                    {40, 1.5, checkpoint_folder(m_store->path(), uuid) + "/step-40.safetensors", 4096, 0});
            if (i == 80) rec->on_checkpoint({80, NAN, "/elsewhere/ckpt, 80.safetensors", 8192, 0});
            StepRecord s = make_step(i);
            if (i == 5) s.loss = NAN;
            rec->on_step(s, make_layers(i, layers));
            rec->on_op_steps(make_ops(i, 2));
            if (i % 40 == 0) rec->on_block_scales(views_at(i));
        }
        rec->on_eval({50, "test", 0.25, 0.5});
        rec->on_eval({100, "test", 0.125, NAN});
        rec->on_event({3, 0.04, EventKind::scale_change, tricky, R"({"old":65536,"new":32768})"});
        rec->on_event({4, 0.05, EventKind::notice, " leading and trailing spaces ", "not json"});
        rec->finish(RunStatus::completed);
    }

    void csvParsesBack_data() {
        QTest::addColumn<QString>("table");
        QTest::addColumn<int>("rows");
        QTest::addColumn<QString>("header");
        QTest::newRow("steps") << "steps" << steps
                               << "step,epoch,time_s,loss,loss_scale,overflow,skipped,grad_norm,learning_rate,"
                                  "samples_per_s,step_time_ms,mem_parameters,mem_master_weights,mem_gradients,"
                                  "mem_optimizer_state,mem_activations,mem_workspace,device_mem_in_use,"
                                  "device_mem_total,memory_modelled";
        QTest::newRow("layer_steps") << "layer_steps" << steps * layers
                                     << "step,layer,name,precision,grad_amax,grad_elements,frac_zero,frac_subnormal,"
                                        "frac_nonfinite,frac_underflow,frac_lost_updates,grad_exponents,fp8_scale_input,"
                                        "fp8_scale_weight,fp8_scale_grad_output,fp8_amax_input,fp8_amax_weight,"
                                        "fp8_amax_grad_output";
        QTest::newRow("evals") << "evals" << 2 << "step,split,loss,accuracy";
        QTest::newRow("events") << "events" << 3 << "step,time_s,kind,message,data_json";
        QTest::newRow("layers") << "layers" << 4
                                << "layer,name,kind,in_channels,in_height,in_width,out_channels,out_height,out_width,"
                                   "parameters,takes_precision";
        QTest::newRow("op_steps") << "op_steps" << steps * ops << "step,op,name,stat,value";
        QTest::newRow("block_scale_steps")
            << "block_scale_steps" << views * view_steps
            << "step,layer,name,operand,format,own,rows_total,rows,row_length,blocks_per_row,blocks,zero_blocks,"
               "nan_blocks,min_exponent,median_exponent,max_exponent,histogram,exponents";
        QTest::newRow("checkpoints") << "checkpoints" << 2
                                     << "step,file,bytes,time_s,created_at,events_before,evals_before";
    }

    void csvParsesBack() {
        QFETCH(QString, table);
        QFETCH(int, rows);
        QFETCH(QString, header);
        const std::string csv = m_store->export_table(m_id, table.toStdString(), RunStore::ExportFormat::csv);
        QList<QStringList> parsed;
        QVERIFY2(parse_csv(QByteArray::fromStdString(csv), parsed), "not RFC 4180 CSV");
        QCOMPARE(parsed.size(), rows + 1);
        QCOMPARE(parsed[0].join(','), header);
        for (const QStringList& r : parsed) QCOMPARE(r.size(), parsed[0].size());

        if (table == "steps") {
            for (int i = 0; i < steps; ++i) {
                const StepRecord want = make_step(i);
                const QStringList& r = parsed[i + 1];
                QCOMPARE(r[0].toLongLong(), want.step);
                if (i == 5)
                    QCOMPARE(r[3], QString());  // NaN: an empty field
                else
                    QCOMPARE(r[3].toDouble(), want.loss);  // shortest form, read back exactly
                if (std::isinf(want.grad_norm))
                    QCOMPARE(r[7], QString("inf"));
                else
                    QCOMPARE(r[7].toDouble(), want.grad_norm);
                QCOMPARE(r[5], want.overflow ? QString("1") : QString("0"));
                QCOMPARE(r[17].toLongLong(), want.memory.device_in_use);
            }
        } else if (table == "layer_steps") {
            const auto want = make_layers(11, layers)[1];
            const QStringList& r = parsed[11 * layers + 1 + 1];
            QCOMPARE(r[2], QString("fc2"));
            QCOMPARE(r[3], QString::fromUtf8(want.precision.name().data()));
            QStringList bins = r[11].split(' ');
            qint64 total = 0, want_total = 0;
            for (const QString& b : bins) total += b.section(':', 1).toLongLong();
            for (auto c : want.grad_exponents.counts) want_total += c;
            QCOMPARE(total, want_total);
            QCOMPARE(bins.first(), QString("-150:7"));  // step 11 has the lowest bin set
            // v3's FP8 columns: values on an FP8 row, empty fields on the others.
            auto row = [&](int step, int layer) { return parsed[step * layers + layer + 1]; };
            const Fp8LayerScaling f = *make_layers(4, 1)[0].fp8;
            const QStringList fp8 = row(4, 0);
            QCOMPARE(fp8[3], QString("fp8-e4m3"));
            QCOMPARE(fp8[12].toDouble(), f.input.scale);
            QCOMPARE(fp8[13].toDouble(), f.weight.scale);
            QCOMPARE(fp8[14].toDouble(), f.grad_output.scale);
            QCOMPARE(fp8[15].toDouble(), f.input.amax);
            QCOMPARE(fp8[16].toDouble(), f.weight.amax);
            QCOMPARE(fp8[17].toDouble(), f.grad_output.amax);
            QCOMPARE(row(3, 1)[17], QString());     // a NaN amax of an FP8 row: empty
            QCOMPARE(row(3, 1)[12].toDouble(), 16.0);
            QCOMPARE(row(16, 0)[15], QString("inf"));
            for (int c = 12; c < 18; ++c) QCOMPARE(row(5, 0)[c], QString());  // fp16: NULL
        } else if (table == "evals") {
            QCOMPARE(parsed[2][3], QString());
        } else if (table == "op_steps") {
            for (int i = 0; i < steps; ++i) {
                const auto want = make_ops(i, 2);
                for (int o = 0; o < ops; ++o) {
                    const QStringList& r = parsed[i * ops + o + 1];
                    const OpStepRecord& w = want[static_cast<std::size_t>(o)];
                    QCOMPARE(r[0].toLongLong(), w.step);
                    QCOMPARE(r[1], QString::number(o));
                    QCOMPARE(r[2], QString::fromStdString(w.name));
                    QCOMPARE(r[3], QString::fromStdString(w.stat));
                    if (std::isnan(w.value))
                        QCOMPARE(r[4], QString());  // NaN: an empty field
                    else if (std::isinf(w.value))
                        QCOMPARE(r[4], QString("inf"));
                    else
                        QCOMPARE(r[4].toDouble(), w.value);  // shortest form, read back exactly
                }
            }
            QCOMPARE(parsed[3 * ops + 1 + 1][4], QString());     // step 3, blocks.0.attn: NaN
            QCOMPARE(parsed[5 * ops + 4 + 1][4], QString("inf"));  // step 5, blocks.1.attn
            QCOMPARE(parsed[0 * ops + 2 + 1][4], QString("5e-324"));  // the smallest subnormal
        } else if (table == "block_scale_steps") {
            for (int s = 0; s < view_steps; ++s) {
                const auto want = views_at(40 * s);
                for (int v = 0; v < views; ++v) {
                    const BlockScaleRecord& w = want[static_cast<std::size_t>(v)];
                    const QStringList expected =
                        QStringList{QString::number(w.step),
                                    QString::number(w.layer),
                                    QString::fromStdString(w.name),
                                    matmul_operand_name(w.operand),
                                    w.layer == 0 ? "mxfp4" : "nvfp4",
                                    w.own ? "1" : "0",
                                    QString::number(w.rows_total),
                                    QString::number(w.rows),
                                    QString::number(w.row_length),
                                    QString::number(w.blocks_per_row)} +
                        expected_distribution(w);
                    QCOMPARE(parsed[s * views + v + 1], expected);
                }
            }
            // Step 40's fc1 x, written out: 9 blocks, a zero and a NaN among them.
            QCOMPARE(parsed[views + 1].mid(10).join(','),
                     QString("9,1,1,-9,-7,-4,-9:1 -7:4 -6:1 -4:1,-7 -6 -7 zero -9 -7 -4 nan -7"));
            QCOMPARE(parsed[5].mid(10, 6).join(','), QString("5,5,0,,,"));  // fc2's W: zeros only
            QCOMPARE(parsed[4][17], QString());                            // fc2's x: no rows
        } else if (table == "layers") {
            const auto want = make_layer_infos();
            for (int l = 0; l < 4; ++l) {
                const LayerInfo& w = want[static_cast<std::size_t>(l)];
                const QStringList expected{QString::number(l),
                                           QString::fromStdString(w.name),
                                           QString::fromStdString(w.kind),
                                           QString::number(w.in_shape.channels),
                                           QString::number(w.in_shape.height),
                                           QString::number(w.in_shape.width),
                                           QString::number(w.out_shape.channels),
                                           QString::number(w.out_shape.height),
                                           QString::number(w.out_shape.width),
                                           QString::number(w.parameters),
                                           w.takes_precision ? "1" : "0"};
                QCOMPARE(parsed[l + 1], expected);
            }
            QCOMPARE(parsed[4][1], QString("head, \"final\""));  // quoted in the file, read back whole
        } else if (table == "checkpoints") {
            // As stored: the file under the store's folder relative to it; no time as an empty field.
            QCOMPARE(parsed[1].mid(0, 4), (QStringList{"40", m_checkpoint40, "4096", "1.5"}));
            QCOMPARE(parsed[2].mid(0, 4), (QStringList{"80", "/elsewhere/ckpt, 80.safetensors", "8192", ""}));
            for (int r : {1, 2}) {
                QVERIFY2(parsed[r][4].endsWith('Z') && parsed[r][4].size() == 24, qPrintable(parsed[r][4]));
                QCOMPARE(parsed[r].mid(5), (QStringList{"0", "0"}));  // nothing handed over before either
            }
        } else {
            QCOMPARE(parsed[1][3], QString::fromStdString(tricky));
            QCOMPARE(parsed[2][3], QString(" leading and trailing spaces "));
            QCOMPARE(parsed[1][4], QString(R"({"old":65536,"new":32768})"));
            QCOMPARE(parsed[3][2], QString("run_finished"));
        }
    }

    void jsonParsesBack_data() {
        QTest::addColumn<QString>("table");
        QTest::addColumn<int>("rows");
        QTest::newRow("steps") << "steps" << steps;
        QTest::newRow("layer_steps") << "layer_steps" << steps * layers;
        QTest::newRow("evals") << "evals" << 2;
        QTest::newRow("events") << "events" << 3;
        QTest::newRow("layers") << "layers" << 4;
        QTest::newRow("op_steps") << "op_steps" << steps * ops;
        QTest::newRow("block_scale_steps") << "block_scale_steps" << views * view_steps;
        QTest::newRow("checkpoints") << "checkpoints" << 2;
    }

    void jsonParsesBack() {
        QFETCH(QString, table);
        QFETCH(int, rows);
        const std::string json = m_store->export_table(m_id, table.toStdString(), RunStore::ExportFormat::json);
        QJsonParseError err;
        const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json), &err);
        QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
        QVERIFY(doc.isArray());
        const QJsonArray a = doc.array();
        QCOMPARE(a.size(), rows);
        if (table == "steps") {
            for (int i = 0; i < steps; ++i) {
                const StepRecord want = make_step(i);
                const QJsonObject o = a[i].toObject();
                QCOMPARE(o.size(), 20);
                QCOMPARE(o["step"].toInteger(), want.step);
                if (i == 5)
                    QVERIFY(o["loss"].isNull());
                else
                    QCOMPARE(o["loss"].toDouble(), want.loss);
                QCOMPARE(o["overflow"].toBool(), want.overflow);
                QCOMPARE(o["memory_modelled"].toBool(), want.memory.modelled);
                if (std::isinf(want.grad_norm)) QVERIFY(o["grad_norm"].isNull());
                QCOMPARE(o["mem_workspace"].toInteger(), want.memory.workspace);
            }
        } else if (table == "layer_steps") {
            const QJsonObject o = a[13 * layers].toObject();  // step 13, layer 0: top bin set
            const QJsonArray bins = o["grad_exponents"].toArray();
            QCOMPARE(bins.last().toArray()[0].toInt(), 127);
            QCOMPARE(bins.last().toArray()[1].toInteger(), 4000000000LL);
            QCOMPARE(o["precision"].toString(), QString::fromUtf8(make_layers(13, 1)[0].precision.name().data()));
            QCOMPARE(o.size(), 18);
            // v3's FP8 columns: numbers on an FP8 row (a non-finite amax: null), null elsewhere.
            const Fp8LayerScaling f = *make_layers(4, 1)[0].fp8;
            const QJsonObject fp8 = a[4 * layers].toObject();
            QCOMPARE(fp8["fp8_scale_input"].toDouble(), f.input.scale);
            QCOMPARE(fp8["fp8_scale_weight"].toDouble(), f.weight.scale);
            QCOMPARE(fp8["fp8_scale_grad_output"].toDouble(), f.grad_output.scale);
            QCOMPARE(fp8["fp8_amax_input"].toDouble(), f.input.amax);
            QCOMPARE(fp8["fp8_amax_weight"].toDouble(), f.weight.amax);
            QCOMPARE(fp8["fp8_amax_grad_output"].toDouble(), f.grad_output.amax);
            QVERIFY(a[16 * layers].toObject()["fp8_amax_input"].isNull());  // inf
            QCOMPARE(a[16 * layers].toObject()["fp8_scale_input"].toDouble(), 8.0);
            const QJsonObject other = a[5 * layers].toObject();
            for (const char* c : {"fp8_scale_input", "fp8_scale_weight", "fp8_scale_grad_output", "fp8_amax_input",
                                  "fp8_amax_weight", "fp8_amax_grad_output"}) {
                QVERIFY2(other.contains(QLatin1String(c)), c);
                QVERIFY2(other[QLatin1String(c)].isNull(), c);
            }
        } else if (table == "layers") {
            const auto want = make_layer_infos();
            for (int l = 0; l < 4; ++l) {
                const LayerInfo& w = want[static_cast<std::size_t>(l)];
                const QJsonObject o = a[l].toObject();
                QCOMPARE(o.size(), 11);
                QCOMPARE(o["layer"].toInteger(), qint64(l));
                QCOMPARE(o["name"].toString(), QString::fromStdString(w.name));
                QCOMPARE(o["kind"].toString(), QString::fromStdString(w.kind));
                QCOMPARE(o["in_channels"].toInteger(), w.in_shape.channels);
                QCOMPARE(o["in_height"].toInteger(), w.in_shape.height);
                QCOMPARE(o["in_width"].toInteger(), w.in_shape.width);
                QCOMPARE(o["out_channels"].toInteger(), w.out_shape.channels);
                QCOMPARE(o["out_height"].toInteger(), w.out_shape.height);
                QCOMPARE(o["out_width"].toInteger(), w.out_shape.width);
                QCOMPARE(o["parameters"].toInteger(), w.parameters);
                QVERIFY(o["takes_precision"].isBool());
                QCOMPARE(o["takes_precision"].toBool(), w.takes_precision);
            }
        } else if (table == "op_steps") {
            const QJsonObject o = a[2 * ops + 1].toObject();  // step 2, blocks.0.attn
            QCOMPARE(o.size(), 5);
            QCOMPARE(o["step"].toInteger(), 2LL);
            QCOMPARE(o["op"].toInteger(), 1LL);
            QCOMPARE(o["name"].toString(), QString("blocks.0.attn"));
            QCOMPARE(o["stat"].toString(), QString("logit_amax"));
            QCOMPARE(o["value"].toDouble(), make_ops(2, 2)[1].value);
            QVERIFY(a[3 * ops + 1].toObject()["value"].isNull());  // NaN
            QVERIFY(a[5 * ops + 4].toObject()["value"].isNull());  // inf
            QCOMPARE(a[ops - 1].toObject()["name"].toString(), QString("ln_f"));
        } else if (table == "block_scale_steps") {
            // Numbers as numbers, own a boolean, the histogram [exponent, count] pairs and the map an
            // array whose sentinels are the strings "zero" and "nan"; no finite block: nulls.
            const QJsonObject x = a[views].toObject();  // step 40, fc1's x
            QCOMPARE(x.size(), 18);
            QCOMPARE(x["step"].toInteger(), 40LL);
            QCOMPARE(x["name"].toString(), QString("fc1"));
            QCOMPARE(x["operand"].toString(), QString("x"));
            QCOMPARE(x["format"].toString(), QString("mxfp4"));
            QVERIFY(x["own"].isBool() && x["own"].toBool());
            QCOMPARE(x["rows_total"].toInteger(), 8LL);
            QCOMPARE(x["rows"].toInteger(), 3LL);
            QCOMPARE(x["row_length"].toInteger(), 70LL);
            QCOMPARE(x["blocks_per_row"].toInteger(), 3LL);
            QCOMPARE(x["blocks"].toInteger(), 9LL);
            QCOMPARE(x["zero_blocks"].toInteger(), 1LL);
            QCOMPARE(x["nan_blocks"].toInteger(), 1LL);
            QCOMPARE(x["min_exponent"].toInteger(), -9LL);
            QCOMPARE(x["median_exponent"].toInteger(), -7LL);
            QCOMPARE(x["max_exponent"].toInteger(), -4LL);
            QCOMPARE(x["histogram"].toArray(), (QJsonArray{QJsonArray{-9, 1}, QJsonArray{-7, 4}, QJsonArray{-6, 1},
                                                           QJsonArray{-4, 1}}));
            QCOMPARE(x["exponents"].toArray(), (QJsonArray{-7, -6, -7, "zero", -9, -7, -4, "nan", -7}));
            const QJsonObject dy = a[2].toObject();  // step 0, fc1's dy: int16's ends beside the sentinels
            QCOMPARE(dy["exponents"].toArray(), (QJsonArray{-32767, 32766, "zero", -20}));
            QCOMPARE(dy["median_exponent"].toInteger(), -20LL);
            const QJsonObject w = a[4].toObject();  // fc2's W: blocks of zeros only
            QCOMPARE(w["name"].toString(), QString("head, \"final\""));
            QVERIFY(w["own"].isBool() && !w["own"].toBool());
            for (const char* c : {"min_exponent", "median_exponent", "max_exponent"}) QVERIFY2(w[c].isNull(), c);
            QCOMPARE(w["histogram"].toArray(), QJsonArray());
            QCOMPARE(a[3].toObject()["exponents"].toArray(), QJsonArray());  // fc2's x: no rows
        } else if (table == "evals") {
            QCOMPARE(a[0].toObject()["accuracy"].toDouble(), 0.5);
            QVERIFY(a[1].toObject()["accuracy"].isNull());
        } else if (table == "checkpoints") {
            const QJsonObject first = a[0].toObject(), second = a[1].toObject();
            QCOMPARE(first.size(), 7);
            QCOMPARE(first["step"].toInteger(), 40LL);
            QCOMPARE(first["file"].toString(), m_checkpoint40);
            QCOMPARE(first["bytes"].toInteger(), 4096LL);
            QCOMPARE(first["time_s"].toDouble(), 1.5);
            QCOMPARE(first["events_before"].toInteger(), 0LL);
            QCOMPARE(second["file"].toString(), QString("/elsewhere/ckpt, 80.safetensors"));
            QVERIFY(second["time_s"].isNull());
        } else {
            QCOMPARE(a[0].toObject()["message"].toString(), QString::fromStdString(tricky));
            QCOMPARE(a[0].toObject()["data_json"].toObject()["new"].toInt(), 32768);  // embedded as JSON
            QCOMPARE(a[1].toObject()["data_json"].toString(), QString("not json"));   // kept as text
            QCOMPARE(a[2].toObject()["kind"].toString(), QString("run_finished"));
        }
    }

    void streamedEqualsString() {
        std::ostringstream out;
        m_store->export_table(m_id, "layer_steps", RunStore::ExportFormat::csv, out);
        QCOMPARE(out.str(), m_store->export_table(m_id, "layer_steps", RunStore::ExportFormat::csv));
    }

    void emptyTable() {
        auto rec = m_store->start_run({"empty", "cpu", "", "{}"});
        rec->finish(RunStatus::stopped);
        QCOMPARE(m_store->export_table(rec->run_id(), "evals", RunStore::ExportFormat::json), std::string("[]\n"));
        QCOMPARE(m_store->export_table(rec->run_id(), "evals", RunStore::ExportFormat::csv),
                 std::string("step,split,loss,accuracy\r\n"));
        // A run without layers (as every run recorded before schema version 4): the header only.
        QCOMPARE(m_store->export_table(rec->run_id(), "layers", RunStore::ExportFormat::json), std::string("[]\n"));
        QCOMPARE(m_store->export_table(rec->run_id(), "layers", RunStore::ExportFormat::csv),
                 std::string("layer,name,kind,in_channels,in_height,in_width,out_channels,out_height,out_width,"
                             "parameters,takes_precision\r\n"));
        // A run without op rows (a model without attention or layer norms, or one recorded before
        // schema version 5): the header only.
        QCOMPARE(m_store->export_table(rec->run_id(), "op_steps", RunStore::ExportFormat::json), std::string("[]\n"));
        QCOMPARE(m_store->export_table(rec->run_id(), "op_steps", RunStore::ExportFormat::csv),
                 std::string("step,op,name,stat,value\r\n"));
        // A run without block-scale views: the header only.
        QCOMPARE(m_store->export_table(rec->run_id(), "block_scale_steps", RunStore::ExportFormat::json),
                 std::string("[]\n"));
        QCOMPARE(m_store->export_table(rec->run_id(), "block_scale_steps", RunStore::ExportFormat::csv),
                 std::string("step,layer,name,operand,format,own,rows_total,rows,row_length,blocks_per_row,blocks,"
                             "zero_blocks,nan_blocks,min_exponent,median_exponent,max_exponent,histogram,"
                             "exponents\r\n"));
        // A run without checkpoints (as every run recorded before schema version 8): the header only.
        QCOMPARE(m_store->export_table(rec->run_id(), "checkpoints", RunStore::ExportFormat::json),
                 std::string("[]\n"));
        QCOMPARE(m_store->export_table(rec->run_id(), "checkpoints", RunStore::ExportFormat::csv),
                 std::string("step,file,bytes,time_s,created_at,events_before,evals_before\r\n"));
    }

    void badRequests() {
        try {
            m_store->export_table(m_id, "weights", RunStore::ExportFormat::csv);
            QFAIL("an unknown table should throw");
        } catch (const Error& e) {
            QCOMPARE(QString(e.what()),
                     QString("There is no table 'weights' to export; the tables are steps, layer_steps, evals, events, "
                             "layers, op_steps, what_if_steps, block_scale_steps, checkpoints."));
        }
        QVERIFY_THROWS_EXCEPTION(Error, m_store->export_table(999, "steps", RunStore::ExportFormat::csv));
        QCOMPARE(RunStore::parse_export_format("csv"), std::optional(RunStore::ExportFormat::csv));
        QCOMPARE(RunStore::parse_export_format("json"), std::optional(RunStore::ExportFormat::json));
        QVERIFY(!RunStore::parse_export_format("xlsx"));
    }
};

QTEST_GUILESS_MAIN(StoreExport)
#include "tst_store_export.moc"
