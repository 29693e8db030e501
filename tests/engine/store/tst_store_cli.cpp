// mantissa-cli's store commands end to end (runs, show, export, rm, rename, note, tag, import): the built
// executable is run on stores made here, and its output, files and exit codes are checked. Bad
// input exits 2 with one sentence on stderr.
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "store/run_store.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

namespace {

struct Result {
    int code = -1;
    QString out, err;
};

Result cli(const QStringList& args, const QString& xdg_data_home = {}) {
    QProcess p;
    if (!xdg_data_home.isEmpty()) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("XDG_DATA_HOME", xdg_data_home);
        p.setProcessEnvironment(env);
    }
    p.start(MANTISSA_CLI, args);
    if (!p.waitForFinished(30000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

// Runs a shell line with $0 = the CLI and $1 = the store: for arguments that are not UTF-8, which a
// QString cannot carry.
Result sh(const QString& line, const QString& db) {
    QProcess p;
    p.start("/bin/sh", {"-c", line, MANTISSA_CLI, db});
    if (!p.waitForFinished(30000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

// Overwrites the cell pointer array of every b-tree leaf page of the store at `path` (the
// page's header, its cell count too, left as it was) with 0xDEADBEEF: pointers out of the page's
// range, damage SQLite finds only when it checks a page's cells as it loads it.
bool garble_leaf_pages(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadWrite)) return false;
    QByteArray bytes = f.readAll();
    const int page = (static_cast<unsigned char>(bytes[16]) << 8) | static_cast<unsigned char>(bytes[17]);
    int garbled = 0;
    for (qsizetype at = page; at + page <= bytes.size(); at += page) {
        if (bytes[at] != 0x0D && bytes[at] != 0x0A) continue;
        for (int i = 8; i < 808 && i + 4 <= page; i += 4) bytes.replace(at + i, 4, QByteArray("\xDE\xAD\xBE\xEF", 4));
        ++garbled;
    }
    return garbled > 0 && f.seek(0) && f.write(bytes) == bytes.size();
}

void record(RunStore& store, const std::string& name, int steps, RunStatus status) {
    auto rec = store.start_run(
        {name, "cpu", "test CPU", R"({"name":")" + name + R"(","train":{"lr":0.001}})", make_layer_infos()});
    for (int i = 0; i < steps; ++i) rec->on_step(make_step(i), make_layers(i, 3));
    rec->on_eval({steps - 1, "test", 0.375, 0.875});
    rec->on_event({2, 0.03, EventKind::setting_change, "Autocast changed from off to fp16.",
                   R"({"key":"precision.autocast","old":"off","new":"fp16"})"});
    rec->finish(status);
}

}  // namespace

class StoreCli : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_db;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_db = m_dir.filePath("cli.sqlite");
        RunStore store(m_db.toStdString());
        record(store, "fmnist-fp16", 40, RunStatus::completed);
        record(store, "fmnist-bf16", 25, RunStatus::stopped);
        record(store, "spirals", 10, RunStatus::failed);
    }

    void helpForEveryCommand_data() {
        QTest::addColumn<QString>("command");
        for (const char* c : {"runs", "show", "export", "rm", "rename", "note", "tag", "import"}) QTest::newRow(c) << c;
    }

    void helpForEveryCommand() {
        QFETCH(QString, command);
        Result r = cli({command, "--help"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith("usage: mantissa-cli " + command), qPrintable(r.out));
        QVERIFY2(r.out.contains("--db FILE"), qPrintable(r.out));
        QVERIFY(cli({"--help"}).out.contains(QRegularExpression("\\n  " + command + " +\\w")));
    }

    void runsListsEveryRun() {
        Result r = cli({"runs", "--db", m_db});
        QCOMPARE(r.code, 0);
        QVERIFY2(
            r.out.contains(QRegularExpression(R"(\n +1  fmnist-fp16  completed  .*  +40  +0\.0625  +87\.50%  cpu)")),
            qPrintable(r.out));
        QVERIFY2(r.out.contains(QRegularExpression(R"(\n +2  fmnist-bf16  stopped +.* 25 )")), qPrintable(r.out));
        QVERIFY(r.out.contains("spirals"));
        QVERIFY2(!r.out.contains("PARENT"), qPrintable(r.out));  // no run is a branch: no such column

        Result j = cli({"runs", "--json", "--db", m_db});
        QCOMPARE(j.code, 0);
        const QJsonArray a = QJsonDocument::fromJson(j.out.toUtf8()).array();
        QCOMPARE(a.size(), 3);
        QCOMPARE(a[0].toObject()["name"].toString(), QString("fmnist-fp16"));
        QCOMPARE(a[0].toObject()["steps"].toInt(), 40);
        QCOMPARE(a[0].toObject()["final_loss"].toDouble(), make_step(39).loss);
        QCOMPARE(a[0].toObject()["test_accuracy"].toDouble(), 0.875);
        QCOMPARE(a[2].toObject()["status"].toString(), QString("failed"));
    }

    void runsWithoutAStore() {
        const QString missing = m_dir.filePath("none/runs.sqlite");
        Result r = cli({"runs", "--db", missing});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("No runs yet"));
        QCOMPARE(cli({"runs", "--json", "--db", missing}).out.trimmed(), QString("[]"));
        QVERIFY(!QFile::exists(missing));
        Result s = cli({"show", "1", "--db", missing});
        QCOMPARE(s.code, 2);
        QVERIFY2(s.err.contains("There is no run store at"), qPrintable(s.err));
        QVERIFY(!QFile::exists(missing));
    }

    void defaultStoreFollowsXdgDataHome() {
        const QString home = m_dir.filePath("xdg");
        QVERIFY(QDir().mkpath(home + "/mantissa"));
        QVERIFY(QFile::copy(m_db, home + "/mantissa/runs.sqlite"));
        Result r = cli({"runs"}, home);
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("fmnist-bf16"), qPrintable(r.out));
    }

