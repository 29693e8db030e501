// A one-node Slurm cluster on this machine, for the tests of `mantissa-cli sweep --slurm`: its own munge
// key and munged, slurmctld and slurmd, all started by the constructor from a temporary folder and
// stopped by the destructor. Nothing in /etc is read or written and neither systemd nor cgroups are
// needed: every client finds the cluster through SLURM_CONF (environment()), slurm.conf names the munge
// socket (AuthInfo), processes are tracked by proctrack/linuxproc, and the daemons run in the foreground
// as children of the test under the test's own user (SlurmUser), with fresh ports.
//
// There is no accounting database, so `sacct` only answers "Slurm accounting storage is disabled".
// Job states come from squeue and scontrol (finished jobs stay listed for MinJobAge, an hour here) and
// from the job-completion log (jobcomp/filetxt: one line per finished job or array task, kept for the
// cluster's life; completions()). docs/sweeps.md ("Slurm") describes the setup.
//
// Leaves nothing running: the destructor cancels the jobs, shuts the daemons down, then kills any
// process that still carries this cluster's SLURM_CONF or folder (a job's slurmstepd is not a child of
// slurmd once started). Used from the test thread only.
#pragma once

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QMap>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QString>
#include <QStringList>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QThread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "run_cli.h"

class SlurmCluster {
public:
    // The line a suite's initTestCase skips with when the binaries are missing; tests/app/CMakeLists.txt
    // matches it with SKIP_REGULAR_EXPRESSION so ctest shows the suite as skipped, not passed.
    static constexpr const char* skip_prefix = "Slurm suite skipped: ";

    // ctld_port, slurmd_port: 0 picks a free port each.
    explicit SlurmCluster(int ctld_port = 0, int slurmd_port = 0) { start(ctld_port, slurmd_port); }
    ~SlurmCluster() { stop(); }
    SlurmCluster(const SlurmCluster&) = delete;
    SlurmCluster& operator=(const SlurmCluster&) = delete;

    bool ok() const { return m_ok; }
    // False when slurmctld, slurmd, munged or a client is missing: the suite skips with why().
    bool installed() const { return m_installed; }
    // Why the cluster is not running (empty when ok()): the missing programs, or what failed with the
    // daemons' last log lines.
    QString why() const { return m_why; }
    // For sbatch, squeue, mantissa-cli and any other child: this cluster's SLURM_CONF, without the
    // SLURM_*/SBATCH_*/S*_ variables of an outer Slurm job that would redirect or change its commands.
    QProcessEnvironment environment() const { return m_env; }
    // A folder every job can read and write (the login node's and compute nodes' shared folder).
    QString folder() const { return m_dir.path() + "/shared"; }
    // The cluster's own folder (slurm.conf, munge, state, spool, logs); gone after the destructor.
    QString root() const { return m_dir.path(); }
    QString config_path() const { return m_dir.path() + "/slurm.conf"; }
    QString partition() const { return QStringLiteral("debug"); }
    QString node() const { return m_node; }
    int cpus() const { return m_cpus; }
    int ctld_port() const { return m_ctld_port; }
    int slurmd_port() const { return m_slurmd_port; }

