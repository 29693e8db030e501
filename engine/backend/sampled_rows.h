// SampledRows: which values of a tensor make one operand's sample for the statistics that read
// operands (train/operand_sampler.h), as a rule a GPU can follow without a list of indices:
// `count` rows of K values, sample row i being the tensor's row i·total/count (spread evenly
// from the first, as sample_row_indices spreads them), where a tensor's row is
//   rows           values [r·K, (r + 1)·K): a linear layer's x and dy, any layer's weight;
//   conv_patches   the patch under the kernel at output position r % P of image r / P of a conv2d
//                  input (batch, C·H·W): C·k·k values in (c, ky, kx) order, zeros in the padding
//                  (im2col, as the forward multiplies them);
//   conv_channels  the Co values of a conv2d output gradient (batch, Co·P) at output position
//                  r % P of image r / P (the input-gradient matmul's rows).
// One definition for the host and the device: the CUDA backend gathers with it on the device
// (StepPipeline::sample_rows_later), the CPU's sampler gathers with it too (train/operand_sampler.h),
// and tests hold it to im2col written out.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define MANTISSA_HOST_DEVICE __host__ __device__
#else
#define MANTISSA_HOST_DEVICE
#endif

namespace mantissa {

struct SampledRows {
    enum class Kind : std::uint8_t { rows, conv_patches, conv_channels };
    Kind kind = Kind::rows;
    std::int64_t total = 0;  // the tensor's rows of this kind
    std::int64_t count = 0;  // the rows sampled (1 <= count <= total, or 0 for none)
    std::int64_t K = 0;      // values per row
    // A convolution's geometry (conv_patches, conv_channels), as Conv2dGeometry's.
    std::int64_t channels = 0, height = 0, width = 0, kernel = 1, stride = 1, padding = 0;
    std::int64_t out_h = 0, out_w = 0;

    std::int64_t values() const { return count * K; }

    MANTISSA_HOST_DEVICE std::int64_t row(std::int64_t i) const { return i * total / count; }

    // The index in the tensor of value q of sample row i, or -1 where the value is a zero of the
    // padding.
    MANTISSA_HOST_DEVICE std::int64_t source(std::int64_t i, std::int64_t q) const {
        const std::int64_t r = row(i);
        if (kind == Kind::rows) return r * K + q;
        const std::int64_t positions = out_h * out_w;
        const std::int64_t image = r / positions, p = r % positions;
        if (kind == Kind::conv_channels) return image * K * positions + q * positions + p;
        const std::int64_t taps = kernel * kernel;
        const std::int64_t c = q / taps, ky = q % taps / kernel, kx = q % kernel;
        const std::int64_t iy = p / out_w * stride - padding + ky, ix = p % out_w * stride - padding + kx;
        if (iy < 0 || iy >= height || ix < 0 || ix >= width) return -1;
        return image * channels * height * width + (c * height + iy) * width + ix;
    }
};

}  // namespace mantissa

#undef MANTISSA_HOST_DEVICE