    void showSummarisesARun() {
        Result r = cli({"show", "fmnist-f", "--db", m_db});
        QCOMPARE(r.code, 0);
        for (const char* part : {"Run 1: fmnist-fp16", "status       completed", "Final metrics", "steps        40 (",
                                 "accuracy 87.50%", "Events (2)", "setting_change  Autocast changed from off to fp16.",
                                 "run_finished", "Configuration", "\"lr\": 0.001"})
            QVERIFY2(r.out.contains(part), qPrintable(QString("missing '%1' in:\n%2").arg(part, r.out)));

        Result j = cli({"show", "3", "--json", "--db", m_db});
        QCOMPARE(j.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        QCOMPARE(o["name"].toString(), QString("spirals"));
        QCOMPARE(o["status"].toString(), QString("failed"));
        QCOMPARE(o["config"].toObject()["train"].toObject()["lr"].toDouble(), 0.001);
        QCOMPARE(o["totals"].toObject()["steps"].toInt(), 10);
        QCOMPARE(o["totals"].toObject()["layer_rows"].toInt(), 30);
        const QJsonArray events = o["events"].toArray();
        QCOMPARE(events.size(), 2);
        QCOMPARE(events[0].toObject()["data"].toObject()["new"].toString(), QString("fp16"));
        QCOMPARE(events[1].toObject()["kind"].toString(), QString("run_failed"));
    }

    // The Layers section: name, kind, shape in -> out (an image's channels x height x width, a
    // flat layer's features), parameters, in columns; --json gives the same as objects.
    void showListsTheLayers() {
        Result r = cli({"show", "1", "--db", m_db});
        QCOMPARE(r.code, 0);
        const auto layers = make_layer_infos();
        std::int64_t total = 0;
        for (const auto& l : layers) total += l.parameters;
        QVERIFY2(r.out.contains(QString("\n\nLayers (4, %1 parameters)\n").arg(total)), qPrintable(r.out));
        // "*" for the shapes' U+00D7 and ">" for the arrow's U+2192 here, to keep the lines readable.
        auto shapes = [](QString s) { return s.replace('*', QChar(0x00D7)).replace('>', QChar(0x2192)); };
        const QStringList lines = r.out.section("\n\nLayers", 1, 1).section("\n\n", 0, 0).split('\n').mid(1);
        QCOMPARE(lines.size(), 4);
        QCOMPARE(lines[0].simplified(), shapes("conv1 conv2d 1*28*28 > 32*28*28 320"));
        QCOMPARE(lines[1].simplified(), shapes("bn1 batchnorm2d 32*28*28 > 32*28*28 64 (not in precision.layers)"));
        QCOMPARE(lines[2].simplified(), shapes("layer1.0.conv1 conv2d 32*28*28 > 64*14*14 18496"));
        QCOMPARE(lines[3].simplified(), shapes("head, \"final\" linear 12544 > 10 125450"));
        QVERIFY2(lines[0].startsWith("  conv1           conv2d"), qPrintable(lines[0]));  // the widest name's width
        // Columns: each kind starts where the others do (widths counted in characters, not bytes).
        const qsizetype kind_at = lines[0].indexOf("conv2d");
        QCOMPARE(lines[1].indexOf("batchnorm2d"), kind_at);
        QCOMPARE(lines[3].indexOf("linear"), kind_at);
        const qsizetype parameters_end = lines[0].size();
        QCOMPARE(lines[2].size(), parameters_end);
        QCOMPARE(lines[3].size(), parameters_end);

        Result j = cli({"show", "1", "--json", "--db", m_db});
        QCOMPARE(j.code, 0);
        const QJsonArray a = QJsonDocument::fromJson(j.out.toUtf8()).object()["layers"].toArray();
        QCOMPARE(a.size(), 4);
        for (int i = 0; i < 4; ++i) {
            const LayerInfo& want = layers[static_cast<std::size_t>(i)];
            const QJsonObject o = a[i].toObject();
            QCOMPARE(o["layer"].toInt(), i);
            QCOMPARE(o["name"].toString(), QString::fromStdString(want.name));
            QCOMPARE(o["kind"].toString(), QString::fromStdString(want.kind));
            QCOMPARE(o["in_shape"].toArray(), (QJsonArray{qint64(want.in_shape.channels), qint64(want.in_shape.height),
                                                          qint64(want.in_shape.width)}));
            QCOMPARE(o["out_shape"].toArray(), (QJsonArray{qint64(want.out_shape.channels),
                                                           qint64(want.out_shape.height), qint64(want.out_shape.width)}));
            QCOMPARE(o["in_features"].toInteger(), want.in_features);
            QCOMPARE(o["out_features"].toInteger(), want.out_features);
            QCOMPARE(o["parameters"].toInteger(), want.parameters);
            QCOMPARE(o["takes_precision"].toBool(), want.takes_precision);
        }
    }

    // Checkpoints and branches (schema version 8): `show` lists a run's checkpoints (step, training
    // time, size, file) and says where a branch started (the parent's id, or the start of its uuid
    // when it is not in this store); --json gives "checkpoints" and "parent"; `runs` gains a PARENT
    // column ("1@5") only when some run is a branch, the other columns as they were.
    void showsCheckpointsAndBranches() {
        const QString path = m_dir.filePath("branches.sqlite");
        QString file5, file10;
        std::string trunk_uuid;
        const std::string foreign = "0123456789ab-cdef-4000-8000-000000000000";
        {
            RunStore store(path.toStdString());
            auto rec = store.start_run({"trunk", "cpu", "test CPU", "{}"});
            trunk_uuid = store.run(rec->run_id()).uuid;
            const std::string folder = checkpoint_folder(store.path(), trunk_uuid);
            file5 = QString::fromStdString(folder + "/step-5.safetensors");
            file10 = QString::fromStdString(folder + "/step-10.safetensors");
            for (int i = 0; i < 10; ++i) {
                if (i == 5) rec->on_checkpoint({5, 2.5, file5.toStdString(), 4096, 0});
                rec->on_step(make_step(i), {});
            }
            rec->on_checkpoint({10, 75.0, file10.toStdString(), 3 * 1024 * 1024, 0});
            rec->finish(RunStatus::completed);
            RunInfo branch{"branch", "cpu", "test CPU", "{}"};
            branch.parent_uuid = trunk_uuid;
            branch.parent_step = 5;
            store.start_run(branch)->finish(RunStatus::completed);
            RunInfo far{"far-branch", "cuda", "test GPU", "{}"};
            far.parent_uuid = foreign;
            far.parent_step = 7;
            store.start_run(far)->finish(RunStatus::stopped);
        }

        Result r = cli({"show", "trunk", "--db", path});
        QCOMPARE(r.code, 0);
        QVERIFY2(!r.out.contains("Branched"), qPrintable(r.out));
        const QString section = r.out.section("\n\nCheckpoints (2)\n", 1, 1).section("\n\n", 0, 0);
        const QStringList lines = section.split('\n');
        QCOMPARE(lines.size(), 2);
        QCOMPARE(lines[0].simplified(), "step 5 2.5 s 4.0 KiB " + file5);
        QCOMPARE(lines[1].simplified(), "step 10 1m 15s 3.0 MiB " + file10);
        QVERIFY2(lines[0].startsWith("  step 5 "), qPrintable(lines[0]));
        QCOMPARE(lines[0].indexOf(file5), lines[1].indexOf(file10));  // in columns
        QVERIFY2(r.out.indexOf("\nFinal metrics") < r.out.indexOf("\nCheckpoints") &&
                     r.out.indexOf("\nCheckpoints") < r.out.indexOf("\nLayers"),
                 qPrintable(r.out));

        Result b = cli({"show", "branch", "--db", path});
        QCOMPARE(b.code, 0);
        QVERIFY2(b.out.startsWith("Run 2: branch\n  Branched from run 1 at step 5\n  status "), qPrintable(b.out));
        QVERIFY2(!b.out.contains("Checkpoints"), qPrintable(b.out));
        Result f = cli({"show", "far", "--db", path});
        QVERIFY2(f.out.startsWith("Run 3: far-branch\n  Branched from run 01234567 at step 7\n"), qPrintable(f.out));

        const QJsonObject trunk =
            QJsonDocument::fromJson(cli({"show", "1", "--json", "--db", path}).out.toUtf8()).object();
        QVERIFY(trunk["parent"].isNull());
        const QJsonArray checkpoints = trunk["checkpoints"].toArray();
        QCOMPARE(checkpoints.size(), 2);
        const QJsonObject c = checkpoints[0].toObject();
        QCOMPARE(c["step"].toInteger(), 5LL);
        QCOMPARE(c["time_s"].toDouble(), 2.5);
        QCOMPARE(c["bytes"].toInteger(), 4096LL);
        QCOMPARE(c["file"].toString(), file5);
        QVERIFY(c["created_at"].toString().endsWith('Z'));
        QCOMPARE(checkpoints[1].toObject()["step"].toInteger(), 10LL);
        const QJsonObject branch =
            QJsonDocument::fromJson(cli({"show", "2", "--json", "--db", path}).out.toUtf8()).object();
        QCOMPARE(branch["checkpoints"].toArray().size(), 0);
        const QJsonObject parent = branch["parent"].toObject();
        QCOMPARE(parent["uuid"].toString(), QString::fromStdString(trunk_uuid));
        QCOMPARE(parent["step"].toInteger(), 5LL);
        QCOMPARE(parent["id"].toInteger(), 1LL);
        const QJsonObject far =
            QJsonDocument::fromJson(cli({"show", "3", "--json", "--db", path}).out.toUtf8()).object();
        QCOMPARE(far["parent"].toObject()["uuid"].toString(), QString::fromStdString(foreign));
        QVERIFY(far["parent"].toObject()["id"].isNull());

        Result runs = cli({"runs", "--db", path});
        QCOMPARE(runs.code, 0);
        const QStringList rows = runs.out.split('\n', Qt::SkipEmptyParts);
        QCOMPARE(rows.size(), 4);
        QVERIFY2(rows[0].endsWith("  TEST ACC  BACKEND  PARENT"), qPrintable(rows[0]));
        QVERIFY2(rows[1].endsWith("  cpu"), qPrintable(rows[1]));  // not a branch: nothing after, no spaces
        QVERIFY2(rows[2].endsWith("  cpu      1@5"), qPrintable(rows[2]));
        QVERIFY2(rows[3].endsWith("  cuda     01234567@7"), qPrintable(rows[3]));
        QCOMPARE(rows[2].indexOf("1@5"), rows[0].indexOf("PARENT"));
        QVERIFY2(rows[1].contains(QRegularExpression(R"(^ +1  trunk       completed  .*  +10  +0\.2500  +-  cpu$)")),
                 qPrintable(rows[1]));
        const QJsonArray list = QJsonDocument::fromJson(cli({"runs", "--json", "--db", path}).out.toUtf8()).array();
        QVERIFY(list[0].toObject()["parent"].isNull());
        QCOMPARE(list[1].toObject()["parent"].toObject()["id"].toInteger(), 1LL);
        QCOMPARE(list[2].toObject()["parent"].toObject()["step"].toInteger(), 7LL);
    }

    // A store from before version 4 (this one made so with SQL: its layers table dropped, stamped
    // 3) is migrated by `show` with a backup; its runs say their layers were not recorded, and
    // export gives the table's header alone.
    void showAndExportARunFromBeforeVersion4() {
        const QString path = m_dir.filePath("v3.sqlite");
        QVERIFY(QFile::copy(m_db, path));
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("DROP TABLE layers; DROP TABLE op_steps; DROP TABLE what_if_steps; "
                              "DROP TABLE block_scale_steps; DROP TABLE checkpoints; "
                              "ALTER TABLE runs DROP COLUMN parent_uuid; ALTER TABLE runs DROP COLUMN parent_step; "
                              "DROP TABLE sweeps; DROP INDEX runs_by_sweep; ALTER TABLE runs DROP COLUMN sweep_uuid; "
                              "ALTER TABLE runs DROP COLUMN sweep_index; PRAGMA user_version = 3"),
                     QString());
        }
        Result r = cli({"show", "1", "--db", path});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("\n\nLayers\n  not recorded (recorded before schema version 4)\n\nEvents"),
                 qPrintable(r.out));
        QVERIFY(QFile::exists(path + ".bak-v3"));
        QCOMPARE(RawDb(path, true).integer("PRAGMA user_version"), 9LL);
        Result j = cli({"show", "1", "--json", "--db", path});
        QCOMPARE(j.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        QVERIFY(o["layers"].isArray());
        QCOMPARE(o["layers"].toArray().size(), 0);
        QCOMPARE(o["totals"].toObject()["steps"].toInt(), 40);  // the run kept its rows
        Result e = cli({"export", "1", "--table", "layers", "--db", path});
        QCOMPARE(e.code, 0);
        QCOMPARE(e.out, QString("layer,name,kind,in_channels,in_height,in_width,out_channels,out_height,out_width,"
                                "parameters,takes_precision\r\n"));
        Result ej = cli({"export", "1", "--table", "layers", "--format", "json", "--db", path});
        QCOMPARE(ej.code, 0);
        QCOMPARE(ej.out, QString("[]\n"));
    }

    // A language model's run: per stat, each op's last value and its extreme over the run (the
    // largest logit, the smallest variance, NaN left out but counted), and the last sample the
    // model wrote, line breaks (CRLF too) kept and indented, control characters escaped; --json
    // gives the same.
    // A run without op rows or samples shows neither section.
    void showGivesOpStatisticsAndTheLastSample() {
        const QString path = m_dir.filePath("gpt.sqlite");
        {
            RunStore store(path.toStdString());
            auto rec = store.start_run({"tiny-gpt", "cpu", "test CPU", R"({"model":{"kind":"gpt"}})"});
            const double logits0[] = {4.5, 15.1, 12.3}, logits1[] = {NAN, 70000, 9.87};
            const double ln1[] = {0.5, 0.00113, 0.0123}, ln_f[] = {0.25, 0.25, NAN};
            for (int m = 0; m < 3; ++m) {
                const std::int64_t step = 10 * m;
                rec->on_step(make_step(step), {});
                rec->on_op_steps({{step, "blocks.0.ln1", "min_variance", ln1[m]},
                                  {step, "blocks.0.attn", "logit_amax", logits0[m]},
                                  {step, "blocks.1.attn", "logit_amax", logits1[m]},
                                  {step, "ln_f", "min_variance", ln_f[m]}});
            }
            rec->on_event({10, 1.0, EventKind::evaluation, "Test loss 2.5 at step 10; the model writes: a \u2192 b",
                           R"({"loss":2.5,"perplexity":12.18,"accuracy":0.3,"prompt":"a","sample":"b","temperature":0.8})"});
            rec->on_event({20, 2.0, EventKind::evaluation, "Test loss 1.9234 at step 20; the model writes: ...",
                           "{\"loss\":1.9234,\"perplexity\":6.8443,\"accuracy\":0.45,\"prompt\":\"First Citizen:\\nBefore "
                           "we\",\"sample\":\" proceed any further,\\r\\nhear me speak.\\tX\\u001b[31m\",\"temperature\":0.8}"});
            rec->on_event({20, 2.0, EventKind::evaluation, "An evaluation without a sample.", R"({"loss":1.9})"});
            rec->finish(RunStatus::completed);
        }
        Result r = cli({"show", "tiny-gpt", "--db", path});
        QCOMPARE(r.code, 0);
        QVERIFY2(!r.out.contains(QChar(27)), qPrintable(r.out));
        QVERIFY2(r.out.contains("recorded     0 layer rows, 0 evaluations, 4 events, 12 op rows\n"), qPrintable(r.out));
        const QString attention = QString::fromUtf8(
            "\n\nAttention logits (largest |QK\u1d40/\u221ad| of a step): last, and max over the run\n"
            "  blocks.0.attn  12.3  (max 15.1 at step 10)\n"
            "  blocks.1.attn  9.87  (max 70000 at step 10, NaN at 1 step)\n");
        const QString variance = QString::fromUtf8(
            "\n\nLayer norm variance (smallest row variance of a step): last, and min over the run\n"
            "  blocks.0.ln1  0.0123  (min 0.00113 at step 10)\n"
            "  ln_f             nan  (min 0.25 at step 0, NaN at 1 step)\n");
        const QString sample = QString::fromUtf8(
            "\n\nLast sample (step 20, test loss 1.9234 nats/token, perplexity 6.84):\n"
            "  First Citizen:\n"
            "  Before we\u2192 proceed any further,\n"
            "  hear me speak.\tX\\x1b[31m\n\nEvents (4)\n");
        for (const QString& part : {attention, variance, sample})
            QVERIFY2(r.out.contains(part), qPrintable(QString("missing:\n%1\nin:\n%2").arg(part, r.out)));
        // Layers, then the op statistics (attention first), then the sample, then the events.
        QVERIFY(r.out.indexOf("\nLayers\n") < r.out.indexOf(attention));
        QVERIFY(r.out.indexOf(attention) < r.out.indexOf(variance));
        QVERIFY(r.out.indexOf(variance) < r.out.indexOf(sample));

        Result j = cli({"show", "1", "--json", "--db", path});
        QCOMPARE(j.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        QCOMPARE(o["totals"].toObject()["op_rows"].toInt(), 12);
        const QJsonArray ops = o["op_stats"].toArray();
        QCOMPARE(ops.size(), 4);  // in the order they were recorded
        const QJsonObject ln1 = ops[0].toObject();
        QCOMPARE(ln1["name"].toString(), QString("blocks.0.ln1"));
        QCOMPARE(ln1["stat"].toString(), QString("min_variance"));
        QCOMPARE(ln1["steps"].toInt(), 3);
        QCOMPARE(ln1["last_step"].toInt(), 20);
        QCOMPARE(ln1["last"].toDouble(), 0.0123);
        QCOMPARE(ln1["extreme"].toDouble(), 0.00113);
        QCOMPARE(ln1["extreme_step"].toInt(), 10);
        QCOMPARE(ln1["nan_steps"].toInt(), 0);
        const QJsonObject attn1 = ops[2].toObject();
        QCOMPARE(attn1["name"].toString(), QString("blocks.1.attn"));
        QCOMPARE(attn1["extreme"].toDouble(), 70000.0);
        QCOMPARE(attn1["nan_steps"].toInt(), 1);
        const QJsonObject lnf = ops[3].toObject();
        QVERIFY(lnf["last"].isNull());  // NaN
        QCOMPARE(lnf["extreme"].toDouble(), 0.25);
        QCOMPARE(lnf["extreme_step"].toInt(), 0);
        const QJsonObject last = o["last_sample"].toObject();
        QCOMPARE(last["step"].toInt(), 20);
        QCOMPARE(last["loss"].toDouble(), 1.9234);
        QCOMPARE(last["perplexity"].toDouble(), 6.8443);
        QCOMPARE(last["temperature"].toDouble(), 0.8);
        QCOMPARE(last["prompt"].toString(), QString("First Citizen:\nBefore we"));
        QCOMPARE(last["sample"].toString(), QString(" proceed any further,\r\nhear me speak.\tX\x1b[31m"));

        // export --table op_steps: the rows as recorded, NaN an empty field.
        Result e = cli({"export", "1", "--table", "op_steps", "--db", path});
        QCOMPARE(e.code, 0);
        QVERIFY2(e.out.startsWith("step,op,name,stat,value\r\n0,0,blocks.0.ln1,min_variance,0.5\r\n"
                                  "0,1,blocks.0.attn,logit_amax,4.5\r\n0,2,blocks.1.attn,logit_amax,\r\n"),
                 qPrintable(e.out));
        QCOMPARE(e.out.count("\r\n"), 13);

        // A run without op rows or samples (the image classifiers of initTestCase).
        Result plain = cli({"show", "1", "--db", m_db});
        QCOMPARE(plain.code, 0);
        QVERIFY(!plain.out.contains("Attention logits") && !plain.out.contains("Layer norm variance"));
        QVERIFY(!plain.out.contains("Last sample") && !plain.out.contains("op rows"));
        const QJsonObject pj = QJsonDocument::fromJson(cli({"show", "1", "--json", "--db", m_db}).out.toUtf8()).object();
        QVERIFY(pj["op_stats"].isArray());
        QCOMPARE(pj["op_stats"].toArray().size(), 0);
        QVERIFY(pj.contains("last_sample") && pj["last_sample"].isNull());
        QCOMPARE(pj["totals"].toObject()["op_rows"].toInt(), 0);
    }

    // A run with block-scale views: show prints the last statistics step's as a table (a line per
    // operand: format, starred when the layer runs it; blocks, with the rows sampled; the exponents'
    // range and median; blocks of zeros and NaNs; the distribution as a bar), counts them in the
    // totals, and --json gives the same figures with the histogram as {exponent, blocks}; export
    // writes the table. A run without views has neither.
    void showGivesTheBlockScales() {
        const QString path = m_dir.filePath("views.sqlite");
        {
            RunStore store(path.toStdString());
            auto rec = store.start_run({"views", "cpu", "test CPU", "{}", make_layer_infos()});
            for (std::int64_t step : {0, 10, 12}) {
                rec->on_step(make_step(step), make_layers(step, 2));
                if (step <= 10) rec->on_block_scales(make_block_scales(step));
            }
            rec->finish(RunStatus::completed);
        }
        Result r = cli({"show", "views", "--db", path});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains(", 10 block-scale rows\n"), qPrintable(r.out));
        // Step 10 (10 % 5 == 0): fc1's x is -7 -6 -7 zero -9 -7 -4 nan -7, a bar from -9 to -4 (the
        // tallest, -7's 4 blocks, a full block; one block an eighth and a bit; none a space); its W
        // -4 once, -3 five times, -2 twice. fc1's dy spans int16 (its exponents -32767, -20 and
        // 32766): 1366 exponents a character. fc2's x has no rows (0 of 0, not a sample); its W has
        // no block with a finite scale.
        auto bar = [](const char* eighths) {  // "1 84" -> U+2582, a space, U+2588, U+2584
            return QString(eighths).replace('1', QChar(0x2582)).replace('4', QChar(0x2584)).replace('8', QChar(0x2588));
        };
        const QString table =
            "\n\nBlock scales at step 10: the power of two of each block's scale (* the layer's own format)\n"
            "  layer  operand  format  blocks               exponents  median  zero  NaN  distribution\n"
            "  fc1    x        mxfp4*  9 (3 of 8 rows)         -9..-4      -7     1    1  " + bar("1 81 1") + "\n"
            "         W        mxfp4*  8                       -4..-2      -3     0    0  " + bar("184") + "\n"
            "         dy       mxfp4*  4                -32767..32766     -20     1    0  " +
            bar("8                      8                       8") + "\n"
            "  fc2    x        nvfp4   0                            -       -     0    0\n"
            "         W        nvfp4   5                            -       -     5    0\n"
            "  (a distribution wider than 48 exponents is drawn with several a character: up to 1366)\n\nEvents";
        QVERIFY2(r.out.contains(table), qPrintable(QString("missing:\n%1\nin:\n%2").arg(table, r.out)));
        QVERIFY(r.out.indexOf("\nLayers") < r.out.indexOf("\nBlock scales"));
        QVERIFY(r.out.indexOf("\nBlock scales") < r.out.indexOf("\nEvents"));

        Result j = cli({"show", "views", "--json", "--db", path});
        QCOMPARE(j.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        QCOMPARE(o["totals"].toObject()["block_scale_rows"].toInt(), 10);
        const QJsonObject views = o["block_scales"].toObject();
        QCOMPARE(views["step"].toInt(), 10);
        const QJsonArray rows = views["rows"].toArray();
        QCOMPARE(rows.size(), 5);
        const QJsonObject x = rows[0].toObject();
        QCOMPARE(x["layer"].toString(), QString("fc1"));
        QCOMPARE(x["operand"].toString(), QString("x"));
        QCOMPARE(x["format"].toString(), QString("mxfp4"));
        QCOMPARE(x["own"].toBool(), true);
        QCOMPARE(x["rows"].toInt(), 3);
        QCOMPARE(x["rows_total"].toInt(), 8);
        QCOMPARE(x["blocks"].toInt(), 9);
        QCOMPARE(x["zero_blocks"].toInt(), 1);
        QCOMPARE(x["nan_blocks"].toInt(), 1);
        QCOMPARE(x["min_exponent"].toInt(), -9);
        QCOMPARE(x["median_exponent"].toInt(), -7);
        QCOMPARE(x["max_exponent"].toInt(), -4);
        QCOMPARE(
            x["histogram"].toArray(),
            (QJsonArray{QJsonObject{{"exponent", -9}, {"blocks", 1}}, QJsonObject{{"exponent", -7}, {"blocks", 4}},
                        QJsonObject{{"exponent", -6}, {"blocks", 1}}, QJsonObject{{"exponent", -4}, {"blocks", 1}}}));
        QVERIFY(!x.contains("exponents"));  // the map is the export's
        const QJsonObject w2 = rows[4].toObject();
        QCOMPARE(w2["layer"].toString(), QString("fc2"));
        QCOMPARE(w2["own"].toBool(), false);
        QVERIFY(w2["min_exponent"].isNull() && w2["median_exponent"].isNull() && w2["max_exponent"].isNull());

        Result e = cli({"export", "views", "--table", "block_scale_steps", "--db", path});
        QCOMPARE(e.code, 0);
        QCOMPARE(e.out.count("\r\n"), 11);
        QVERIFY2(e.out.contains("\r\n10,0,fc1,x,mxfp4,1,8,3,70,3,9,1,1,-9,-7,-4,-9:1 -7:4 -6:1 -4:1,"
                                "-7 -6 -7 zero -9 -7 -4 nan -7\r\n"),
                 qPrintable(e.out));

        Result plain = cli({"show", "1", "--db", m_db});
        QVERIFY(!plain.out.contains("Block scales") && !plain.out.contains("block-scale rows"));
        const QJsonObject pj =
            QJsonDocument::fromJson(cli({"show", "1", "--json", "--db", m_db}).out.toUtf8()).object();
        QVERIFY(pj.contains("block_scales") && pj["block_scales"].isNull());
        QCOMPARE(pj["totals"].toObject()["block_scale_rows"].toInt(), 0);
    }

    // A view whose blob is damaged in the file: show and export exit 2 with the store's one
    // sentence naming it, and export leaves no file behind.
    void damagedBlockScalesExitTwo() {
        const QString path = m_dir.filePath("damaged-views.sqlite");
        {
            RunStore store(path.toStdString());
            auto rec = store.start_run({"views", "cpu", "test CPU", "{}"});
            rec->on_step(make_step(40), make_layers(40, 2));
            rec->on_block_scales(make_block_scales(40));
            rec->finish(RunStatus::completed);
        }
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("UPDATE block_scale_steps SET exponents = substr(exponents, 1, 7) WHERE layer = 0 AND "
                              "slot = 0"),
                     QString());
        }
        const QString sentence = "The block scales of fc1's x at step 40 of run 1 are damaged: their exponents' "
                                 "compressed data ends early";
        const QString out = m_dir.filePath("damaged-views.csv");
        for (const QStringList& args : {QStringList{"show", "1"}, QStringList{"show", "1", "--json"},
                                        QStringList{"export", "1", "--table", "block_scale_steps", "-o", out}}) {
            Result r = cli(args + QStringList{"--db", path});
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.contains(sentence), qPrintable(r.err));
            QCOMPARE(r.err.count('\n'), 1);
        }
        QVERIFY(!QFile::exists(out) && !QFile::exists(out + ".partial"));
        QCOMPARE(cli({"export", "1", "--table", "steps", "--db", path}).code, 0);  // the rest still reads
    }

    // End to end: a small language model trained by `mantissa-cli train` records its op rows on
    // the steps with layer statistics (the session's on_op_steps through the recorder), and show
    // summarises them and prints the sample of its last evaluation.
    void trainedLanguageModelShowsItsOpStatisticsAndSample() {
        const QString dir = m_dir.filePath("lm");
        QVERIFY(QDir().mkpath(dir));
        QFile corpus(dir + "/corpus.txt");
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        for (int i = 0; i < 200; ++i) corpus.write(QByteArray("the quick brown fox jumps over the lazy dog ") + QByteArray::number(i % 7) + "\n");
        corpus.close();
        QFile experiment(dir + "/lm.json");
        QVERIFY(experiment.open(QIODevice::WriteOnly));
        const QJsonObject lm{
            {"name", "tiny-lm"},
            {"dataset", QJsonObject{{"kind", "text"}, {"path", dir + "/corpus.txt"}, {"vocabulary", "chars"},
                                    {"context", 16}}},
            {"model", QJsonObject{{"kind", "gpt"}, {"layers", 2}, {"heads", 2}, {"dim", 16}, {"context", 16},
                                  {"mlp_ratio", 2}}},
            {"train", QJsonObject{{"batch_size", 4}, {"steps", 12}, {"eval_every", 6}, {"layer_stats_every", 4},
                                  {"seed", 3}}},
            {"precision", QJsonObject{{"autocast", "off"}}},
            {"backend", "cpu"}};
        experiment.write(QJsonDocument(lm).toJson());
        experiment.close();
        const QString db = dir + "/runs.sqlite";
        Result t = cli({"train", dir + "/lm.json", "--db", db});
        QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
        Result j = cli({"show", "tiny-lm", "--json", "--db", db});
        QCOMPARE(j.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        const QJsonArray ops = o["op_stats"].toArray();
        QStringList names;
        for (const auto& v : ops) {
            const QJsonObject op = v.toObject();
            names << op["name"].toString() + " " + op["stat"].toString();
            QCOMPARE(op["steps"].toInt(), 3);  // steps 0, 4, 8
            QCOMPARE(op["last_step"].toInt(), 8);
            QVERIFY2(op["last"].toDouble() > 0, qPrintable(names.last()));
        }
        QCOMPARE(names, QStringList({"blocks.0.ln1 min_variance", "blocks.0.attn logit_amax", "blocks.0.ln2 min_variance",
                                     "blocks.1.ln1 min_variance", "blocks.1.attn logit_amax", "blocks.1.ln2 min_variance",
                                     "ln_f min_variance"}));
        QCOMPARE(o["totals"].toObject()["op_rows"].toInt(), 21);
        const QJsonObject sample = o["last_sample"].toObject();
        QCOMPARE(sample["step"].toInt(), 12);
        QVERIFY(!sample["sample"].toString().isEmpty());
        QVERIFY(!sample["prompt"].toString().isEmpty());
        QVERIFY(sample["loss"].toDouble() > 0);
        Result r = cli({"show", "tiny-lm", "--db", db});
        QCOMPARE(r.code, 0);
        for (const char* part : {"\n\nAttention logits (largest |QK", "\n  blocks.1.attn  ",
                                 "\n\nLayer norm variance (smallest row variance of a step): last, and min over the run\n",
                                 "\n  ln_f  ", "\n\nLast sample (step 12, test loss ", "21 op rows"})
            QVERIFY2(r.out.contains(QString::fromUtf8(part)), qPrintable(QString("missing '%1' in:\n%2").arg(part, r.out)));
    }

    // show lists each op's format and the rule that chose it, as the Layers view does: autocast's
    // FP32 list keeps the softmax in FP32, an op class set in the file wins over autocast, and a
    // precision changed during the run sends the reader to the events.
    void showListsEachOpsFormatAndWhy() {
        const QString dir = m_dir.filePath("ops");
        QVERIFY(QDir().mkpath(dir));
        QFile corpus(dir + "/corpus.txt");
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        for (int i = 0; i < 100; ++i) corpus.write("pack my box with five dozen liquor jugs\n");
        corpus.close();
        const QString db = dir + "/runs.sqlite";
        const QStringList train{"train", "--set", "dataset.kind=text", "--set", "dataset.path=" + dir + "/corpus.txt",
                                "--set", "dataset.context=8", "--set", "model.kind=gpt", "--set", "model.layers=1",
                                "--set", "model.heads=2", "--set", "model.dim=8", "--set", "model.context=8",
                                "--set", "train.batch_size=2", "--set", "train.eval_every=0",
                                "--set", "precision.autocast=bf16", "--set", "precision.ops.layernorm=fp16",
                                "--set", "backend=cpu", "--steps", "2", "--db", db};
        Result t = cli(train + QStringList{"--name", "ops-fixed"});
        QVERIFY2(t.code == 0, qPrintable(t.out + t.err));
        Result j = cli({"show", "ops-fixed", "--json", "--db", db});
        QCOMPARE(j.code, 0);
        QStringList rows;
        for (const auto& v : QJsonDocument::fromJson(j.out.toUtf8()).object()["ops"].toArray()) {
            const QJsonObject op = v.toObject();
            rows << QStringList{op["name"].toString(), op["op"].toString(), op["format"].toString(), op["reason"].toString()}.join('|');
        }
        for (const char* row : {"blocks.0.ln1|layernorm|fp16|precision.ops.layernorm", "blocks.0.attn.qkv|linear|bf16|autocast",
                                "blocks.0.attn.scores|bmm|bf16|autocast", "blocks.0.attn.softmax|softmax|fp32|autocast's FP32 list",
                                "blocks.0.attn.pv|bmm|bf16|autocast", "head|linear|bf16|autocast"})
            QVERIFY2(rows.contains(row), qPrintable(QString("no op row '%1' in:\n%2").arg(row, rows.join('\n'))));
        Result r = cli({"show", "ops-fixed", "--db", db});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("\n\nOps (the format each ran in at the start, and why)\n"), qPrintable(r.out));
        QVERIFY2(r.out.contains(QRegularExpression("\n  blocks\\.0\\.attn\\.softmax +softmax +fp32 +autocast's FP32 list\n")),
                 qPrintable(r.out));

        Result changed = cli(train + QStringList{"--name", "ops-changed", "--at", "1:precision.ops.softmax=bf16"});
        QVERIFY2(changed.code == 0, qPrintable(changed.out + changed.err));
        r = cli({"show", "ops-changed", "--db", db});
        QVERIFY2(r.out.contains("\n\nOps (the format each ran in at the start, and why; precision changed during the "
                                "run: see Events)\n"),
                 qPrintable(r.out));
    }

    // Layer rows no Mantissa writes (a store edited by hand): sizes whose product overflows,
    // negative ones, parameters that overflow their sum, control characters in a name. show
    // prints them as stored (features 0 where they cannot be computed), escaped, and exits 0.
    void hostileLayerRowsAreShown() {
        const QString path = m_dir.filePath("hostile-layers.sqlite");
        QVERIFY(QFile::copy(m_db, path));
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("UPDATE layers SET in_channels = 9223372036854775807, in_height = 3, "
                              "parameters = 9223372036854775807 WHERE run_id = 1 AND layer = 0;"
                              "UPDATE layers SET out_width = -2, parameters = 9223372036854775807, "
                              "name = 'bad' || char(27) || '[31m' WHERE run_id = 1 AND layer = 1"),
                     QString());
        }
        Result r = cli({"show", "1", "--db", path});
        QCOMPARE(r.code, 0);
        QVERIFY2(!r.out.contains(QChar(27)), qPrintable(r.out));
        QVERIFY2(r.out.contains("Layers (4, 9223372036854775807 parameters)"), qPrintable(r.out));
        QVERIFY2(r.out.contains("bad\\x1b[31m"), qPrintable(r.out));
        Result j = cli({"show", "1", "--json", "--db", path});
        QCOMPARE(j.code, 0);
        const QJsonArray a = QJsonDocument::fromJson(j.out.toUtf8()).object()["layers"].toArray();
        QCOMPARE(a.size(), 4);
        QCOMPARE(a[0].toObject()["in_features"].toInteger(), 0LL);  // the product does not fit
        QCOMPARE(a[1].toObject()["out_features"].toInteger(), 0LL);  // a negative size
        QCOMPARE(a[1].toObject()["out_shape"].toArray()[2].toInteger(), -2LL);
    }

    void exportWritesTables() {
        const QString csv = m_dir.filePath("out/steps.csv");
        QVERIFY(QDir().mkpath(m_dir.filePath("out")));
        Result r = cli({"export", "fmnist-bf", "--format", "csv", "-o", csv, "--db", m_db});
        QCOMPARE(r.code, 0);
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QCOMPARE(text.count("\r\n"), 26);  // header + 25 steps
        QVERIFY(text.startsWith("step,epoch,time_s,loss,"));
        QVERIFY(!QFile::exists(csv + ".partial"));

        Result j = cli({"export", "1", "--format=json", "--table", "layer_steps", "--db", m_db});
        QCOMPARE(j.code, 0);
        QJsonParseError err;
        const QJsonArray a = QJsonDocument::fromJson(j.out.toUtf8(), &err).array();
        QCOMPARE(err.error, QJsonParseError::NoError);
        QCOMPARE(a.size(), 120);
        QCOMPARE(a[4].toObject()["name"].toString(), QString("fc2"));

        Result e = cli({"export", "1", "--table", "evals", "--db", m_db});
        QCOMPARE(e.code, 0);
        QCOMPARE(e.out, QString("step,split,loss,accuracy\r\n39,test,0.375,0.875\r\n"));

        Result l = cli({"export", "2", "--table", "layers", "--db", m_db});
        QCOMPARE(l.code, 0);
        QCOMPARE(l.out, QString("layer,name,kind,in_channels,in_height,in_width,out_channels,out_height,out_width,"
                                "parameters,takes_precision\r\n"
                                "0,conv1,conv2d,1,28,28,32,28,28,320,1\r\n"
                                "1,bn1,batchnorm2d,32,28,28,32,28,28,64,0\r\n"
                                "2,layer1.0.conv1,conv2d,32,28,28,64,14,14,18496,1\r\n"
                                "3,\"head, \"\"final\"\"\",linear,12544,1,1,10,1,1,125450,1\r\n"));
        const QString json = m_dir.filePath("out/layers.json");
        Result lj = cli({"export", "2", "--table", "layers", "--format", "json", "-o", json, "--db", m_db});
        QCOMPARE(lj.code, 0);
        QFile f2(json);
        QVERIFY(f2.open(QIODevice::ReadOnly));
        const QJsonArray la = QJsonDocument::fromJson(f2.readAll()).array();
        QCOMPARE(la.size(), 4);
        QCOMPARE(la[1].toObject()["kind"].toString(), QString("batchnorm2d"));
        QCOMPARE(la[1].toObject()["takes_precision"].toBool(), false);
        QCOMPARE(la[2].toObject()["out_height"].toInt(), 14);
    }

    void badInputExitsTwo_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("bad format") << QStringList{"export", "1", "--format", "xlsx"} << "unknown --format 'xlsx'";
        QTest::newRow("bad table") << QStringList{"export", "1", "--table", "weights"} << "unknown --table 'weights'";
        QTest::newRow("unknown run") << QStringList{"show", "resnet"} << "No run in";
        QTest::newRow("ambiguous run") << QStringList{"show", "fmnist"}
                                       << "'fmnist' matches 2 runs: 1 (fmnist-fp16), 2 (fmnist-bf16)";
        QTest::newRow("no run given") << QStringList{"show"} << "give the run to show";
        QTest::newRow("unknown option") << QStringList{"runs", "--colour"} << "unknown option '--colour'";
        QTest::newRow("rm unknown") << QStringList{"rm", "42"} << "No run in";
        QTest::newRow("rename without name") << QStringList{"rename", "1"} << "rename RUN NAME";
        QTest::newRow("rename to a blank name") << QStringList{"rename", "1", "   "} << "A run's name cannot be blank";
        QTest::newRow("--db twice") << QStringList{"show", "1", "--db", "other.sqlite"}
                                    << "--db was given twice ('other.sqlite' and '";
        QTest::newRow("export to a missing folder") << QStringList{"export", "1", "-o", "/nonexistent/dir/x.csv"}
                                                    << "Cannot write '/nonexistent/dir/x.csv': its folder /nonexistent/dir does not exist.";
        QTest::newRow("export to no name") << QStringList{"export", "1", "-o", ""} << "-o needs a file name";
        // The file exists, but nothing can be created beside it: the reason is the folder's.
        QTest::newRow("export into /proc") << QStringList{"export", "1", "-o", "/proc/version"}
                                           << "Cannot write '/proc/version': no file can be created in its folder /proc (";
    }

    void badInputExitsTwo() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        Result r = cli(args + QStringList{"--db", m_db});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1);  // one sentence
    }

    // Reading commands never make a store of an empty file (docs/schema.md): `runs` and `sweep
    // list` say there are none yet (exit 0), the others say why they cannot read it (exit 2), and
    // the file stays empty with nothing beside it. A --db that names no file is "No run store file
    // was given." for every command.
    void readingCommandsLeaveAnEmptyFileEmpty() {
        const QString path = m_dir.filePath("empty-for-reading.sqlite");
        {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
        }
        for (const QStringList& args : {QStringList{"runs"}, QStringList{"runs", "--json"}, QStringList{"sweep", "list"},
                                        QStringList{"show", "1"}, QStringList{"export", "1"}}) {
            Result r = cli(args + QStringList{"--db", path});
            const bool listing = args.front() == "runs" || args.contains("list");
            QVERIFY2(r.code == (listing ? 0 : 2), qPrintable(args.join(' ') + ": " + r.err));
            if (!listing) QCOMPARE(r.err.count('\n'), 1);
            QCOMPARE(QFileInfo(path).size(), 0);
            for (const char* side : {"-wal", "-shm", "-journal"}) QVERIFY2(!QFileInfo::exists(path + side), side);
        }
        for (const QStringList& args : {QStringList{"runs"}, QStringList{"sweep", "list"}, QStringList{"show", "1"}}) {
            Result r = cli(args + QStringList{"--db", ""});
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.endsWith(": No run store file was given.\n"), qPrintable(r.err));
            QCOMPARE(r.out, QString());
        }
    }

    void newerStoreIsRefused_data() {
        QTest::addColumn<int>("version");
        QTest::newRow("the next version") << 10;
        QTest::newRow("far ahead") << 11;
    }

    void newerStoreIsRefused() {
        QFETCH(int, version);
        const QString path = m_dir.filePath(QString("newer-%1.sqlite").arg(version));
        QVERIFY(QFile::copy(m_db, path));
        {
            RawDb raw(path);
            QCOMPARE(raw.exec(QString("PRAGMA user_version = %1").arg(version)), QString());
        }
        const QByteArray before = file_sha256(path);
        for (const QStringList& args : {QStringList{"runs"}, QStringList{"show", "1"},
                                        QStringList{"export", "1", "--table", "layers"},
                                        QStringList{"export", "1", "--table", "op_steps"},
                                        QStringList{"export", "1", "--table", "block_scale_steps"}}) {
            Result r = cli(args + QStringList{"--db", path});
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.contains(QString("written by a newer Mantissa (schema version %1; this build reads "
                                            "versions up to 9); it was left unchanged")
                                        .arg(version)),
                     qPrintable(r.err));
        }
        QCOMPARE(file_sha256(path), before);
        QVERIFY(!QFile::exists(path + "-wal") && !QFile::exists(path + "-shm"));
    }

    void badTextIsRefused_data() {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("message");
        QTest::newRow("rename, not UTF-8") << R"sh("$0" rename 1 "$(printf 'bad\377\376name')" --db "$1")sh"
                                           << "The run name must be valid UTF-8 text.";
        QTest::newRow("rename, escape code") << R"sh("$0" rename 1 "$(printf 'a\033[31mred')" --db "$1")sh"
                                             << "The run name must not contain control characters";
        QTest::newRow("note, not UTF-8") << R"sh("$0" note 1 "$(printf 'x\377')" --db "$1")sh"
                                         << "The run notes must be valid UTF-8 text.";
        QTest::newRow("tag, not UTF-8") << R"sh("$0" tag 1 "$(printf 'fp16,\377')" --db "$1")sh"
                                        << "The run tags must be valid UTF-8 text.";
    }

    // The audit's case: a name that is not UTF-8 used to be stored, and `runs --json` then failed.
    void badTextIsRefused() {
        QFETCH(QString, line);
        QFETCH(QString, message);
        const QString path = m_dir.filePath("bad-text.sqlite");
        QFile::remove(path);
        QVERIFY(QFile::copy(m_db, path));
        Result r = sh(line, path);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
        QCOMPARE(r.err.count('\n'), 1);
        Result j = cli({"runs", "--json", "--db", path});
        QCOMPARE(j.code, 0);
        QCOMPARE(QJsonDocument::fromJson(j.out.toUtf8()).array()[0].toObject()["name"].toString(),
                 QString("fmnist-fp16"));
    }

    // Stores written before the checks may hold bytes that are not UTF-8: JSON shows them as U+FFFD.
    void jsonReplacesBytesThatAreNotUtf8() {
        const QString path = m_dir.filePath("old-bad-bytes.sqlite");
        QVERIFY(QFile::copy(m_db, path));
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("UPDATE runs SET name = CAST(X'626164FFFE' AS TEXT), notes = CAST(X'6EFF' AS TEXT), "
                              "tags = CAST(X'74FF' AS TEXT), error = CAST(X'65FF' AS TEXT) WHERE id = 3"),
                     QString());
        }
        const QString bad = QString("bad") + QChar(0xFFFD) + QChar(0xFFFD);
        Result j = cli({"runs", "--json", "--db", path});
        QCOMPARE(j.code, 0);
        QJsonParseError err;
        const QJsonArray a = QJsonDocument::fromJson(j.out.toUtf8(), &err).array();
        QCOMPARE(err.error, QJsonParseError::NoError);
        QCOMPARE(a[2].toObject()["name"].toString(), bad);
        QCOMPARE(a[2].toObject()["notes"].toString(), QString("n") + QChar(0xFFFD));
        Result s = cli({"show", "3", "--json", "--db", path});
        QCOMPARE(s.code, 0);
        QCOMPARE(QJsonDocument::fromJson(s.out.toUtf8()).object()["name"].toString(), bad);
        Result t = cli({"runs", "--db", path});
        QCOMPARE(t.code, 0);
        QVERIFY2(t.out.contains("bad\\xff\\xfe"), qPrintable(t.out));
    }

    // A name holding a line break or an escape code (stored before the checks) cannot break the
    // table or reach the terminal: each run stays one line, control characters shown escaped.
    void tableEscapesControlCharacters() {
        const QString path = m_dir.filePath("control.sqlite");
        QVERIFY(QFile::copy(m_db, path));
        {
            RawDb raw(path);
            QCOMPARE(raw.exec("UPDATE runs SET name = 'a' || char(27) || '[31mred' || char(10) || 'x' WHERE id = 2"),
                     QString());
        }
        Result r = cli({"runs", "--db", path});
        QCOMPARE(r.code, 0);
        QVERIFY2(!r.out.contains(QChar(27)), qPrintable(r.out));
        QCOMPARE(r.out.count('\n'), 4);  // the header and three runs
        QVERIFY2(r.out.contains(QRegularExpression(R"(\n +2  a\\x1b\[31mred\\nx  stopped )")), qPrintable(r.out));
        Result s = cli({"show", "2", "--db", path});
        QCOMPARE(s.code, 0);
        QVERIFY(!s.out.contains(QChar(27)));
        QVERIFY2(s.out.contains("Run 2: a\\x1b[31mred\\nx\n"), qPrintable(s.out));
    }

    // runs and show read an older store without migrating it: no write, no backup copy, a
    // sentence saying how to upgrade it. A failed migration (by a command that writes) leaves one
    // backup however often it is tried, and the store as it was.
    // A store whose migration fails (stamped version 1 but holding version 2's columns): every
    // command, reading ones included, says the migration was rolled back, and the attempts leave
    // one backup copy, not one each.
    void failedMigrationsKeepOneBackup() {
        const QString path = m_dir.filePath("stamped-v1.sqlite");
        QVERIFY(QFile::copy(m_db, path));
        {
            RawDb raw(path);  // without one of version 3's columns, or it is refused as damaged
            QCOMPARE(raw.exec("ALTER TABLE layer_steps DROP COLUMN fp8_amax_grad_output"), QString());
            QCOMPARE(raw.exec("PRAGMA user_version = 1"), QString());
        }
        for (const QStringList& args : {QStringList{"runs"}, QStringList{"runs", "--json"}, QStringList{"show", "1"},
                                        QStringList{"rename", "1", "renamed"}}) {
            Result r = cli(args + QStringList{"--db", path});
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.contains("duplicate column name: tags); the migration was rolled back, so the store was "
                                    "left unchanged at schema version 1"),
                     qPrintable(r.err));
        }
        QVERIFY(QFile::exists(path + ".bak-v1"));
        QVERIFY(!QFile::exists(path + ".bak-v1.2"));
        RawDb raw(path, true);
        QCOMPARE(raw.integer("PRAGMA user_version"), 1LL);
        QCOMPARE(raw.text("SELECT name FROM runs WHERE id = 1"), QString("fmnist-fp16"));
    }

    void memoryIsNotAStore() {
        Result r = cli({"show", "1", "--db", ":memory:"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("':memory:' names an SQLite in-memory database"), qPrintable(r.err));
    }

    void editCommands() {
        const QString path = m_dir.filePath("edit.sqlite");
        {
            RunStore store(path.toStdString());
            record(store, "first", 5, RunStatus::completed);
            record(store, "second", 5, RunStatus::completed);
        }
        Result r = cli({"rename", "first", "baseline fp32", "--db", path});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("Renamed run 1: first -> baseline fp32"));
        QCOMPARE(cli({"note", "1", "loss", "scaling", "off", "--db", path}).code, 0);
        QCOMPARE(cli({"tag", "base", "fp32, baseline", "--db", path}).code, 0);
        Result rm = cli({"rm", "sec", "--db", path});
        QCOMPARE(rm.code, 0);
        QVERIFY2(rm.out.contains("Removed run 2 (second) and its 5 steps."), qPrintable(rm.out));

        RunStore store(path.toStdString(), true);
        auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t(1));
        QCOMPARE(runs[0].name, std::string("baseline fp32"));
        QCOMPARE(runs[0].notes, std::string("loss scaling off"));
        QCOMPARE(runs[0].tags, std::string("fp32,baseline"));
        QCOMPARE(cli({"note", "1", "", "--db", path}).code, 0);
        QCOMPARE(store.run(1).notes, std::string());
    }

    // `import STORE`: the sentence counting what was added, what was there and the sweeps (a run,
    // a sweep, in the singular); nothing the second time; --json; a store that does not exist yet
    // (--db) is created. A bad STORE exits 2 with one sentence on stderr, the store unchanged: a
    // missing file (the store is not created then), not SQLite, from a newer Mantissa, the store
    // itself, damaged (garbled pages, cut in half, bytes flipped: STORE left byte for byte); no
    // STORE, or two, is a usage error.
    void importCommand() {
        const QString source = m_dir.filePath("import-source.sqlite");
        {
            RunStore store(source.toStdString());
            const SweepRow sweep = store.create_sweep({"grid", "{}", 2, "slurm"});
            RunInfo in{"grid · 0", "cpu", "test CPU", "{}"};
            in.sweep_uuid = sweep.uuid;
            in.sweep_index = 0;
            auto rec = store.start_run(in);
            rec->on_step(make_step(0), {});
            rec->finish(RunStatus::completed);
            record(store, "plain", 5, RunStatus::completed);
        }
        // A store is made only in a folder that exists: nothing is made where the folder is missing.
        const QString target = m_dir.filePath("import-target/runs.sqlite");
        Result r = cli({"import", source, "--db", target});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("its folder '" + m_dir.filePath("import-target") + "' does not exist"), qPrintable(r.err));
        QVERIFY(!QFileInfo::exists(m_dir.filePath("import-target")));
        QVERIFY(QDir().mkpath(m_dir.filePath("import-target")));
        r = cli({"import", source, "--db", target});
        QCOMPARE(r.code, 0);
        QCOMPARE(r.out, "Imported 2 runs (0 already there) and 1 sweep from " + source + ".\n");
        QCOMPARE(r.err, QString());
        r = cli({"import", source, "--db", target});
        QCOMPARE(r.code, 0);
        QCOMPARE(r.out, "Imported 0 runs (2 already there) and 0 sweeps from " + source + ".\n");
        {
            RunStore store(source.toStdString());
            record(store, "later", 3, RunStatus::stopped);
        }
        r = cli({"import", source, "--db", target, "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(o.keys(), QStringList({"runs_added", "runs_skipped", "sweeps_added"}));
        QCOMPARE(o["runs_added"].toInteger(), 1LL);
        QCOMPARE(o["runs_skipped"].toInteger(), 2LL);
        QCOMPARE(o["sweeps_added"].toInteger(), 0LL);
        Result runs = cli({"runs", "--db", target});
        QVERIFY2(runs.out.contains(QRegularExpression(R"(\n +3  later +stopped )")), qPrintable(runs.out));

        const QString garbage = m_dir.filePath("import-garbage.sqlite");
        {
            QFile f(garbage);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray("no database here\n").repeated(10));
        }
        const QString newer = m_dir.filePath("import-newer.sqlite");
        QVERIFY(QFile::copy(source, newer));
        QCOMPARE(RawDb(newer).exec("PRAGMA user_version = 10"), QString());
        const QString missing = m_dir.filePath("import-missing.sqlite");
        const QString emptySource = m_dir.filePath("import-empty-source.sqlite");
        {
            QFile f(emptySource);
            QVERIFY(f.open(QIODevice::WriteOnly));
        }
        const QByteArray before = file_sha256(target);
        const QList<QPair<QString, QString>> bad = {
            {missing, "There is no run store at '" + missing + "' to import."},
            {emptySource, "'" + emptySource + "' is an empty file, not yet a run store: it holds nothing to import."},
            {garbage, "The file '" + garbage + "' is not an SQLite database, so it is not a Mantissa run store"},
            {newer, "The run store '" + newer + "' was written by a newer Mantissa (schema version 10; this build "
                    "reads versions up to 9); it was left unchanged"},
            {target, "Cannot import '" + target + "' into the run store '" + target + "': they are the same file"},
        };
        for (const auto& [store, sentence] : bad) {
            r = cli({"import", store, "--db", target});
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.startsWith("mantissa-cli import: " + sentence), qPrintable(r.err));
            QCOMPARE(r.err.count('\n'), 1);  // one sentence
            QCOMPARE(r.out, QString());
            QCOMPARE(file_sha256(target), before);
        }
        const QString nowhere = m_dir.filePath("import-nowhere.sqlite");
        QCOMPARE(cli({"import", missing, "--db", nowhere}).code, 2);
        QVERIFY(!QFile::exists(nowhere));
        // A STORE found damaged while it is copied: nothing written beside it, and the store this
        // import had to create is gone again (as is the store an empty file had become).
        const QString damaged = m_dir.filePath("import-damaged.sqlite");
        QVERIFY(QFile::copy(m_db, damaged));
        QVERIFY(garble_leaf_pages(damaged));
        const QByteArray damaged_bytes = file_sha256(damaged);
        const QString empty = m_dir.filePath("import-empty.sqlite");
        {
            QFile f(empty);
            QVERIFY(f.open(QIODevice::WriteOnly));
        }
        for (const QString& into : {nowhere, empty}) {
            r = cli({"import", damaged, "--db", into});
            QCOMPARE(r.code, 2);
            QVERIFY2(
                r.err.startsWith("mantissa-cli import: Nothing was imported from '" + damaged + "': it is damaged ("),
                qPrintable(r.err));
            QCOMPARE(r.err.count('\n'), 1);
            QCOMPARE(file_sha256(damaged), damaged_bytes);
            for (const char* side : {"-wal", "-shm", "-journal"}) {
                QVERIFY2(!QFileInfo::exists(damaged + side), side);
                QVERIFY2(!QFileInfo::exists(into + side), side);
            }
        }
        QVERIFY(!QFileInfo::exists(nowhere));
        QCOMPARE(QFileInfo(empty).size(), 0);
        // A STORE cut short (found damaged as it is opened) or with bad bytes (found as it is
        // copied): one sentence for a file that is only read, not the advice for one's own store.
        const QString cut = m_dir.filePath("import-cut.sqlite");
        QVERIFY(copy_cut_in_half(m_db, cut));
        const QString flipped = m_dir.filePath("import-flipped.sqlite");
        QVERIFY(copy_with_bytes_flipped(m_db, flipped, 20000, 30000));
        for (const QString& source_damaged : {cut, flipped}) {
            const QByteArray source_bytes = file_sha256(source_damaged);
            r = cli({"import", source_damaged, "--db", target});
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.startsWith("mantissa-cli import: Nothing was imported from '" + source_damaged +
                                      "': it is damaged (SQLite: database disk image is malformed, while ") &&
                         r.err.endsWith(") and was left unchanged; import from a backup or another copy of it.\n"),
                     qPrintable(r.err));
            QVERIFY2(!r.err.contains("start a new store"), qPrintable(r.err));
            QCOMPARE(r.err.count('\n'), 1);
            QCOMPARE(r.out, QString());
            QCOMPARE(file_sha256(source_damaged), source_bytes);
            QCOMPARE(file_sha256(target), before);
            for (const char* side : {"-wal", "-shm", "-journal"})
                QVERIFY2(!QFileInfo::exists(source_damaged + side), side);
        }
        runs = cli({"runs", "--db", target});
        QCOMPARE(runs.code, 0);
        QVERIFY2(runs.out.contains(QRegularExpression(R"(\n +3  later +stopped )")), qPrintable(runs.out));

        r = cli({"import", "--db", target});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("give the run store to import"), qPrintable(r.err));
        QCOMPARE(cli({"import", source, garbage, "--db", target}).code, 2);
    }
};

QTEST_GUILESS_MAIN(StoreCli)
#include "tst_store_cli.moc"
