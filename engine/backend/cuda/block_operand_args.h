// The host's half of a block-scaled operand's rounding on the device: a BlockFormat's block size,
// element grid and scale kind as block_round.cuh's kernel arguments, read from numeric's format
// tables (block_format.h, element_format.h), so the device rounds on the grids the CPU rounds on.
#pragma once

#include "backend/cuda/kernels/block_round.cuh"
#include "numeric/block_format.h"
#include "numeric/element_format.h"

namespace mantissa::cuda {

inline BlockOperandArgs block_operand_args(BlockFormat format) {
    const BlockFormatInfo& info = block_format_info(format);
    const ElementFormatInfo& element = element_format_info(info.element);
    BlockOperandArgs a;
    a.block_size = info.block_size;
    a.nvfp4 = info.scale == ScaleKind::e4m3_with_tensor_scale;
    a.grid = {element.mantissa_bits, 1 - element.bias, element.emax, element.max_finite};
    return a;
}

}  // namespace mantissa::cuda
