// AmaxHistory: one tensor's delayed-scaling state for FP8, as Transformer Engine keeps it.
//
// During a step the tensor is quantised with the current scale while its amax (max |x| before
// scaling) is recorded; at the end of the step (update()) that amax joins a window of the last
// `history_len` amaxes and the next scale is computed from the window:
//     amax  = max(window)            (algo max)   or   the newest entry   (algo most_recent)
//     scale = (fp8_max / amax) / 2^margin,  kept unchanged when amax is 0 or not finite.
// The first step uses scale 1. Arithmetic in FP32, as TE does it. Current scaling (use_amax) takes
// the same formula from the tensor's own amax instead of the window's. Host-side; the CPU backend uses
// it directly and a GPU backend can mirror it. With scaling none the window is kept as always but
// the scale stays 1, so switching back to delayed picks the history up where it is.
#pragma once

#include <vector>

#include "config/experiment.h"

namespace mantissa {

class AmaxHistory {
public:
    AmaxHistory(int history_len, int margin, AmaxAlgo algo, float fp8_max);

    float scale() const { return m_scale; }
    float scale_inv() const { return m_scale_inv; }
    // Records this step's amax (max with anything already recorded this step).
    void record(float amax);
    // Ends the step: the recorded amax (0 when none) enters the window, the scale is recomputed.
    void update();
    std::vector<float> history() const;  // newest first
    // Between steps: the state a snapshot gave (history newest first, at most history_len entries;
    // throws mantissa::Error when longer), nothing recorded this step.
    void restore(float scale, float scale_inv, const std::vector<float>& history);
    void set_recipe(int margin, AmaxAlgo algo);
    void set_scaling(Fp8Scaling scaling);  // none sets the scale to 1 at once
    void set_power_of_two(bool on) { m_power_of_two = on; }
    bool current() const { return m_scaling == Fp8Scaling::current; }
    bool rowwise() const { return m_scaling == Fp8Scaling::rowwise; }  // the backend scales per row
    int margin() const { return m_margin; }
    bool power_of_two() const { return m_power_of_two; }
    // Current scaling: the scale for a tensor about to be quantised, from its own amax (kept until
    // the next call: the backward's dequantisation reads it); 1 when amax is 0 or not finite.
    // Records nothing (the caller records what a training step quantised). Call only when current().
    void use_amax(float amax);

private:
    std::vector<float> m_window;  // ring buffer of the last history_len amaxes
    int m_newest = -1;            // index of the newest entry, -1 before the first update
    int m_count = 0;
    int m_margin;
    AmaxAlgo m_algo;
    Fp8Scaling m_scaling = Fp8Scaling::delayed;
    float m_fp8_max;
    float m_pending = 0;          // this step's amax so far
    float m_scale = 1, m_scale_inv = 1;
    bool m_power_of_two = false;

    // (fp8_max / amax) / 2^margin, rounded down to a power of two when asked; 0 when amax is 0,
    // not finite, or the scale would not be a finite positive number.
    float scale_for(float amax) const;
};

}  // namespace mantissa
