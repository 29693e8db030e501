// operand_sample: what the statistics that read a matmul's operands need of one operand, copied
// out on the device as part of a pipelined step (CudaStepPipeline::sample_rows_later, so that a
// recorded step copies them again at each replay): the tensor's magnitudes and a few of its rows.
// Values are read as download reads them (cast.cuh: stored value × the tensor's multiplier, in
// FP32), so the statistics measure what Backend::sample_rows gives on the synchronous path.
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"
#include "backend/sampled_rows.h"

namespace mantissa::cuda {

// ---- kernels

// header[0] = max over all values of |v| as magnitude bits, header[1] = the same over the finite
// ones. As unsigned integers a NaN's magnitude bits exceed inf's, which exceed every finite one,
// so header[0] read as a float is Backend::RowSample::amax (NaN, else inf, else the largest |v|)
// and header[1] its finite_amax (0 when none).
__global__ void operand_magnitudes_kernel(const void* src, int src_fmt, float multiplier, std::int64_t n,
                                          std::uint32_t* header) {
    std::uint32_t amax = 0, finite = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const std::uint32_t m = bits_of(apply_multiplier(load_value(src, src_fmt, i), multiplier)) & 0x7fffffffu;
        amax = m > amax ? m : amax;
        if (m < 0x7f800000u) finite = m > finite ? m : finite;
    }
    amax = block_max(amax);
    finite = block_max(finite);
    if (threadIdx.x == 0) {
        if (amax) atomicMax(header, amax);
        if (finite) atomicMax(header + 1, finite);
    }
}

// out(rows.count, rows.K): value q of sample row i from rows.source(i, q), a padding zero where
// that is -1.
__global__ void gather_sampled_rows_kernel(const void* src, int src_fmt, float multiplier, SampledRows rows,
                                           float* out) {
    const std::int64_t values = rows.count * rows.K;
    MANTISSA_GRID_STRIDE(j, values) {
        const std::int64_t s = rows.source(j / rows.K, j % rows.K);
        out[j] = s < 0 ? 0.0f : apply_multiplier(load_value(src, src_fmt, s), multiplier);
    }
}

// ---- launchers

void launch_operand_magnitudes(const void* src, int src_fmt, float multiplier, std::int64_t n,
                               std::uint32_t* header, cudaStream_t stream) {
    if (cudaMemsetAsync(header, 0, 2 * sizeof(std::uint32_t), stream) != cudaSuccess)
        throw Error("operand_magnitudes: the header could not be cleared.");
    if (n <= 0) return;
    operand_magnitudes_kernel<<<grid_for(n, 8192), block_size, 0, stream>>>(src, src_fmt, multiplier, n, header);
    check_launch("operand_magnitudes");
}

void launch_gather_sampled_rows(const void* src, int src_fmt, float multiplier, const SampledRows& rows, float* out,
                                cudaStream_t stream) {
    const std::int64_t values = rows.count * rows.K;
    if (values <= 0) return;
    gather_sampled_rows_kernel<<<grid_for(values), block_size, 0, stream>>>(src, src_fmt, multiplier, rows, out);
    check_launch("gather_sampled_rows");
}

}  // namespace mantissa::cuda
