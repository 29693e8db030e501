// Format support per compute capability: see format_support.h for the table and its reasons.
#include "backend/cuda/format_support.h"

namespace mantissa::cuda {

namespace {

struct Requirement {
    ComputeCapability min;
    const char* what;  // the hardware that brings the format
};

Requirement requirement(Format f) {
    switch (f) {
        case Format::fp32: return {oldest_supported_gpu, "FP32 matmuls"};
        case Format::fp16: return {{7, 5}, "FP16 tensor cores"};
        case Format::tf32: return {{8, 0}, "TF32 tensor cores (Ampere)"};
        case Format::bf16: return {{8, 0}, "BF16 tensor cores (Ampere)"};
        case Format::fp8_e4m3:
        case Format::fp8_e5m2: return {{8, 9}, "FP8 tensor cores (Ada, Hopper or newer)"};
    }
    return {oldest_supported_gpu, "matmuls"};
}

}  // namespace

std::string ComputeCapability::text() const {
    return std::to_string(major) + "." + std::to_string(minor);
}

std::string ComputeCapability::sm() const {
    return "sm_" + std::to_string(value());
}

Support device_support(ComputeCapability cc) {
    if (cc.value() >= oldest_supported_gpu.value()) return {true, {}};
    return {false, "this GPU has compute capability " + cc.text() + "; Mantissa's CUDA module (CUDA 13) needs " +
                       oldest_supported_gpu.text() + " (Turing) or newer"};
}

Support matmul_support(Format format, ComputeCapability cc) {
    Support device = device_support(cc);
    if (!device.supported) return device;
    const Requirement r = requirement(format);
    if (cc.value() >= r.min.value()) return {true, {}};
    return {false, std::string(format_name(format)) + " needs " + r.what + ", compute capability " + r.min.text() +
                       " or newer; this GPU has " + cc.text()};
}

std::vector<Format> supported_matmul_formats(ComputeCapability cc) {
    std::vector<Format> out;
    for (Format f : all_formats)
        if (matmul_support(f, cc).supported) out.push_back(f);
    return out;
}

std::string format_list_text(const std::vector<Format>& formats) {
    std::string text;
    for (Format f : formats) {
        if (!text.empty()) text += ", ";
        text += format_name(f);
    }
    return text;
}

}  // namespace mantissa::cuda
