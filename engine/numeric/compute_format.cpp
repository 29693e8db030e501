// parse_compute_format: a tensor format's name first, then a block format's.
#include "numeric/compute_format.h"

namespace mantissa {

std::optional<ComputeFormat> parse_compute_format(std::string_view name) {
    if (const auto f = parse_format(name)) return ComputeFormat(*f);
    if (const auto b = parse_block_format(name)) return ComputeFormat(*b);
    return std::nullopt;
}

}  // namespace mantissa
