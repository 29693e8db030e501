// Which number formats a GPU can multiply in, decided from its compute capability alone, so the
// decision is host code that tests run without a GPU and that `mantissa-cli devices` shows.
//
// Storage and conversion work on every supported GPU (the conversions have software paths); what
// depends on the hardware is the tensor-core matmul. A format the GPU cannot multiply in is
// refused with a reason, never emulated silently:
//   fp32                 every GPU Mantissa runs on (compute capability 7.5 and newer)
//   fp16                 7.5 and newer (tensor cores since Volta)
//   tf32, bf16           8.0 and newer (Ampere)
//   fp8-e4m3, fp8-e5m2   8.9 and newer (Ada, Hopper, Blackwell); 8.6 and 8.7 have none
#pragma once

#include <string>
#include <vector>

#include "numeric/format.h"

namespace mantissa::cuda {

struct ComputeCapability {
    int major = 0;
    int minor = 0;
    int value() const { return major * 10 + minor; }  // 8.9 -> 89
    std::string text() const;                         // "8.9"
    std::string sm() const;                           // "sm_89"
};

// The oldest GPU the module is built for (the CUDA 13 toolkit dropped everything older).
inline constexpr ComputeCapability oldest_supported_gpu{7, 5};

struct Support {
    bool supported = false;
    std::string reason;  // when not supported: one sentence naming the GPU's capability and the need
};

// Whether the module can run on this GPU at all.
Support device_support(ComputeCapability cc);

// Whether a layer can compute (multiply) in `format` on this GPU. Every format is refused on a
// GPU that device_support refuses.
Support matmul_support(Format format, ComputeCapability cc);

// The formats matmul_support accepts, in all_formats order; "fp32, fp16" as text.
std::vector<Format> supported_matmul_formats(ComputeCapability cc);
std::string format_list_text(const std::vector<Format>& formats);

}  // namespace mantissa::cuda
