// mantissa-cli (MANTISSA_CLI_PATH) run as a child process, as a script or a person meets it: its
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

// xdg_data_home: where the default store goes (empty: the caller's environment).
inline CliResult run_cli(const QStringList& args, const QString& xdg_data_home = {}, int timeout_ms = 300'000) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (!xdg_data_home.isEmpty()) env.insert("XDG_DATA_HOME", xdg_data_home);
    p.setProcessEnvironment(env);
    p.start(MANTISSA_CLI_PATH, args);
    if (!p.waitForFinished(timeout_ms)) {
        p.kill();
        p.waitForFinished();
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}
