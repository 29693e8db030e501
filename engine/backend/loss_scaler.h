// LossScaler: the loss scale of one run, with torch.amp.GradScaler's algorithm and defaults.
//
//   off      scale 1; nothing is skipped (a non-finite gradient reaches the optimizer, as it
//            does in plain training without a scaler)
//   static   scale S = init_scale, fixed; a step with a non-finite gradient is skipped
//   dynamic  GradScaler: start at init_scale (2^16); on a step with a non-finite gradient skip
//            the optimizer, scale *= backoff (0.5), counter = 0; otherwise counter += 1 and when
//            it reaches growth_interval (2000): scale *= growth (2) if that is finite, counter = 0.
//            Optional min/max scale clamp the result (an extension, off by default).
// The scale is an FP32 value, as GradScaler's _scale tensor is; the unscale factor is the FP32
// rounding of the double reciprocal (scale.double().reciprocal().float()).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "config/experiment.h"

namespace mantissa {

// FP32's smallest normal number, 2^-126 (about 1.18e-38). A loss scale below it has collapsed:
// the scaled loss rounds to zero or to subnormals and the unscale factor 1/scale overflows (to inf
// at 0 and below 2^-128), so every later step is skipped or learns nothing. Only a run whose
// gradients are non-finite at every scale backs off that far (or a tiny init_scale starts there).
inline constexpr float smallest_normal_scale = std::numeric_limits<float>::min();
inline bool loss_scale_collapsed(double scale) { return !(scale >= smallest_normal_scale); }

class LossScaler {
public:
    explicit LossScaler(const LossScalingSpec& spec);

    struct Update {
        bool skipped = false;         // the optimizer must not step
        float old_scale = 1, new_scale = 1;
        const char* reason = "";      // "backoff", "growth", "" when unchanged
        bool changed() const { return old_scale != new_scale; }
    };

    LossScalingMode mode() const { return m_spec.mode; }
    const LossScalingSpec& spec() const { return m_spec; }
    float scale() const { return m_scale; }        // multiplies the loss of the next backward
    float inv_scale() const;                        // unscale factor
    std::int64_t growth_tracker() const { return m_tracker; }

    // After the backward: found_nonfinite is the one check over all gradients.
    Update update(bool found_nonfinite);

    // Live change. A new mode restarts at init_scale with the counter at 0; within the same mode,
    // static takes the new init_scale, dynamic keeps its current scale and counter and takes the
    // new factors, interval and bounds (the scale clamped to them).
    void reconfigure(const LossScalingSpec& spec);
    // The state a StepPipeline reported after a step (its scaler runs where the steps run, with
    // this spec): the Trainer keeps this one as the host's mirror of it.
    void restore(float scale, std::int64_t growth_tracker) {
        m_scale = scale;
        m_tracker = growth_tracker;
    }

private:
    float clamp(float s) const;
    LossScalingSpec m_spec;
    float m_scale = 1;
    std::int64_t m_tracker = 0;
};

}  // namespace mantissa
