// Reading one gzip file in bounded chunks (see gzip_input.h). The header is parsed byte by byte
// from the same input buffer the inflater then reads, so no byte is read twice and a header of any
// length (a long file name or comment) costs no more memory. Offsets in messages count bytes of
// the file from 0, as a hex dump shows them.
#include "data/gzip_input.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "error.h"

namespace mantissa::data {
namespace {

constexpr std::size_t kInputChunk = std::size_t{1} << 18;  // 256 KiB read from the file at a time

// The fixed part of a gzip header: ID1 ID2 CM FLG MTIME(4) XFL OS.
constexpr std::size_t kFixedHeader = 10;
constexpr std::size_t kTrailer = 8;
constexpr unsigned char kFlagHcrc = 0x02, kFlagExtra = 0x04, kFlagName = 0x08, kFlagComment = 0x10;

std::uint32_t le32(const unsigned char* b) {
    return std::uint32_t{b[0]} | (std::uint32_t{b[1]} << 8) | (std::uint32_t{b[2]} << 16) | (std::uint32_t{b[3]} << 24);
}

std::string hex32(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", v);
    return buf;
}

// pread of exactly n bytes at `offset`; returns how many were there.
std::size_t pread_full(int fd, unsigned char* dst, std::size_t n, std::uint64_t offset) {
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += static_cast<std::size_t>(r);
    }
    return got;
}

}  // namespace

bool starts_like_gzip(const UserFile& file) {
    unsigned char magic[2] = {};
    return pread_full(file.fd(), magic, 2, 0) == 2 && magic[0] == 0x1F && magic[1] == 0x8B;
}

struct GzipInput::Impl {
    UserFile file;
    std::string what;
    std::uint64_t size = 0;  // the file's size when opened
    // Input buffer: kInputChunk bytes, or the whole file when smaller (at least 1); left
    // uninitialised, since every byte is read into before it is used.
    std::unique_ptr<unsigned char[]> in;
    std::size_t in_size = 0;
    std::uint64_t read_from_file = 0;  // bytes of the file read into `in` so far
    bool eof = false;
    z_stream z{};
    bool z_ready = false;
    std::uint64_t header_bytes = 0;
    std::optional<std::uint32_t> stated;
    std::uint32_t crc = 0;
    std::uint64_t out_total = 0;
    bool ended = false;       // the deflate data ended and the trailer checked out
    bool cut_short = false;   // the file ended inside the deflate data

    Impl(UserFile f, std::string w) : file(std::move(f)), what(std::move(w)) {}
    ~Impl() {
        if (z_ready) inflateEnd(&z);
    }

    // The offset in the file of the next byte not yet consumed.
    std::uint64_t offset() const { return read_from_file - z.avail_in; }

    // The offset of the byte zlib was reading when it found damage: the last one it consumed.
    std::uint64_t damage_offset() const { return std::max(offset(), header_bytes + 1) - 1; }

