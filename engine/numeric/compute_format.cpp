// parse_compute_format: a tensor format's name first, then a block format's.
#include "numeric/compute_format.h"

namespace mantissa {

std::optional<ComputeFormat> parse_compute_format(std::string_view name) {
    std::optional<ComputeFormat> out;
    if (const auto f = parse_format(name))
        out.emplace(*f);
    else if (const auto b = parse_block_format(name))
        out.emplace(*b);
    return out;
}

}  // namespace mantissa
