// Reading one gzip file (RFC 1952: a header, raw deflate data, then an 8-byte trailer holding the
// CRC-32 and the length of the inflated data modulo 2^32) in bounded chunks, for the IDX reader.
//
// Built on zlib's raw inflate rather than gzread, so that every part of the file is checked and
// told apart: the header is parsed here (a damaged one is named), the trailer's stated length is
// read before anything is inflated (so a caller can compare it with what it expects and bound its
// allocations), and when the deflate data ends the trailer must be there and match: a file without
// its trailer is truncated, a wrong CRC or length is damage, and bytes after the trailer are
// refused (only a single gzip stream is read). Input is read from the descriptor 256 KiB at a
// time; output goes straight into the caller's buffer, so memory does not depend on the file.
// One object belongs to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "user_file.h"

namespace mantissa::data {

// Deflate stores at most about 1032 bytes in one (a 258-byte match in 2 bits); this bound, with
// some slack, says how much a gzip file's data can possibly inflate to.
inline constexpr std::uint64_t kMaxDeflateRatio = 1040;

// True when the file starts with the gzip magic bytes 0x1F 0x8B (read with pread: the file
// position does not move).
bool starts_like_gzip(const UserFile& file);

class GzipInput {
public:
    // Takes an open regular file that starts like gzip; `what` begins every sentence ("The IDX
    // file x.gz"). Reads and checks the gzip header and reads the trailer's stated length; throws
    // mantissa::Error when the header is damaged or cut short.
    GzipInput(UserFile file, std::string what);
    ~GzipInput();
    GzipInput(const GzipInput&) = delete;
    GzipInput& operator=(const GzipInput&) = delete;

    // The length of the inflated data as the trailer states it (modulo 2^32), before inflating;
    // nullopt when the file is too short to hold a trailer after its header.
    std::optional<std::uint32_t> stated_size() const;

    // The most that this file's deflate data could inflate to, from the file's size alone.
    std::uint64_t max_inflated_size() const;

    // The file's size in bytes, as stated when it was opened.
    std::uint64_t file_size() const;

    // Inflates up to n bytes into dst and returns how many; fewer than n only at the end of the
    // data. When the deflate data ends, the trailer is checked (present, CRC-32 and length equal
    // to what was inflated, nothing after it) and any mismatch throws. When the file ends inside
    // the deflate data, the short count is returned and ended_early() is true. Corrupt deflate
    // data throws, naming the byte offset where zlib stopped.
    std::uint64_t read(std::uint8_t* dst, std::uint64_t n);

    // True when the file ended inside the deflate data (it was cut short).
    bool ended_early() const;

    // Bytes inflated so far.
    std::uint64_t inflated() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace mantissa::data
