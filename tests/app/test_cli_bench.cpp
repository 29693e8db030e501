// `mantissa-cli bench` as a script meets it: the --json document of a quick numeric run (machine,
// versions, threads, the suite's rows with positive rates), the text tables written with -o, the
// peer suite skipping in one line when its interpreter is missing, and one-sentence exit-2 errors
// for bad input. Nothing here is timed: the figures are only checked to be measured at all.
#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include "run_cli.h"

class TestCliBench : public QObject {
    Q_OBJECT
private slots:
    void numericJson() {
        const CliResult r = run_cli({"bench", "--quick", "--suite", "numeric", "--json", "--threads", "1"});
        QVERIFY2(r.code == 0, r.err.constData());
        QJsonParseError error{};
        const QJsonObject doc = QJsonDocument::fromJson(r.out, &error).object();
        QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
        for (const char* key : {"tool", "app_version", "git", "date", "machine", "threads", "suites"})
            QVERIFY2(doc.contains(key), key);
        QCOMPARE(doc["threads"].toInt(), 1);
        QVERIFY(doc["quick"].toBool());
        QVERIFY(!doc["machine"].toObject()["cpu"].toString().isEmpty());
        QVERIFY(!doc["machine"].toObject()["onednn"].toString().isEmpty());
        const QJsonObject suites = doc["suites"].toObject();
        QCOMPARE(suites.keys(), QStringList{"numeric"});
        const QJsonObject numeric = suites["numeric"].toObject();
        QVERIFY(!numeric["skipped"].toBool());
        const QJsonArray tables = numeric["tables"].toArray();
        QCOMPARE(tables.size(), 3);
        // The block-scaled formats' quantisation, along rows and along columns, and stochastic.
        QStringList blocks;
        for (const auto& v : tables[1].toObject()["rows"].toArray()) {
            const QJsonObject row = v.toObject();
            blocks << row["format"].toString();
            for (const char* key : {"rows_mel_s", "cols_mel_s", "stochastic_mel_s"})
                QVERIFY2(row[key].toDouble() > 0, key);
        }
        // FP16 accumulation's error grows with K where FP32's stays at its roundoff.
        const QJsonArray accumulation = tables[2].toObject()["rows"].toArray();
        QCOMPARE(tables[2].toObject()["name"].toString(), QStringLiteral("fp16_accumulation"));
        QVERIFY(accumulation.size() >= 4);
        const QJsonObject shortest = accumulation.first().toObject(), longest = accumulation.last().toObject();
        QVERIFY(longest["positive_fp16"].toDouble() > 10 * shortest["positive_fp16"].toDouble());
        QVERIFY(longest["positive_fp32"].toDouble() < 1e-5);
        QCOMPARE(blocks, (QStringList{"mxfp8-e4m3", "mxfp8-e5m2", "mxfp6-e3m2", "mxfp6-e2m3", "mxfp4", "nvfp4"}));
        const QJsonArray rows = tables[0].toObject()["rows"].toArray();
        QStringList formats;
        for (const auto& v : rows) {
            const QJsonObject row = v.toObject();
            formats << row["format"].toString();
            for (const char* key : {"cache_gel_s", "memory_gel_s", "scalar_gel_s", "speedup"})
                QVERIFY2(row[key].toDouble() > 0, key);
            QVERIFY(row["cache_spread_pct"].toDouble() >= 0);
        }
        QCOMPARE(formats, (QStringList{"tf32", "fp16", "bf16", "fp8-e4m3", "fp8-e5m2"}));
        // Every column the rows use is declared, with its header.
        for (const auto& c : tables[0].toObject()["columns"].toArray())
            QVERIFY(!c.toObject()["header"].toString().isEmpty());

        // The saved document prints back as the same tables.
        QTemporaryDir dir;
        QFile saved(dir.filePath("bench.json"));
        QVERIFY(saved.open(QIODevice::WriteOnly));
        saved.write(r.out);
        saved.close();
        const CliResult again = run_cli({"bench", "--from", saved.fileName()});
        QVERIFY2(again.code == 0, again.err.constData());
        QVERIFY(again.out.contains("== numeric:"));
        QVERIFY(again.out.contains("fp8-e5m2"));
        QVERIFY(again.out.contains("threads: 1 (CPU backend, --threads"));
    }

