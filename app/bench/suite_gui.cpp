// The `gui` suite, run in the GUI executable: `mantissa --bench-gui --json` (app/gui/gui_bench.*)
// measures replot times, GUI-open vs headless throughput and GUI-thread stalls, and prints one
// suite as JSON; this side starts it (offscreen) and reads the result back, so mantissa-cli never
// links Qt Widgets. It looks for `mantissa` beside this executable (build tree and install alike).
#include <string>

#include "bench/bench.h"
#include "bench/child_process.h"
#include "bench/stats.h"
#include "error.h"

namespace mantissa::bench {

SuiteResult run_gui_suite(const BenchOptions& o) {
    const auto t0 = Clock::now();
    SuiteResult r;
    r.name = "gui";
    r.title = "chart replot times, GUI-open vs headless throughput, GUI-thread stalls";
    if (!gui_built()) {
        r.skipped = true;
        r.notes.push_back("skipped: this build has no GUI (configure with -DMANTISSA_GUI=ON to build `mantissa`)");
        return r;
    }
    const std::string exe = find_gui_executable();
    if (exe.empty()) {
        r.skipped = true;
        r.notes.push_back("skipped: the GUI executable `mantissa` was not found beside " + executable_dir());
        return r;
    }
    std::vector<std::string> argv = {exe, "--bench-gui", "--json"};
    if (o.quick) argv.push_back("--quick");
    if (o.blocks > 0) {
        argv.push_back("--blocks");
        argv.push_back(std::to_string(o.blocks));
    }
    std::vector<std::pair<std::string, std::string>> env;
    const char* qpa = std::getenv("QT_QPA_PLATFORM");
    if (!qpa || !*qpa) env.push_back({"QT_QPA_PLATFORM", "offscreen"});
    o.say("gui: running " + exe + " --bench-gui (offscreen)");
    try {
        ChildProcess gui(argv, env);
        const std::string out = gui.read_all();
        const int code = gui.wait();
        const auto j = nlohmann::json::parse(out, nullptr, false);
        if (code != 0 || j.is_discarded()) {
            std::string err = gui.stderr_text();
            while (!err.empty() && err.back() == '\n') err.pop_back();
            const auto nl = err.rfind('\n');
            r.skipped = true;
            r.notes.push_back("failed: `mantissa --bench-gui` exited " + std::to_string(code) +
                              (err.empty() ? "" : ": " + err.substr(nl == std::string::npos ? 0 : nl + 1)));
            return r;
        }
        r = suite_from_json(j);
        r.notes.insert(r.notes.begin(), "measured by " + exe + " --bench-gui (offscreen)");
    } catch (const Error& e) {
        r.skipped = true;
        r.notes.push_back(std::string("failed: ") + e.what());
    }
    r.seconds = seconds_since(t0);
    return r;
}

const std::vector<SuiteDef>& all_suites() {
    static const std::vector<SuiteDef> suites = {
        {"engine", "samples/s and step time per precision (reference MLP and wider ones), oneDNN fp32 vs bf16",
         run_engine_suite},
        {"numeric", "rounding elements/s per format, in cache and from memory, vs the scalar path", run_numeric_suite},
        {"store", "rows/s ingested by the Recorder vs raw SQLite; training slowdown with recording", run_store_suite},
        {"gui", "replot times at 10^4..10^6 points, GUI-open vs headless throughput, GUI-thread stalls", run_gui_suite},
        {"peer", "Mantissa/PyTorch samples/s (fp32, bf16) and test accuracy after the same epochs", run_peer_suite},
    };
    return suites;
}

}  // namespace mantissa::bench