    // Runs a Slurm client (sbatch, squeue, ...; found on the PATH or in /usr/sbin) or any program with
    // environment().
    CliResult run(const QString& program, const QStringList& args, int timeout_ms = 60'000) const {
        QProcess p;
        p.setProcessEnvironment(m_env);
        const QString path = find_program(program);
        p.start(path.isEmpty() ? program : path, args);
        if (!p.waitForFinished(timeout_ms)) {
            p.kill();
            p.waitForFinished();
        }
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
                p.readAllStandardError()};
    }

    // `sbatch --parsable args...`: the job id (an array's id), or empty with the error in *error.
    QString submit(const QStringList& args, QString* error = nullptr) const {
        const CliResult r = run("sbatch", QStringList{"--parsable"} + args);
        const QString id = QString::fromUtf8(r.out).trimmed().section(';', 0, 0);
        if (r.code != 0 || id.isEmpty()) {
            if (error) *error = QString::fromUtf8(r.err).trimmed();
            return {};
        }
        return id;
    }

    // Each job's or array task's state by squeue ("5", "7_0", ... → "COMPLETED", "FAILED", "CANCELLED",
    // "RUNNING", "PENDING", ...), finished ones included.
    QMap<QString, QString> job_states(const QString& job_id) const {
        QMap<QString, QString> states;
        const CliResult r =
            run("squeue", {"--noheader", "--states=all", "--array", "--jobs=" + job_id, "--format=%i %T"});
        for (const QString& line : QString::fromUtf8(r.out).split('\n', Qt::SkipEmptyParts)) {
            const QStringList parts = line.simplified().split(' ');
            if (parts.size() == 2) states[parts[0]] = parts[1];
        }
        return states;
    }

    static bool finished_state(const QString& state) {
        static const QStringList done{"COMPLETED", "FAILED",    "CANCELLED", "TIMEOUT",  "OUT_OF_MEMORY",
                                      "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT"};
        return done.contains(state);
    }

    // Waits until every task of job_id has finished; their states (empty on timeout, or when squeue
    // never listed the job).
    QMap<QString, QString> wait_finished(const QString& job_id, int timeout_ms = 120'000) const {
        QElapsedTimer clock;
        clock.start();
        while (clock.elapsed() < timeout_ms) {
            const QMap<QString, QString> states = job_states(job_id);
            bool all = !states.isEmpty();
            for (const QString& s : states) all = all && finished_state(s);
            if (all) return states;
            QThread::msleep(250);
        }
        return {};
    }

    // `scontrol show job` of one job or array task as key → value (JobState, ExitCode "3:0", Reason, ...).
    QMap<QString, QString> job_info(const QString& job_id) const {
        const CliResult r = run("scontrol", {"--oneliner", "show", "job", job_id});
        return key_values(QString::fromUtf8(r.out).section('\n', 0, 0));
    }

    // The job-completion log (jobcomp/filetxt), one key → value map per finished job or array task
    // (JobId, ArrayJobId, ArrayTaskId, JobState, ExitCode, ...), oldest first.
    QList<QMap<QString, QString>> completions() const {
        QList<QMap<QString, QString>> records;
        QFile f(m_dir.path() + "/log/jobcomp.txt");
        if (!f.open(QIODevice::ReadOnly)) return records;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (!line.trimmed().isEmpty()) records << key_values(QString::fromUtf8(line));
        return records;
    }

    // The last lines of the daemons' logs, for a failure message.
    QString log_tail(int lines = 15) const {
        QString text;
        for (const char* name : {"munged.log", "slurmctld.log", "slurmd.log"}) {
            QFile f(m_dir.path() + "/log/" + name);
            if (!f.open(QIODevice::ReadOnly)) continue;
            const QStringList all = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
            text += QStringLiteral("--- %1\n").arg(name) +
                    all.mid(std::max<qsizetype>(0, all.size() - lines)).join('\n') + '\n';
        }
        return text;
    }

    // Processes of a cluster (this one's config path and folder) still alive: SLURM_CONF=config in
    // their environment or the folder on their command line. Readable for one's own processes (all of
    // them as root).
    static QList<pid_t> processes_of(const QString& config, const QString& folder) {
        QList<pid_t> found;
        const QByteArray conf_var = "SLURM_CONF=" + config.toUtf8();
        const QByteArray dir = folder.toUtf8() + '/';
        for (const QString& entry : QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            bool number = false;
            const pid_t pid = entry.toInt(&number);
            if (!number || pid == ::getpid()) continue;
            QFile environ_file("/proc/" + entry + "/environ"), cmdline_file("/proc/" + entry + "/cmdline");
            QByteArray environ_text, cmdline;
            if (environ_file.open(QIODevice::ReadOnly)) environ_text = environ_file.readAll();
            if (cmdline_file.open(QIODevice::ReadOnly)) cmdline = cmdline_file.readAll();
            if (environ_text.split('\0').contains(conf_var) || cmdline.contains(dir)) found << pid;
        }
        return found;
    }

    // Whether nothing listens on port (a listener could bind it again, as the daemons do).
    static bool port_free(int port) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return false;
        const int one = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        a.sin_port = htons(static_cast<uint16_t>(port));
        const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 1) == 0;
        ::close(fd);
        return bound;
    }

