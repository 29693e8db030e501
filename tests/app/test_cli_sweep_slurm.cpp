// mantissa-cli sweep --slurm on a real one-node Slurm cluster started by the test (slurm_cluster.h):
// a 4-task job array is written and submitted with sbatch, runs, and `sweep collect` imports the
// four task stores (a second collect adds nothing); a task that cannot start (its model too large
// for the machine) shows FAILED in `sweep status` and is recorded failed with its sentence; a task
// cancelled with scancel shows CANCELLED and its run, stopped by Slurm's SIGTERM, is recorded
// `stopped`; submitting those two again into a partition sbatch refuses collects the stopped run
// first and leaves the folder (task stores, checkpoints, logs, script) byte for byte as it was, and
// once sbatch takes the array the old task stores are gone. Skipped, with the reason, without Slurm and munge.
#include <QtTest>

#include <memory>

#include <nlohmann/json.hpp>

#include "error.h"
#include "run_cli.h"
#include "slurm_cluster.h"
#include "store/run_store.h"

using namespace mantissa;

namespace {

QStringList small(int steps) {
    return {"--set", "dataset.kind=spirals", "--set", "train.batch_size=64", "--steps", QString::number(steps),
            "--set", "backend.kind=cpu", "--set", "train.eval_every=0"};
}

}  // namespace

