// Test helpers: build small IDX files byte by byte (so a test can break any part of them) and write
// them raw or gzipped into a folder, the way MNIST ships; build gzip files part by part (header
// fields, deflate data, trailer), and gzip files of gigabytes of zeros in milliseconds.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace idx_files {

using Bytes = std::vector<std::uint8_t>;

inline void put_u32(Bytes& b, std::uint32_t v) {
    b.push_back(static_cast<std::uint8_t>(v >> 24));
    b.push_back(static_cast<std::uint8_t>(v >> 16));
    b.push_back(static_cast<std::uint8_t>(v >> 8));
    b.push_back(static_cast<std::uint8_t>(v));
}

// An image file: magic, count, rows, cols, then `pixels` as given (which may not match the header).
inline Bytes images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, const Bytes& pixels,
                    std::uint32_t magic = 0x00000803) {
    Bytes b;
    put_u32(b, magic);
    put_u32(b, count);
    put_u32(b, rows);
    put_u32(b, cols);
    b.insert(b.end(), pixels.begin(), pixels.end());
    return b;
}

// `count` images whose pixel k of image i is (i * 7 + k) % 256.
inline Bytes pattern_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols) {
    Bytes px;
    for (std::uint32_t i = 0; i < count; ++i)
        for (std::uint32_t k = 0; k < rows * cols; ++k) px.push_back(static_cast<std::uint8_t>((i * 7 + k) % 256));
    return images(count, rows, cols, px);
}

inline Bytes labels(const Bytes& values, std::uint32_t magic = 0x00000801, std::int64_t declared = -1) {
    Bytes b;
    put_u32(b, magic);
    put_u32(b, declared < 0 ? static_cast<std::uint32_t>(values.size()) : static_cast<std::uint32_t>(declared));
    b.insert(b.end(), values.begin(), values.end());
    return b;
}

inline bool write_raw(const std::string& path, const Bytes& b) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return static_cast<bool>(out);
}

inline bool write_gz(const std::string& path, const Bytes& b) {
    gzFile f = gzopen(path.c_str(), "wb");
    if (!f) return false;
    const int n = b.empty() ? 0 : gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
    return gzclose(f) == Z_OK && n == static_cast<int>(b.size());
}

// Writes `b` as folder/name (raw) or folder/name.gz (gzipped).
inline bool write(const std::string& folder, const std::string& name, const Bytes& b, bool gz) {
    return gz ? write_gz(folder + "/" + name + ".gz", b) : write_raw(folder + "/" + name, b);
}

// A complete, valid folder: 5 training and 3 test images of rows x cols, labels i % 10.
inline bool write_folder(const std::string& folder, bool gz, std::uint32_t rows = 2, std::uint32_t cols = 3) {
    Bytes train_labels{0, 1, 2, 9, 4}, test_labels{3, 1, 5};
    return write(folder, "train-images-idx3-ubyte", pattern_images(5, rows, cols), gz) &&
           write(folder, "train-labels-idx1-ubyte", labels(train_labels), gz) &&
           write(folder, "t10k-images-idx3-ubyte", pattern_images(3, rows, cols), gz) &&
           write(folder, "t10k-labels-idx1-ubyte", labels(test_labels), gz);
}

// ---- gzip files built part by part

// Raw deflate of `data` (no header or trailer), flushed with `flush` (Z_FINISH ends the stream;
// Z_FULL_FLUSH leaves it open and byte-aligned, with no reference to earlier data).
inline Bytes deflate_raw(z_stream& z, const std::uint8_t* data, std::size_t n, int flush) {
    Bytes out;
    z.next_in = const_cast<std::uint8_t*>(data);
    z.avail_in = static_cast<uInt>(n);
    std::uint8_t buf[1 << 16];
    do {
        z.next_out = buf;
        z.avail_out = sizeof buf;
        deflate(&z, flush);
        out.insert(out.end(), buf, buf + (sizeof buf - z.avail_out));
    } while (z.avail_out == 0);
    return out;
}

