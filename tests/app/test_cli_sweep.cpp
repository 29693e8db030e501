// mantissa-cli sweep, run as a person runs it: --dry-run lists the plan and records nothing; a local
// sweep with --jobs 2 records every planned run with its sweep and index, each completed with the
// recipe's settings, and `sweep show --json` gives the recipe table with its Pareto marks; running
// it again runs nothing; SIGINT stops every run (each recorded `stopped`) and `sweep run` resumes
// them from their checkpoints to completion; a run that cannot start fails the sweep (exit 1) with
// its own sentence; bad recipes and grids are exit 2, and so is a grid value every run would refuse
// as it starts (a layer the model lacks), before anything is recorded, dry run or not; a Slurm
// submission that sbatch refuses, or that finds no sbatch, is exit 2 with one sentence and leaves
// no sweep and no folder behind, and --cpus-per-task 0 is refused before sbatch is asked.
#include <QtTest>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "error.h"
#include "run_cli.h"
#include "store/run_store.h"

using namespace mantissa;

namespace {

QStringList small(int steps) {
    return {"--set", "dataset.kind=spirals", "--set", "train.batch_size=64", "--steps", QString::number(steps),
            "--set", "backend.kind=cpu", "--set", "train.eval_every=0"};
}

nlohmann::json table(const QString& db, const QString& sweep) {
    const CliResult r = run_cli({"sweep", "show", sweep, "--db", db, "--json"});
    if (r.code != 0) return nlohmann::json();
    return nlohmann::json::parse(r.out.constData(), nullptr, false);
}

}  // namespace

