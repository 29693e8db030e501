// The one-node Slurm cluster the sweep tests run on (slurm_cluster.h), proved with real Slurm: a
// 4-task job array writes one file per task in the shared folder, a task exiting 3 shows as FAILED
// with its exit code, a cancelled task as CANCELLED with its processes gone, and a cluster stopped
// leaves no process, folder or port behind, so a second one starts on the same ports. Job states are
// read from squeue, scontrol and the job-completion log: there is no accounting database, so sacct
// has nothing to report (checked too, so that docs/sweeps.md is changed if that changes).
// Skipped, with the reason, where Slurm and munge are not installed.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QTextStream>

#include <memory>

#include "slurm_cluster.h"

namespace {

bool write_script(const QString& path, const QString& body) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    f.write("#!/bin/sh\n" + body.toUtf8() + "\n");
    f.close();
    return f.setPermissions(f.permissions() | QFile::ExeOwner | QFile::ExeGroup | QFile::ExeOther);
}

QByteArray read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QString describe(const QMap<QString, QString>& states) {
    QStringList parts;
    for (auto it = states.begin(); it != states.end(); ++it) parts << it.key() + "=" + it.value();
    return parts.isEmpty() ? QStringLiteral("(no state)") : parts.join(' ');
}

}  // namespace

class TestSlurmCluster : public QObject {
    Q_OBJECT
    std::unique_ptr<SlurmCluster> m_cluster;

    // sbatch with the job's output and working folder in the shared folder; the job id, or a failure.
    QString submit(const QStringList& args) {
        QString error;
        const QString id = m_cluster->submit(
            QStringList{"--chdir=" + m_cluster->folder(), "--output=" + m_cluster->folder() + "/slurm-%A_%a.out"} +
                args,
            &error);
        if (id.isEmpty()) qWarning("sbatch failed: %s", qPrintable(error));
        return id;
    }

private slots:
    void initTestCase() {
        m_cluster = std::make_unique<SlurmCluster>();
        if (!m_cluster->installed()) QSKIP(qPrintable(SlurmCluster::skip_prefix + m_cluster->why()));
        QVERIFY2(m_cluster->ok(), qPrintable(m_cluster->why()));
    }

    void cleanupTestCase() { m_cluster.reset(); }

    // sbatch --array=0-3: every task runs with its own SLURM_ARRAY_TASK_ID and writes to the shared folder.
    void arrayOfFour() {
        const QString dir = m_cluster->folder();
        QVERIFY(write_script(dir + "/task.sh", "echo \"$SLURM_ARRAY_TASK_ID\" > \"$1/task_$SLURM_ARRAY_TASK_ID.txt\""));
        const QString id = submit({"--array=0-3", dir + "/task.sh", dir});
        QVERIFY(!id.isEmpty());
        const QMap<QString, QString> states = m_cluster->wait_finished(id);
        QCOMPARE(states.keys(), (QStringList{id + "_0", id + "_1", id + "_2", id + "_3"}));
        for (const QString& state : states) QVERIFY2(state == "COMPLETED", qPrintable(describe(states)));
        for (int i = 0; i < 4; ++i)
            QCOMPARE(read_all(dir + QStringLiteral("/task_%1.txt").arg(i)), QByteArray::number(i) + "\n");

        QStringList logged;
        for (const auto& record : m_cluster->completions())
            if (record.value("ArrayJobId") == id) {
                QCOMPARE(record.value("JobState"), QStringLiteral("COMPLETED"));
                logged << record.value("ArrayTaskId");
            }
        logged.sort();
        QCOMPARE(logged, (QStringList{"0", "1", "2", "3"}));
    }

