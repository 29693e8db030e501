// The ReLU's rule on one value, forward and backward, for every CPU pass that applies it: the
// activation (cpu_elementwise.cpp) and the max pool that carries a ReLU (cpu_pool.cpp), so both
// give the same bits. Branch-free selects: the loops that call them vectorise.
#pragma once

namespace mantissa::cpu_detail {

// a = z where z > 0, z where z is a NaN (kept, as torch's relu keeps it), else +0 (-0 included).
inline float relu_value(float z) { return z > 0.0f ? z : (z != z ? z : 0.0f); }

// dz = da where a (the ReLU's output, or its input: the test is the same) passes, a > 0 or a NaN;
// +0 where a <= 0 (torch's threshold_backward).
inline float relu_gradient(float a, float da) { return a <= 0.0f ? 0.0f : da; }

}  // namespace mantissa::cpu_detail