class TestCliSweep : public QObject {
    Q_OBJECT
private slots:
    void dryRunRecordsNothing() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const CliResult r = run_cli(QStringList{"sweep", "--dry-run", "--recipes", "standard", "--grid", "train.lr=1e-3,3e-3",
                                                "--db", db} + small(10));
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY(r.out.contains("12 runs"));
        QVERIFY(r.out.contains("fp8 · train.lr=3e-3"));
        QVERIFY(!std::filesystem::exists(db.toStdString()));
    }

    void localSweepRecordsEveryRun() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        CliResult r = run_cli(QStringList{"sweep", "--recipes", "fp32,bf16,fp16", "--grid", "train.lr=1e-3,3e-3", "--jobs", "2",
                                          "--name", "lr", "--db", db} + small(60));
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(r.out.contains("Wall time") && r.out.contains("2 at once"), r.out.constData());
        const nlohmann::json t = table(db, "lr");
        QCOMPARE(t.at("runs").size(), std::size_t{6});
        int pareto = 0;
        for (const auto& row : t.at("runs")) {
            QCOMPARE(row.at("status").get<std::string>(), std::string("completed"));
            QCOMPARE(row.at("steps").get<int>(), 60);
            pareto += row.at("pareto").get<bool>();
        }
        QVERIFY(pareto >= 1);
        QCOMPARE(t.at("runs")[3].at("label").get<std::string>(), std::string("bf16 · train.lr=3e-3"));
        {
            RunStore store(db.toStdString(), StoreAccess::read);
            const auto sweeps = store.list_sweeps();
            QCOMPARE(sweeps.size(), std::size_t{1});
            const auto runs = store.sweep_runs(sweeps[0].id);
            QCOMPARE(runs.size(), std::size_t{6});
            for (std::size_t i = 0; i < runs.size(); ++i) QCOMPARE(runs[i].sweep_index, std::optional<std::int64_t>(i));
            const auto config = nlohmann::json::parse(runs[5].config_json);
            QCOMPARE(config.at("precision").at("autocast").get<std::string>(), std::string("fp16"));
            QCOMPARE(config.at("precision").at("loss_scaling").at("mode").get<std::string>(), std::string("dynamic"));
            QCOMPARE(config.at("train").at("lr").get<double>(), 3e-3);
        }
        r = run_cli({"sweep", "run", "lr", "--db", db});
        QVERIFY2(r.code == 0 && r.out.contains("nothing to run"), r.out.constData());
        r = run_cli({"sweep", "show", "lr", "--db", db});
        QVERIFY2(r.code == 0 && r.out.contains("fp16 · train.lr=1e-3") && r.out.contains("Pareto front"), r.out.constData());
        r = run_cli({"sweep", "list", "--db", db});
        QVERIFY2(r.code == 0 && r.out.contains("lr"), r.out.constData());
        r = run_cli({"sweep", "list", "--json", "--db", db});
        QCOMPARE(r.code, 0);
        const auto list = nlohmann::json::parse(r.out.toStdString());
        QCOMPARE(list.size(), std::size_t{1});
        QCOMPARE(list[0].at("name").get<std::string>(), std::string("lr"));
        QCOMPARE(list[0].at("executor").get<std::string>(), std::string("local"));
        QCOMPARE(list[0].at("runs_planned").get<int>(), 6);
        QCOMPARE(list[0].at("runs_completed").get<int>(), 6);
        QVERIFY(list[0].at("slurm_job").is_null());
        // Each action takes its own options: one for another place is refused, not ignored.
        r = run_cli({"sweep", "run", "lr", "--partition", "gpu", "--db", db});
        QVERIFY2(r.code == 2 && r.err.contains("--partition is for a sweep on Slurm; sweep 1 runs on this machine"),
                 r.err.constData());
        r = run_cli({"sweep", "status", "lr", "--json", "--db", db});
        QVERIFY2(r.code == 2 && r.err.contains("--json is not an option of sweep status (it takes --db)"), r.err.constData());
    }

    void stoppedSweepContinues() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        QProcess p;
        p.start(MANTISSA_CLI_PATH, QStringList{"sweep", "--recipes", "fp32,bf16", "--jobs", "2", "--name", "long", "--db", db} +
                                       small(200000) + QStringList{"--set", "train.checkpoint_every=50"});
        QVERIFY(p.waitForStarted());
        // Until both runs have taken steps.
        bool going = false;
        for (int i = 0; i < 300 && !going; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            if (!std::filesystem::exists(db.toStdString())) continue;
            try {
                RunStore store(db.toStdString(), StoreAccess::read);
                const auto sweeps = store.list_sweeps();
                if (sweeps.empty()) continue;
                const auto runs = store.sweep_runs(sweeps[0].id);
                going = runs.size() == 2 && runs[0].steps > 100 && runs[1].steps > 100;
            } catch (const Error&) {
                // The sweep's process is creating the store right now (an empty database yet).
            }
        }
        QVERIFY(going);
        ::kill(static_cast<pid_t>(p.processId()), SIGINT);
        QVERIFY(p.waitForFinished(60'000));
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(p.readAllStandardOutput().contains("sweep run"), "no hint to continue");
        std::vector<std::int64_t> steps;
        {
            RunStore store(db.toStdString(), StoreAccess::read);
            for (const RunRow& r : store.sweep_runs(store.list_sweeps()[0].id)) {
                QCOMPARE(r.status, RunStatus::stopped);
                steps.push_back(r.steps);
            }
        }
        // Continued: the same runs resume from their checkpoints (shortened here to finish: the
        // resumed runs are stopped again by a second SIGINT once they have gone on).
        QProcess again;
        again.start(MANTISSA_CLI_PATH, {"sweep", "run", "long", "--jobs", "2", "--db", db});
        QVERIFY(again.waitForStarted());
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));
        ::kill(static_cast<pid_t>(again.processId()), SIGINT);
        QVERIFY(again.waitForFinished(60'000));
        RunStore store(db.toStdString(), StoreAccess::read);
        const auto runs = store.sweep_runs(store.list_sweeps()[0].id);
        QCOMPARE(runs.size(), std::size_t{2});  // continued, not started anew
        for (std::size_t i = 0; i < runs.size(); ++i) QVERIFY(runs[i].steps > steps[i]);
    }

    void failuresAndRefusals() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        // One grid value makes a model too large for the machine: that run fails before training.
        CliResult r = run_cli(QStringList{"sweep", "--grid", "model.hidden=[[16],[65536,65536,65536]]", "--db", db} + small(5));
        QCOMPARE(r.code, 1);
        QVERIFY2(r.out.contains("run 1 failed") && r.out.contains("more than this machine"), r.out.constData());
        r = run_cli(QStringList{"sweep", "--recipes", "fp4", "--db", db} + small(5));
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("There is no recipe \"fp4\""), r.err.constData());
        r = run_cli(QStringList{"sweep", "--grid", "train.lr", "--db", db} + small(5));
        QCOMPARE(r.code, 2);
        r = run_cli({"sweep", "show", "nosuch", "--db", db});
        QCOMPARE(r.code, 2);
    }

    // A grid value that every run would refuse as it starts (a layer the model does not have) is
    // refused while the sweep is planned: one sentence naming the run and the layer, exit 2, no
    // store, no sweep, no run; a dry run says the same.
    void gridValueRefusedAsRunsWouldRefuseIt() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        for (const bool dry : {true, false}) {
            QStringList args = QStringList{"sweep", "--grid", "precision.layers.fc9=fp16,bf16", "--db", db} + small(2);
            if (dry) args << "--dry-run";
            const CliResult r = run_cli(args);
            QCOMPARE(r.code, 2);
            QCOMPARE(QString::fromUtf8(r.err),
                     QString("mantissa-cli sweep: Run 0 of the sweep (precision.layers.fc9=fp16) cannot start: "
                             "precision.layers.fc9: the model has no layer \"fc9\" (its layers are fc1..fc3).\n"));
            QVERIFY(r.out.isEmpty());
            QVERIFY(!std::filesystem::exists(db.toStdString()));
            QVERIFY(!std::filesystem::exists(dir.filePath("runs.sweeps").toStdString()));
        }
        // A layer only some points have: the first run without it is named.
        const CliResult r = run_cli(QStringList{"sweep", "--set", "precision.layers.fc3=fp16", "--grid",
                                                "model.hidden=[[16,16],[16]]", "--dry-run"} + small(2));
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("Run 1 of the sweep (model.hidden=[16]) cannot start: precision.layers.fc3: the model "
                                "has no layer \"fc3\""),
                 r.err.constData());
    }

    // sbatch refusing the array (a stand-in that says four lines on stderr and exits 1), or not
    // installed: exit 2, one sentence with sbatch's first line at most, and the store and the
    // folder as they were, however often it is tried.
    void failedSlurmSubmissionLeavesNothing() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const QString bin = dir.filePath("bin");
        QVERIFY(QDir().mkpath(bin));
        QFile sbatch(bin + "/sbatch");
        QVERIFY(sbatch.open(QIODevice::WriteOnly));
        sbatch.write("#!/bin/sh\n"
                     "echo 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2\n"
                     "echo 'sbatch: error: second line' >&2\necho 'sbatch: error: third line' >&2\n"
                     "echo 'sbatch: error: fourth line' >&2\nexit 1\n");
        sbatch.close();
        QVERIFY(sbatch.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
        const QString empty = dir.filePath("empty");  // a PATH without sbatch
        QVERIFY(QDir().mkpath(empty));
        const auto submit = [&](const QString& path, const QStringList& more = {}) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert("PATH", path);
            p.setProcessEnvironment(env);
            p.start(MANTISSA_CLI_PATH, QStringList{"sweep", "--slurm", "--folder", dir.filePath("tasks/a"), "--db", db} +
                                           small(2) + more);
            p.waitForFinished(60'000);
            return CliResult{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
                             p.readAllStandardError()};
        };
        const QString refusing = bin + ":" + qEnvironmentVariable("PATH");
        for (int attempt = 0; attempt < 2; ++attempt) {
            const CliResult r = submit(refusing);
            QCOMPARE(r.code, 2);
            QCOMPARE(QString::fromUtf8(r.err),
                     QString("mantissa-cli sweep: sbatch refused the sweep's job array: sbatch: error: Batch job "
                             "submission failed: Invalid partition name specified.\n"));
            RunStore store(db.toStdString(), StoreAccess::read);
            QVERIFY(store.list_sweeps().empty());
            QVERIFY(!std::filesystem::exists(dir.filePath("tasks").toStdString()));
        }
        CliResult r = submit(empty);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.startsWith("mantissa-cli sweep: sbatch could not be run") && r.err.count('\n') == 1, r.err.constData());
        QVERIFY(!std::filesystem::exists(dir.filePath("tasks").toStdString()));
        // The default folder beside the store too.
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("PATH", refusing);
        p.setProcessEnvironment(env);
        p.start(MANTISSA_CLI_PATH, QStringList{"sweep", "--slurm", "--db", db} + small(2));
        QVERIFY(p.waitForFinished(60'000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(!std::filesystem::exists(dir.filePath("runs.sweeps").toStdString()));
        {
            RunStore store(db.toStdString(), StoreAccess::read);
            QVERIFY(store.list_sweeps().empty());
        }
        // A task needs a CPU: refused before sbatch is asked (this one would say it refused).
        r = submit(refusing, {"--cpus-per-task", "0"});
        QCOMPARE(r.code, 2);
        QCOMPARE(QString::fromUtf8(r.err),
                 QString("mantissa-cli sweep: --cpus-per-task must be between 1 and 4096 (a task needs a CPU), not 0\n"));
    }
};

QTEST_GUILESS_MAIN(TestCliSweep)
#include "test_cli_sweep.moc"
