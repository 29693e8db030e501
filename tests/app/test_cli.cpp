// mantissa-cli as a user meets it: exit codes (0 ok, 1 failed, 2 bad input), one clear sentence for
// every mistake, the --json shapes the docs promise, and a short training run recorded in a store.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include "run_cli.h"
#include "exact_compare.h"

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void formatJson() {
        const CliResult r = run_cli({"format", "--json", "0.1", "65520", "-inf"});
        QCOMPARE(r.code, 0);
        const QJsonArray all = QJsonDocument::fromJson(r.out).array();
        QCOMPARE(all.size(), 3);
        const QJsonObject first = all[0].toObject();
        QCOMPARE(first["input"].toString(), QString("0.1"));
        QCOMPARE(first["fp32_bits"].toString(), QString("0x3dcccccd"));
        const QJsonArray results = first["results"].toArray();
        QCOMPARE(results.size(), 9);  // the six tensor formats, then fp6-e3m2, fp6-e2m3, fp4-e2m1
        QJsonObject fp16;
        for (const auto& v : results)
            if (v.toObject()["format"].toString() == "fp16") fp16 = v.toObject();
        QCOMPARE(fp16["bits"].toString(), QString("0x2e66"));
        QCOMPARE(fp16["value"].toDouble(), 0.0999755859375);
        QCOMPARE(fp16["class"].toString(), QString("normal"));
        QVERIFY(fp16["abs_error"].toDouble() > 2.4e-5 && fp16["abs_error"].toDouble() < 2.5e-5);
        // 65520 overflows fp16 to inf, e4m3 to NaN: reported as strings.
        for (const auto& v : all[1].toObject()["results"].toArray()) {
            const QJsonObject o = v.toObject();
            if (o["format"] == "fp16") QCOMPARE(o["value"].toString(), QString("inf"));
            if (o["format"] == "fp8-e4m3") QCOMPARE(o["value"].toString(), QString("nan"));
            if (o["format"] == "fp16") QVERIFY(o["overflow"].toBool());
        }
        QCOMPARE(all[2].toObject()["results"].toArray()[0].toObject()["value"].toString(), QString("-inf"));
    }

    void formatTo() {
        const CliResult r = run_cli({"format", "--to", "bf16,e5m2", "--json", "1e-8"});
        QCOMPARE(r.code, 0);
        const QJsonArray results = QJsonDocument::fromJson(r.out).array()[0].toObject()["results"].toArray();
        QCOMPARE(results.size(), 2);
        QCOMPARE(results[1].toObject()["format"].toString(), QString("fp8-e5m2"));
        QVERIFY(results[1].toObject()["flushed_to_zero"].toBool());
    }

    // A block of MXFP4: amax 7 sets the shared scale 2^(floor(log2 7) - 2) = 1, so 7 saturates at
    // E2M1's 6 and 0.1 (below its 0.5 / 2) flushes to zero; the 33rd value starts a block of its own.
    void formatBlock() {
        QStringList args{"format", "--block", "mxfp4", "--json", "0.1", "7", "1.5"};
        for (int i = 3; i < 32; ++i) args << "1";
        args << "0.5";
        const CliResult r = run_cli(args);
        QCOMPARE(r.code, 0);
        const QJsonArray blocks = QJsonDocument::fromJson(r.out).array();
        QCOMPARE(blocks.size(), 2);
        const QJsonObject first = blocks[0].toObject();
        QCOMPARE(first["scale_bits"].toString(), QString("0x7f"));
        const QJsonArray elements = first["elements"].toArray();
        QCOMPARE(elements.size(), 32);
        QVERIFY(elements[0].toObject()["flushed_to_zero"].toBool());
        QCOMPARE(elements[1].toObject()["value"].toDouble(), 6.0);
        QVERIFY(elements[1].toObject()["saturated"].toBool());
        QCOMPARE(elements[2].toObject()["value"].toDouble(), 1.5);
        const QJsonObject second = blocks[1].toObject();
        QCOMPARE(second["first"].toInt(), 32);
        QCOMPARE(second["scale_bits"].toString(), QString("0x7c"));  // 2^-3: 0.5 is E2M1's 4
        QCOMPARE(second["elements"].toArray()[0].toObject()["element"].toDouble(), 4.0);
        QCOMPARE(second["elements"].toArray()[0].toObject()["value"].toDouble(), 0.5);
        // The table says the same for a person.
        const CliResult text = run_cli({"format", "--block", "mxfp4", "0.1", "7"});
        QCOMPARE(text.code, 0);
        QVERIFY(text.out.contains("shared scale  E8M0 0x7f"));
        QVERIFY(text.out.contains("(saturated)"));
        QVERIFY(text.out.contains("(flushed to zero)"));
    }

    // The block formats' elements alone, without a scale: they saturate, and a NaN has no code.
    void formatToBareElements() {
        const CliResult r = run_cli({"format", "--to", "fp4-e2m1,fp6-e2m3", "--json", "7", "nan", "0.1"});
        QCOMPARE(r.code, 0);
        const QJsonArray all = QJsonDocument::fromJson(r.out).array();
        const QJsonArray seven = all[0].toObject()["results"].toArray();
        QCOMPARE(seven[0].toObject()["format"].toString(), QString("fp4-e2m1"));
        QCOMPARE(seven[0].toObject()["value"].toDouble(), 6.0);
        QVERIFY(seven[0].toObject()["overflow"].toBool());
        QCOMPARE(seven[0].toObject()["bits"].toString(), QString("0x07"));
        QCOMPARE(seven[1].toObject()["value"].toDouble(), 7.0);  // E2M3 holds 7 (its max is 7.5)
        QVERIFY(!seven[1].toObject()["overflow"].toBool());
        QCOMPARE_EXACT(all[1].toObject()["results"].toArray()[0].toObject()["value"].toDouble(), 0.0);
        const QJsonObject tenth = all[2].toObject()["results"].toArray()[0].toObject();
        QVERIFY(tenth["flushed_to_zero"].toBool());  // below half E2M1's smallest value, 0.5
        // The default lists them after the tensor formats.
        const CliResult every = run_cli({"format", "1"});
        QVERIFY(every.out.contains("fp6-e3m2") && every.out.contains("fp4-e2m1"));
    }

    void badInput_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("not a number") << QStringList{"format", "12abc"} << "'12abc' is not a number";
        QTest::newRow("unknown format") << QStringList{"format", "--to", "fp12", "1"} << "unknown format 'fp12'";
        QTest::newRow("no value") << QStringList{"format"} << "at least one value";
        QTest::newRow("unknown option") << QStringList{"format", "--bogus", "1"} << "--bogus";
        QTest::newRow("unknown block format") << QStringList{"format", "--block", "mxfp3", "1"} << "unknown block format 'mxfp3'";
        QTest::newRow("block with --to") << QStringList{"format", "--block", "mxfp4", "--to", "fp16", "1"} << "--block";
        QTest::newRow("unknown command") << QStringList{"fly"} << "unknown command 'fly'";
        QTest::newRow("missing config") << QStringList{"train", "--config", "/nonexistent/x.json", "--no-record"} << "/nonexistent/x.json";
        QTest::newRow("bad setting") << QStringList{"train", "--set", "train.lr=-1", "--no-record"} << "train.lr";
        QTest::newRow("unknown key") << QStringList{"train", "--set", "precision.autocas=fp16", "--no-record"} << "precision.autocas";
        QTest::newRow("bad steps") << QStringList{"train", "--steps", "ten", "--no-record"} << "--steps";
        QTest::newRow("a setting without --set") << QStringList{"train", "train.lr=0.1", "--no-record"} << "--set";
        QTest::newRow("two experiment files") << QStringList{"train", "-c", "a.json", "b.json", "--no-record"}
                                              << "'b.json': the experiment file is a.json";
        QTest::newRow("--config twice") << QStringList{"train", "--config", "a.json", "--config", "b.json", "--no-record"}
                                        << "--config was given twice ('a.json' and 'b.json'); give it once";
        QTest::newRow("-c and --config") << QStringList{"train", "-c", "a.json", "--config=b.json", "--no-record"}
                                         << "--config was given twice";
        QTest::newRow("--steps twice") << QStringList{"train", "--steps", "3", "--steps", "5", "--no-record"}
                                       << "--steps was given twice";
        QTest::newRow("runs with an empty --db") << QStringList{"runs", "--db", ""} << "No run store file was given.";
        QTest::newRow("sweep list with an empty --db") << QStringList{"sweep", "list", "--db", ""}
                                                       << "No run store file was given.";
        QTest::newRow("show with an empty --db") << QStringList{"show", "1", "--db", ""} << "No run store file was given.";
        QTest::newRow("unknown backend") << QStringList{"train", "--backend", "gpu", "--no-record"} << "backend.kind";
        QTest::newRow("an empty --config") << QStringList{"train", "--config=", "--no-record"}
                                           << "No experiment file was given: its name is empty.";
        QTest::newRow("--at without a step") << QStringList{"train", "--at", "precision.autocast=bf16", "--no-record"}
                                             << "--at takes STEP:KEY=VALUE";
        QTest::newRow("--at a key that cannot change")
            << QStringList{"train", "--at", "5:model.hidden=[4]", "--no-record"} << "--at 5:model.hidden=[4] cannot apply";
        QTest::newRow("--at beyond the run")
            << QStringList{"train", "--set", "dataset.kind=spirals", "--steps", "3", "--at", "4:train.lr=0.1", "--no-record"}
            << "--at 4:train.lr=0.1 is beyond the run: it takes 3 steps, so step 4 never comes";
        QTest::newRow("--at just after the run")
            << QStringList{"train", "--set", "dataset.kind=spirals", "--steps", "3", "--at", "1:train.lr=0.1", "--at",
                           "3:inject=fc1", "--no-record"}
            << "--at 3:inject=fc1 is beyond the run";
        QTest::newRow("device out of range") << QStringList{"train", "--device", "300", "--no-record"} << "backend.device";
        QTest::newRow("-c where no file is taken") << QStringList{"format", "-c", "x", "1"} << "'-c'";
        QTest::newRow("--db with --no-record") << QStringList{"train", "--db", "x.sqlite", "--no-record"}
                                               << "--db and --no-record";
        QTest::newRow("an option's value left out") << QStringList{"export", "1", "--format", "--db", "x.sqlite"}
                                                   << "--format needs a value, but --db follows it";
        QTest::newRow("a value left out before -o") << QStringList{"export", "1", "--table", "-o", "x.csv"}
                                                    << "--table needs a value, but -o follows it";
        QTest::newRow("a Slurm option without --slurm") << QStringList{"sweep", "--partition", "p", "--dry-run"}
                                                        << "--partition is for a sweep on Slurm: add --slurm";
        QTest::newRow("a time Slurm cannot read") << QStringList{"sweep", "--slurm", "--time", "abc", "--dry-run"}
                                                  << "--time abc is not a Slurm time limit";
        QTest::newRow("a Slurm option out of range (dry run)")
            << QStringList{"sweep", "--slurm", "--cpus-per-task", "-1", "--dry-run"} << "--cpus-per-task must be between";
        QTest::newRow("--jobs on Slurm") << QStringList{"sweep", "--slurm", "--jobs", "2", "--dry-run"}
                                         << "--jobs is for a sweep run on this machine";
        QTest::newRow("sweep list with a word more") << QStringList{"sweep", "list", "extra"}
                                                     << "'extra' is one word too many: mantissa-cli sweep list (it takes no sweep)";
        QTest::newRow("sweep show with a word more") << QStringList{"sweep", "show", "1", "extra"}
                                                     << "'extra' is one word too many: mantissa-cli sweep show SWEEP";
        QTest::newRow("a number too large") << QStringList{"train", "--steps", "99999999999999999999", "--no-record"}
                                            << "--steps 99999999999999999999 is out of range";
        QTest::newRow("weights show with a word more") << QStringList{"weights", "show", "a.safetensors", "b"}
                                                       << "'b' is one word too many: mantissa-cli weights show FILE";
        QTest::newRow("show with two words more") << QStringList{"show", "1", "a", "b"}
                                                  << "'a' and the words after it are 2 words too many: mantissa-cli show RUN";
        QTest::newRow("rm without a run") << QStringList{"rm"} << "give the run to remove, its id or the start of its name: mantissa-cli rm RUN";
        QTest::newRow("an option another action reads") << QStringList{"sweep", "list", "--grid", "a=1"}
                                                        << "--grid is not an option of sweep list (it takes --db, --json)";
        QTest::newRow("weights show with --db") << QStringList{"weights", "show", "a.safetensors", "--db", "x"}
                                                << "--db is not an option of weights show (it takes --json)";
        QTest::newRow("a preset that does not fit the data")
            << QStringList{"train", "--set", "model.kind=cnn", "--set", "dataset.kind=spirals", "--no-record"}
            << "model.kind \"cnn\" does not fit the dataset's samples (2 values, not an image): its layer pool1: "
               "\"kernel\" 2 is larger than its 1×1 input";
        QTest::newRow("devices with a word") << QStringList{"devices", "0"} << "'0' is one word too many: mantissa-cli devices";
        QTest::newRow("--device with the cpu backend") << QStringList{"train", "--backend", "cpu", "--device", "1", "--no-record"}
                                                       << "--device picks a GPU, but this run's backend is cpu";
        QTest::newRow("--threads with the cuda backend")
            << QStringList{"train", "--set", "backend.kind=cuda", "--threads", "2", "--no-record"}
            << "--threads sets the CPU backend's threads, but this run's backend is cuda";
        QTest::newRow("--sweep-index alone") << QStringList{"train", "--sweep-index", "3", "--no-record"}
                                             << "--sweep-index goes with --sweep UUID";
        QTest::newRow("--sweep not a uuid") << QStringList{"train", "--sweep", "abc", "--sweep-index", "1", "--no-record"}
                                            << "--sweep takes a sweep's uuid";
        QTest::newRow("an empty run name") << QStringList{"train", "--name", "", "--no-record"} << "--name must not be empty";
        QTest::newRow("an empty sweep name") << QStringList{"sweep", "--name", "", "--dry-run"} << "--name must not be empty";
        QTest::newRow("a sweep key on two axes")
            << QStringList{"sweep", "--grid", "train.lr=1e-3", "--grid", "train.lr=2e-3", "--dry-run"}
            << "--grid train.lr is given twice";
        QTest::newRow("a long --grid without '='")  // quoted by its ends, not whole
            << QStringList{"sweep", "--grid", QString(100000, 'x'), "--dry-run"}
            << "--grid " + QString(60, 'x') + "..." + QString(60, 'x') + ": write KEY=V1,V2,...";
        QTest::newRow("steps not whole") << QStringList{"train", "--steps", "1.5", "--no-record"} << "a whole number like 1000";
        QTest::newRow("bench --from a folder") << QStringList{"bench", "--from", "/tmp"}
                                               << "/tmp is a folder, not a bench --json document";
        QTest::newRow("bench --from a device") << QStringList{"bench", "--from", "/dev/null"} << "/dev/null is not a regular file";
    }
    void badInput() {
        QFETCH(QStringList, args);
        QFETCH(QString, mentions);
        const CliResult r = run_cli(args);
        QCOMPARE(r.code, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains(mentions), r.err.constData());
        QCOMPARE(QString::fromUtf8(r.err).trimmed().count('\n'), 0);  // one sentence, one line
    }

    void helpForEveryCommand() {
        const CliResult overview = run_cli({"--help"});
        QCOMPARE(overview.code, 0);
        for (const char* command : {"format", "train"}) {
            const CliResult r = run_cli({command, "--help"});
            QCOMPARE(r.code, 0);
            QVERIFY(r.out.startsWith("usage: mantissa-cli " + QByteArray(command)));
            const CliResult help = run_cli({"help", command});  // the same text
            QCOMPARE(help.code, 0);
            QCOMPARE(help.out, r.out);
        }
    }

    // resume's help names only what exists: there is no `compare` command, so the place that shows
    // a branch beside its parent is named as the GUI's compare view.
    void resumeHelpNamesTheGuiCompareView() {
        const CliResult r = run_cli({"resume", "--help"});
        QCOMPARE(r.code, 0);
        const QString help = QString::fromUtf8(r.out).simplified();
        QVERIFY2(help.contains("the GUI's compare view marks step S, where the branch left its parent"), r.out.constData());
        QCOMPARE(help.count("compare"), help.count("the GUI's compare view"));
    }

    // A short run on spirals, recorded in a store of its own; --json has every promised key.
    void trainJson() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const CliResult r = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[16]", "--steps", "60",
                                  "--set", "train.eval_every=30", "--db", db, "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        for (const char* key : {"status", "steps", "final_loss", "test_accuracy", "test_loss", "overflow_steps", "skipped_steps",
                                "final_loss_scale", "samples", "samples_per_s", "notices"})
            QVERIFY2(o.contains(key), key);
        QCOMPARE(o["status"].toString(), QString("completed"));
        QCOMPARE(o["steps"].toInt(), 60);
        QVERIFY(o["final_loss"].toDouble() > 0);
        QVERIFY(o["test_accuracy"].toDouble() > 0.2);
        QVERIFY(QFile::exists(db));
        QVERIFY(o["run_id"].toInt() >= 1);
    }

    // The experiment file as the GUI takes it: -c FILE, or FILE alone, the same as --config FILE.
    void experimentFileSpellings_data() {
        QTest::addColumn<QStringList>("spelling");
        QTest::newRow("--config") << QStringList{"--config"};
        QTest::newRow("-c") << QStringList{"-c"};
        QTest::newRow("bare") << QStringList{};
    }
    void experimentFileSpellings() {
        QFETCH(QStringList, spelling);
        QTemporaryDir dir;
        QFile file(dir.filePath("tiny.json"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(R"({"name": "tiny-run", "dataset": {"kind": "spirals", "samples": 200}, "model": {"hidden": [8]},
                       "train": {"steps": 5, "batch_size": 16}, "backend": "cpu"})");
        file.close();
        const CliResult r =
            run_cli(QStringList{"train"} + spelling + QStringList{file.fileName(), "--no-record", "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o["steps"].toInt(), 5);  // the file's, not the default's
    }

    // --backend wins over the experiment file (README, the CLI's table); the file's device is then
    // the cuda backend's alone, and --device with cpu is refused (badInput).
    void backendOptionOverridesTheFile() {
        QTemporaryDir dir;
        QFile file(dir.filePath("gpu.json"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(R"({"dataset": {"kind": "spirals", "samples": 200}, "model": {"hidden": [8]},
                       "train": {"steps": 3, "batch_size": 16}, "backend": {"kind": "cuda", "device": 7}})");
        file.close();
        const CliResult r = run_cli({"train", file.fileName(), "--backend", "cpu", "--no-record", "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(QJsonDocument::fromJson(r.out).object()["backend"].toString(), QString("cpu"));
    }

    // --at makes each change at its step exactly on a run far faster than the CLI's polling, in
    // step order whatever the order given; the store's events carry those steps.
    void atChangesLandAtTheirSteps() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const CliResult r = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[16]", "--steps",
                                     "60", "--at", "30:inject=fc2", "--at", "10:precision.autocast=bf16", "--at",
                                     "40:precision.layers.fc2=fp32", "--db", db, "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o["steps"].toInt(), 60);
        QCOMPARE(o["overflow_steps"].toInt(), 1);
        const CliResult events = run_cli({"export", "1", "--table", "events", "--format", "json", "--db", db});
        QVERIFY2(events.code == 0, events.err.constData());
        QStringList seen;  // "STEP kind key-or-action"
        for (const QJsonValue& v : QJsonDocument::fromJson(events.out).array()) {
            const QJsonObject e = v.toObject();
            const QString kind = e["kind"].toString();
            if (kind != "setting_change" && kind != "notice" && kind != "overflow") continue;
            const QJsonObject data = e["data_json"].toObject();  // JSON export nests it as an object
            seen << QStringLiteral("%1 %2 %3").arg(e["step"].toInt()).arg(kind,
                                                                         data["key"].toString() + data["action"].toString());
        }
        QCOMPARE(seen, (QStringList{"10 setting_change precision.autocast", "30 notice inject_non_finite",
                                    "30 overflow ", "40 setting_change precision.layers.fc2"}));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
