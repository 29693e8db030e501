// ComputeFormat: the precision a layer's matmuls run in, as a step records it and the Layers
// table and `show` name it. Either a format the operands are rounded to (fp32, tf32, fp16, bf16,
// or fp8-e4m3 scaled per tensor), or a block-scaled format (block_format.h), whose operands are
// quantised in blocks along the reduction dimension and then multiplied as the FP32 values they
// decode to (docs/numerics.md, "Block-scaled formats in training").
#pragma once

#include <optional>
#include <string_view>

#include "numeric/block_format.h"
#include "numeric/format.h"

namespace mantissa {

struct ComputeFormat {
    Format format = Format::fp32;      // the operands' tensor format: fp32 for block formats
    std::optional<BlockFormat> block;  // set for the block-scaled formats

    ComputeFormat(Format f = Format::fp32) : format(f) {}  // NOLINT: a format is a compute format
    ComputeFormat(BlockFormat b) : format(Format::fp32), block(b) {}  // NOLINT: so is a block format
    std::string_view name() const { return block ? block_format_name(*block) : format_name(format); }
    // Bytes one value of an operand takes on a device: format_bytes, or a block format's bits per
    // value (its element and its share of the block's scale) / 8.
    double bytes_per_value() const {
        return block ? block_format_info(*block).bits_per_value / 8 : static_cast<double>(format_bytes(format));
    }
    bool operator==(const ComputeFormat&) const = default;
};

// A format's or a block format's canonical name (and the aliases parse_format and
// parse_block_format accept); empty when it is neither.
std::optional<ComputeFormat> parse_compute_format(std::string_view name);

}  // namespace mantissa