    // Reads the next chunk of the file into `in`, when everything before has been consumed.
    void refill() {
        if (z.avail_in > 0 || eof) return;
        for (;;) {
            const ssize_t r = ::read(file.fd(), in.get(), in_size);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                const int err = errno;
                throw Error(what + " cannot be read: " + std::strerror(err) + ".");
            }
            if (r == 0) eof = true;
            read_from_file += static_cast<std::uint64_t>(r);
            z.next_in = in.get();
            z.avail_in = static_cast<uInt>(r);
            return;
        }
    }

    // The next byte of the header; `part` names what is being read for the message when the file
    // ends there.
    unsigned char header_byte(const char* part) {
        refill();
        if (z.avail_in == 0)
            throw Error(what + " is truncated: it ends after " + std::to_string(read_from_file) +
                        " bytes, inside its gzip header (" + part + ").");
        const unsigned char b = *z.next_in;
        ++z.next_in;
        --z.avail_in;
        return b;
    }

    void read_header() {
        std::vector<unsigned char> header;  // kept only for the optional header CRC
        auto next = [&](const char* part) {
            const unsigned char b = header_byte(part);
            header.push_back(b);
            return b;
        };
        std::array<unsigned char, kFixedHeader> fixed{};
        for (std::size_t i = 0; i < kFixedHeader; ++i) fixed[i] = next("its first 10 bytes");
        if (fixed[0] != 0x1F || fixed[1] != 0x8B)
            throw Error(what + " is not a gzip file: it does not start with the bytes 1F 8B.");
        if (fixed[2] != 8)
            throw Error(what + " is a damaged gzip file: its header names compression method " +
                        std::to_string(fixed[2]) + " at byte 2, but gzip has only method 8 (deflate).");
        const unsigned char flags = fixed[3];
        if (flags & 0xE0)
            throw Error(what + " is a damaged gzip file: its header sets reserved flag bits (byte 3 is " +
                        std::to_string(flags) + ").");
        if (flags & kFlagExtra) {
            const unsigned lo = next("its extra field's length");
            const unsigned length = lo | (unsigned{next("its extra field's length")} << 8);
            for (unsigned i = 0; i < length; ++i) next("its extra field");
        }
        if (flags & kFlagName)
            while (next("the original file name") != 0) {
            }
        if (flags & kFlagComment)
            while (next("its comment") != 0) {
            }
        if (flags & kFlagHcrc) {
            const std::uint32_t computed = crc32(0, header.data(), static_cast<uInt>(header.size())) & 0xFFFFu;
            const unsigned lo = header_byte("its header CRC");
            const unsigned stored = lo | (unsigned{header_byte("its header CRC")} << 8);
            if (stored != computed)
                throw Error(what + " is a damaged gzip file: its header does not match the header CRC it stores.");
        }
        header_bytes = offset();
        if (size >= header_bytes + kTrailer) {
            unsigned char trailer[kTrailer] = {};
            if (pread_full(file.fd(), trailer, kTrailer, size - kTrailer) == kTrailer) stated = le32(trailer + 4);
        }
    }

    // At the end of the deflate data: the trailer must follow, match, and end the file.
    void check_trailer() {
        unsigned char trailer[kTrailer] = {};
        std::size_t have = 0;
        while (have < kTrailer) {
            refill();
            if (z.avail_in == 0) break;
            const std::size_t take = std::min<std::size_t>(kTrailer - have, z.avail_in);
            std::memcpy(trailer + have, z.next_in, take);
            z.next_in += take;
            z.avail_in -= static_cast<uInt>(take);
            have += take;
        }
        if (have == 0) throw Error(what + " is truncated: its gzip trailer is missing.");
        if (have < kTrailer)
            throw Error(what + " is truncated: its gzip trailer is cut short (" + std::to_string(have) +
                        " of its 8 bytes are there).");
        const std::uint32_t stored_crc = le32(trailer);
        const std::uint32_t stored_size = le32(trailer + 4);
        if (stored_crc != crc)
            throw Error(what + " is damaged: its data does not match the CRC-32 in its gzip trailer (" +
                        hex32(crc) + " computed, " + hex32(stored_crc) + " stored).");
        if (stored_size != static_cast<std::uint32_t>(out_total))
            throw Error(what + " is damaged: its gzip trailer gives the inflated length as " +
                        std::to_string(stored_size) + " bytes (modulo 2^32), but " + std::to_string(out_total) +
                        " bytes were inflated.");
        const std::uint64_t end = offset();
        refill();
        if (z.avail_in > 0) {
            struct stat st {};
            const std::uint64_t now = ::fstat(file.fd(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
            const std::string more = now > end ? std::to_string(now - end) + " more bytes" : "more bytes";
            throw Error(what + " holds " + more + " after the end of its gzip data at byte " + std::to_string(end) +
                        "; only a single gzip stream is read (decompress it, or keep its first stream only).");
        }
        ended = true;
    }
};

GzipInput::GzipInput(UserFile file, std::string what) : m_impl(std::make_unique<Impl>(std::move(file), std::move(what))) {
    Impl& im = *m_impl;
    im.size = user_file_size(im.file);
    im.in_size = static_cast<std::size_t>(std::clamp<std::uint64_t>(im.size, 1, kInputChunk));
    im.in = std::make_unique_for_overwrite<unsigned char[]>(im.in_size);
    im.read_header();
    im.crc = crc32(0, nullptr, 0);
    const int rc = inflateInit2(&im.z, -MAX_WBITS);  // raw deflate: the header and trailer are ours
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (rc != Z_OK) throw Error(im.what + " cannot be read: zlib failed to start (" + std::to_string(rc) + ").");
    im.z_ready = true;
}

GzipInput::~GzipInput() = default;

std::optional<std::uint32_t> GzipInput::stated_size() const {
    return m_impl->stated;
}

std::uint64_t GzipInput::max_inflated_size() const {
    const Impl& im = *m_impl;
    const std::uint64_t data = im.size > im.header_bytes + kTrailer ? im.size - im.header_bytes - kTrailer : 0;
    return data * kMaxDeflateRatio + 1024;
}

std::uint64_t GzipInput::file_size() const {
    return m_impl->size;
}

bool GzipInput::ended_early() const {
    return m_impl->cut_short;
}

std::uint64_t GzipInput::inflated() const {
    return m_impl->out_total;
}

std::uint64_t GzipInput::read(std::uint8_t* dst, std::uint64_t n) {
    Impl& im = *m_impl;
    std::uint64_t got = 0;
    while (got < n && !im.ended && !im.cut_short) {
        im.refill();
        const auto room = static_cast<uInt>(std::min<std::uint64_t>(n - got, UINT_MAX / 2));
        im.z.next_out = dst + got;
        im.z.avail_out = room;
        const uInt in_before = im.z.avail_in;
        const int rc = inflate(&im.z, Z_NO_FLUSH);
        const uInt produced = room - im.z.avail_out;
        if (produced > 0) im.crc = crc32(im.crc, dst + got, produced);
        got += produced;
        im.out_total += produced;
        if (rc == Z_STREAM_END) {
            im.check_trailer();
            break;
        }
        if (rc == Z_MEM_ERROR) throw std::bad_alloc();
        if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_STREAM_ERROR) {
            const char* why = im.z.msg ? im.z.msg : "invalid deflate data";
            throw Error(im.what + " is damaged: its gzip data is corrupt at byte " +
                        std::to_string(im.damage_offset()) + " (" + why + ").");
        }
        if (produced == 0 && im.z.avail_in == in_before) {
            // No progress: zlib needs input, and there is none left (the file is cut short), or it
            // refuses what it has, which only damaged data makes it do.
            if (in_before == 0 && im.eof) {
                im.cut_short = true;
            } else if (in_before > 0) {
                throw Error(im.what + " is damaged: its gzip data is corrupt at byte " +
                            std::to_string(im.damage_offset()) + ".");
            }
        }
    }
    return got;
}

}  // namespace mantissa::data
