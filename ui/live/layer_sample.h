// LayerSample: the part of a LayerStepRecord the live views show, without the 1 KiB exponent
// histogram, so the ring that carries it out of the training thread stays small and copies fast
// (about 140 bytes, the FP8 scaling included).
#pragma once

#include <cstdint>
#include <optional>

#include "config/telemetry.h"

namespace mantissa::ui {

struct LayerSample {
    std::int64_t step = 0;
    std::int32_t layer = 0;             // index into the session's layers
    ComputeFormat precision;            // in effect at this step
    double grad_amax = 0;
    std::int64_t grad_elements = 0;
    double frac_zero = 0;
    double frac_subnormal = 0;
    double frac_nonfinite = 0;
    double frac_underflow = 0;
    double frac_lost_updates = 0;
    std::optional<Fp8LayerScaling> fp8;  // FP8 layers' scales and amaxes, when recorded (telemetry.h)

    static LayerSample from(const LayerStepRecord& r) {
        return {r.step,          r.layer,          r.precision,      r.grad_amax,      r.grad_elements,
                r.frac_zero,     r.frac_subnormal, r.frac_nonfinite, r.frac_underflow, r.frac_lost_updates,
                r.fp8};
    }
};

}  // namespace mantissa::ui
