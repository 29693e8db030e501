// Throughput, defined once (docs/numerics.md, "Throughput"). Two figures, never mixed up:
//
//   a step's rate   StepRecord::samples_per_s: the batch's rows / the step's own time. What the
//                   steps table and the throughput charts show, step by step.
//   a run's rate    "samples/s (mean over the run)": the samples trained / the training time, the
//                   run's clock time_s at its last step (pauses and paced waits left out,
//                   evaluations in, as time_s counts them). What the CLI's summary, `show`, the
//                   run store's totals and the GUI's status bar show.
//
// The mean of the step rates is not the run's rate (a mean of ratios weighs a fast step as much
// as a slow one, and leaves out the time between steps), so nothing reports it.
//
// Plain inline functions: the trainer, the session, the store and the GUI all include this one
// header, so the figures cannot drift apart.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

namespace mantissa {

// A step's rate: `rows` trained in `seconds` of that step; 0 when the step was not timed.
inline double step_samples_per_s(std::int64_t rows, double seconds) {
    return seconds > 0 ? static_cast<double>(rows) / seconds : 0.0;
}

// The rows a step trained, recovered exactly from the two figures the store keeps for it
// (samples_per_s and step_time_ms, both made from the same seconds by the trainer): their product
// is the row count within a few units in the last place, so rounding gives it back exactly.
// Empty when the step was not timed (a time of 0, never seen on a real step) or a figure is
// missing or not finite.
inline std::optional<std::int64_t> step_rows(double samples_per_s, double step_time_ms) {
    if (!(samples_per_s > 0) || !(step_time_ms > 0) || !std::isfinite(samples_per_s) || !std::isfinite(step_time_ms))
        return std::nullopt;
    return std::llround(samples_per_s * (step_time_ms / 1e3));
}

// The run's rate, "samples/s (mean over the run)": `samples` trained in `time_s` seconds of
// training (the time_s of the last step they include). 0 before any training time has passed.
inline double run_samples_per_s(std::int64_t samples, double time_s) {
    return time_s > 0 && std::isfinite(time_s) ? static_cast<double>(samples) / time_s : 0.0;
}

// How every display names the run's rate, so the CLI, `show` and the GUI say the same words.
inline constexpr const char* run_samples_per_s_label = "samples/s (mean over the run)";

}  // namespace mantissa
