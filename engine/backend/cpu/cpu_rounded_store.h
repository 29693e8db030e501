// RoundedStore: how a pass that computes values writes them rounded to a tensor's format. Where
// the CPU runs the rounding lanes (numeric/round_lanes.h) the pass rounds each vector in its
// registers before the one store; elsewhere it stores the values and rounds them afterwards with
// round_output (cpu_tensor_access.h). The bits are round_to's either way.
#pragma once

#include "numeric/convert.h"
#include "numeric/round_lanes.h"

namespace mantissa {

struct RoundedStore {
    // allowed: the backend's CpuBackend::rounds_in_lanes().
    RoundedStore(Format f, bool allowed) : format(f) {
#ifdef MANTISSA_ROUND_LANES
        in_lanes = allowed && lanes::supported();
        if (in_lanes) rounding = lanes::rounding_for(f);
#else
        (void)allowed;
#endif
    }

    Format format;
    bool in_lanes = false;
#ifdef MANTISSA_ROUND_LANES
    lanes::Rounding rounding;
#endif
};

}  // namespace mantissa
