// Shared by the main-window suites: a window on a store of its own that neither reads nor writes
// the user's settings, an experiment that trains until the test stops it, and the status bar's step.
#pragma once

#include <QLabel>
#include <QSize>
#include <QStatusBar>
#include <QString>
#include <QTemporaryDir>
#include <QTest>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "live/run_controller.h"
#include "main_window.h"
#include "config/experiment.h"

namespace window_test {

// A shown window whose store is `runs.sqlite` in `dir`.
inline std::unique_ptr<mantissa::ui::MainWindow> openWindow(const QTemporaryDir& dir, QSize size = {1400, 900}) {
    mantissa::ui::MainWindow::Options o;
    o.storePath = dir.filePath(QStringLiteral("runs.sqlite"));
    o.useSettings = false;
    auto w = std::make_unique<mantissa::ui::MainWindow>(o);
    w->resize(size);
    w->show();
    return w;
}

// Spirals on the CPU with a step budget no test reaches: the tests stop the runs.
inline mantissa::Experiment endlessSpirals(std::string name, std::vector<int> hidden, std::int64_t evalEvery) {
    mantissa::Experiment e;
    e.name = std::move(name);
    e.dataset.kind = "spirals";
    e.dataset.samples = 600;
    e.model.hidden = std::move(hidden);
    e.train.batch_size = 32;
    e.train.steps = 1'000'000;
    e.train.eval_every = evalEvery;
    e.backend = "cpu";
    return e;
}

// Stops the window's run and waits (up to 10 s) until it has ended; false if it did not.
inline bool stopAndWait(mantissa::ui::MainWindow& w) {
    w.controller()->stop();
    return QTest::qWaitFor([&] { return !w.controller()->active(); }, 10000);
}

// The permanent status bar's "step N / M" label, or empty.
inline QString statusStep(mantissa::ui::MainWindow& w) {
    for (QLabel* l : w.statusBar()->findChildren<QLabel*>())
        if (l->text().startsWith(QStringLiteral("step "))) return l->text();
    return {};
}

}  // namespace window_test
