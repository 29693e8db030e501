// The order in which a bias gradient adds its rows, shared by every backend so that their sums
// are the same FP32 value bit for bit:
//
//   db[c] = (((0 + S_0[c]) + S_1[c]) + ...),   S_k[c] = ((0 + dy[kB][c]) + dy[kB+1][c]) + ...
//
// the rows in blocks of B = bias_grad_block_rows, each block summed in row order, then the block
// sums in block order. One sum down all the rows would be a chain of dependent adds as long as the
// batch, which a GPU can only run on one thread per column (at width 256 and batch 16384 it took
// two thirds of a step's GPU time); blocks let every multiprocessor add a block at once. Batches
// of B rows or fewer sum exactly as one chain down the rows, as before.
#pragma once

#include <cstdint>

namespace mantissa {

inline constexpr std::int64_t bias_grad_block_rows = 256;

inline constexpr std::int64_t bias_grad_blocks(std::int64_t rows) {
    return (rows + bias_grad_block_rows - 1) / bias_grad_block_rows;
}

}  // namespace mantissa