private:
    static QString find_program(const QString& name) {
        QString path = QStandardPaths::findExecutable(name);
        if (path.isEmpty()) path = QStandardPaths::findExecutable(name, {"/usr/sbin", "/sbin", "/usr/local/sbin"});
        return path;
    }

    static QMap<QString, QString> key_values(const QString& line) {
        QMap<QString, QString> map;
        for (const QString& field : line.split(' ', Qt::SkipEmptyParts)) {
            const qsizetype eq = field.indexOf('=');
            if (eq > 0) map[field.left(eq)] = field.mid(eq + 1);
        }
        return map;
    }

    // Two distinct ports free now, chosen by the kernel (both sockets open at once, so they differ).
    static void pick_ports(int& a, int& b) {
        int fds[2] = {-1, -1}, ports[2] = {0, 0};
        for (int i = 0; i < 2; ++i) {
            fds[i] = ::socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in addr{};
            addr.sin_family = AF_INET;
            addr.sin_addr.s_addr = htonl(INADDR_ANY);
            socklen_t len = sizeof addr;
            if (fds[i] >= 0 && ::bind(fds[i], reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                ::getsockname(fds[i], reinterpret_cast<sockaddr*>(&addr), &len) == 0)
                ports[i] = ntohs(addr.sin_port);
        }
        for (int fd : fds)
            if (fd >= 0) ::close(fd);
        if (a == 0) a = ports[0];
        if (b == 0) b = ports[1];
    }

    static int memory_mb() {
        QFile f("/proc/meminfo");
        if (!f.open(QIODevice::ReadOnly)) return 1024;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (line.startsWith("MemTotal:"))
                return static_cast<int>(line.simplified().split(' ').value(1).toLongLong() / 1024);
        return 1024;
    }

    // A daemon in the foreground, its output appended to log/<name>.out; SIGTERM when the test dies.
    std::unique_ptr<QProcess> launch(const QString& program, const QStringList& args, const QString& name) {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(m_env);
        p->setStandardOutputFile(m_dir.path() + "/log/" + name + ".out", QIODevice::Append);
        p->setStandardErrorFile(m_dir.path() + "/log/" + name + ".out", QIODevice::Append);
        p->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGTERM); });
        p->start(find_program(program), args);
        if (!p->waitForStarted(10'000)) fail(program + " did not start: " + p->errorString());
        return p;
    }

    void fail(const QString& what) {
        if (m_why.isEmpty()) m_why = what + "\n" + log_tail();
        m_ok = false;
    }

    bool write_file(const QString& path, const QByteArray& data, QFile::Permissions perms) {
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(data) != data.size() ||
            !f.setPermissions(perms)) {
            fail("cannot write " + path + ": " + f.errorString());
            return false;
        }
        return true;
    }

    void start(int ctld_port, int slurmd_port) {
        QStringList missing;
        for (const char* p : {"munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol", "scancel"})
            if (find_program(p).isEmpty()) missing << p;
        if (!missing.isEmpty()) {
            m_installed = false;
            m_why = "Slurm and munge are not installed (missing " + missing.join(", ") +
                    "); ./mantissa.sh test installs them (packages slurmctld slurmd slurm-client munge)";
            return;
        }
        if (!m_dir.isValid()) return fail("cannot create a temporary folder: " + m_dir.errorString());
        // munged wants every folder above its socket executable by all and writable by its owner only.
        QFile::setPermissions(m_dir.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadGroup |
                                                QFile::ExeGroup | QFile::ReadOther | QFile::ExeOther);
        for (const char* sub : {"munge", "state", "spool", "log", "shared"})
            if (!QDir(m_dir.path()).mkdir(sub))
                return fail(QStringLiteral("cannot create %1 in %2").arg(sub, m_dir.path()));

        QByteArray key(1024, '\0');
        QRandomGenerator::system()->generate(key.begin(), key.end());
        if (!write_file(m_dir.path() + "/munge/munge.key", key, QFile::ReadOwner | QFile::WriteOwner)) return;

        pick_ports(ctld_port, slurmd_port);
        m_ctld_port = ctld_port;
        m_slurmd_port = slurmd_port;
        m_node = QSysInfo::machineHostName().section('.', 0, 0);
        if (m_node.isEmpty()) m_node = "localhost";
        m_cpus = std::max(1, QThread::idealThreadCount());
        const passwd* pw = ::getpwuid(::geteuid());
        const QString user = pw ? QString::fromLocal8Bit(pw->pw_name) : QStringLiteral("root");
        const QString d = m_dir.path();
        // The node's RealMemory is half the machine's: slurmd drains a node that claims more than it has.
        const QString conf = QStringLiteral(
                                 "ClusterName=mantissa-test\n"
                                 "SlurmctldHost=%1(127.0.0.1)\n"
                                 "SlurmctldPort=%2\n"
                                 "SlurmdPort=%3\n"
                                 "SlurmUser=%4\n"
                                 "SlurmdUser=%4\n"
                                 "AuthType=auth/munge\n"
                                 "CredType=cred/munge\n"
                                 "AuthInfo=socket=%5/munge/munge.sock\n"
                                 "StateSaveLocation=%5/state\n"
                                 "SlurmdSpoolDir=%5/spool\n"
                                 "SlurmctldPidFile=%5/slurmctld.pid\n"
                                 "SlurmdPidFile=%5/slurmd.pid\n"
                                 "SlurmctldLogFile=%5/log/slurmctld.log\n"
                                 "SlurmdLogFile=%5/log/slurmd.log\n"
                                 "ProctrackType=proctrack/linuxproc\n"
                                 "TaskPlugin=task/none\n"
                                 "JobAcctGatherType=jobacct_gather/none\n"
                                 "AccountingStorageType=accounting_storage/none\n"
                                 "JobCompType=jobcomp/filetxt\n"
                                 "JobCompLoc=%5/log/jobcomp.txt\n"
                                 "SelectType=select/cons_tres\n"
                                 "SelectTypeParameters=CR_Core\n"
                                 "MinJobAge=3600\n"
                                 "ReturnToService=2\n"
                                 "MpiDefault=none\n"
                                 "MailProg=/bin/true\n"
                                 "NodeName=%1 NodeAddr=127.0.0.1 NodeHostname=%1 CPUs=%6 RealMemory=%7 State=UNKNOWN\n"
                                 "PartitionName=%8 Nodes=%1 Default=YES MaxTime=INFINITE State=UP\n")
                                 .arg(m_node)
                                 .arg(m_ctld_port)
                                 .arg(m_slurmd_port)
                                 .arg(user, d)
                                 .arg(m_cpus)
                                 .arg(std::max(1, memory_mb() / 2))
                                 .arg(partition());
        if (!write_file(config_path(), conf.toUtf8(),
                        QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther))
            return;

        m_env = QProcessEnvironment::systemEnvironment();
        for (const QString& name : m_env.keys())
            for (const char* prefix :
                 {"SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "SQUEUE_", "SINFO_", "SACCT_", "SCONTROL_", "SCANCEL_"})
                if (name.startsWith(prefix)) m_env.remove(name);
        m_env.insert("SLURM_CONF", config_path());

        m_munged = launch("munged",
                          {"--foreground", "--socket=" + d + "/munge/munge.sock",
                           "--key-file=" + d + "/munge/munge.key", "--pid-file=" + d + "/munge/munged.pid",
                           "--log-file=" + d + "/log/munged.log", "--seed-file=" + d + "/munge/munged.seed"},
                          "munged");
        if (!m_why.isEmpty()) return;
        if (!wait_for([&] { return QFile::exists(d + "/munge/munge.sock"); }, 15'000))
            return fail("munged did not create its socket " + d + "/munge/munge.sock");

        m_slurmctld = launch("slurmctld", {"-D"}, "slurmctld");
        if (!m_why.isEmpty()) return;
        m_slurmd = launch("slurmd", {"-D", "-N", m_node}, "slurmd");
        if (!m_why.isEmpty()) return;
        const bool idle = wait_for(
            [&] {
                const CliResult r = run("sinfo", {"--noheader", "--Node", "--nodes=" + m_node, "--format=%T"}, 10'000);
                return r.code == 0 && QString::fromUtf8(r.out).trimmed() == "idle";
            },
            60'000);
        if (!idle) return fail("the node " + m_node + " did not become idle within 60 s");
        m_ok = true;
    }

    // Polls `ready` every 200 ms until it holds, the timeout passes, or a daemon exits.
    template <class Ready>
    bool wait_for(Ready ready, int timeout_ms) {
        QElapsedTimer clock;
        clock.start();
        while (clock.elapsed() < timeout_ms) {
            if (ready()) return true;
            for (const QProcess* p : {m_munged.get(), m_slurmctld.get(), m_slurmd.get()})
                if (p && p->state() == QProcess::NotRunning) {
                    fail(p->program() + " exited (code " + QString::number(p->exitCode()) + ")");
                    return false;
                }
            QThread::msleep(200);
        }
        return false;
    }

    static void end(std::unique_ptr<QProcess>& p, int grace_ms) {
        if (!p) return;
        if (p->state() != QProcess::NotRunning && !p->waitForFinished(grace_ms)) {
            p->terminate();
            if (!p->waitForFinished(5'000)) {
                p->kill();
                p->waitForFinished(5'000);
            }
        }
        p.reset();
    }

    void stop() {
        if (m_slurmctld && m_slurmctld->state() != QProcess::NotRunning) {
            run("scancel", {"--partition=" + partition()}, 10'000);
            QElapsedTimer clock;
            clock.start();
            while (clock.elapsed() < 10'000 && !run("squeue", {"--noheader"}, 5'000).out.trimmed().isEmpty())
                QThread::msleep(200);
            run("scontrol", {"shutdown"}, 10'000);
        }
        end(m_slurmd, 10'000);
        end(m_slurmctld, 10'000);
        // A job's slurmstepd and its processes outlive slurmd; nothing of this cluster may remain but
        // munged, stopped last. A finishing slurmstepd gets 5 s to exit by itself, then SIGKILL.
        if (m_dir.isValid()) {
            const pid_t munged =
                m_munged && m_munged->state() != QProcess::NotRunning ? static_cast<pid_t>(m_munged->processId()) : 0;
            for (int round = 0; round < 100; ++round) {
                QList<pid_t> left = processes_of(config_path(), m_dir.path());
                left.removeAll(munged);
                if (left.isEmpty()) break;
                if (round >= 50)
                    for (pid_t pid : left) ::kill(pid, SIGKILL);
                QThread::msleep(100);
            }
        }
        if (m_munged && m_munged->state() != QProcess::NotRunning) m_munged->terminate();
        end(m_munged, 5'000);
    }

    QTemporaryDir m_dir;
    QProcessEnvironment m_env;
    std::unique_ptr<QProcess> m_munged, m_slurmctld, m_slurmd;
    QString m_why, m_node;
    int m_ctld_port = 0, m_slurmd_port = 0, m_cpus = 1;
    bool m_ok = false, m_installed = true;
};
