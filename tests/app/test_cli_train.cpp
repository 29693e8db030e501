// `mantissa-cli train` as a script, a service manager or a batch system meets it:
//   - one throughput figure: the summary's samples/s, `show`'s and the run store's totals are the
//     samples trained / the last step's time_s, to 1e-9, with the samples counted by this test;
//   - SIGTERM, SIGHUP and SIGINT stop the run after its current step: recorded `stopped` with
//     every step it took, the summary printed, exit 0 as for Ctrl-C; an ignored SIGHUP (nohup)
//     stays ignored;
//   - a dataset that falls back to spirals is a warning on stderr before anything else, and the
//     JSON's `notices`;
//   - the run is recorded with its network's layers, which `show` and `export --table layers` give;
//   - --threads is backend.threads, recorded; out of range it is exit 2 and one sentence; so is
//     MANTISSA_CPU_THREADS out of range or not a number, naming the variable; 1024 threads on a
//     model whose weight gradient oneDNN would split into a scratchpad per thread still train;
//   - a checkpoint that cannot be written (a file where its folder goes) is a warning naming the
//     folder and why, a JSON notice and a clean store event, and exit 1: the run trained but
//     lost its checkpoints;
//   - --device with the auto backend and no usable GPU of that index is a notice;
//   - OpenMP's workers wait passively unless OMP_WAIT_POLICY says otherwise, in the process that
//     was started (same pid, same name).
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <thread>

#include "run_cli.h"
#include "store/run_store.h"

using namespace mantissa;

namespace {

double relative_difference(double a, double b) {
    return std::abs(a - b) / std::max(std::abs(a), std::abs(b));
}

// The steps a run has recorded so far, read as another process would (0 before the store exists).
std::int64_t recorded_steps(const QString& db) {
    try {
        RunStore store(db.toStdString(), StoreAccess::read_only);
        const auto runs = store.list_runs();
        return runs.empty() ? 0 : runs.back().steps;
    } catch (const std::exception&) {
        return 0;
    }
}

// Polls `done` until it holds or 60 s pass (a bound for a loaded machine; only a broken run fails it).
bool wait_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

// A run far longer than any test waits for, on spirals (no dataset to find), recorded in `db`.
QStringList long_run(const QString& db) {
    return {"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[64,64]", "--steps", "1000000",
            "--set", "train.eval_every=0", "--db", db, "--json"};
}

// Starts mantissa-cli with the stopping signals at their defaults, whatever the test runner left
// ignored (a shell without job control ignores SIGINT in background jobs), except `ignored`.
std::unique_ptr<QProcess> start_cli(const QStringList& args, int ignored = 0) {
    auto p = std::make_unique<QProcess>();
    p->setChildProcessModifier([ignored] {
        for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, sig == ignored ? SIG_IGN : SIG_DFL);
    });
    p->start(MANTISSA_CLI_PATH, args);
    return p;
}

}  // namespace

class TestCliTrain : public QObject {
    Q_OBJECT
private slots:
    // 800 training rows (1000 spirals, a fifth held out) in batches of 96: 8 full batches and one
    // of 32 an epoch, so 30 steps train 27 × 96 + 3 × 32 = 2688 samples.
    void throughputIsOneFigureEverywhere() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const CliResult r = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "dataset.samples=1000", "--set",
                                     "dataset.test_fraction=0.2", "--set", "train.batch_size=96", "--set",
                                     "model.hidden=[16]", "--set", "train.eval_every=10", "--steps", "30", "--db", db,
                                     "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject summary = QJsonDocument::fromJson(r.out).object();
        const std::int64_t id = summary["run_id"].toInteger();

        std::int64_t samples = 0;
        for (int step = 0; step < 30; ++step) samples += step % 9 == 8 ? 32 : 96;
        QCOMPARE(samples, std::int64_t{2688});

        RunStore store(db.toStdString(), StoreAccess::read_only);
        const std::vector<StepRecord> steps = store.steps(id);
        QCOMPARE(steps.size(), std::size_t{30});
        const double time_s = steps.back().time_s;
        QVERIFY(time_s > 0);
        const double expected = static_cast<double>(samples) / time_s;

        QCOMPARE(summary["samples"].toInteger(), samples);
        QVERIFY2(relative_difference(summary["samples_per_s"].toDouble(), expected) < 1e-9,
                 qPrintable(QString("summary %1, expected %2").arg(summary["samples_per_s"].toDouble()).arg(expected)));

