// `mantissa --bench-gui`: the GUI's share of the performance suites, run inside the GUI executable
// (offscreen) so that mantissa-cli never links Qt Widgets. It returns the `gui` suite in the
// shape every suite reports in (app/bench/report.h); main prints it as text or JSON and
// `mantissa-cli bench --suite gui` reads the JSON back.
//   1. Replot time of the five charts (loss, loss scale, memory, throughput, underflow per layer)
//      at 10^4, 10^5 and 10^6 steps each, whole run in view: median of repeats, synchronous
//      (query the level-of-detail series, set the graphs' data, draw, paint), ratio to 10^4.
//      Aim: <= 16 ms at 10^6 and <= 2x the 10^4 time.
//   2. Training throughput with the window open (draining at 30 Hz, replotting) vs headless, the
//      same experiment, pairs alternating which goes first, both recording to a store.
//      Aim: GUI >= 0.98x headless.
//   3. The GUI thread's longest stall during a GUI run: lateness of a 5 ms precise timer.
//      Aim: never blocked more than 50 ms.
// GUI thread only; needs a QApplication.
#pragma once

#include "bench/report.h"

namespace mantissa::ui {

struct GuiBenchOptions {
    bool quick = false;  // 10^4 and 10^5 points, short runs, one pair
    int blocks = 0;      // repeats per replot figure and GUI/headless pairs; 0: defaults
};

mantissa::bench::SuiteResult runGuiBench(const GuiBenchOptions& options);

}  // namespace mantissa::ui
