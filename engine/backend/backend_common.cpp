// Small helpers of the backend interface shared by every backend: names and format inclusion.
#include "backend/backend.h"
#include "backend/step_pipeline.h"

namespace mantissa {

const char* memory_category_name(MemoryCategory c) {
    switch (c) {
    case MemoryCategory::parameters: return "parameters";
    case MemoryCategory::master_weights: return "master_weights";
    case MemoryCategory::gradients: return "gradients";
    case MemoryCategory::optimizer_state: return "optimizer_state";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::workspace: return "workspace";
    }
    return "workspace";
}

const char* fp8_role_name(Fp8Role r) {
    switch (r) {
    case Fp8Role::input: return "input";
    case Fp8Role::weight: return "weight";
    case Fp8Role::grad_output: return "grad_output";
    }
    return "input";
}

bool format_contains(Format outer, Format inner) {
    if (outer == inner || outer == Format::fp32) return true;
    const FormatInfo& o = format_info(outer);
    const FormatInfo& i = format_info(inner);
    // Enough fraction bits, range and subnormal reach, and inf stays inf.
    return o.mantissa_bits >= i.mantissa_bits && o.max_finite >= i.max_finite &&
           o.min_subnormal <= i.min_subnormal && (o.has_infinity || !i.has_infinity);
}

std::unique_ptr<StepPipeline> Backend::create_pipeline(const LossScalingSpec& spec) {
    (void)spec;
    return nullptr;
}

}  // namespace mantissa
