// bench_gui: what the GUI costs.
//   1. Replot time of the five charts (loss, loss scale, memory, throughput, underflow per layer)
//      with 10^4, 10^5 and 10^6 steps in each, whole run in view: median of repeats, synchronous
//      (query the level-of-detail series, set the graphs' data, paint). Aim: <= 16 ms at 10^6 and
//      <= 2x the 10^4 time.
//   2. Training throughput with the window open (draining at 30 Hz, replotting) vs headless, the
//      same experiment, interleaved in the same process, both recording to a store as in real
//      use. Aim: GUI >= 0.98x headless.
//   3. The GUI thread's longest stall during those runs: lateness of a 5 ms precise timer.
//      Aim: never blocked more than 50 ms.
// Usage: bench_gui [--steps N] [--pairs K] [--repeats R] [--max-points N]  (runs offscreen)
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "charts/charts_panel.h"
#include "live/run_controller.h"
#include "main_window.h"
#include "series/run_series.h"
#include "store/run_store.h"
#include "train/session.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

// CPU time of this thread: the replot's own cost, apart from what other processes take of the
// machine (wall time is what a person sees; both are printed).
double threadCpuMs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// A synthetic run of `steps` steps with three layers, evaluations, overflows and a few setting
// changes: shaped like a real one so the charts draw real-looking curves.
void fillSeries(RunSeries& s, std::int64_t steps) {
    s.reset({"fc1", "fc2", "fc3"});
    std::mt19937 rng(1);
    std::normal_distribution<double> noise(0, 1);
    double scale = 65536;
    for (std::int64_t i = 0; i < steps; ++i) {
        StepRecord r;
        r.step = i;
        r.time_s = 0.001 * static_cast<double>(i);
        r.loss = 2.0 / (1 + 0.001 * static_cast<double>(i)) + 0.05 * noise(rng);
        r.overflow = (i % 9973) == 5000;
        r.skipped = r.overflow;
        r.loss_scale = scale;
        if (r.overflow) scale /= 2;
        if (i % 2000 == 1999) scale *= 2;
        r.samples_per_s = 100000 + 5000 * noise(rng);
        r.memory.parameters = 800000;
        r.memory.master_weights = (i / 100000) % 2 ? 0 : 1600000;
        r.memory.gradients = 800000;
        r.memory.optimizer_state = 3200000;
        r.memory.activations = 400000 + 1000 * (i % 7);
        r.memory.workspace = 65536;
        s.addStep(r);
        for (int l = 0; l < 3; ++l) {
            LayerSample ls;
            ls.step = i;
            ls.layer = l;
            ls.frac_underflow = std::max(0.0, 0.01 * l + 0.002 * noise(rng));
            s.addLayerSample(ls);
        }
        if (i % 1000 == 999) s.addEval({i, "test", r.loss * 1.1, 0.8});
        if (i % (steps / 4) == steps / 8) {
            Event e;
            e.step = i;
            e.kind = EventKind::setting_change;
            e.data_json = R"({"key": "precision.layers.fc1", "old": "auto", "new": "fp16"})";
            s.addEvent(e);
        }
    }
}

void benchReplot(int repeats, std::int64_t maxPoints) {
    std::printf("Replot of the five charts, whole run in view: query the level-of-detail series, set the graphs'\n"
                "data, draw, paint (median of %d; charts 1100x900, offscreen; wall and this thread's CPU time)\n",
                repeats);
    std::printf("%10s  %12s  %12s  %12s  %14s  %10s\n", "points", "replot ms", "vs 10^4", "cpu ms", "drawn points",
                "series MB");
    ChartsPanel panel;
    panel.resize(1100, 900);
    panel.show();
    QApplication::processEvents();
    double base = 0;
    for (std::int64_t n : {std::int64_t{10000}, std::int64_t{100000}, std::int64_t{1000000}}) {
        if (n > maxPoints) break;
        RunSeries series;
        fillSeries(series, n);
        panel.setSeries(&series);
        panel.redrawNow(true);  // warm up
        std::vector<double> ms, cpu;
        for (int r = 0; r < repeats; ++r) {
            QElapsedTimer t;
            const double c0 = threadCpuMs();
            t.start();
            panel.redrawNow(true);           // query, set data, draw each chart's buffers
            QApplication::processEvents();   // and paint them into the window, as the event loop would
            ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
            cpu.push_back(threadCpuMs() - c0);
        }
        const double m = median(ms);
        if (base == 0) base = m;
        int drawn = 0;
        for (ChartView* c : panel.charts()) drawn += c->drawnPoints();
        std::size_t bytes = series.loss().memoryBytes() * (10 + series.layerNames().size());
        std::printf("%10lld  %12.2f  %11.2fx  %12.2f  %14d  %10.0f\n", static_cast<long long>(n), m, m / base,
                    median(cpu), drawn, static_cast<double>(bytes) / 1e6);
        // Where the time goes: each chart alone (query + data + paint).
        std::printf("%10s  ", "");
        for (ChartView* c : panel.charts()) {
            std::vector<double> one;
            for (int r = 0; r < std::max(3, repeats / 3); ++r) {
                QElapsedTimer t;
                t.start();
                c->refreshData(true);
                one.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
            }
            std::printf("%s %.2f  ", qPrintable(c->yAxis->label().section(QLatin1Char(' '), 0, 0)), median(one));
        }
        std::printf("\n");
        panel.setSeries(nullptr);
    }
    std::printf("Aim: <= 16 ms at 10^6 points and <= 2x the 10^4 time.\n\n");
}