        const RunTotals totals = store.totals(id);
        QCOMPARE(totals.samples.value_or(-1), samples);
        QVERIFY(totals.samples_per_s.has_value());
        QVERIFY2(relative_difference(*totals.samples_per_s, expected) < 1e-9,
                 qPrintable(QString("totals %1, expected %2").arg(*totals.samples_per_s).arg(expected)));

        const CliResult show = run_cli({"show", QString::number(id), "--db", db, "--json"});
        QVERIFY2(show.code == 0, show.err.constData());
        const QJsonObject shown = QJsonDocument::fromJson(show.out).object()["totals"].toObject();
        QCOMPARE(shown["samples"].toInteger(), samples);
        QVERIFY2(relative_difference(shown["samples_per_s"].toDouble(), expected) < 1e-9,
                 qPrintable(QString("show %1, expected %2").arg(shown["samples_per_s"].toDouble()).arg(expected)));
        QVERIFY(!shown.contains("mean_samples_per_s"));  // the biased mean of the step rates is gone

        // The text forms name it alike.
        const CliResult text = run_cli({"show", QString::number(id), "--db", db});
        QVERIFY2(text.out.contains("samples/s (mean over the run)"), text.out.constData());
    }

    // The run is recorded with its network's layers (schema version 4's `layers` table): spirals
    // (2 features) through hidden layers of 16 and 8 to 4 classes, each a linear layer with flat
    // shapes; `show` lists them and `export --table layers` gives them.
    void recordsTheNetworksLayers() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const CliResult r = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "dataset.classes=4", "--set",
                                     "model.hidden=[16,8]", "--set", "train.eval_every=0", "--steps", "3", "--db", db,
                                     "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const std::int64_t id = QJsonDocument::fromJson(r.out).object()["run_id"].toInteger();

        RunStore store(db.toStdString(), StoreAccess::read_only);
        const std::vector<LayerInfo> layers = store.layers(id);
        QCOMPARE(layers.size(), std::size_t{3});
        const std::int64_t widths[] = {2, 16, 8, 4};
        for (std::size_t i = 0; i < 3; ++i) {
            const LayerInfo& l = layers[i];
            QCOMPARE(l.name, "fc" + std::to_string(i + 1));
            QCOMPARE(l.kind, std::string("linear"));
            QCOMPARE(l.in_shape, (SampleShape{widths[i], 1, 1}));
            QCOMPARE(l.out_shape, (SampleShape{widths[i + 1], 1, 1}));
            QCOMPARE(l.parameters, widths[i] * widths[i + 1] + widths[i + 1]);
            QVERIFY(l.takes_precision);
        }

        const CliResult text = run_cli({"show", QString::number(id), "--db", db});
        QVERIFY2(text.code == 0, text.err.constData());
        const QString out = QString::fromUtf8(text.out);
        QVERIFY2(out.contains("\n\nLayers (3, 220 parameters)\n"), qPrintable(out));
        QVERIFY2(out.contains(QRegularExpression(QString::fromUtf8("\n  fc1  linear  2 \u2192 16 +48\n"))),
                 qPrintable(out));
        QVERIFY2(out.contains(QRegularExpression(QString::fromUtf8("\n  fc3  linear  8 \u2192 4 +36\n"))),
                 qPrintable(out));

        const CliResult csv = run_cli({"export", QString::number(id), "--table", "layers", "--db", db});
        QVERIFY2(csv.code == 0, csv.err.constData());
        QCOMPARE(csv.out, QByteArray("layer,name,kind,in_channels,in_height,in_width,out_channels,out_height,out_width,"
                                     "parameters,takes_precision\r\n"
                                     "0,fc1,linear,2,1,1,16,1,1,48,1\r\n"
                                     "1,fc2,linear,16,1,1,8,1,1,136,1\r\n"
                                     "2,fc3,linear,8,1,1,4,1,1,36,1\r\n"));
    }

    // Each stopping signal ends the run as Ctrl-C does: after the current step, recorded
    // `stopped` with every step it took, the summary on stdout, exit 0.
    void stoppingSignalsStopTheRun_data() {
        QTest::addColumn<int>("sig");
        QTest::addColumn<QString>("said");
        QTest::newRow("SIGTERM") << int(SIGTERM) << "SIGTERM: stopping after the current step";
        QTest::newRow("SIGHUP") << int(SIGHUP) << "SIGHUP: stopping after the current step";
        QTest::newRow("SIGINT") << int(SIGINT) << "Ctrl-C (SIGINT): stopping after the current step";
    }
    void stoppingSignalsStopTheRun() {
        QFETCH(int, sig);
        QFETCH(QString, said);
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        auto p = start_cli(long_run(db));
        QVERIFY(p->waitForStarted());
        QVERIFY2(wait_until([&] { return recorded_steps(db) >= 3; }), "the run never recorded 3 steps");
        QCOMPARE(::kill(static_cast<pid_t>(p->processId()), sig), 0);
        QVERIFY2(p->waitForFinished(60'000), "the run did not stop within 60 s of the signal");
        const QByteArray err = p->readAllStandardError();
        QCOMPARE(p->exitStatus(), QProcess::NormalExit);  // not killed by the signal
        QVERIFY2(p->exitCode() == 0, err.constData());
        QVERIFY2(QString::fromUtf8(err).contains(said), err.constData());

        const QJsonObject summary = QJsonDocument::fromJson(p->readAllStandardOutput()).object();
        QCOMPARE(summary["status"].toString(), QString("stopped"));
        const std::int64_t taken = summary["steps"].toInteger();
        QVERIFY(taken >= 3 && taken < 1000000);

        RunStore store(db.toStdString(), StoreAccess::read_only);
        const std::int64_t id = summary["run_id"].toInteger();
        const RunRow row = store.run(id);
        QCOMPARE(row.status, RunStatus::stopped);
        QVERIFY(!row.finished_at.empty());
        QCOMPARE(row.steps, taken);
        const std::vector<StepRecord> steps = store.steps(id);
        QCOMPARE(static_cast<std::int64_t>(steps.size()), taken);
        for (std::size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i].step, static_cast<std::int64_t>(i));
        bool stopped_event = false;
        for (const Event& e : store.events(id)) stopped_event = stopped_event || e.kind == EventKind::run_stopped;
        QVERIFY(stopped_event);
    }

    // Started under nohup (SIGHUP ignored), a hangup does not stop the run; SIGTERM still does.
    void ignoredHangupStaysIgnored() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        auto p = start_cli(long_run(db), SIGHUP);
        QVERIFY(p->waitForStarted());
        QVERIFY(wait_until([&] { return recorded_steps(db) >= 3; }));
        QCOMPARE(::kill(static_cast<pid_t>(p->processId()), SIGHUP), 0);
        const std::int64_t at_hangup = recorded_steps(db);
        QVERIFY2(wait_until([&] { return recorded_steps(db) >= at_hangup + 20; }), "the run stopped on an ignored SIGHUP");
        QCOMPARE(p->state(), QProcess::Running);
        p->terminate();  // SIGTERM
        QVERIFY(p->waitForFinished(60'000));
        QCOMPARE(p->exitStatus(), QProcess::NormalExit);
        QCOMPARE(p->exitCode(), 0);
        QCOMPARE(QJsonDocument::fromJson(p->readAllStandardOutput()).object()["status"].toString(), QString("stopped"));
    }

    // --threads N is backend.threads: the recorded experiment says it and the device its count.
    // A value out of range, or not a number, is exit 2 and one sentence naming the option (the
    // key's own sentence for --set).
    void threadsOption() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const CliResult r = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[8]", "--set",
                                     "backend.threads=3", "--threads", "1", "--steps", "3", "--db", db, "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        RunStore store(db.toStdString(), StoreAccess::read_only);
        const RunRow row = store.run(QJsonDocument::fromJson(r.out).object()["run_id"].toInteger());
        const QJsonObject backend =
            QJsonDocument::fromJson(QByteArray::fromStdString(row.config_json)).object()["backend"].toObject();
        QCOMPARE(backend["threads"].toInt(-1), 1);  // the option, after --set
        QVERIFY2(row.device.find("(1 thread, ") != std::string::npos, row.device.c_str());
    }
    void threadsOutOfRange_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("not a number") << QStringList{"--threads", "abc"}
                                      << "mantissa-cli train: --threads needs a whole number like 1000, not 'abc'\n";
        QTest::newRow("too many") << QStringList{"--threads", "5000"}
                                  << "mantissa-cli train: --threads takes a number from 1 to 1024, or 0 for auto "
                                     "(every hardware thread), not 5000\n";
        QTest::newRow("negative") << QStringList{"--threads=-1"}
                                  << "mantissa-cli train: --threads takes a number from 1 to 1024, or 0 for auto "
                                     "(every hardware thread), not -1\n";
        QTest::newRow("--set") << QStringList{"--set", "backend.threads=5000"}
                               << "mantissa-cli train: backend.threads: must be between 0 and 1024, got 5000\n";
    }
    void threadsOutOfRange() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const CliResult r =
            run_cli(QStringList{"train", "--set", "dataset.kind=spirals", "--steps", "3", "--no-record"} + args);
        QCOMPARE(r.code, 2);
        QCOMPARE(QString::fromUtf8(r.err), message);
        QVERIFY(r.out.isEmpty());
    }

    // A name of spaces alone (an empty cell in every list, a run no name selects) is refused
    // however it is given, as `rename` refuses it; so are sweep options no sweep could take.
    void badNamesAndSweepOptionsAreRefused_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        const QString uuid = "01234567-89ab-cdef-0123-456789abcdef";
        QTest::newRow("--name blank") << QStringList{"--name", "   "}
                                      << "mantissa-cli train: A run's name cannot be blank (white space only); give it "
                                         "a name with at least one other character.\n";
        QTest::newRow("--set name blank") << QStringList{"--set", "name= \t"}
                                          << "mantissa-cli train: name: must have a character other than white space\n";
        QTest::newRow("--sweep-index negative")
            << QStringList{"--sweep", uuid, "--sweep-index=-1"}
            << "mantissa-cli train: --sweep-index is a run's place in its sweep, 0 or more, not -1\n";
        QTest::newRow("--sweep, not recorded")
            << QStringList{"--sweep", uuid, "--sweep-index", "0", "--no-record"}
            << "mantissa-cli train: --sweep records the run as one of a sweep's, which --no-record would not: leave "
               "one out\n";
    }
    void badNamesAndSweepOptionsAreRefused() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const QStringList store = args.contains("--no-record") ? QStringList{} : QStringList{"--db", db};
        const CliResult r = run_cli(QStringList{"train", "--set", "dataset.kind=spirals", "--steps", "3"} + store + args);
        QCOMPARE(r.code, 2);
        QCOMPARE(QString::fromUtf8(r.err), message);
        QVERIFY(!QFile::exists(db) || RunStore(db.toStdString(), StoreAccess::read).list_runs().empty());
    }

    // A sweep's run goes where its sweep is: a place of its plan, not one done already (the recipe
    // table would show it in another run's row), nor a sweep the store does not hold; a store
    // with no sweep at all is a Slurm task's, which names the main store's sweep.
    void aSweepsRunGoesToAFreePlaceOfItsSweep() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const QString task_db = dir.filePath("task-0.sqlite");
        std::string uuid;
        {
            RunStore store(db.toStdString());
            SweepInfo info;
            info.name = "recipes";
            info.runs_planned = 2;
            uuid = store.create_sweep(info).uuid;
        }
        const auto train = [&](const QString& store, const QString& sweep, const QString& index) {
            return run_cli({"train", "--set", "dataset.kind=spirals", "--steps", "3", "--db", store, "--sweep", sweep,
                            "--sweep-index", index});
        };
        const QString sweep = QString::fromStdString(uuid);
        CliResult r = train(db, sweep, "2");
        QCOMPARE(r.code, 2);
        QCOMPARE(QString::fromUtf8(r.err), "mantissa-cli train: --sweep-index 2 is beyond sweep 1 (\"recipes\"), whose "
                                           "2 runs are numbered from 0 to 1\n");
        r = train(db, "01234567-89ab-cdef-0123-456789abcdef", "0");
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--sweep 01234567-89ab-cdef-0123-456789abcdef names no sweep of the run store"),
                 r.err.constData());
        r = train(db, sweep, "1");
        QVERIFY2(r.code == 0, r.err.constData());
        r = train(db, sweep, "1");
        QCOMPARE(r.code, 2);
        QCOMPARE(QString::fromUtf8(r.err), "mantissa-cli train: run 1 of sweep 1 (\"recipes\") is recorded already, as "
                                           "run 1 (completed); `mantissa-cli sweep run` trains the places still to be "
                                           "done\n");
        r = train(task_db, sweep, "0");
        QVERIFY2(r.code == 0, r.err.constData());
        RunStore store(db.toStdString(), StoreAccess::read);
        QCOMPARE(store.list_runs().size(), std::size_t{1});
    }

    // MANTISSA_CPU_THREADS is held to the option's range: one sentence naming the variable, exit 2,
    // before anything trains (it was skipped above 1024, and passed over when not a number).
    void threadsVariableChecked_data() {
        QTest::addColumn<QString>("value");
        QTest::newRow("too many") << "100000";
        QTest::newRow("not a number") << "abc";
        QTest::newRow("negative") << "-2";
    }
    void threadsVariableChecked() {
        QFETCH(QString, value);
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("MANTISSA_CPU_THREADS", value);
        p.setProcessEnvironment(env);
        p.start(MANTISSA_CLI_PATH, {"train", "--set", "dataset.kind=spirals", "--steps", "1", "--no-record"});
        QVERIFY(p.waitForFinished(60'000));
        QCOMPARE(p.exitCode(), 2);
        QCOMPARE(QString::fromUtf8(p.readAllStandardError()),
                 "mantissa-cli train: MANTISSA_CPU_THREADS is \"" + value +
                     "\", but it takes the CPU backend's threads, a whole number from 1 to 1024 (0: as if unset); set "
                     "it to one, or unset it.\n");
        QVERIFY(p.readAllStandardOutput().isEmpty());
    }

    // Threads in the documented range train a model whose weight gradient (4096 × 4096 over a
    // batch of 2048) oneDNN would otherwise split over the threads with a copy of the result each
    // (tens of GB at 1024 threads: std::bad_alloc, exit 1).
    void manyThreadsTrain() {
        const CliResult r = run_cli({"train", "--threads", "1024", "--steps", "1", "--no-record", "--set",
                                     "dataset.kind=spirals", "--set", "dataset.samples=3000", "--set",
                                     "train.batch_size=2048", "--set", "model.hidden=[4096,4096]", "--set",
                                     "train.eval_every=0", "--set", "train.what_if.formats=[]", "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(QJsonDocument::fromJson(r.out).object()["status"].toString(), QString("completed"));
    }

    // Where the store's checkpoint folders go (runs.checkpoints) is a file: the run trains to the
    // end, but says, as it happens, that each checkpoint could not be written, naming the folder
    // and why (the store's event too, in the same words, not std::filesystem's), and exits 1 as a
    // run whose record is incomplete does.
    void lostCheckpointsAreSaid() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const QString folders = dir.filePath("runs.checkpoints");  // the store's checkpoint folders (store/run_store.h)
        QFile blocker(folders);
        QVERIFY(blocker.open(QIODevice::WriteOnly) && blocker.write("x\n") == 2);
        blocker.close();
        const CliResult r = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[8]", "--set",
                                     "train.checkpoint_every=5", "--steps", "20", "--db", db, "--json"});
        QCOMPARE(r.code, 1);
        const QJsonObject out = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(out["status"].toString(), QString("completed"));
        QCOMPARE(out["steps"].toInt(), 20);
        const QString why = "cannot be made, because " + folders + " is a file, not a folder.";
        const QJsonArray notices = out["notices"].toArray();
        QCOMPARE(notices.size(), 2);  // the reason once, then how many in all
        QVERIFY2(notices[0].toString().startsWith("No checkpoint at step 5: the checkpoint folder " + folders + "/") &&
                     notices[0].toString().endsWith(why),
                 qPrintable(notices[0].toString()));
        QCOMPARE(notices[1].toString(), QString("4 of the run's checkpoints could not be written, the last at step 20."));
        const QString err = QString::fromUtf8(r.err);
        QCOMPARE(err, "warning: " + notices[0].toString() + "\nwarning: " + notices[1].toString() + "\n");

        RunStore store(db.toStdString(), StoreAccess::read_only);
        int failed = 0;
        for (const Event& e : store.events(out["run_id"].toInteger())) {
            if (e.message.find("No checkpoint") == std::string::npos) continue;
            ++failed;
            QVERIFY2(QString::fromStdString(e.message).endsWith(why), e.message.c_str());
            QVERIFY2(e.message.find("filesystem error") == std::string::npos, e.message.c_str());
        }
        QCOMPARE(failed, 4);  // steps 5, 10, 15, 20: the end's is not tried twice
        QVERIFY(store.checkpoints(out["run_id"].toInteger()).empty());
    }

    // --device with the auto backend where that GPU is not usable: the run trains on the CPU and
    // says once that the device was ignored (a machine with 256 GPUs is not expected).
    void ignoredDeviceIsANotice() {
        const CliResult r = run_cli({"train", "--device", "255", "--set", "dataset.kind=spirals", "--set",
                                     "model.hidden=[8]", "--steps", "2", "--no-record", "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject out = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(out["backend"].toString(), QString("cpu"));
        const QString notice = "backend.device 255 was ignored: GPU 255 is not usable here (`mantissa-cli devices` says "
                               "why), so this run (backend auto) trains on the CPU.";
        QCOMPARE(out["notices"].toArray(), QJsonArray{notice});
        QCOMPARE(QString::fromUtf8(r.err), "mantissa-cli train: warning: " + notice + "\n");
    }

    // OpenMP's workers wait passively (the program set OMP_WAIT_POLICY and executed itself again,
    // keeping its process id and its name), unless the person who started it chose a policy.
    void openmpWaitsPassivelyUnlessTold_data() {
        QTest::addColumn<QString>("given");
        QTest::addColumn<QString>("expected");
        QTest::addColumn<QString>("spin");  // GOMP_SPINCOUNT: a short spin before sleeping, when the policy is ours
        QTest::newRow("unset") << QString() << "passive" << "30000";
        QTest::newRow("active") << "active" << "active" << QString();
    }
    void openmpWaitsPassivelyUnlessTold() {
        QFETCH(QString, given);
        QFETCH(QString, expected);
        QFETCH(QString, spin);
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("OMP_WAIT_POLICY");
        env.remove("GOMP_SPINCOUNT");
        if (!given.isEmpty()) env.insert("OMP_WAIT_POLICY", given);
        p.setProcessEnvironment(env);
        p.setChildProcessModifier([] {
            for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
        });
        p.start(MANTISSA_CLI_PATH, long_run(db));
        QVERIFY(p.waitForStarted());
        QVERIFY2(wait_until([&] { return recorded_steps(db) >= 1; }), "the run never recorded a step");
        const QString proc = QString("/proc/%1/").arg(p.processId());
        QFile environment(proc + "environ"), comm(proc + "comm");  // the environment it was executed with
        QVERIFY(environment.open(QIODevice::ReadOnly) && comm.open(QIODevice::ReadOnly));
        const QList<QByteArray> variables = environment.readAll().split('\0');
        QVERIFY(variables.contains(("OMP_WAIT_POLICY=" + expected).toUtf8()));
        QCOMPARE(variables.contains(("GOMP_SPINCOUNT=" + spin).toUtf8()), !spin.isEmpty());
        QCOMPARE(comm.readAll().trimmed(), QByteArray("mantissa-cli"));
        QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGTERM), 0);  // the pid it started with
        QVERIFY(p.waitForFinished(60'000));
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 0);
        QCOMPARE(QJsonDocument::fromJson(p.readAllStandardOutput()).object()["status"].toString(), QString("stopped"));
    }

    // A dataset folder that is not there: the run trains on spirals, and says so first, as a
    // warning on stderr, and in the JSON.
    void datasetFallbackIsAWarning() {
        QTemporaryDir dir;
        const QString missing = dir.filePath("no-such-folder");
        const CliResult r = run_cli({"train", "--set", "dataset.kind=mnist", "--set", "dataset.path=" + missing,
                                     "--set", "model.hidden=[8]", "--steps", "3", "--no-record", "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.startsWith("mantissa-cli train: warning: MNIST was not found at " + missing), r.err.constData());
        QVERIFY2(err.contains("spirals"), r.err.constData());
        const QJsonArray notices = QJsonDocument::fromJson(r.out).object()["notices"].toArray();
        QCOMPARE(notices.size(), 1);
        QVERIFY(notices[0].toString().startsWith("MNIST was not found at " + missing));
        QVERIFY(err.contains(notices[0].toString()));

        // A run with nothing to say has an empty list.
        const CliResult quiet = run_cli({"train", "--set", "dataset.kind=spirals", "--set", "model.hidden=[8]", "--steps",
                                         "3", "--no-record", "--json"});
        QVERIFY2(quiet.code == 0, quiet.err.constData());
        QVERIFY(quiet.err.isEmpty());
        const QJsonValue none = QJsonDocument::fromJson(quiet.out).object()["notices"];
        QVERIFY(none.isArray() && none.toArray().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestCliTrain)
#include "test_cli_train.moc"
