// measure_recording_cost(): see recording_cost.h.
#include "recording_cost.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include "store/run_store.h"

namespace mantissa::bench {

RecordingCost measure_recording_cost(const std::function<void(TelemetrySink* sink)>& train, const std::string& dir,
                                     int repeats) {
    using clock = std::chrono::steady_clock;
    RecordingCost cost{std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
    for (int r = 0; r < repeats; ++r) {
        auto t0 = clock::now();
        train(nullptr);
        cost.without_s = std::min(cost.without_s, std::chrono::duration<double>(clock::now() - t0).count());

        const std::string path = dir + "/recording-cost-" + std::to_string(r) + ".sqlite";
        std::remove(path.c_str());
        RunStore store(path);
        t0 = clock::now();
        auto recorder = store.start_run({"recording-cost", "cpu", "bench", "{}"});
        train(recorder.get());
        recorder->finish(RunStatus::completed);
        cost.with_s = std::min(cost.with_s, std::chrono::duration<double>(clock::now() - t0).count());
    }
    return cost;
}

}  // namespace mantissa::bench