    // A task that exits 3: FAILED with ExitCode 3:0 in squeue, scontrol and the completion log.
    void failedTask() {
        const QString dir = m_cluster->folder();
        QVERIFY(write_script(dir + "/fail.sh", "exit 3"));
        const QString id = submit({dir + "/fail.sh"});
        QVERIFY(!id.isEmpty());
        const QMap<QString, QString> states = m_cluster->wait_finished(id);
        QCOMPARE(states.value(id), QStringLiteral("FAILED"));
        const QMap<QString, QString> info = m_cluster->job_info(id);
        QCOMPARE(info.value("JobState"), QStringLiteral("FAILED"));
        QCOMPARE(info.value("ExitCode"), QStringLiteral("3:0"));
        bool logged = false;
        for (const auto& record : m_cluster->completions())
            if (record.value("JobId") == id) {
                QCOMPARE(record.value("JobState"), QStringLiteral("FAILED"));
                QCOMPARE(record.value("ExitCode"), QStringLiteral("3:0"));
                logged = true;
            }
        QVERIFY(logged);
    }

    // scancel of a running task: CANCELLED, and the task's own process is gone.
    void cancelledTask() {
        const QString dir = m_cluster->folder();
        QVERIFY(write_script(dir + "/long.sh", "echo $$ > \"$1/long.pid\"\nexec sleep 600"));
        const QString id = submit({dir + "/long.sh", dir});
        QVERIFY(!id.isEmpty());
        QTRY_VERIFY_WITH_TIMEOUT(!read_all(dir + "/long.pid").trimmed().isEmpty(), 60'000);
        QCOMPARE(m_cluster->job_states(id).value(id), QStringLiteral("RUNNING"));
        const QString pid = QString::fromUtf8(read_all(dir + "/long.pid").trimmed());
        QVERIFY(QFile::exists("/proc/" + pid));

        const CliResult r = m_cluster->run("scancel", {id});
        QVERIFY2(r.code == 0, r.err.constData());
        const QMap<QString, QString> states = m_cluster->wait_finished(id);
        QCOMPARE(states.value(id), QStringLiteral("CANCELLED"));
        QCOMPARE(m_cluster->job_info(id).value("JobState"), QStringLiteral("CANCELLED"));
        QTRY_VERIFY_WITH_TIMEOUT(!QFile::exists("/proc/" + pid), 10'000);
        bool logged = false;
        for (const auto& record : m_cluster->completions())
            logged = logged || (record.value("JobId") == id && record.value("JobState") == "CANCELLED");
        QVERIFY(logged);
    }

    // No accounting database in this cluster: sacct refuses, and job states come from the commands above.
    void sacctHasNoDatabase() {
        const CliResult r = m_cluster->run("sacct", {"--noheader", "--jobs=1"});
        QVERIFY2(QString::fromUtf8(r.out + r.err).contains("accounting storage is disabled"), r.err.constData());
    }

    // A stopped cluster leaves nothing: no process with its config or folder, no folder, its ports free;
    // a second cluster then starts on the same ports, runs a job, and stops as cleanly.
    void restartOnSamePorts() {
        for (int round = 0; round < 2; ++round) {
            const QString config = m_cluster->config_path(), root = m_cluster->root();
            const int ctld_port = m_cluster->ctld_port(), slurmd_port = m_cluster->slurmd_port();
            m_cluster.reset();
            QVERIFY2(SlurmCluster::processes_of(config, root).isEmpty(), "a process of the stopped cluster is left");
            QVERIFY(!QDir(root).exists());
            QVERIFY(SlurmCluster::port_free(ctld_port));
            QVERIFY(SlurmCluster::port_free(slurmd_port));
            if (round == 1) break;

            m_cluster = std::make_unique<SlurmCluster>(ctld_port, slurmd_port);
            QVERIFY2(m_cluster->ok(), qPrintable(m_cluster->why()));
            QCOMPARE(m_cluster->ctld_port(), ctld_port);
            QVERIFY(m_cluster->root() != root);
            const QString dir = m_cluster->folder();
            QVERIFY(write_script(dir + "/again.sh", "echo again > \"$1/again.txt\""));
            const QString id = submit({dir + "/again.sh", dir});
            QVERIFY(!id.isEmpty());
            QCOMPARE(m_cluster->wait_finished(id).value(id), QStringLiteral("COMPLETED"));
            QCOMPARE(read_all(dir + "/again.txt"), QByteArray("again\n"));
        }
    }
};

QTEST_GUILESS_MAIN(TestSlurmCluster)
#include "test_slurm_cluster.moc"
