// Stochastic rounding: a value goes to one of its two neighbours in the format, the larger in
// magnitude with probability (|x| - lo) / (hi - lo), so that the stored value is x on average and a
// long run of updates smaller than half a step still moves a weight (docs/numerics.md,
// "Stochastic rounding"). The random bits are counter-based: value i of a pass keyed k always gets
// the same bits, so a seeded run is reproducible bit for bit whatever the blocking or threads.
//
// Every format: fp32 is kept as is; bf16 and tf32 round on the fp32 bit pattern (random bits
// added below the kept mantissa, then dropped: exact probabilities, subnormals included); fp16,
// fp8-e4m3 and fp8-e5m2 round on their grid (grid_round.h), the probability exact to 2^-24 of a
// step. Beyond the largest finite value the next step up is the overflow (inf, NaN for e4m3, or
// the largest value when saturating), reached with the probability of the distance: fp16 can
// overflow from 65504 where round_to does from 65520. NaN stays NaN. A pass takes at most 2^32
// values (the random bits use the index's low 32 bits).
#pragma once

#include <cstddef>
#include <cstdint>

#include "numeric/block_format.h"
#include "numeric/convert.h"

namespace mantissa {

// The key of pass `pass` of a run seeded with `seed` (SplitMix64 of both): each rounding pass of
// a training step takes the next pass number, so no two passes share random bits.
std::uint64_t stochastic_key(std::uint64_t seed, std::uint64_t pass);

// The 32 random bits value `index` of the pass keyed `key` gets.
std::uint32_t stochastic_bits(std::uint64_t key, std::uint64_t index);

// x rounded stochastically to `format` with the 32 random bits `random` (the top 24 are used).
float round_stochastic(Format format, float x, std::uint32_t random, Overflow overflow = Overflow::to_inf);

// dst[i] = round_stochastic(format, src[i], stochastic_bits(key, first_index + i)); src == dst is
// allowed, other overlaps are not.
void round_array_stochastic(Format format, const float* src, float* dst, std::size_t n, std::uint64_t key,
                            std::uint64_t first_index = 0, Overflow overflow = Overflow::to_inf);

// dst[i] = round_array_stochastic of src[i] · scale (the product in FP32; FP8 quantisation with a
// per-tensor scale); returns max |src[i]| as scale_round_array does.
float scale_round_array_stochastic(Format format, const float* src, float* dst, std::size_t n, float scale,
                                   std::uint64_t key, Overflow overflow = Overflow::to_inf);

// round_blocks_along with each element rounded stochastically (value i of the tensor, in its
// storage order, takes stochastic_bits(key, i)). The block scales are round_blocks_along's, but
// for an MX block whose amax the OCP rule (floor(log2(amax)) - emax) scales beyond the element's
// largest value: it takes the next power of two. A clipped element would make the rounding biased
// (the clipped largest value against the kept small ones), which is why MXFP4 training recipes
// scale before rounding stochastically; NVFP4's scale (amax / 6, rounded to E4M3) is kept as is.
BlockStats round_blocks_along_stochastic(BlockFormat format, const float* src, float* dst, std::size_t outer,
                                         std::size_t K, std::size_t inner, float tensor_scale, std::uint64_t key);

}  // namespace mantissa
