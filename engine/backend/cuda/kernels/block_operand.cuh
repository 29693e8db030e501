// block_operand: a block-scaled layer's matmul operands (MX, NVFP4) rounded on the device into
// bf16 values for a bf16 GEMM with FP32 accumulation (block_round.cuh holds the arithmetic, one
// thread per block). NVFP4 first takes the tensor's finite amax (block_tensor_amax), from which
// every block reads the tensor scale on the device: no host round trip, so a captured step
// replays it. The reference: round_block_operand in numeric/block_round.cpp.
#pragma once

#include "backend/cuda/kernels/block_round.cuh"
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/launchers.h"

namespace mantissa::cuda {

// ---- kernels

// *amax_bits = max(*amax_bits, the largest finite |x| as magnitude bits): NaN and inf left out,
// as NVFP4's tensor scale takes them.
__global__ void block_tensor_amax_kernel(const void* src, int src_fmt, std::int64_t n, std::uint32_t* amax_bits) {
    std::uint32_t amax = 0;
    MANTISSA_GRID_STRIDE(i, n) {
        const std::uint32_t m = finite_magnitude_bits(load_value(src, src_fmt, i));
        amax = m > amax ? m : amax;
    }
    amax = block_max(amax);
    if (threadIdx.x == 0 && amax) atomicMax(amax_bits, amax);
}

__global__ void round_block_operand_kernel(BlockOperandArgs a) {
    const float tensor_scale = a.tensor_amax ? nvfp4_scale_of(float_of(*a.tensor_amax)) : 1.0f;
    const std::uint64_t key = a.key ? block_pass_key(a, *a.key) : 0;
    const std::int64_t blocks = a.blocks();
    if (a.factor && blockIdx.x == 0 && threadIdx.x == 0) *a.factor = 1.0f / tensor_scale;
    MANTISSA_GRID_STRIDE(b, blocks) round_operand_block(a, b, tensor_scale, key);
}

// ---- launchers

void launch_block_tensor_amax(const void* src, int src_fmt, std::int64_t n, std::uint32_t* amax_bits,
                              cudaStream_t stream) {
    if (cudaMemsetAsync(amax_bits, 0, sizeof(std::uint32_t), stream) != cudaSuccess)
        throw Error("block_tensor_amax: the amax word could not be cleared.");
    if (n <= 0) return;
    block_tensor_amax_kernel<<<grid_for(n, 8192), block_size, 0, stream>>>(src, src_fmt, n, amax_bits);
    check_launch("block_tensor_amax");
}

void launch_round_block_operand(const BlockOperandArgs& args, cudaStream_t stream) {
    const std::int64_t blocks = args.blocks();
    if (blocks <= 0) return;
    round_block_operand_kernel<<<grid_for(blocks), block_size, 0, stream>>>(args);
    check_launch("round_block_operand");
}

}  // namespace mantissa::cuda
