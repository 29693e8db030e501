// mantissa-cli (MANTISSA_CLI_PATH), or another program, run as a child process, as a script or a person meets it: its
// exit code (-1 when it crashed or had to be killed), stdout and stderr. Shared by the CLI suites.
#pragma once

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

struct CliResult {
    int code = -1;
    QByteArray out, err;
};

// Runs `program` with args. xdg_data_home: where the default store goes
// (empty: the caller's environment). stdout_file: standard output goes to this file instead of
// being captured (/dev/full: every write fails).
inline CliResult run_program(const QString& program, const QStringList& args, const QString& xdg_data_home = {},
                             int timeout_ms = 300'000, const QString& stdout_file = {}) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (!xdg_data_home.isEmpty()) env.insert("XDG_DATA_HOME", xdg_data_home);
    p.setProcessEnvironment(env);
    if (!stdout_file.isEmpty()) p.setStandardOutputFile(stdout_file);
    p.start(program, args);
    if (!p.waitForFinished(timeout_ms)) {
        p.kill();
        p.waitForFinished();
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

#ifdef MANTISSA_CLI_PATH
inline CliResult run_cli(const QStringList& args, const QString& xdg_data_home = {}, int timeout_ms = 300'000,
                         const QString& stdout_file = {}) {
    return run_program(MANTISSA_CLI_PATH, args, xdg_data_home, timeout_ms, stdout_file);
}
#endif
