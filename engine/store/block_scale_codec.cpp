// Encoder and decoder of block_scale_steps' exponents blob, and the checks a row passes when it is
// read; the format is described in block_scale_codec.h and docs/schema.md. The decoder inflates
// in chunks and stops at the first byte beyond what the row's sizes give.
#include "store/block_scale_codec.h"

#include <zlib.h>

#include <array>
#include <bit>
#include <cstdint>
#include <new>

#include "error.h"
#include "numeric/block_format.h"
#include "store/run_text.h"
#include "store/schema.h"
#include "store/sqlite_db.h"

namespace mantissa::store {

namespace {

constexpr int compression_level = 6;

std::optional<MatmulOperand> parse_operand(const std::string& name) {
    for (MatmulOperand o : {MatmulOperand::input, MatmulOperand::weight, MatmulOperand::grad_output})
        if (name == matmul_operand_name(o)) return o;
    return std::nullopt;
}

std::string zlib_says(const z_stream& z, int rc) {
    return z.msg ? z.msg : zError(rc);
}

}  // namespace

void append_block_exponents(std::span<const std::int16_t> exponents, std::vector<std::uint8_t>& out) {
    std::vector<std::uint8_t> le;
    const std::uint8_t* source = reinterpret_cast<const std::uint8_t*>(exponents.data());
    const uLong source_bytes = static_cast<uLong>(exponents.size() * 2);
    if constexpr (std::endian::native != std::endian::little) {
        le.reserve(exponents.size() * 2);
        for (std::int16_t e : exponents) {
            const auto u = static_cast<std::uint16_t>(e);
            le.push_back(static_cast<std::uint8_t>(u & 0xFF));
            le.push_back(static_cast<std::uint8_t>(u >> 8));
        }
        source = le.data();
    }
    const std::size_t at = out.size();
    uLongf size = compressBound(source_bytes);
    out.resize(at + size);
    const int rc = compress2(out.data() + at, &size, source, source_bytes, compression_level);
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (rc != Z_OK)
        throw Error("Cannot compress the block scales of a layer for the run store (zlib: " + std::string(zError(rc)) +
                    ").");
    out.resize(at + size);
}

std::optional<std::string> decode_block_exponents(std::span<const std::uint8_t> blob, std::int64_t rows,
                                                  std::int64_t blocks_per_row, std::vector<std::int16_t>& out) {
    out.clear();
    const std::int64_t need = rows * blocks_per_row * 2;  // the caller checked that it fits
    const std::string sizes = std::to_string(rows) + (rows == 1 ? " row of " : " rows of ") +
                              std::to_string(blocks_per_row) + (blocks_per_row == 1 ? " block" : " blocks");
    z_stream z{};
    if (const int rc = inflateInit(&z); rc != Z_OK) {
        if (rc == Z_MEM_ERROR) throw std::bad_alloc();
        return "their exponents cannot be decompressed (zlib: " + zlib_says(z, rc) + ")";
    }
    z.next_in = const_cast<Bytef*>(blob.data());  // zlib's API is not const; it only reads
    z.avail_in = static_cast<uInt>(blob.size());  // SQLite's blobs are under 2^31 bytes
    std::vector<std::uint8_t> bytes;
    std::array<std::uint8_t, 16384> chunk;
    std::optional<std::string> why;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
        z.next_out = chunk.data();
        z.avail_out = static_cast<uInt>(chunk.size());
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_MEM_ERROR) {
            inflateEnd(&z);
            throw std::bad_alloc();
        }
        if (rc == Z_BUF_ERROR) {  // no progress: the input ran out before the stream's end
            why = "their exponents' compressed data ends early, after " + std::to_string(bytes.size()) + " of the " +
                  std::to_string(need) + " bytes " + sizes + " take";
            break;
        }
        if (rc != Z_OK && rc != Z_STREAM_END) {
            why = "their exponents do not decompress (zlib: " + zlib_says(z, rc) + ")";
            break;
        }
        const std::size_t got = chunk.size() - z.avail_out;
        if (static_cast<std::int64_t>(bytes.size() + got) > need) {
            why = "their exponents decompress to more than the " + std::to_string(need) + " bytes " + sizes + " take";
            break;
        }
        bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(got));
    }
    const std::size_t trailing = z.avail_in;
    inflateEnd(&z);
    if (why) return why;
    if (static_cast<std::int64_t>(bytes.size()) != need)
        return "their exponents decompress to " + std::to_string(bytes.size()) + " bytes where " + sizes + " take " +
               std::to_string(need);
    if (trailing > 0)
        return "their blob has " + std::to_string(trailing) + (trailing == 1 ? " byte" : " bytes") +
               " after the end of the compressed exponents";
    out.resize(bytes.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::int16_t>(static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)));
    return std::nullopt;
}

BlockScaleRecord read_block_scale_row(const Statement& q, std::int64_t run_id) {
    BlockScaleRecord r;
    r.step = q.column_int(0);
    r.layer = static_cast<std::int32_t>(q.column_int(1));
    const std::int64_t slot = q.column_int(2);
    r.name = q.column_text(3);
    const std::string operand = q.column_text(4);
    const std::string format = q.column_text(5);
    r.own = q.column_int(6) != 0;
    r.rows_total = q.column_int(7);
    r.rows = q.column_int(8);
    r.row_length = q.column_int(9);
    r.blocks_per_row = q.column_int(10);

    const std::optional<MatmulOperand> parsed = parse_operand(operand);
    const std::string what = "The block scales of " + printable_text(r.name) + "'s " +
                             (parsed ? operand : "operand '" + printable_text(operand) + "'") + " at step " +
                             std::to_string(r.step) + " of run " + std::to_string(run_id) + " are damaged: ";
    if (!parsed) throw Error(what + "the operand is not x, W or dy.");
    r.operand = *parsed;
    if (slot != static_cast<std::int64_t>(r.operand))
        throw Error(what + "they are stored in slot " + std::to_string(slot) + ", where " + operand + " takes slot " +
                    std::to_string(static_cast<int>(r.operand)) + ".");
    const std::optional<BlockFormat> block_format = parse_block_format(format);
    if (!block_format)
        throw Error(what + "their format '" + printable_text(format) + "' is not a block format (" +
                    std::string(block_format_names_list()) + ").");
    r.format = *block_format;
    std::int64_t count = 0;
    if (r.rows < 0 || r.blocks_per_row < 0 || r.row_length < 0 || r.rows > r.rows_total ||
        __builtin_mul_overflow(r.rows, r.blocks_per_row, &count) || count > INT64_MAX / 2)
        throw Error(what + "their sizes do not fit together (" + std::to_string(r.rows) + " of " +
                    std::to_string(r.rows_total) + " rows, " + std::to_string(r.blocks_per_row) +
                    " blocks per row of " + std::to_string(r.row_length) + " values).");
    if (const auto why = decode_block_exponents(q.column_blob(11), r.rows, r.blocks_per_row, r.exponents))
        throw Error(what + *why + ".");
    return r;
}

}  // namespace mantissa::store