// The reference experiment (Fashion-MNIST, 784-256-128-10, batch 128) when its files are installed,
// otherwise a spirals MLP of similar step cost.
Experiment benchExperiment(std::int64_t steps, std::string* description) {
    Experiment e;
    e.name = "bench-gui";
    e.train.steps = steps;
    e.train.eval_every = 500;
    e.backend = "cpu";
    if (QFile::exists(QString::fromStdString(e.dataset.path + "/train-images-idx3-ubyte.gz"))) {
        *description = "Fashion-MNIST, MLP 784-256-128-10, batch 128";
    } else {
        e.dataset.kind = "spirals";
        e.dataset.samples = 20000;
        e.model.hidden = {512, 512};
        *description = "spirals, MLP 2-512-512-3, batch 128";
    }
    return e;
}

struct RunResult {
    double wallSamplesPerS = 0;     // steps * batch / elapsed wall time of the run
    double engineSamplesPerS = 0;   // the engine's own figure (step time only)
    double guiCpuShare = 0;         // GUI thread CPU time / run wall time
    double maxStallMs = 0;
    double p99StallMs = 0;
};

RunResult headless(const Experiment& e, const std::string& store) {
    RunStore runs(store);
    Session session(e);
    auto recorder = runs.start_run({e.name, session.backend_name(), session.device_name(), "{}"});
    session.add_sink(recorder);
    session.start();
    session.wait();
    recorder->finish(RunStatus::completed);
    const RunSummary s = session.summary();
    return {static_cast<double>(s.steps * e.train.batch_size) / s.elapsed_s, s.samples_per_s, 0, 0, 0};
}

// probe: also run a 5 ms precise timer to measure stalls (its 200 wake-ups a second cost training
// time on a small machine, so throughput is measured in runs without it).
RunResult withGui(const Experiment& e, const QString& store, bool probeStalls) {
    MainWindow::Options o;
    o.storePath = store;
    o.useSettings = false;
    MainWindow window(o);
    window.resize(1600, 1000);
    window.setExperiment(e);
    window.show();
    QApplication::processEvents();

    // A 5 ms precise timer: how late each tick comes is how long the GUI thread was busy.
    std::vector<double> stalls;
    QElapsedTimer clock;
    QTimer probe;
    probe.setTimerType(Qt::PreciseTimer);
    probe.setInterval(5);
    qint64 last = -1;
    QObject::connect(&probe, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        if (last >= 0) stalls.push_back(std::max(0.0, static_cast<double>(now - last) / 1e6 - 5.0));
        last = now;
    });
    window.startRun();  // loading the data and building the model happen before the run
    clock.start();
    const double cpu0 = threadCpuMs();
    if (probeStalls) probe.start();
    QEventLoop loop;  // the application's event loop, as in the real window
    QObject::connect(window.controller(), &RunController::runFinished, &loop, &QEventLoop::quit);
    if (window.controller()->active()) loop.exec();
    probe.stop();
    const double guiCpuMs = threadCpuMs() - cpu0;
    const double wallMs = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    const RunSummary s = window.controller()->session()->summary();
    std::sort(stalls.begin(), stalls.end());
    RunResult r{static_cast<double>(s.steps * e.train.batch_size) / s.elapsed_s, s.samples_per_s,
                guiCpuMs / wallMs, 0, 0};
    if (!stalls.empty()) {
        r.maxStallMs = stalls.back();
        r.p99StallMs = stalls[stalls.size() * 99 / 100];
    }
    return r;
}

void benchThroughput(std::int64_t steps, int pairs) {
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("bench.sqlite"));
    std::string description;
    const Experiment e = benchExperiment(steps, &description);
    std::printf("Training throughput, GUI open vs headless (%s, %lld steps; interleaved; both record to a "
                "store)\n",
                description.c_str(), static_cast<long long>(steps));
    std::printf("%5s  %-9s  %14s  %16s  %12s\n", "pair", "mode", "samples/s", "engine samples/s", "GUI thread");
    std::vector<double> ratios;
    for (int p = 0; p < pairs; ++p) {
        // Alternate which goes first, so a drift in the machine's load favours neither.
        RunResult h, g;
        if (p % 2 == 0) {
            h = headless(e, store.toStdString());
            g = withGui(e, store, false);
        } else {
            g = withGui(e, store, false);
            h = headless(e, store.toStdString());
        }
        std::printf("%5d  %-9s  %14.0f  %16.0f  %12s\n", p + 1, "headless", h.wallSamplesPerS, h.engineSamplesPerS, "");
        std::printf("%5d  %-9s  %14.0f  %16.0f  %10.1f %%\n", p + 1, "gui", g.wallSamplesPerS, g.engineSamplesPerS,
                    100 * g.guiCpuShare);
        ratios.push_back(g.wallSamplesPerS / h.wallSamplesPerS);
    }
    std::printf("GUI / headless throughput: median %.3fx (pairs:", median(ratios));
    for (double r : ratios) std::printf(" %.3f", r);
    std::printf("); aim >= 0.98x\n\n");

    const RunResult probed = withGui(e, store, true);
    std::printf("GUI-thread stalls during a GUI run (lateness of a 5 ms precise timer): max %.1f ms, p99 %.1f ms; "
                "aim: none over 50 ms\n",
                probed.maxStallMs, probed.p99StallMs);
}

}  // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    std::int64_t steps = 2000, maxPoints = 1000000;
    int pairs = 4, repeats = 15;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--pairs")) pairs = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--max-points")) maxPoints = std::atoll(argv[i + 1]);
    }
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("MantissaBench"));
    benchReplot(repeats, maxPoints);
    if (pairs > 0) benchThroughput(steps, pairs);
    return 0;
}
