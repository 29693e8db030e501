// See step_pipeline.h.
#include "backend/step_pipeline.h"

#include "error.h"

namespace mantissa {

// Only a pipeline whose samples_after_step() is true is asked (the statistics read the others'
// operands in place, through the Backend).
std::int64_t StepPipeline::sample_rows_later(const Tensor& t, std::int64_t, const SampledRows&) {
    throw Error("This step pipeline reads operands in place, not after the step (asked for " + t.desc().name + ").");
}

std::int64_t StepPipeline::fp8_scale_later(const Fp8State&, Fp8Role role) {
    throw Error(std::string("This step pipeline reads FP8 scales in place, not after the step (asked for the ") +
                fp8_role_name(role) + " scale).");
}

}  // namespace mantissa
