// The batch norm's per-channel sums of the CPU backend, declared apart so that tests can hold the
// vector path against the plain loops bit for bit. A sum runs in 16 double lanes: value i of a
// plane goes into lane i mod 16, the lanes carry from plane to plane, and they are added pairwise
// at the end (docs/numerics.md, "Convolutional ops"). The AVX2 path keeps each lane in its own
// double of four 4-wide registers and does each lane's operations in the plain loop's order, with
// no fused multiply-add, so both give the same bits. Defined in cpu_batchnorm.cpp.
#pragma once

#include <cstdint>

namespace mantissa::cpu_detail {

constexpr int batchnorm_lanes = 16;

// Partial sums in double, value i of a plane into lane i mod 16.
struct BatchNormLanes {
    double v[batchnorm_lanes] = {};
    double total() const;  // pairwise, a fixed tree
};

// Each adds one plane of n values into its lanes. The unsuffixed ones take the vector path where
// the CPU has AVX2; the `_plain` ones are the loops it is held to.
// Σ x.
void batchnorm_add_sum(const float* x, std::int64_t n, BatchNormLanes& s);
void batchnorm_add_sum_plain(const float* x, std::int64_t n, BatchNormLanes& s);
// Σ (x - mean)², the difference in double.
void batchnorm_add_squares(const float* x, std::int64_t n, double mean, BatchNormLanes& s);
void batchnorm_add_squares_plain(const float* x, std::int64_t n, double mean, BatchNormLanes& s);
// Σ dy and Σ dy·x̂, x̂ = (x - mean)·invstd in FP32, the products in double.
void batchnorm_add_grad_sums(const float* x, const float* dy, std::int64_t n, float mean, float invstd,
                             BatchNormLanes& sdy, BatchNormLanes& sdyx);
void batchnorm_add_grad_sums_plain(const float* x, const float* dy, std::int64_t n, float mean, float invstd,
                                   BatchNormLanes& sdy, BatchNormLanes& sdyx);

}  // namespace mantissa::cpu_detail