    void textToFile() {
        QTemporaryDir dir;
        const QString file = dir.filePath("bench.txt");
        const CliResult r = run_cli({"bench", "--quick", "--suite=numeric", "--blocks", "1", "-o", file});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY(r.out.isEmpty());
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(f.readAll());
        QVERIFY2(text.contains("== numeric:"), qPrintable(text));
        QVERIFY(text.contains("threads:"));
        // Aligned: the header and every row of the rounding table have the same width.
        const QStringList lines = text.split('\n');
        const int header = lines.indexOf(QRegularExpression("^\\s+format\\s.*"));
        QVERIFY(header > 0);
        for (int i = header + 1; i <= header + 5; ++i) QCOMPARE(lines[i].size(), lines[header].size());
    }

    // An interpreter without PyTorch (torch_peer.py exits 3 then): the suite is skipped, saying
    // why, and the bench goes on (exit 0). The interpreter here is a script that does just that.
    void peerSkipsWithoutPyTorch() {
        QTemporaryDir dir;
        const QString python = dir.filePath("python-without-torch");
        {
            QFile f(python);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("#!/bin/sh\nexit 3\n");
        }
        QVERIFY(QFile::setPermissions(python, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
        const CliResult r = run_cli({"bench", "--quick", "--suite", "peer", "--python", python, "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject peer = QJsonDocument::fromJson(r.out).object()["suites"].toObject()["peer"].toObject();
        QVERIFY(peer["skipped"].toBool());
        const QString notes = QJsonDocument(peer["notes"].toArray()).toJson();
        QVERIFY2(notes.contains("skipped: PyTorch is not installed for " + python), qPrintable(notes));
    }

    // A model whose PyTorch side dies mid-run is left out with its sentence; the models measured
    // before it keep their rows. The peer here is a shell script speaking torch_peer.py's protocol.
    void peerModelThatStopsIsLeftOut() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString script = dir.filePath("fake_peer.sh");
        QFile f(script);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("model=$3\n"
                "echo '{\"ready\": true, \"torch_version\": \"fake\", \"blas\": {\"kind\": \"fake\"}}'\n"
                "while read -r command mode count rest; do\n"
                "  case \"$command\" in\n"
                "    block) [ \"$model\" = cnn ] && { echo 'cnn: out of memory' >&2; exit 9; }\n"
                "           echo \"{\\\"mode\\\": \\\"$mode\\\", \\\"steps\\\": $count, \\\"seconds\\\": 0.01}\" ;;\n"
                "    accuracy) echo '{\"test_accuracy\": 0.5, \"seconds\": 1}' ;;\n"
                "    quit) exit 0 ;;\n"
                "  esac\n"
                "done\n");
        f.close();
        qputenv("MANTISSA_PEER_SCRIPT", script.toLocal8Bit());
        const CliResult r = run_cli({"bench", "--quick", "--suite", "peer", "--python", "/bin/sh", "--peer-model",
                                     "mlp,cnn", "--threads", "1", "--json"});
        qunsetenv("MANTISSA_PEER_SCRIPT");
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject peer = QJsonDocument::fromJson(r.out).object()["suites"].toObject()["peer"].toObject();
        QVERIFY(!peer["skipped"].toBool());
        const QString notes = QJsonDocument(peer["notes"].toArray()).toJson();
        QVERIFY2(notes.contains("cnn (system BLAS) left out: the PyTorch script stopped answering (exit 9): cnn: out "
                                "of memory"),
                 qPrintable(notes));
        QStringList speed_models, accuracy_models;
        for (const auto& t : peer["tables"].toArray()) {
            const QJsonObject table = t.toObject();
            for (const auto& r : table["rows"].toArray()) {
                const QJsonObject row = r.toObject();
                if (table["name"].toString() == "throughput") {
                    speed_models << row["model"].toString();
                    // Mantissa timed with and without its per-layer statistics, each against the aim.
                    QVERIFY(row["mantissa_samples_per_s"].toDouble() > 0);
                    QVERIFY(row["bare_samples_per_s"].toDouble() > 0);
                    QVERIFY(row["bare_ratio"].toDouble() > 0);
                    QVERIFY2(row["bare_aim"].toString().startsWith(row["mode"].toString().startsWith("fp32") ? ">= 3x"
                                                                                                          : ">= 2x"),
                             qPrintable(row["bare_aim"].toString()));
                }
                if (table["name"].toString() == "accuracy") accuracy_models << row["model"].toString();
            }
        }
        QCOMPARE(speed_models, (QStringList{"mlp", "mlp"}));  // fp32 and bf16
        QCOMPARE(accuracy_models, (QStringList{"mlp", "mlp"}));  // Mantissa and PyTorch, fp32 (--quick)
    }

    void list() {
        const CliResult r = run_cli({"bench", "--list"});
        QCOMPARE(r.code, 0);
        for (const char* suite : {"engine", "numeric", "store", "gui", "peer"}) QVERIFY2(r.out.contains(suite), suite);
    }

    void badInput_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("unknown suite") << QStringList{"bench", "--suite", "warp"} << "unknown suite 'warp'";
        QTest::newRow("unknown suite in a list") << QStringList{"bench", "--suite", "numeric,warp"} << "unknown suite 'warp'";
        QTest::newRow("threads not a number") << QStringList{"bench", "--threads", "two"} << "--threads needs a whole number";
        QTest::newRow("threads negative") << QStringList{"bench", "--threads=-1"} << "--threads takes a number from 0 to 1024";
        QTest::newRow("blocks negative") << QStringList{"bench", "--blocks", "-3"} << "--blocks takes a number from 1";
        QTest::newRow("epochs not a number") << QStringList{"bench", "--epochs", "3x"} << "--epochs needs a whole number";
        QTest::newRow("unknown precision") << QStringList{"bench", "--precision", "fp12"} << "unknown precision 'fp12'";
        QTest::newRow("unknown precision lists the block formats") << QStringList{"bench", "--precision", "mxfp5"}
                                                                   << "mxfp8-e4m3, mxfp4, nvfp4";
        QTest::newRow("unknown blas") << QStringList{"bench", "--peer-blas", "mkl"} << "unknown --peer-blas 'mkl'";
        QTest::newRow("unknown peer model") << QStringList{"bench", "--peer-model", "rnn"} << "unknown --peer-model 'rnn'";
        QTest::newRow("peer steps zero") << QStringList{"bench", "--peer-steps", "0"} << "--peer-steps takes a number from 1";
        QTest::newRow("unknown option") << QStringList{"bench", "--fast"} << "--fast";
        QTest::newRow("positional") << QStringList{"bench", "engine"} << "'engine'";
        QTest::newRow("missing value") << QStringList{"bench", "--suite"} << "--suite needs a value";
        // An interpreter named by hand that cannot run is a mistake, not a suite to skip.
        QTest::newRow("python missing") << QStringList{"bench", "--suite", "peer", "--python", "/nonexistent/python3"}
                                        << "--python /nonexistent/python3 cannot be run: No such file or directory";
        QTest::newRow("python a folder") << QStringList{"bench", "--suite", "peer", "--python", "/usr"}
                                         << "--python /usr is a folder, not an interpreter";
        QTest::newRow("from a missing file") << QStringList{"bench", "--from", "/nonexistent/bench.json"}
                                             << "cannot read '/nonexistent/bench.json'";
    }
    // A saved document that is not one bench --json writes: exit 2 and one sentence naming the key
    // and what it must be, never a JSON library's message, a crash, or tables of "?".
    void fromBadDocument_data() {
        QTest::addColumn<QByteArray>("document");
        QTest::addColumn<QString>("mentions");
        const QByteArray suite = R"({"name": "numeric", "tables": [{"name": "t", "columns": [{"key": "a"}], "rows": [{"a": 1}]}]})";
        QTest::newRow("date a number") << QByteArray(R"({"suites": {}, "date": 1})") << "date: expected a string, got a number (1)";
        QTest::newRow("date a number, with a suite") << QByteArray(R"({"suites": {"numeric": )" + suite + R"(}, "date": 1})")
                                                     << "date: expected a string, got a number (1)";
        QTest::newRow("suite a string") << QByteArray(R"({"suites": {"engine": "x"}})")
                                        << "suites.engine: expected a suite object";
        QTest::newRow("suite an array") << QByteArray(R"({"suites": {"engine": [1]}})")
                                        << "suites.engine: expected a suite object";
        QTest::newRow("no suites") << QByteArray(R"({"suites": {}})") << "the document holds no suite results";
        QTest::newRow("suites an array") << QByteArray(R"({"suites": []})") << "suites: expected an object of suite results";
        QTest::newRow("suites null") << QByteArray(R"({"suites": null})") << "suites: expected an object of suite results";
        QTest::newRow("no suites key") << QByteArray(R"({"date": "x"})") << "the document has no \"suites\"";
        QTest::newRow("an array") << QByteArray("[]") << "expected a JSON object";
        QTest::newRow("null") << QByteArray("null") << "expected a JSON object";
        QTest::newRow("not JSON") << QByteArray("{suites}") << "is not valid JSON: line 1, column 2";
        QTest::newRow("a key twice") << QByteArray(R"({"suites": {"numeric": )" + suite + R"(}, "suites": {}})")
                                     << "key suites appears twice";
        QTest::newRow("rows not objects") << QByteArray(R"({"suites": {"numeric": {"name": "n", "tables": [{"name": "t", "columns": [], "rows": [1]}]}}})")
                                          << "suites.numeric.tables[0].rows[0]: expected a row object, got a number (1)";
        QTest::newRow("a column without a key") << QByteArray(R"({"suites": {"numeric": {"name": "n", "tables": [{"name": "t", "columns": [{}], "rows": []}]}}})")
                                                << "suites.numeric.tables[0].columns[0] has no \"key\", which must be a string";
        QTest::newRow("decimals out of range") << QByteArray(R"({"suites": {"numeric": {"name": "n", "tables": [{"name": "t", "columns": [{"key": "a", "decimals": 1000}], "rows": []}]}}})")
                                               << "decimals: expected a whole number from 0 to 20, got a number (1000)";
        QTest::newRow("suite_order names another suite") << QByteArray(R"({"suites": {"numeric": )" + suite + R"(}, "suite_order": ["engine"]})")
                                                         << "suite_order[0]: names \"engine\", a suite that \"suites\" does not hold";
        QTest::newRow("threads negative") << QByteArray(R"({"suites": {"numeric": )" + suite + R"(}, "threads": -2})")
                                          << "threads: expected a whole number from 0 to";
        // nlohmann's recursive copy of [[[... overflowed the stack: refused where it parses.
        QTest::newRow("300000 arrays deep") << QByteArray(R"({"suites": {"engine": )") + QByteArray(300000, '[') +
                                                   QByteArray(300000, ']') + "}}"
                                            << "line 1, column 533: the array at suites.engine[0][0]";
    }
    void fromBadDocument() {
        QFETCH(QByteArray, document);
        QFETCH(QString, mentions);
        QTemporaryDir dir;
        QFile f(dir.filePath("bench.json"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(document);
        f.close();
        const CliResult r = run_cli({"bench", "--from", f.fileName()});
        QCOMPARE(r.code, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains(mentions), r.err.constData());
        QVERIFY2(!r.err.contains("json.exception"), r.err.constData());
        QCOMPARE(QString::fromUtf8(r.err).trimmed().count('\n'), 0);  // one sentence, one line
        QVERIFY(r.out.isEmpty());
    }

    // The smallest document that is one: a suite with a table, no header keys (they print "?").
    void fromMinimalDocument() {
        QTemporaryDir dir;
        QFile f(dir.filePath("bench.json"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"suites": {"numeric": {"name": "numeric", "tables": [{"name": "t", "title": "T", "columns": [{"key": "a", "header": "A", "decimals": 2}], "rows": [{"a": 1.5}]}]}}})");
        f.close();
        const CliResult r = run_cli({"bench", "--from", f.fileName()});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(r.out.contains("== numeric: numeric") && r.out.contains("1.50"), r.out.constData());
    }

    void badInput() {
        QFETCH(QStringList, args);
        QFETCH(QString, mentions);
        const CliResult r = run_cli(args);
        QCOMPARE(r.code, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains(mentions), r.err.constData());
        QCOMPARE(QString::fromUtf8(r.err).trimmed().count('\n'), 0);  // one sentence, one line
        QVERIFY(r.out.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestCliBench)
#include "test_cli_bench.moc"
