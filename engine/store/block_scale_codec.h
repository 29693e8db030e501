// The exponents blob of block_scale_steps (a public format: docs/schema.md, "The exponents blob"),
// and the reading of that table's rows into BlockScaleRecords (config/telemetry.h).
//
// The blob is a zlib stream (RFC 1950, as compress2 writes it at level 6) of the record's
// exponents, rows x blocks_per_row of them row-major, each an int16 little-endian; zero_block
// (-32768) and nan_block (32767) stand for a block of zeros and a block holding a NaN or an
// infinity.
//
// A row is read back only whole and sound: its operand one of x, W, dy in its own slot, its
// format a block format this build knows, its sizes consistent and its blob exactly the exponents
// they give. Anything else throws mantissa::Error with one sentence naming the row ("The block
// scales of fc1's x at step 40 of run 3 are damaged: ...").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/telemetry.h"

namespace mantissa::store {

class Statement;

// The blob of `exponents`, appended to `out`. Throws Error only when zlib cannot (no memory).
void append_block_exponents(std::span<const std::int16_t> exponents, std::vector<std::uint8_t>& out);

// Decodes a blob that should hold rows x blocks_per_row exponents (both >= 0, their product
// known to fit) into `out`. nullopt on success; else why not, as a clause that follows "are
// damaged: " ("their exponents decompress to 20 bytes where 4 rows of 3 blocks take 24"). The
// output grows only as the stream yields bytes, so a damaged size cannot make it allocate more.
std::optional<std::string> decode_block_exponents(std::span<const std::uint8_t> blob, std::int64_t rows,
                                                  std::int64_t blocks_per_row, std::vector<std::int16_t>& out);

// The row `q` stands on, selected with block_scale_steps' columns in their order (schema.h), as
// a record of run `run_id`; throws Error with the sentence above when the row is not sound.
BlockScaleRecord read_block_scale_row(const Statement& q, std::int64_t run_id);

}  // namespace mantissa::store
