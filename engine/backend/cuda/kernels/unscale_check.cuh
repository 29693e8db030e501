// unscale_check: the fused pass over every gradient of a step, as torch's
// _amp_foreach_non_finite_check_and_unscale_: each value is multiplied by inv_scale in FP32, and
// in the same read the pass finds inf/NaN (per tensor, and the first offending tensor by index:
// the overflow event's "first layer"), sums the squares in double (the gradient norm) and, for
// the tensors whose statistics are wanted this step, takes the largest finite magnitude, counts
// the non-finite values and fills the log2 exponent histogram (ExponentHistogram's bins).
// One launch for all tensors: the host cuts them into chunks (CheckChunk), one block per chunk;
// the block's histogram lives in shared memory and is added to the tensor's once.
// FP32 gradients (and tf32's 32-bit storage) get the unscaled values written back; narrower
// gradients keep their bits and the backend records the multiplier, applying it on every later
// read (CudaTensor): the same FP32 values the CPU holds, without widening the tensor.
// The reference: CpuBackend::unscale_and_check (cpu_gradients.cpp) and exponent_histogram.
#pragma once

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

__global__ void unscale_check_kernel(const CheckChunk* chunks, float inv_scale, const float* inv_scale_dev,
                                     CheckResult* results, int* first_bad, int* found_inf) {
    __shared__ unsigned int hist[histogram_bins];
    const CheckChunk c = chunks[blockIdx.x];
    const float inv = inv_scale_dev ? *inv_scale_dev : inv_scale;
    if (c.want_summary) {
        for (int k = threadIdx.x; k < histogram_bins; k += blockDim.x) hist[k] = 0;
        __syncthreads();
    }
    int nonfinite_flag = 0;
    unsigned long long nonfinite = 0;
    std::uint32_t amax = 0;
    double sum = 0;
    for (std::int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
        const float v = apply_multiplier(apply_multiplier(load_value(c.data, c.fmt, i), c.multiplier), inv);
        if (c.write_back && inv != 1.0f) static_cast<float*>(c.data)[i] = v;
        const std::uint32_t m = bits_of(v) & 0x7fffffffu;
        if (m >= 0x7f800000u) {
            nonfinite_flag = 1;
            ++nonfinite;
        } else if (c.want_summary && m != 0) {
            amax = max(amax, m);
            int bin = exponent_of_value(v) - histogram_min_exponent;
            bin = bin < 0 ? 0 : (bin >= histogram_bins ? histogram_bins - 1 : bin);
            atomicAdd(&hist[bin], 1u);
        }
        const double d = v;
        sum += d * d;
    }
    nonfinite_flag = __syncthreads_or(nonfinite_flag);
    sum = block_sum(sum);
    CheckResult& r = results[c.tensor];
    if (threadIdx.x == 0) {
        atomicAdd(&r.sum_squares, sum);
        if (nonfinite_flag) {
            atomicOr(&r.nonfinite_flag, 1u);
            atomicMin(first_bad, c.tensor);
            if (found_inf) *found_inf = 1;
        }
    }
    if (!c.want_summary) return;
    nonfinite = block_sum(nonfinite);
    amax = block_max(amax);
    if (threadIdx.x == 0) {
        if (nonfinite) atomicAdd(&r.nonfinite, nonfinite);
        if (amax) atomicMax(&r.amax_bits, amax);
    }
    __syncthreads();
    for (int k = threadIdx.x; k < histogram_bins; k += blockDim.x)
        if (hist[k]) atomicAdd(&r.histogram[k], hist[k]);
}

// ---- launchers

void launch_unscale_check(const CheckChunk* chunks, int chunk_count, float inv_scale, const float* inv_scale_dev,
                          CheckResult* results, int* first_bad, int* found_inf, cudaStream_t stream) {
    if (chunk_count <= 0) return;
    unscale_check_kernel<<<static_cast<unsigned>(chunk_count), block_size, 0, stream>>>(
        chunks, inv_scale, inv_scale_dev, results, first_bad, found_inf);
    check_launch("unscale_check");
}

}  // namespace mantissa::cuda