class TestCliSweepSlurm : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        m_cluster = std::make_unique<SlurmCluster>();
        if (!m_cluster->installed()) QSKIP(qPrintable(SlurmCluster::skip_prefix + m_cluster->why()));
        QVERIFY2(m_cluster->ok(), qPrintable(m_cluster->why()));
    }
    void cleanupTestCase() { m_cluster.reset(); }

    void arraySubmittedRunAndCollected() {
        const QString db = m_cluster->root() + "/main.sqlite";
        const QString folder = m_cluster->folder() + "/grid";
        CliResult r = sweep(QStringList{"sweep", "--slurm", "--partition", m_cluster->partition(), "--time", "10",
                                        "--cpus-per-task", "1", "--folder", folder, "--recipes", "fp32,bf16", "--grid",
                                        "train.lr=1e-3,3e-3", "--name", "grid", "--db", db} + small(40));
        QVERIFY2(r.code == 0 && r.out.contains("4 tasks"), (r.out + r.err).constData());
        const QString job = job_of(db);
        QVERIFY(!job.isEmpty());
        QFile f(folder + "/sweep.sbatch");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY2(text.contains("#SBATCH --array=0,1,2,3") && text.contains("#SBATCH --partition='debug'") &&
                     text.contains("#SBATCH --time='10'") && text.contains("#SBATCH --open-mode=append"),
                 text.constData());
        const auto states = m_cluster->wait_finished(job);
        QCOMPARE(states.size(), 4);
        for (const QString& s : states) QCOMPARE(s, QString("COMPLETED"));

        r = sweep({"sweep", "status", "grid", "--db", db});
        QVERIFY2(r.code == 0 && r.out.count("COMPLETED") == 4, r.out.constData());
        r = sweep({"sweep", "collect", "grid", "--db", db});
        QVERIFY2(r.code == 0 && r.out.contains("Collected 4 new runs from 4 task stores"), r.out.constData());
        r = sweep({"sweep", "collect", "grid", "--db", db});
        QVERIFY2(r.code == 0 && r.out.contains("Collected 0 new runs") && r.out.contains("4 already here"), r.out.constData());
        r = sweep({"sweep", "show", "grid", "--db", db, "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const auto table = nlohmann::json::parse(r.out.constData());
        QCOMPARE(table.at("runs").size(), std::size_t{4});
        for (const auto& row : table.at("runs")) QCOMPARE(row.at("status").get<std::string>(), std::string("completed"));
        QCOMPARE(table.at("executor").get<std::string>(), std::string("slurm"));
    }

    void failedAndCancelledTasks() {
        const QString db = m_cluster->root() + "/main2.sqlite";
        const QString folder = m_cluster->folder() + "/mixed";
        // Task 0 trains for long (cancelled below), task 1 cannot start: its model does not fit.
        CliResult r = sweep(QStringList{"sweep", "--slurm", "--folder", folder, "--grid",
                                        "model.hidden=[[16],[65536,65536,65536]]", "--name", "mixed", "--db", db} +
                            small(1000000));
        QVERIFY2(r.code == 0, (r.out + r.err).constData());
        const QString job = job_of(db);
        // Until task 0 has recorded steps in its store.
        bool going = false;
        for (int i = 0; i < 240 && !going; ++i) {
            QThread::msleep(250);
            const std::string task = (folder + "/task-0.sqlite").toStdString();
            if (!QFile::exists(QString::fromStdString(task))) continue;
            try {
                RunStore store(task, StoreAccess::read_only);
                const auto runs = store.list_runs();
                going = !runs.empty() && runs[0].steps > 20;
            } catch (const Error&) {
            }
        }
        QVERIFY(going);
        const CliResult cancel = m_cluster->run("scancel", {job + "_0"});
        QCOMPARE(cancel.code, 0);
        const auto states = m_cluster->wait_finished(job);
        QCOMPARE(states.value(job + "_0"), QString("CANCELLED"));
        QCOMPARE(states.value(job + "_1"), QString("FAILED"));

        r = sweep({"sweep", "status", "mixed", "--db", db});
        QVERIFY2(r.out.contains("CANCELLED") && r.out.contains("FAILED"), r.out.constData());

        // Submitted again before any collect, into a partition sbatch refuses: exit 2, and the
        // folder (the task stores with their runs, checkpoints and logs, the script) byte for byte
        // as it was.
        const QMap<QString, QByteArray> before = files_in(folder);
        QVERIFY2(before.contains("task-0.sqlite"), qPrintable(QStringList(before.keys()).join(", ")));
        r = sweep({"sweep", "run", "mixed", "--partition", "nosuch", "--db", db});
        QVERIFY2(r.code == 2 && r.err.contains("sbatch refused the sweep's job array") && r.err.count('\n') == 1,
                 (r.out + r.err).constData());
        const QMap<QString, QByteArray> after = files_in(folder);
        QCOMPARE(QStringList(after.keys()), QStringList(before.keys()));
        for (auto it = before.begin(); it != before.end(); ++it)
            QVERIFY2(after.value(it.key()) == it.value(), qPrintable(it.key() + " changed"));
        QCOMPARE(job_of(db), job);
        {
            // The stopped run of the task it meant to replace was collected first: never lost.
            RunStore main(db.toStdString(), StoreAccess::read);
            const auto collected = main.sweep_runs(main.resolve_sweep("mixed"));
            QCOMPARE(collected.size(), std::size_t{1});
            QCOMPARE(collected[0].status, RunStatus::stopped);
        }

        r = sweep({"sweep", "collect", "mixed", "--db", db});
        QVERIFY2(r.code == 0, r.err.constData());
        RunStore store(db.toStdString(), StoreAccess::read);
        const auto runs = store.sweep_runs(store.resolve_sweep("mixed"));
        QCOMPARE(runs.size(), std::size_t{2});
        QCOMPARE(runs[0].status, RunStatus::stopped);  // SIGTERM from scancel: stopped after its step
        QCOMPARE(runs[1].status, RunStatus::failed);
        QVERIFY2(QString::fromStdString(runs[1].error).contains("more than this machine"), runs[1].error.c_str());

        // Taken (held, so it never runs): the old task stores are gone, nothing is left aside, and
        // the checkpoints the collected runs name stay.
        r = sweep({"sweep", "run", "mixed", "--sbatch-arg=--hold", "--db", db});
        QVERIFY2(r.code == 0, (r.out + r.err).constData());
        const QString held = job_of(db);
        QVERIFY(held != job);
        QCOMPARE(m_cluster->run("scancel", {held}).code, 0);
        const QMap<QString, QByteArray> replaced = files_in(folder);
        for (const QString& f : replaced.keys())
            QVERIFY2(!f.startsWith("task-0.sqlite") && !f.startsWith("task-1.sqlite"), qPrintable(f));
        for (const QString& f : before.keys())
            if (f.startsWith("task-0.checkpoints/")) QVERIFY2(replaced.contains(f), qPrintable(f));
    }

private:
    CliResult sweep(const QStringList& args) const {
        QProcess p;
        p.setProcessEnvironment(m_cluster->environment());
        p.start(MANTISSA_CLI_PATH, args);
        if (!p.waitForFinished(120'000)) {
            p.kill();
            p.waitForFinished();
        }
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(), p.readAllStandardError()};
    }
    // Every file under `folder` (relative path -> its bytes).
    static QMap<QString, QByteArray> files_in(const QString& folder) {
        QMap<QString, QByteArray> files;
        QDirIterator it(folder, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            QFile f(it.next());
            if (f.open(QIODevice::ReadOnly)) files.insert(QDir(folder).relativeFilePath(f.fileName()), f.readAll());
        }
        return files;
    }
    static QString job_of(const QString& db) {
        RunStore store(db.toStdString(), StoreAccess::read);
        const auto sweeps = store.list_sweeps();
        return sweeps.empty() ? QString() : QString::fromStdString(sweeps.front().slurm_job);
    }

    std::unique_ptr<SlurmCluster> m_cluster;
};

QTEST_GUILESS_MAIN(TestCliSweepSlurm)
#include "test_cli_sweep_slurm.moc"
