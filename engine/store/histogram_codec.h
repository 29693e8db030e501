// The compact encoding of a layer's gradient exponent histogram in layer_steps.grad_exponents
// (a public format: docs/schema.md, "The grad_exponents blob").
//
//   byte 0      0x01, the encoding's version
//   varint      zigzag(e0): the exponent of the first stored bin (bin e counts floor(log2|g|) == e)
//   varint      n: the number of stored bins
//   n varints   the counts of bins e0, e0+1, ..., e0+n-1
// Varints are unsigned LEB128 (7 bits a byte, least significant group first, high bit = more).
// Bins before e0 and after e0+n-1 are zero; the encoder trims zero bins at both ends, so a typical
// gradient (20-40 binades) takes 25-80 bytes instead of 1,112. An all-zero histogram is 01 00 00.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "config/telemetry.h"

namespace mantissa::store {

// The encoding of h, appended to out (append_histogram) or replacing it (encode_histogram).
void append_histogram(const ExponentHistogram& h, std::vector<std::uint8_t>& out);
inline void encode_histogram(const ExponentHistogram& h, std::vector<std::uint8_t>& out) {
    out.clear();
    append_histogram(h, out);
}

// Decodes a blob; bins outside ExponentHistogram's range are added to its end bins. Returns false
// for a malformed blob (h is then all zero). An empty blob (a row written before schema version 2
// had the column) decodes to an all-zero histogram.
bool decode_histogram(std::span<const std::uint8_t> blob, ExponentHistogram& h);

}  // namespace mantissa::store
