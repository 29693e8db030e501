// mantissa: the desktop application. Parses the command line, builds the main window and runs the
// event loop; `--screenshot FILE.png` runs the experiment for N steps, saves a PNG of the window
// and exits (for docs, tests and reviews without a display: -platform offscreen or Xvfb);
// `--bench-gui [--json] [--quick] [--blocks N]` runs the GUI benchmark suite (gui_bench.h), offscreen
// unless QT_QPA_PLATFORM says otherwise, prints it and exits: `mantissa-cli bench --suite gui` reads it.
// Exit codes as mantissa-cli's: 0 ok, 1 the run or the save failed, 2 bad usage or input. Everything
// a screenshot's command line can get wrong (a bad option, --steps, --size out of its limits, an
// --at that cannot apply or comes after the last step, a target that cannot be written or is the
// run store or a file beside it) is exit 2 before any training; so is a --db that cannot be a store
// (a FIFO, a device, a link loop, a name too long), with or without --screenshot.
//
// SIGTERM (kill, a session manager logging out), SIGINT (Ctrl-C in the terminal that started it) and
// SIGHUP close the window as its close button does: the run stops after its current step and is
// recorded `stopped`, then the application exits (0; a screenshot not taken yet: 1). The handler
// only writes to a pipe; a QSocketNotifier reads it on the GUI thread, so no Qt code runs in a
// signal handler. A second signal before the window has closed ends the process at once.
//
// Before anything else, OpenMP's workers are made to wait passively (app/passive_openmp_waits.h: the
// program may execute itself again), and the CPU backend's auto thread count (backend.threads 0)
// keeps one hardware thread spare for drawing and recording (set_spare_cpu_threads).
#include <QApplication>
#include <QCommandLineParser>
#include <QRegularExpression>
#include <QSocketNotifier>
#include <QTimer>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../output_guard.h"
#include "../passive_openmp_waits.h"
#include "app_icon.h"
#include "backend/backend.h"
#include "error.h"
#include "gui_bench.h"
#include "train/live_change.h"
#include "live/store_location.h"
#include "main_window.h"
#include "screenshot_job.h"
#include "tooltip_wrap.h"

using mantissa::ui::MainWindow;
using mantissa::ui::ScreenshotJob;

namespace {

bool hasOption(int argc, char** argv, std::initializer_list<const char*> names) {
    for (int i = 1; i < argc; ++i)
        for (const char* name : names)
            if (std::strcmp(argv[i], name) == 0) return true;
    return false;
}

// Qt aborts when its platform plugin finds no display, so the platform is settled before
// QApplication exists: what needs no window runs offscreen (the benchmark always does, unless
// QT_QPA_PLATFORM says otherwise); a window with no display to show it on gets one sentence.
// Returns false when the application cannot start.
bool choosePlatform(int argc, char** argv) {
    if (!qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") || hasOption(argc, argv, {"-platform"})) return true;
    if (hasOption(argc, argv, {"--bench-gui"})) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        return true;
    }
#if defined(Q_OS_UNIX) && !defined(Q_OS_MACOS)
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
        if (hasOption(argc, argv, {"-h", "--help", "--help-all", "-v", "--version", "--screenshot"})) {
            qputenv("QT_QPA_PLATFORM", "offscreen");
            return true;
        }
        std::fprintf(stderr,
                     "mantissa: there is no display to open its window on (neither DISPLAY nor WAYLAND_DISPLAY is "
                     "set); start it in a desktop session or under xvfb-run, or train without a window with "
                     "mantissa-cli.\n");
        return false;
    }
#endif
    return true;
}

// --size's limits: below them the panels cannot be laid out, above them the picture alone would
// take hundreds of megabytes.
constexpr int minWidth = 320, minHeight = 240, maxSide = 8192;

int usageError(const std::string& sentence) {
    std::fprintf(stderr, "mantissa: %s\n", sentence.c_str());
    return 2;
}

// ---- stopping signals, through a self-pipe (see the top of the file)

constexpr int stopSignals[] = {SIGTERM, SIGINT, SIGHUP};
int g_signalPipe[2] = {-1, -1};  // [0] read on the GUI thread, [1] written by the handler
std::atomic<int> g_stopSignals{0};

