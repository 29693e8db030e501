// See op_support.h.
#include "backend/cuda/op_support.h"

#include <algorithm>
#include <numeric>

namespace mantissa::cuda {

std::string cuda_op_unsupported(BackendOp op, Format format, const Support& matmul, const std::string& gpu) {
    const std::string name(format_name(format));
    switch (op) {
        case BackendOp::linear:
        case BackendOp::conv2d: {
            const char* what = op == BackendOp::linear ? "linear layers" : "convolutions";
            if (op == BackendOp::conv2d && format == Format::fp8_e5m2)  // as the CPU backend
                return "The CUDA backend computes convolutions in fp32, tf32, fp16, bf16 or fp8-e4m3, not " + name +
                       "; choose one of those for the layer.";
            if (matmul.supported) return "";
            return "The CUDA backend cannot compute " + std::string(what) + " in " + name + " on " + gpu + ": " +
                   matmul.reason + "; choose another precision for them.";
        }
        case BackendOp::activation: return "";
        default: {
            if (format == Format::fp32 || format == Format::tf32 || format == Format::fp16 || format == Format::bf16)
                return "";
            return std::string("The CUDA backend runs ") + backend_op_name(op) +
                   " on fp32, tf32, fp16 or bf16 tensors, not " + name +
                   "; keep the layer's tensors in one of those formats.";
        }
    }
}

std::int64_t conv_chunk_samples(std::int64_t batch, std::int64_t positions, std::int64_t widest,
                                std::int64_t max_values) {
    if (batch <= 0) return 0;
    const std::int64_t per_sample = std::max<std::int64_t>(1, positions) * std::max<std::int64_t>(1, widest);
    std::int64_t n = std::clamp<std::int64_t>(max_values / per_sample, 1, batch);
    if (n == batch) return n;
    const std::int64_t step = 16 / std::gcd(std::max<std::int64_t>(1, positions), std::int64_t{16});
    if (n >= step) n -= n % step;
    return n;
}

}  // namespace mantissa::cuda