inline void put_le32(Bytes& b, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// The parts of a gzip file, for tests that break one of them.
struct GzipParts {
    Bytes header;   // 10 fixed bytes and any optional fields
    Bytes deflate;  // the compressed data
    std::uint32_t crc = 0;
    std::uint32_t size = 0;  // ISIZE: the inflated length modulo 2^32
    Bytes file() const {
        Bytes b = header;
        b.insert(b.end(), deflate.begin(), deflate.end());
        put_le32(b, crc);
        put_le32(b, size);
        return b;
    }
};

// Optional header fields, as gzip(1) and other tools write them.
struct GzipFields {
    std::string name;     // FNAME
    std::string comment;  // FCOMMENT
    Bytes extra;          // FEXTRA
    bool header_crc = false;  // FHCRC
};

inline GzipParts gzip_parts(const Bytes& data, const GzipFields& fields = {}) {
    GzipParts g;
    std::uint8_t flags = 0;
    if (!fields.extra.empty()) flags |= 0x04;
    if (!fields.name.empty()) flags |= 0x08;
    if (!fields.comment.empty()) flags |= 0x10;
    if (fields.header_crc) flags |= 0x02;
    g.header = {0x1F, 0x8B, 8, flags, 0, 0, 0, 0, 0, 3};
    if (!fields.extra.empty()) {
        g.header.push_back(static_cast<std::uint8_t>(fields.extra.size()));
        g.header.push_back(static_cast<std::uint8_t>(fields.extra.size() >> 8));
        g.header.insert(g.header.end(), fields.extra.begin(), fields.extra.end());
    }
    for (const std::string* text : {&fields.name, &fields.comment})
        if (!text->empty()) {
            g.header.insert(g.header.end(), text->begin(), text->end());
            g.header.push_back(0);
        }
    if (fields.header_crc) {
        const auto crc = crc32(0, g.header.data(), static_cast<uInt>(g.header.size()));
        g.header.push_back(static_cast<std::uint8_t>(crc));
        g.header.push_back(static_cast<std::uint8_t>(crc >> 8));
    }
    z_stream z{};
    deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    g.deflate = deflate_raw(z, data.data(), data.size(), Z_FINISH);
    deflateEnd(&z);
    g.crc = static_cast<std::uint32_t>(crc32(crc32(0, nullptr, 0), data.data(), static_cast<uInt>(data.size())));
    g.size = static_cast<std::uint32_t>(data.size());
    return g;
}

// A valid gzip file of `head` followed by `zeros` zero bytes, built in milliseconds whatever its
// inflated size: one 1 MiB block of zeros is deflated after a full flush (which resets the
// compressor, so the block's compressed form never refers back) and its bytes are repeated; the
// CRC-32 comes from crc32_combine. `zeros` of 2 GB take about 2 MB.
inline Bytes gzip_of_zeros(const Bytes& head, std::uint64_t zeros) {
    constexpr std::size_t kBlock = std::size_t{1} << 20;
    const std::vector<std::uint8_t> block(kBlock, 0);
    z_stream z{};
    deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    Bytes file{0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3};
    const Bytes first = deflate_raw(z, head.data(), head.size(), Z_FULL_FLUSH);
    file.insert(file.end(), first.begin(), first.end());
    uLong crc = crc32(crc32(0, nullptr, 0), head.data(), static_cast<uInt>(head.size()));
    const uLong block_crc = crc32(crc32(0, nullptr, 0), block.data(), static_cast<uInt>(kBlock));
    const std::uint64_t blocks = zeros / kBlock;
    if (blocks > 0) {
        const Bytes packed = deflate_raw(z, block.data(), kBlock, Z_FULL_FLUSH);
        for (std::uint64_t i = 0; i < blocks; ++i) {
            file.insert(file.end(), packed.begin(), packed.end());
            crc = crc32_combine(crc, block_crc, static_cast<z_off_t>(kBlock));
        }
    }
    const auto rest = static_cast<std::size_t>(zeros % kBlock);
    const Bytes last = deflate_raw(z, block.data(), rest, Z_FINISH);
    file.insert(file.end(), last.begin(), last.end());
    crc = crc32(crc, block.data(), static_cast<uInt>(rest));
    deflateEnd(&z);
    put_le32(file, static_cast<std::uint32_t>(crc));
    put_le32(file, static_cast<std::uint32_t>(head.size() + zeros));
    return file;
}

// An image file's header alone: magic, count, rows, cols.
inline Bytes image_header(std::uint32_t count, std::uint32_t rows, std::uint32_t cols) {
    return images(count, rows, cols, {});
}

// A label file's header alone: magic, count.
inline Bytes label_header(std::uint32_t count) {
    Bytes b;
    put_u32(b, 0x00000801);
    put_u32(b, count);
    return b;
}

}  // namespace idx_files