extern "C" void onStopSignal(int sig) {
    if (g_stopSignals.load() >= 1) std::_Exit(128 + sig);  // a second one: the close is stuck or too slow
    g_stopSignals.fetch_add(1);
    const int saved = errno;
    const auto byte = static_cast<unsigned char>(sig);
    [[maybe_unused]] const ssize_t n = ::write(g_signalPipe[1], &byte, 1);  // async-signal-safe
    errno = saved;
}

// Opens the pipe and installs the handler; false (signals keep their defaults) when the pipe
// cannot be made. A signal the caller ignores stays ignored (nohup's SIGHUP).
bool installStopSignals() {
    if (::pipe2(g_signalPipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    struct sigaction sa {};
    sa.sa_handler = onStopSignal;
    sigemptyset(&sa.sa_mask);
    for (int sig : stopSignals) sigaddset(&sa.sa_mask, sig);
    sa.sa_flags = SA_RESTART;
    for (int sig : stopSignals) {
        struct sigaction current {};
        sigaction(sig, nullptr, &current);
        if (current.sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
    }
    return true;
}

const char* signalName(int sig) {
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

}  // namespace

int main(int argc, char** argv) {
    mantissa::app::make_openmp_waits_passive(argv);  // may execute this program again: before Qt
    mantissa::set_spare_cpu_threads(1);  // backend.threads 0: all cores but one, kept for drawing and recording
    if (!choosePlatform(argc, argv)) return 1;
    QGuiApplication::setHighDpiScaleFactorRoundingPolicy(Qt::HighDpiScaleFactorRoundingPolicy::PassThrough);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Mantissa"));
    QApplication::setApplicationName(QStringLiteral("mantissa"));
    // No application display name: Qt would append it to every title, and the titles name Mantissa.
    QApplication::setApplicationVersion(QStringLiteral(MANTISSA_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("io.github.mantissa.Mantissa"));  // packaging's desktop entry
    QApplication::setWindowIcon(mantissa::ui::appIcon());
    mantissa::ui::ToolTipWrapper::install(&app);  // long tooltips wrap instead of running 1,000 px wide

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Mantissa, a desktop lab for mixed-precision training."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption config({QStringLiteral("c"), QStringLiteral("config")},
                                    QStringLiteral("Open the experiment file FILE."), QStringLiteral("FILE"));
    // --db as mantissa-cli names it; --store, its first name here, still works.
    const QCommandLineOption store({QStringLiteral("db"), QStringLiteral("store")},
                                   QStringLiteral("Record runs in the store FILE, as mantissa-cli --db does (default: "
                                                  "$XDG_DATA_HOME/mantissa/runs.sqlite)."),
                                   QStringLiteral("FILE"));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("Run the experiment, save a PNG of the window to FILE, exit."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption steps(QStringLiteral("steps"),
                                   QStringLiteral("With --screenshot: the steps to run (default 300)."),
                                   QStringLiteral("N"), QStringLiteral("300"));
    const QCommandLineOption during(QStringLiteral("during"),
                                    QStringLiteral("With --screenshot: picture the run at exactly N steps (--steps) "
                                                   "while it still trains on its own budget, then stop it there."));
    const QCommandLineOption size(QStringLiteral("size"),
                                  QStringLiteral("With --screenshot: the window size (default 1600x1000)."),
                                  QStringLiteral("WxH"), QStringLiteral("1600x1000"));
    const QCommandLineOption at(QStringLiteral("at"),
                                QStringLiteral("With --screenshot: when step STEP arrives, change a setting live as "
                                               "the panels would (precision.layers.fc1=fp16, precision.autocast=bf16, "
                                               "train.lr=0.01) or inject an overflow (inject=fc2). Repeatable."),
                                QStringLiteral("STEP:KEY=VALUE"));
    const QCommandLineOption pace(QStringLiteral("pace"),
                                  QStringLiteral("Steps per second to train at (0: as fast as possible), instead of "
                                                 "the lesson's pace; with --screenshot the default is 0."),
                                  QStringLiteral("STEPS_PER_S"));
    const QCommandLineOption benchGui(QStringLiteral("bench-gui"),
                                      QStringLiteral("Run the GUI benchmark suite (offscreen), print its tables, exit."));
    const QCommandLineOption benchJson(QStringLiteral("json"), QStringLiteral("With --bench-gui: print JSON."));
    const QCommandLineOption benchQuick(QStringLiteral("quick"), QStringLiteral("With --bench-gui: a short run."));
    const QCommandLineOption benchBlocks(QStringLiteral("blocks"),
                                         QStringLiteral("With --bench-gui: repeats per figure (default 15)."),
                                         QStringLiteral("N"));
    parser.addOptions({config, store, screenshot, steps, during, size, at, pace, benchGui, benchJson, benchQuick,
                       benchBlocks});
    parser.addPositionalArgument(QStringLiteral("FILE"), QStringLiteral("The experiment file to open (as -c FILE)."),
                                 QStringLiteral("[FILE]"));
    // Qt's process() exits 1 on a usage error; ours is exit 2, as mantissa-cli's. process() then
    // handles --help, --help-all and --version (exit 0).
    if (!parser.parse(QCoreApplication::arguments())) return usageError(parser.errorText().toStdString());
    parser.process(app);
    // The experiment file: -c FILE, or FILE alone as mantissa-cli takes it; never both, never two.
    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1)
        return usageError("mantissa opens one experiment file, not " + std::to_string(positional.size()) + " ('" +
                          positional.join(QStringLiteral("', '")).toStdString() + "').");
    if (!positional.isEmpty() && parser.isSet(config))
        return usageError("Give the experiment file once, as FILE or as -c FILE, not both ('" +
                          positional.first().toStdString() + "' and '" + parser.value(config).toStdString() + "').");
    const QString configPath = positional.isEmpty() ? parser.value(config) : positional.first();

    if (parser.isSet(benchGui)) {
        mantissa::ui::GuiBenchOptions bench;
        bench.quick = parser.isSet(benchQuick);
        bool ok = true;
        if (parser.isSet(benchBlocks)) bench.blocks = parser.value(benchBlocks).toInt(&ok);
        if (!ok || bench.blocks < 0) {
            std::fprintf(stderr, "mantissa: --blocks takes a positive number, not '%s'\n",
                         qPrintable(parser.value(benchBlocks)));
            return 2;
        }
        QApplication::setOrganizationName(QStringLiteral("MantissaBench"));  // never the user's settings
        try {
            const auto suite = mantissa::ui::runGuiBench(bench);
            const std::string out = parser.isSet(benchJson) ? mantissa::bench::to_json(suite).dump(2) + "\n"
                                                            : mantissa::bench::render_text(suite);
            std::fwrite(out.data(), 1, out.size(), stdout);
            return 0;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "mantissa: the GUI benchmark failed: %s\n", e.what());
            return 1;
        }
    }

    if (parser.isSet(store)) {  // the engine's sentence, before a window that could not record
        const QString problem = mantissa::ui::storePathProblem(parser.value(store));
        if (!problem.isEmpty()) return usageError(problem.toStdString());
    }

    double paceValue = -1;  // -1: not given
    if (parser.isSet(pace)) {
        bool ok = false;
        paceValue = parser.value(pace).toDouble(&ok);
        if (!ok || !(paceValue >= 0 && paceValue <= 10000))
            return usageError("--pace takes steps per second from 0 (as fast as possible) to 10000, not '" +
                              parser.value(pace).toStdString() + "'.");
    }

    const bool shooting = parser.isSet(screenshot);
    ScreenshotJob::Options job;
    std::vector<mantissa::ScheduledChange> scheduled;  // --at, made in step order (check_scheduled_changes)
    int width = 0, height = 0;
    if (shooting) {  // all of the command line is checked before the window (and the store) opens
        job.file = parser.value(screenshot);
        const auto n = mantissa::app::parse_whole_number(parser.value(steps).toStdString());
        if (!n || *n <= 0)
            return usageError("--steps takes a positive whole number like 300, not '" +
                              parser.value(steps).toStdString() + "'.");
        job.steps = *n;
        const auto wh = QRegularExpression(QStringLiteral(R"(^(\d{1,6})x(\d{1,6})$)")).match(parser.value(size));
        width = wh.hasMatch() ? wh.captured(1).toInt() : 0;
        height = wh.hasMatch() ? wh.captured(2).toInt() : 0;
        if (width < minWidth || height < minHeight || width > maxSide || height > maxSide)
            return usageError("--size takes WxH from " + std::to_string(minWidth) + "x" + std::to_string(minHeight) +
                              " to " + std::to_string(maxSide) + "x" + std::to_string(maxSide) +
                              " (e.g. 1600x1000), not '" + parser.value(size).toStdString() + "'.");
        job.duringRun = parser.isSet(during);
        for (const QString& a : parser.values(at)) {
            try {
                scheduled.push_back(mantissa::parse_scheduled_change(a.toStdString(), "--at"));
            } catch (const mantissa::Error& e) {
                return usageError(e.what());
            }
        }
        const std::string target = job.file.toStdString();
        const QString storePath = parser.isSet(store) ? parser.value(store) : mantissa::ui::defaultStorePath();
        std::vector<mantissa::app::GuardedFile> guarded = {{storePath.toStdString(), "the run store"}};
        if (!configPath.isEmpty()) guarded.push_back({configPath.toStdString(), "the experiment file"});
        if (auto why = mantissa::app::refuse_output("--screenshot", target, guarded)) return usageError(*why);
        if (auto why = mantissa::app::probe_writable("--screenshot", target)) return usageError(*why);
    }

    MainWindow::Options options;
    options.storePath = parser.value(store);
    options.useSettings = !shooting;  // screenshots neither depend on nor change the user's settings
    MainWindow window(options);

    // A stopping signal closes the window (its run recorded `stopped`) and ends the event loop.
    // The screenshot job goes first, so it neither captures the stopped run nor sets the exit code.
    std::unique_ptr<ScreenshotJob> shot;
    std::unique_ptr<QSocketNotifier> stopNotifier;
    if (installStopSignals()) {
        stopNotifier = std::make_unique<QSocketNotifier>(g_signalPipe[0], QSocketNotifier::Read);
        QObject::connect(stopNotifier.get(), &QSocketNotifier::activated, &app, [&] {
            unsigned char sig = 0;
            if (::read(g_signalPipe[0], &sig, 1) != 1) return;
            stopNotifier->setEnabled(false);
            const bool shotPending = shot != nullptr;
            shot.reset();  // no ScreenshotJob code is on the stack here: it never spins the event loop
            if (shotPending)
                std::fprintf(stderr, "mantissa --screenshot: stopped by %s before the screenshot was taken; the run "
                                     "is recorded as stopped.\n",
                             signalName(sig));
            else
                std::fprintf(stderr, "mantissa: %s: closing the window (a run stops after its current step).\n",
                             signalName(sig));
            window.close();  // MainWindow::closeEvent stops the run and finishes its recording
            QApplication::exit(shotPending ? 1 : 0);
        });
    }

    if (!configPath.isEmpty() && !window.openExperiment(configPath) && shooting)
        return usageError(window.lastError().toStdString());
    // Nothing named and nothing remembered: the default experiment, as ./mantissa.sh run opens it,
    // rather than the engine's bare defaults (autocast off).
    if (configPath.isEmpty() && !window.restoredExperiment()) window.showDefaultExperiment();
    if (paceValue >= 0) window.setPace(paceValue);
    if (!shooting) {
        window.show();
        return app.exec();
    }
    // Each --at checked against the experiment as the earlier ones leave it, and against the steps
    // the screenshot takes (during a run: its own budget too, when train.steps gives it), before
    // anything trains.
    try {
        job.actions = mantissa::check_scheduled_changes(window.currentExperiment(), scheduled, "--at");
        std::int64_t runSteps = job.steps;
        const std::int64_t budget = window.currentExperiment().train.steps;
        if (job.duringRun && budget > 0) runSteps = std::min(runSteps, budget);
        mantissa::check_scheduled_steps(job.actions, runSteps, "--at");
    } catch (const mantissa::Error& e) {
        return usageError(e.what());
    }
    // A lesson's pace is for a class; a picture is taken as fast as the run goes, unless --pace says.
    window.setPace(std::max(paceValue, 0.0));
    window.resize(width, height);
    window.show();
    shot = std::make_unique<ScreenshotJob>(&window, job);
    QObject::connect(shot.get(), &ScreenshotJob::finished, &app, [](int code) { QApplication::exit(code); });
    QTimer::singleShot(0, shot.get(), &ScreenshotJob::start);
    return app.exec();
}
